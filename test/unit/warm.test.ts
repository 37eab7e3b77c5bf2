// src/server/warm.ts: once a gateway serves, its background start-up work begins BACKGROUND_START_DELAY_MS later, not
// at once: the first SQLite reader thread and the push outbox's first pass (the validators load with them).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { Logger } from "pino";
import { catalog } from "../../src/contract/catalog.js";
import type { PushService } from "../../src/push/service.js";
import { warmInBackground } from "../../src/server/warm.js";
import { openStorage } from "../../src/storage/index.js";
import type { SqliteReaders } from "../../src/storage/sql/readers.js";
import { BACKGROUND_START_DELAY_MS } from "../../src/util/background-start.js";

describe("warmInBackground", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-warm-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("starts a reader thread and the push outbox's first pass after the delay, not before", async () => {
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${path.join(dir, "a2a.db")}`, taskReaders: 2 });
    const readers = (storage.tasks as unknown as { shared: { reads: { readers: SqliteReaders } } }).shared.reads.readers;
    const firstPass = vi.fn();
    const errors: unknown[] = [];
    const log = { error: (...args: unknown[]) => void errors.push(args) } as unknown as Logger;
    try {
      warmInBackground({ storage, push: { firstPass } as unknown as PushService, catalog, log });
      // A shorter timer set after it still fires first (timers run in due order), even on a late, loaded loop.
      await new Promise((r) => setTimeout(r, BACKGROUND_START_DELAY_MS / 2));
      expect(readers.threads).toBe(0);
      expect(firstPass).not.toHaveBeenCalled();
      await vi.waitFor(() => expect(firstPass).toHaveBeenCalledTimes(1), { timeout: 10_000, interval: 10 });
      expect(readers.threads).toBe(1);
      // The validators load in the background after it, without an error.
      await new Promise((r) => setTimeout(r, 500));
      expect(errors).toEqual([]);
    } finally {
      await storage.close();
    }
  });
});
