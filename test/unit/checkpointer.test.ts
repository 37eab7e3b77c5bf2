// The WAL checkpoints of a SQLite store file (src/storage/sql/readers.ts): once the first reader thread runs (a
// gateway warms one once it serves), it checkpoints in the place of the gateway's connection, whose own checkpoints
// stop; its passes move the WAL's pages into the database file after commits without clearing the gateway's read
// caches (a checkpoint is not a commit), while a commit by another connection still clears them; when the thread
// dies, or while its passes fail, the gateway's connection checkpoints again, until the next thread started (or the
// next successful pass) takes the duty; the thread's timer stops after passes without a commit and the next write
// starts it again; /metrics serves what the duty did; without reader threads the connection checkpoints as SQLite does
// by default; at close -wal and -shm are removed.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { openStorage, type Storage } from "../../src/storage/index.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";
import { QUIET_PASSES, SQLITE_AUTOCHECKPOINT_PAGES, SqliteReaders } from "../../src/storage/sql/readers.js";
import { Metrics } from "../../src/observability/metrics.js";
import type { Task } from "../../src/protocol/model.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-checkpoints-"));
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
const readersOf = (storage: Storage): SqliteReaders => (storage.tasks as unknown as { shared: { reads: { readers: SqliteReaders } } }).shared.reads.readers;
const threadsOf = (readers: SqliteReaders): { worker: Worker }[] => [...(readers as unknown as { started: Set<{ worker: Worker }> }).started];

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("the WAL checkpoints of a SQLite store file", () => {
  it("run on the first reader thread in place of the gateway's connection, and leave the read cache alone; a foreign commit still clears it", async () => {
    const file = freshFile();
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
    try {
      const readers = readersOf(storage);
      expect(autocheckpoint(storage)).toBe(SQLITE_AUTOCHECKPOINT_PAGES);
      storage.warmThreads!();
      expect(autocheckpoint(storage)).toBe(0);

      for (let i = 0; i < 400; i++) await storage.tasks.create(task(`t${i}`), "alice");
      await until("a checkpoint of the writes", () => readers.checkpoints.checkpointed > 0);
      expect(readers.checkpoints.lastError).toBeUndefined();
      // Busy reader threads: a second one starts, without the duty (the connection still does not checkpoint).
      await Promise.all([storage.tasks.list("alice", {}), storage.tasks.list("alice", { contextId: "ctx-1" })]);
      expect(readers.threads).toBe(2);
      expect(autocheckpoint(storage)).toBe(0);

      // A cached task stays the same object across checkpoint passes: a pass is not a foreign commit.
      const first = await storage.tasks.view("t1");
      const passes = readers.checkpoints.passes;
      await storage.tasks.create(task("t-more"), "alice");
      await until("the next pass", () => readers.checkpoints.passes > passes);
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

  it("go back to the gateway's connection when the thread dies, and on to the next thread started", async () => {
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${freshFile()}` });
    try {
      const readers = readersOf(storage);
      storage.warmThreads!();
      expect(autocheckpoint(storage)).toBe(0);
      await threadsOf(readers)[0]!.worker.terminate();
      await until("the connection checkpointing again", () => autocheckpoint(storage) === SQLITE_AUTOCHECKPOINT_PAGES);
      await storage.tasks.create(task("after"), "alice");
      expect((await storage.tasks.list("alice", {})).total).toBe(1); // a listing starts the next thread
      expect(autocheckpoint(storage)).toBe(0);
      const passes = readers.checkpoints.passes;
      await until("a pass of the new thread", () => readers.checkpoints.passes > passes);
    } finally {
      await storage.close();
    }
  });

  it("go back to the gateway's connection while the thread's passes fail", async () => {
    const file = freshFile();
    await (await openStorage({ backend: "sqlite", url: `sqlite:///${file}` })).close();
    const told: boolean[] = [];
    // A pass that prepares but fails when it runs (integer overflow).
    const readers = new SqliteReaders({ file, size: 1, busyTimeoutMs: 1000, checkpointEveryMs: 20, checkpointSql: "SELECT abs(-9223372036854775808) AS checkpointed", onCheckpointDuty: (held) => told.push(held) });
    try {
      readers.warm();
      expect(told).toEqual([true]);
      await until("a failed pass", () => readers.checkpoints.lastError !== undefined);
      expect(readers.checkpoints.lastError).toMatch(/overflow/);
      expect(told).toEqual([true, false]);
      await new Promise((r) => setTimeout(r, 100)); // more failed passes: nothing more to tell
      expect(told).toEqual([true, false]);
      expect(readers.checkpoints.passes).toBe(0);
      expect(readers.checkpoints.failures).toBeGreaterThan(1);
      expect(readers.checkpoints.onThread).toBe(false);
      expect((await readers.run([]))).toEqual([]); // the thread still reads
    } finally {
      await readers.close();
    }
  });

  it("stop the thread's timer after passes without a commit, and start it again on the next write", async () => {
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${freshFile()}` });
    try {
      storage.warmThreads!();
      await storage.tasks.create(task("first"), "alice");
      await until("a pass", () => storage.walCheckpoints!().passes > 0);
      const started = Date.now();
      await until("the timer stopped", () => storage.walCheckpoints!().asleep);
      expect(Date.now() - started).toBeGreaterThanOrEqual((QUIET_PASSES - 1) * 200);
      const asleep = storage.walCheckpoints!();
      expect(asleep.onThread).toBe(true); // the thread keeps the duty: the connection does not checkpoint
      expect(autocheckpoint(storage)).toBe(0);
      await new Promise((r) => setTimeout(r, 500));
      expect(storage.walCheckpoints!().passes).toBe(asleep.passes);

      await storage.tasks.create(task("second"), "alice"); // a write starts the timer again
      expect(storage.walCheckpoints!().asleep).toBe(false);
      await until("a pass after the write", () => storage.walCheckpoints!().passes > asleep.passes);
      const after = storage.walCheckpoints!();
      expect(after.checkpointed).toBeGreaterThan(asleep.checkpointed);
      expect(after.walFrames).toBeGreaterThan(0);

      // /metrics serves the same figures.
      const metrics = new Metrics({ defaultMetrics: false });
      metrics.sqliteWal(storage.walCheckpoints!);
      const text = await metrics.registry.metrics();
      const value = (name: string): number => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1]);
      expect(value("a2a_sqlite_wal_checkpoint_thread")).toBe(1);
      expect(value("a2a_sqlite_wal_checkpoint_passes_total")).toBeGreaterThanOrEqual(after.passes);
      expect(value("a2a_sqlite_wal_checkpointed_frames_total")).toBeGreaterThanOrEqual(after.checkpointed);
      expect(value("a2a_sqlite_wal_checkpoint_failures_total")).toBe(0);
      expect(value("a2a_sqlite_wal_frames")).toBeGreaterThan(0);
    } finally {
      await storage.close();
    }
  });

  it("start the timer again for a write made after the thread's last look, while its message was on the way", async () => {
    const file = freshFile();
    await (await openStorage({ backend: "sqlite", url: `sqlite:///${file}` })).close();
    const readers = new SqliteReaders({ file, size: 1, busyTimeoutMs: 1000, checkpointEveryMs: 20, quietPasses: 2 });
    const writer = pinDatabase(new Database(file, { timeout: 5000 }));
    try {
      readers.warm();
      await until("the timer stopped", () => readers.checkpoints.asleep);
      const passes = readers.checkpoints.passes;
      // The event loop is held while the thread finds no commit twice and stops its timer (its message waits); then a
      // write commits and is reported before that message is read.
      readers.wrote();
      const end = Date.now() + 300;
      while (Date.now() < end); // eslint-disable-line no-empty
      prepare(writer, "INSERT INTO a2a_store_meta (key, value) VALUES ('late-write', 'x')").run();
      readers.wrote();
      await until("a pass for the late write", () => readers.checkpoints.passes > passes);
    } finally {
      writer.close();
      await readers.close();
    }
  });

  it("stay on the gateway's connection without reader threads (A2A_TASK_STORE_READERS=0)", async () => {
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${freshFile()}`, taskReaders: 0 });
    try {
      expect(storage.warmThreads).toBeUndefined();
      expect(storage.walCheckpoints).toBeUndefined();
      expect(autocheckpoint(storage)).toBe(SQLITE_AUTOCHECKPOINT_PAGES);
    } finally {
      await storage.close();
    }
  });
});
