// Task listings at any size (src/storage/tasks-list.ts, src/storage/sql/task-listing-ddl.ts, src/storage/sql/readers.ts):
//   - totals come from counts the triggers keep: after a random run of creates, state changes, context and owner
//     changes and deletes (through the store and behind its back), every filter set's total equals a count of the
//     tasks themselves, on SQLite and PostgreSQL, and no per-context count row is left at zero;
//   - migration 13 (SQLite) / 12 (PostgreSQL) fills the counts in from tasks already stored;
//   - every query a listing or the restart sweep can send reads an index in list order: SQLite's plans name the
//     expected index and never scan the table or sort; PostgreSQL's plans, with scans and sorts priced out, have no
//     Seq Scan and no Sort;
//   - reader threads: the same pages as the gateway's own connection, a long read leaves the event loop free, a
//     failure is TASK_STORE_UNAVAILABLE, a dead thread is replaced, close() fails what waits.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CompiledQuery, Kysely, sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import type { ListParams, Task, TaskState } from "../../src/protocol/model.js";
import { migrate, MIGRATIONS, openStorage, type Storage } from "../../src/storage/index.js";
import { openPostgres } from "../../src/storage/sql/postgres.js";
import { SqliteReaders } from "../../src/storage/sql/readers.js";
import type { SqlSchema } from "../../src/storage/sql/schema.js";
import { sqliteDialect } from "../../src/storage/sql/sqlite-dialect.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";
import { listingIndex, listingQueries, orphansQuery } from "../../src/storage/tasks-list.js";
import { PageTokens, resolveListQuery } from "../../src/storage/task-records.js";
import { rejectsA2AError } from "../support/errors.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-task-listing-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;
const freshFile = (): string => path.join(tmpRoot, `case-${++seq}`, "a2a.db");

const STATES: TaskState[] = ["submitted", "working", "input-required", "auth-required", "completed", "canceled", "failed", "rejected"];
const OWNERS = ["alice", "bob", "carol"];
const CONTEXTS = ["ctx-a", "ctx-b", "ctx-c", "ctx-d"];

/** A small deterministic generator (the run is the same every time). */
function random(seed: number): (n: number) => number {
  let x = seed;
  return (n) => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x % n;
  };
}

const at = (s: number): string => new Date(Date.UTC(2025, 0, 1, 0, 0, 0, s)).toISOString();

function makeTask(id: string, contextId: string, state: TaskState, stamp: string): Task {
  return { id, contextId, status: { state, timestamp: stamp }, history: [] };
}

/** Every filter set a listing can have, for one owner or the admin. */
function filterSets(): { owner: string | undefined; params: ListParams }[] {
  const out: { owner: string | undefined; params: ListParams }[] = [];
  for (const owner of [undefined, ...OWNERS]) {
    for (const contextId of [undefined, ...CONTEXTS.slice(0, 2)]) {
      for (const state of [undefined, "working", "completed"] as const) {
        for (const after of [undefined, at(150)]) {
          const params: ListParams = {};
          if (contextId !== undefined) params.contextId = contextId;
          if (state !== undefined) params.state = state;
          if (after !== undefined) params.statusTimestampAfter = after;
          out.push({ owner, params });
        }
      }
    }
  }
  return out;
}

interface Row {
  id: string;
  owner: string;
  context_id: string;
  state: string;
  status_timestamp: string;
}

function expectedTotal(rows: Row[], owner: string | undefined, p: ListParams): number {
  return rows.filter(
    (r) =>
      (owner === undefined || r.owner === owner) &&
      (p.contextId === undefined || r.context_id === p.contextId) &&
      (p.state === undefined || r.state === p.state) &&
      (p.statusTimestampAfter === undefined || r.status_timestamp > p.statusTimestampAfter),
  ).length;
}

/** Random writes through the store and behind its back (raw SQL: another writer, an operator). */
async function churn(storage: Storage, rawExec: (statement: string, ...args: string[]) => Promise<void>): Promise<void> {
  const next = random(7);
  for (let i = 0; i < 120; i++) {
    await storage.tasks.create(makeTask(`t${i}`, CONTEXTS[next(4)]!, STATES[next(4)]!, at(next(300))), OWNERS[next(3)]!);
  }
  for (let i = 0; i < 200; i++) {
    const id = `t${next(120)}`;
    const current = await storage.tasks.get(id);
    if (current === undefined) continue;
    await storage.tasks.save({ ...current.task, status: { state: STATES[next(STATES.length)]!, timestamp: at(next(300)) } });
  }
  await rawExec("UPDATE a2a_tasks SET context_id = 'ctx-b' WHERE id = 't3'");
  await rawExec("UPDATE a2a_tasks SET owner = 'carol', state = 'working' WHERE id = 't4'");
  await rawExec("UPDATE a2a_tasks SET updated_at = 'x' WHERE id = 't5'");
  await rawExec("DELETE FROM a2a_tasks WHERE id IN ('t6', 't7', 't8')");
}

