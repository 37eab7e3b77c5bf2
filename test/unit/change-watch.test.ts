// The change watch shared by a SQLite connection's read caches (the task read cache, the tasks known to have no
// governance): one counter read per interval for both, a foreign commit clears both, a read in flight across a clear
// keeps nothing, and a failing counter or a closed watch never lets a cache answer.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { Kysely } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { rejectsA2AError } from "../support/errors.js";
import { ChangeWatch, DEFAULT_CHANGE_CHECK_MS } from "../../src/storage/change-watch.js";
import { AbsentGovernance, SqlGovernanceStore, openDatabase, openStorage, type StoreDatabase } from "../../src/storage/index.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";
import { sqliteDialect } from "../../src/storage/sql/sqlite-dialect.js";
import { runsDirectly } from "../../src/storage/sql/prepared.js";
import type { SqlSchema } from "../../src/storage/sql/schema.js";
import { SqlTaskStore } from "../../src/storage/tasks-sql.js";
import type { Task } from "../../src/protocol/model.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-change-watch-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;
const freshFile = (): string => path.join(tmpRoot, `case-${++seq}`, "a2a.db");

const task = (id: string, state: Task["status"]["state"] = "working"): Task => ({
  id,
  contextId: "ctx-1",
  status: { state, timestamp: "2025-01-01T00:00:00.000Z" },
  history: [],
});
const none = { trail: false, bindings: false };
const insertTrail = (taskId: string) =>
  `INSERT INTO a2a_governance_trail (task_id, owner, kind, request_id, source, entry_json, created_at) VALUES ('${taskId}', 'alice', 'feedback', NULL, 'ok', '{}', 0)`;
const cachedViews = (tasks: unknown): number => (tasks as { cachedViews: number }).cachedViews;

/** Both caches on one connection of a migrated file, with a watch of `checkMs` counting its counter reads. */
async function caches(file: string, checkMs: number) {
  await (await openStorage({ backend: "sqlite", url: `sqlite:///${file}` })).close();
  const db: StoreDatabase = openDatabase({ kind: "file", path: file });
  const dialect = sqliteDialect(db);
  const sql = new Kysely<SqlSchema>({ dialect });
  runsDirectly(sql, dialect.runNow);
  const counted = { reads: 0 };
  const watch = new ChangeWatch(() => (counted.reads++, db.statement("PRAGMA data_version").pluck().get() as number), checkMs);
  const tasks = await SqlTaskStore.open(sql, { watch });
  const governance = new SqlGovernanceStore(sql, new AbsentGovernance(watch, 100));
  return { db, watch, tasks, governance, counted };
}

describe("one change watch for the SQLite read caches", () => {
  it("a task read and a governance read that both miss ask the counter once, and neither asks again within the interval", async () => {
    const file = freshFile();
    const { db, tasks, governance, counted } = await caches(file, 60_000);
    try {
      await tasks.create(task("t1"), "alice");
      // both caches miss: one counter read between them
      expect((await tasks.view("t1"))?.task.status.state).toBe("working");
      expect(await governance.presence("t1")).toEqual(none);
      expect(counted.reads).toBe(1);
      for (let i = 0; i < 20; i++) {
        await tasks.view("t1");
        await governance.presence("t1");
      }
      expect(counted.reads).toBe(1);
      expect(cachedViews(tasks)).toBe(1);
    } finally {
      db.close();
    }
  });

  it("through openStorage: both caches share PRAGMA data_version, and a foreign commit seen by either clears both", async () => {
    const file = freshFile();
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
    const db = storage.database!;
    let reads = 0;
    const statement = db.statement.bind(db);
    db.statement = (text: string) => {
      if (text === "PRAGMA data_version") reads++;
      return statement(text);
    };
    const later = () => new Promise((r) => setTimeout(r, DEFAULT_CHANGE_CHECK_MS + 20));
    const other = pinDatabase(new Database(file));
    try {
      await storage.tasks.create(task("t1"), "alice");
      await later();
      reads = 0;
      expect((await storage.tasks.view("t1"))?.task.status.state).toBe("working");
      expect(await storage.governance.presence("t1")).toEqual(none);
      expect(reads).toBe(1);
      // another connection completes the task and gives it a trail entry
      prepare(other, "UPDATE a2a_tasks SET task_json = ?, state = 'completed' WHERE id = 't1'").run(JSON.stringify(task("t1", "completed")));
      other.exec(insertTrail("t1"));
      await later();
      // the task read sees the move and clears both: the governance read that follows asks nothing and reads anew
      expect((await storage.tasks.view("t1"))?.task.status.state).toBe("completed");
      expect(reads).toBe(2);
      expect(await storage.governance.presence("t1")).toEqual({ trail: true, bindings: false });
      expect(reads).toBe(2);
    } finally {
      other.close();
      await storage.close();
    }
  });

  it("a read in flight when the other cache's check clears keeps nothing (it may predate the commit)", async () => {
    const file = freshFile();
    const { db, tasks, governance } = await caches(file, 0);
    const other = pinDatabase(new Database(file));
    try {
      await tasks.create(task("t1"), "alice");
      // a governance read runs its statement at once, then a foreign commit, then a task read's check clears both
      const presence = governance.presence("t1");
      other.exec(insertTrail("t1"));
      await tasks.view("t2");
      expect(await presence).toEqual(none); // what it read before the commit
      expect(await governance.presence("t1")).toEqual({ trail: true, bindings: false });
      // the same the other way round
      const view = tasks.view("t1");
      prepare(other, "UPDATE a2a_tasks SET task_json = ? WHERE id = 't1'").run(JSON.stringify(task("t1", "completed")));
      await governance.presence("t2");
      expect((await view)?.task.status.state).toBe("working");
      expect((await tasks.view("t1"))?.task.status.state).toBe("completed");
    } finally {
      other.close();
      db.close();
    }
  });

  it("a failing counter: GetTask's task read fails, the governance cache answers unknown, and the next call asks again", async () => {
    const file = freshFile();
    await (await openStorage({ backend: "sqlite", url: `sqlite:///${file}` })).close();
    const db = openDatabase({ kind: "file", path: file });
    const sql = new Kysely<SqlSchema>({ dialect: sqliteDialect(db) });
    let failing = false;
    let reads = 0;
    const watch = new ChangeWatch(() => {
      reads++;
      if (failing) throw new Error("disk I/O error");
      return 1;
    }, 0);
    const tasks = await SqlTaskStore.open(sql, { watch });
    const absent = new AbsentGovernance(watch, 100);
    try {
      await tasks.create(task("t1"), "alice");
      await tasks.view("t1");
      absent.absent("t1", absent.reading());
      expect(absent.has("t1")).toBe(true);
      failing = true;
      await rejectsA2AError(() => tasks.view("t1"), "TASK_STORE_UNAVAILABLE", { operation: "tasks.view" });
      expect(absent.has("t1")).toBe(false);
      expect(reads).toBe(4);
      failing = false;
      expect((await tasks.view("t1"))?.task.id).toBe("t1");
      expect(reads).toBe(5);
      watch.closing();
      expect(cachedViews(tasks)).toBe(0);
      await rejectsA2AError(() => tasks.view("t1"), "TASK_STORE_UNAVAILABLE", { operation: "tasks.view" });
      expect(absent.has("t1")).toBe(false);
      expect(reads).toBe(5); // closed: the counter is not asked
    } finally {
      db.close();
    }
  });
});
