// src/server/warm.ts: once a gateway serves, its background start-up work begins BACKGROUND_START_DELAY_MS later, not
// at once: the first SQLite reader thread and the push outbox's first pass (the validators load with them). The
// timer never holds the process.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { Logger } from "pino";
import { catalog } from "../../src/contract/catalog.js";
import type { PushService } from "../../src/push/service.js";
import { BACKGROUND_START_DELAY_MS, warmInBackground } from "../../src/server/warm.js";
import { openStorage } from "../../src/storage/index.js";
import type { SqliteReaders } from "../../src/storage/sql/readers.js";

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

  it("does not keep the process alive for the work", () => {
    const module = path.resolve(import.meta.dirname, "../../src/server/warm.ts");
    // Held by the timer, the process would live BACKGROUND_START_DELAY_MS longer and print "ran".
    const script =
      `import { warmInBackground } from ${JSON.stringify(module)};` +
      `warmInBackground({ storage: undefined, push: { firstPass: () => process.stdout.write("ran") }, catalog: { methods: [] }, log: console });`;
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
    expect(out).toBe("");
  });
});