async function checkTotals(storage: Storage, rows: Row[]): Promise<void> {
  for (const { owner, params } of filterSets()) {
    const listed = await storage.tasks.list(owner, params);
    expect({ owner, params, total: listed.total }).toEqual({ owner, params, total: expectedTotal(rows, owner, params) });
    expect(listed.totalSize).toBe(listed.total);
  }
  expect(await storage.tasks.count()).toBe(rows.length);
}

describe("totals from the counts the triggers keep", () => {
  it("SQLite: every filter set's total is the tasks' own count after random writes from the store and behind it", async () => {
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${freshFile()}` });
    const db = storage.database!.db;
    try {
      await churn(storage, async (statement) => void db.exec(statement));
      const rows = prepare(db, "SELECT id, owner, context_id, state, status_timestamp FROM a2a_tasks").all() as Row[];
      expect(rows.length).toBe(117);
      await checkTotals(storage, rows);
      expect(prepare(db, "SELECT COUNT(*) FROM a2a_task_counts WHERE kind IN (2, 3) AND n = 0").pluck().get()).toBe(0);
    } finally {
      await storage.close();
    }
  });

  it("SQLite migration 13 counts the tasks stored before it", async () => {
    const file = freshFile();
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const Database = (await import("better-sqlite3")).default;
    const raw = pinDatabase(new Database(file));
    migrate(raw, MIGRATIONS.slice(0, 12));
    const insert = prepare(
      raw,
      "INSERT INTO a2a_tasks (id, context_id, owner, state, status_timestamp, task_json, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'x', 'x')",
    );
    const next = random(11);
    for (let i = 0; i < 60; i++) {
      const task = makeTask(`old${i}`, CONTEXTS[next(4)]!, STATES[next(8)]!, at(next(300)));
      insert.run(task.id, task.contextId, OWNERS[next(3)], task.status.state, task.status.timestamp, JSON.stringify(task));
    }
    raw.close();
    fs.chmodSync(file, 0o600);
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
    try {
      await storage.tasks.create(makeTask("new1", "ctx-a", "working", at(200)), "alice");
      await storage.tasks.save(makeTask("old0", (await storage.tasks.get("old0"))!.task.contextId, "completed", at(299)));
      const rows = prepare(storage.database!.db, "SELECT id, owner, context_id, state, status_timestamp FROM a2a_tasks").all() as Row[];
      await checkTotals(storage, rows);
    } finally {
      await storage.close();
    }
  });

  it.skipIf(postgresUrl === undefined)("PostgreSQL: the same, and migration 12 counts the tasks stored before it", async () => {
    const database = await freshDatabase();
    const pg = await openPostgres(database.url);
    try {
      // Back to version 11 with tasks in it, then migration 12 again.
      await sql.raw(`DROP TABLE a2a_task_counts CASCADE; DROP FUNCTION a2a_tasks_count() CASCADE; UPDATE a2a_schema_version SET version = 11`).execute(pg.db);
      const next = random(13);
      for (let i = 0; i < 60; i++) {
        const task = makeTask(`old${i}`, CONTEXTS[next(4)]!, STATES[next(8)]!, at(next(300)));
        await sql`INSERT INTO a2a_tasks (id, context_id, owner, state, status_timestamp, task_json, created_at, updated_at)
                  VALUES (${task.id}, ${task.contextId}, ${OWNERS[next(3)]!}, ${task.status.state}, ${task.status.timestamp}, ${JSON.stringify(task)}, 'x', 'x')`.execute(pg.db);
      }
    } finally {
      await pg.close();
    }
    const storage = await openStorage({ backend: "sqlite", url: database.url });
    try {
      expect(storage.backend).toBe("postgres");
      await churn(storage, async (statement) => void (await sql.raw(statement).execute(storage.sql)));
      const rows = (await sql<Row>`SELECT id, owner, context_id, state, status_timestamp FROM a2a_tasks`.execute(storage.sql)).rows;
      expect(rows.length).toBe(117 + 60);
      await checkTotals(storage, rows);
      const zeros = await sql<{ n: string }>`SELECT COUNT(*) AS n FROM a2a_task_counts WHERE kind IN (2, 3) AND n = 0`.execute(storage.sql);
      expect(Number(zeros.rows[0]!.n)).toBe(0);
      const shards = await sql<{ n: string }>`SELECT COUNT(DISTINCT shard) AS n FROM a2a_task_counts`.execute(storage.sql);
      expect(Number(shards.rows[0]!.n)).toBeGreaterThan(1);
    } finally {
      await storage.close();
      await database.drop();
    }
  });
});

/** Every shape of listing query: each filter set, first page, a page token, an offset. */
function queryShapes(tokens: PageTokens): ReturnType<typeof resolveListQuery>[] {
  const out: ReturnType<typeof resolveListQuery>[] = [];
  for (const { owner, params } of filterSets()) {
    out.push(resolveListQuery(owner, params, tokens));
    out.push(resolveListQuery(owner, { ...params, offset: 10, limit: 5 }, tokens));
    const scope = resolveListQuery(owner, params, tokens).scope;
    out.push(resolveListQuery(owner, { ...params, pageSize: 5, pageToken: tokens.encode(scope, { ts: at(100), id: "t50" }) }, tokens));
  }
  return out;
}

describe("every listing and sweep query reads an index in list order", () => {
  const tokens = new PageTokens(Buffer.alloc(32, 1));

  it("SQLite: each plan names its index, never scans the table, never sorts", async () => {
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${freshFile()}` });
    const db = storage.database!.db;
    const planOf = (compiled: { sql: string; parameters: readonly unknown[] }): string =>
      (prepare(db, `EXPLAIN QUERY PLAN ${compiled.sql}`).all(...compiled.parameters) as { detail: string }[]).map((r) => r.detail).join("; ");
    try {
      for (const q of queryShapes(tokens)) {
        const { page, total } = listingQueries(storage.sql, "sqlite", q);
        const plan = planOf(page);
        expect(plan, page.sql).toMatch(new RegExp(`USING (COVERING )?INDEX ${listingIndex(q)}\\b`));
        expect(plan, page.sql).not.toMatch(/TEMP B-TREE|SCAN a2a_tasks$|SCAN a2a_tasks;/);
        const totalPlan = planOf(total);
        expect(totalPlan, total.sql).not.toMatch(/SCAN a2a_tasks(?! USING)|TEMP B-TREE/);
        if (q.after === undefined) expect(totalPlan).toMatch(/a2a_task_counts USING PRIMARY KEY|SEARCH a2a_task_counts/);
      }
      // SQLite sweeps without a scope (one gateway per file).
      const plan = planOf(orphansQuery(storage.sql, "sqlite", undefined, 100));
      expect(plan).toMatch(/a2a_tasks_unfinished/);
      expect(plan).not.toMatch(/TEMP B-TREE/);
    } finally {
      await storage.close();
    }
  });

  it.skipIf(postgresUrl === undefined)("PostgreSQL: with scans and sorts priced out, no plan has a Seq Scan or a Sort", async () => {
    const database = await freshDatabase();
    const pg = await openPostgres(database.url);
    try {
      await pg.db.connection().execute(async (db) => {
        await sql`SET enable_seqscan = off`.execute(db);
        await sql`SET enable_sort = off`.execute(db);
        const planOf = async (compiled: { sql: string; parameters: readonly unknown[] }): Promise<string> =>
          (await db.executeQuery<{ "QUERY PLAN": string }>(CompiledQuery.raw(`EXPLAIN ${compiled.sql}`, [...compiled.parameters]))).rows.map((r) => r["QUERY PLAN"]).join("\n");
        for (const q of queryShapes(tokens)) {
          const { page, total, pageWithTotal } = listingQueries(db as Kysely<SqlSchema>, "postgres", q);
          expect(pageWithTotal).toBeDefined();
          for (const compiled of [page, total, pageWithTotal!]) {
            const plan = await planOf(compiled);
            expect(plan, compiled.sql).not.toMatch(/Seq Scan on a2a_tasks|Sort\b/);
          }
        }
        for (const scope of [undefined, {}, { stale: "gw-1" }]) {
          const plan = await planOf(orphansQuery(db as Kysely<SqlSchema>, "postgres", scope, 100));
          expect(plan).toMatch(/a2a_tasks_unfinished/);
        }
      });
    } finally {
      await pg.close();
      await database.drop();
    }
  });
});

