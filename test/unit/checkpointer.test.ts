// The WAL checkpoint thread of a SQLite store file (src/storage/sql/checkpointer.ts): once a gateway's store starts it
// (warmThreads), the gateway's connection no longer checkpoints; the thread moves the WAL's pages into the database
// file after commits, without clearing the gateway's read caches (a checkpoint is not a commit), while a commit by
// another connection still clears them; a thread that dies gives checkpointing back to the gateway's connection; at
// close the thread ends first and the gateway's connection removes -wal and -shm.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { openStorage, type Storage } from "../../src/storage/index.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";
import { SQLITE_AUTOCHECKPOINT_PAGES } from "../../src/storage/sql/checkpointer.js";
import type { Task } from "../../src/protocol/model.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-checkpointer-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;
const freshFile = (): string => path.join(tmpRoot, `case-${++seq}`, "a2a.db");

const task = (id: string, note = ""): Task => ({
  id,
  contextId: "ctx-1",
  status: { state: "working", timestamp: "2025-01-01T00:00:00.000Z" },
  history: [{ messageId: `m-${id}`, role: "user", parts: [{ kind: "text", text: `${note}${"x".repeat(2000)}` }] }],
});

const autocheckpoint = (storage: Storage): number => storage.database!.statement("PRAGMA wal_autocheckpoint").pluck().get() as number;

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("the WAL checkpoint thread of a SQLite store file", () => {
  it("checkpoints the gateway's commits in its place, and leaves the read cache alone; a foreign commit still clears it", async () => {
    const file = freshFile();
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
    try {
      expect(autocheckpoint(storage)).toBe(SQLITE_AUTOCHECKPOINT_PAGES);
      expect(storage.checkpointer!()).toBeUndefined();
      storage.warmThreads!();
      storage.warmThreads!();
      const thread = storage.checkpointer!()!;
      expect(thread).toBeDefined();
      expect(autocheckpoint(storage)).toBe(0);

      for (let i = 0; i < 400; i++) await storage.tasks.create(task(`t${i}`), "alice");
      await until("a checkpoint of the writes", () => thread.stats.checkpointed > 0);
      expect(thread.stats.lastError).toBeUndefined();

      // A cached task stays the same object across checkpoint passes: the thread's work is not a foreign commit.
      const first = await storage.tasks.view("t1");
      const passes = thread.stats.passes;
      await storage.tasks.create(task("t-more"), "alice");
      await until("the next pass", () => thread.stats.passes > passes);
      await new Promise((r) => setTimeout(r, 150)); // past the change watch's interval
      expect(await storage.tasks.view("t1")).toBe(first);

      // Another connection's commit is seen (within the watch's interval) and the task read again.
      const other = pinDatabase(new Database(file, { timeout: 5000 }));
      try {
        prepare(other, "UPDATE a2a_tasks SET task_json = ? WHERE id = 't1'").run(JSON.stringify(task("t1", "changed ")));
      } finally {
        other.close();
      }
      await new Promise((r) => setTimeout(r, 150));
      const again = await storage.tasks.view("t1");
      expect(again).not.toBe(first);
      expect(JSON.stringify(again!.task)).toContain("changed ");
    } finally {
      await storage.close();
    }
    expect(["-wal", "-shm"].filter((suffix) => fs.existsSync(file + suffix))).toEqual([]);
  });

  it("gives checkpointing back to the gateway's connection when the thread dies", async () => {
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${freshFile()}` });
    try {
      storage.warmThreads!();
      expect(autocheckpoint(storage)).toBe(0);
      await storage.checkpointer!()!.kill();
      await until("the connection checkpointing again", () => autocheckpoint(storage) === SQLITE_AUTOCHECKPOINT_PAGES);
      await storage.tasks.create(task("after"), "alice");
      expect((await storage.tasks.view("after"))?.task.id).toBe("after");
    } finally {
      await storage.close();
    }
  });

  it("starts no thread after close, nor for the memory backend", async () => {
    const closed = await openStorage({ backend: "sqlite", url: `sqlite:///${freshFile()}` });
    await closed.close();
    closed.warmThreads!();
    expect(closed.checkpointer!()).toBeUndefined();
    const memory = await openStorage({ backend: "memory" });
    expect(memory.warmThreads).toBeUndefined();
    expect(memory.checkpointer).toBeUndefined();
    await memory.close();
  });
});