/** The reader pool of a SQLite file store (private to the store). */
const readersOf = (storage: Storage): SqliteReaders => (storage.tasks as unknown as { shared: { reads: { readers: SqliteReaders } } }).shared.reads.readers;

describe("reader threads", () => {
  it("give the same pages and totals as the gateway's own connection, and start only when used", async () => {
    const file = freshFile();
    const threaded = await openStorage({ backend: "sqlite", url: `sqlite:///${file}`, taskReaders: 2 });
    try {
      const readers = readersOf(threaded);
      expect(readers.threads).toBe(0);
      await churn(threaded, async (statement) => void threaded.database!.db.exec(statement));
      const own = new Kysely<SqlSchema>({ dialect: sqliteDialect(threaded.database!) });
      const tokens = new PageTokens(Buffer.alloc(32, 2));
      for (const q of queryShapes(tokens).slice(0, 60)) {
        const { page } = listingQueries(own, "sqlite", q);
        const mine = (await own.executeQuery(page)).rows;
        const [theirs] = await readers.run([page]);
        expect(theirs).toEqual(mine);
      }
      // A listing right after a write sees it (WAL: the reader's snapshot starts after the commit).
      await threaded.tasks.create(makeTask("fresh", "ctx-z", "working", at(999)), "alice");
      const listed = await threaded.tasks.list("alice", { contextId: "ctx-z" });
      expect(listed.tasks.map((t) => t.id)).toEqual(["fresh"]);
      expect(listed.total).toBe(1);
      expect(readers.threads).toBeGreaterThan(0);
      expect(readers.threads).toBeLessThanOrEqual(2);
    } finally {
      await threaded.close();
    }
    // The reader connections closed before the gateway's own: it removed -wal and -shm, as without readers.
    expect(["-wal", "-shm"].filter((suffix) => fs.existsSync(file + suffix))).toEqual([]);
    // None runs at open; warmThreads() (a gateway calls it once it serves) starts one, so a first listing does not
    // wait for a thread to boot; a second call starts no other.
    const warmed = await openStorage({ backend: "sqlite", url: `sqlite:///${file}`, taskReaders: 2 });
    try {
      const readers = readersOf(warmed);
      expect(readers.threads).toBe(0);
      warmed.warmThreads!();
      warmed.warmThreads!();
      expect(readers.threads).toBe(1);
      expect((await warmed.tasks.list("alice", { contextId: "ctx-z" })).total).toBe(1);
      expect(readers.threads).toBe(1);
    } finally {
      await warmed.close();
    }
    // Called after close (a late background start): no thread.
    const closed = await openStorage({ backend: "sqlite", url: `sqlite:///${file}`, taskReaders: 2 });
    const closedReaders = readersOf(closed);
    await closed.close();
    closed.warmThreads!();
    expect(closedReaders.threads).toBe(0);
    // The memory backend has no reader threads to warm.
    const memory = await openStorage({ backend: "memory" });
    expect(memory.warmThreads).toBeUndefined();
    await memory.close();
  });

  it("a long read leaves the event loop free", async () => {
    const file = freshFile();
    await (await openStorage({ backend: "sqlite", url: `sqlite:///${file}` })).close();
    const readers = new SqliteReaders({ file, size: 1, busyTimeoutMs: 1000 });
    try {
      await readers.run([CompiledQuery.raw("SELECT 1 AS one")]);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 5);
      const started = performance.now();
      const [rows] = await readers.run([
        CompiledQuery.raw("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT COUNT(*) AS n FROM c"),
      ]);
      const took = performance.now() - started;
      clearInterval(timer);
      expect(rows).toEqual([{ n: 3000000n }]);
      // The timer ran all along: about one tick per 5 ms of the read.
      expect(ticks).toBeGreaterThanOrEqual(Math.floor(took / 5 / 3));
      expect(ticks).toBeGreaterThan(3);
    } finally {
      await readers.close();
    }
  });

  it("fail as TASK_STORE_UNAVAILABLE, refuse writes, replace a dead thread, and fail what waits at close", async () => {
    const file = freshFile();
    const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${file}`, taskReaders: 1 });
    const readers = readersOf(storage);
    try {
      await storage.tasks.create(makeTask("t1", "ctx-a", "working", at(1)), "alice");
      await expect(readers.run([CompiledQuery.raw("DELETE FROM a2a_tasks")])).rejects.toMatchObject({ code: "A2A_NOT_A_READ" });
      await expect(readers.run([CompiledQuery.raw("SELECT nope FROM a2a_tasks")])).rejects.toMatchObject({ code: "SQLITE_ERROR" });
      expect((await storage.tasks.list("alice")).total).toBe(1);
      // A thread that dies fails its call; the next call gets a new thread.
      const dying = readers.run([
        CompiledQuery.raw("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT COUNT(*) FROM c"),
      ]);
      expect(readers.threads).toBe(1);
      const [thread] = [...(readers as unknown as { started: Set<{ worker: { terminate(): Promise<number> } }> }).started];
      await thread!.worker.terminate();
      await expect(dying).rejects.toThrow(/exited/);
      expect((await storage.tasks.list("alice")).tasks.map((t) => t.id)).toEqual(["t1"]);
      // close() fails what is still waiting, and the store answers TASK_STORE_UNAVAILABLE after it.
      const waiting = expect(
        readers.run([CompiledQuery.raw("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT COUNT(*) FROM c")]),
      ).rejects.toThrow(/closed/);
      await storage.close();
      await waiting;
      await rejectsA2AError(() => storage.tasks.list("alice"), "TASK_STORE_UNAVAILABLE", { operation: "tasks.list" });
    } finally {
      await storage.close();
    }
  });
});

describe("listed rows kept parsed (src/storage/listed-rows.ts)", () => {
  /** Lists ctx-a twice, changes a row behind the store's back (raw SQL), lists again. */
  async function relist(storage: Storage, rawExec: (statement: string) => Promise<void>, kept: boolean): Promise<void> {
    await storage.tasks.create(makeTask("kept1", "ctx-a", "working", at(10)), "alice");
    await storage.tasks.create(makeTask("kept2", "ctx-a", "completed", at(20)), "alice");
    await storage.tasks.list("alice", { contextId: "ctx-a" }); // listed once: parsed, not kept
    const first = (await storage.tasks.list("alice", { contextId: "ctx-a" })).tasks;
    const second = (await storage.tasks.list("alice", { contextId: "ctx-a" })).tasks;
    expect(second.map((t) => t.id)).toEqual(["kept2", "kept1"]);
    for (let i = 0; i < 2; i++) {
      expect(second[i] === first[i]).toBe(kept);
      expect(Object.isFrozen(second[i])).toBe(kept);
      expect(second[i]).toEqual(first[i]);
    }
    const changed = { ...makeTask("kept1", "ctx-a", "working", at(10)), metadata: { changed: "behind the store" } };
    await rawExec(`UPDATE a2a_tasks SET task_json = '${JSON.stringify(changed)}' WHERE id = 'kept1'`);
    const third = (await storage.tasks.list("alice", { contextId: "ctx-a" })).tasks;
    expect(third[1]).toEqual(changed);
    expect(third[0] === second[0]).toBe(kept);
    // A page past the end still has its total (PostgreSQL asks for it on its own when no row carries it).
    const past = await storage.tasks.list("alice", { contextId: "ctx-a", offset: 10, limit: 5 });
    expect(past.tasks).toEqual([]);
    expect(past.total).toBe(2);
    expect((await storage.tasks.list("alice", { contextId: "ctx-none" })).total).toBe(0);
  }

  it("SQLite: an unchanged row is the same frozen task, a changed one is read anew; none kept with the cache off", async () => {
    for (const taskCacheSize of [undefined, 0]) {
      const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${freshFile()}`, ...(taskCacheSize === undefined ? {} : { taskCacheSize }) });
      try {
        await relist(storage, async (statement) => void prepare(storage.database!.db, statement).run(), taskCacheSize === undefined);
      } finally {
        await storage.close();
      }
    }
  });

  it.skipIf(postgresUrl === undefined)("PostgreSQL: the same (no change watch: the row's text decides)", async () => {
    for (const taskCacheSize of [undefined, 0]) {
      const database = await freshDatabase();
      const storage = await openStorage({ backend: "sqlite", url: database.url, ...(taskCacheSize === undefined ? {} : { taskCacheSize }) });
      try {
        await relist(storage, async (statement) => void (await sql.raw(statement).execute(storage.sql)), taskCacheSize === undefined);
      } finally {
        await storage.close();
        await database.drop();
      }
    }
  });
});
