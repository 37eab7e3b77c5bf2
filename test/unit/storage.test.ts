// Persistence: SQLite-only checks — the task read cache, file hardening, durability across reopen, migrations,
// schema-version refusal, runtime failure mapping — and the store URL parser. Each store's behaviour on every backend
// is in its own suite (task-store, session-store, push-outbox, interrupt-store, audit-store, governance, sql-stores).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { rejectsA2AError } from "../support/errors.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";
import type { Task, TaskState } from "../../src/protocol/model.js";
import { Kysely } from "kysely";
import { sqliteDialect } from "../../src/storage/sql/sqlite-dialect.js";
import type { SqlSchema } from "../../src/storage/sql/schema.js";
import { ChangeWatch, DEFAULT_CHANGE_CHECK_MS } from "../../src/storage/change-watch.js";
import { SqlTaskStore } from "../../src/storage/tasks-sql.js";
import {
  LATEST_SCHEMA_VERSION,
  MIGRATIONS,
  migrate,
  openDatabase,
  openStorage,
  parseStoreBackend,
  parseStoreUrl,
  readSchemaVersion,
  redactUrl,
  SCHEMA_NAME,
  sessionScopeKey,
  StorageError,
  describeStoreLocation,
  type Storage,
} from "../../src/storage/index.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-storage-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;
const freshDir = (): string => path.join(tmpRoot, `case-${++seq}`);

const ts = (second: number): string => new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString();

function makeTask(id: string, opts: { contextId?: string; state?: TaskState; at?: string } = {}): Task {
  return {
    id,
    contextId: opts.contextId ?? "ctx-1",
    status: { state: opts.state ?? "working", timestamp: opts.at ?? ts(0) },
    history: [{ messageId: `m-${id}`, role: "user", parts: [{ kind: "text", text: `hello ${id}` }] }],
  };
}

async function expectStorageError(fn: () => unknown, code: string, message?: RegExp): Promise<void> {
  let caught: unknown;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(StorageError);
  expect((caught as StorageError).code).toBe(code);
  if (message !== undefined) expect((caught as StorageError).message).toMatch(message);
}

// -----------------------------------------------------------------------------------------------------------------

describe("sqlite specifics", () => {
  const dbUrl = (file: string) => `sqlite:///${file}`;
  const mode = (p: string) => fs.statSync(p).mode & 0o777;

  it("a prepared read outside a transaction open on the connection waits for its end (never sees its uncommitted rows)", async () => {
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(path.join(freshDir(), "a2a.db")), taskCacheSize: 0 });
    try {
      let during: Promise<unknown> | undefined;
      const rolledBack = storage.atomically(async (tx) => {
        await tx.tasks.create(makeTask("t1"), "alice");
        during = storage.tasks.view("t1"); // the store's own instance, not the transaction's
        await new Promise((r) => setTimeout(r, 20));
        throw new Error("roll back");
      });
      await expect(rolledBack).rejects.toThrow();
      expect(await during).toBeUndefined();
      // with the connection free it reads at once
      await storage.tasks.create(makeTask("t2"), "alice");
      expect((await storage.tasks.view("t2"))?.task.id).toBe("t2");
    } finally {
      await storage.close();
    }
  });

  describe("the read cache of view()", () => {
    const cached = (storage: Storage): number => (storage.tasks as unknown as { cachedViews: number }).cachedViews;
    const storage0 = (tasks: SqlTaskStore): Storage => ({ tasks }) as unknown as Storage;

    it("keeps at most A2A_TASK_STORE_CACHE_SIZE tasks, dropping the least recently read, and answers the same either way", async () => {
      const storage = await openStorage({ backend: "sqlite", url: dbUrl(path.join(freshDir(), "a2a.db")), taskCacheSize: 2 });
      const off = await openStorage({ backend: "sqlite", url: dbUrl(path.join(freshDir(), "a2a.db")), taskCacheSize: 0 });
      try {
        for (const s of [storage, off]) for (const id of ["t1", "t2", "t3"]) await s.tasks.create(makeTask(id), "alice");
        const first = (await storage.tasks.view("t1"));
        await storage.tasks.view("t2");
        expect((await storage.tasks.view("t1"))).toBe(first); // t1 read again: t2 is now the least recent
        await storage.tasks.view("t3");
        expect(cached(storage)).toBe(2);
        expect((await storage.tasks.view("t1"))).toBe(first); // kept
        expect((await storage.tasks.view("t2"))).not.toBe((await storage.tasks.view("t3"))); // t2 was read anew
        for (const id of ["t1", "t2", "t3", "nope"]) expect((await off.tasks.view(id))).toEqual((await storage.tasks.view(id)));
        expect(cached(off)).toBe(0);
        expect((await off.tasks.view("t1"))).not.toBe((await off.tasks.view("t1")));
      } finally {
        storage.close();
        off.close();
      }
    });

    it("sees what another connection commits to the same file within DEFAULT_CHANGE_CHECK_MS", async () => {
      const file = path.join(freshDir(), "a2a.db");
      const storage = await openStorage({ backend: "sqlite", url: dbUrl(file) });
      const other = pinDatabase(new Database(file));
      const later = () => new Promise((r) => setTimeout(r, DEFAULT_CHANGE_CHECK_MS + 20));
      try {
        await storage.tasks.create(makeTask("t1"), "alice");
        expect((await storage.tasks.view("t1"))?.task.status.state).toBe("working");
        expect(cached(storage)).toBe(1);
        const completed = makeTask("t1", { state: "completed", at: ts(3) });
        prepare(other, "UPDATE a2a_tasks SET task_json = ?, state = 'completed', owner = 'bob' WHERE id = 't1'").run(JSON.stringify(completed));
        await later();
        expect((await storage.tasks.view("t1"))).toEqual({ task: completed, owner: "bob" });
        prepare(other, "DELETE FROM a2a_tasks WHERE id = 't1'").run();
        await later();
        expect((await storage.tasks.view("t1"))).toBeUndefined();
      } finally {
        other.close();
        storage.close();
      }
    });

    it("asks the change watch's counter at most once per interval; its own writes are seen at once", async () => {
      const file = path.join(freshDir(), "a2a.db");
      await (await openStorage({ backend: "sqlite", url: dbUrl(file) })).close();
      const db = openDatabase({ kind: "file", path: file });
      let asked = 0;
      let version = 1;
      const tasks = await SqlTaskStore.open(new Kysely<SqlSchema>({ dialect: sqliteDialect(db) }), { watch: new ChangeWatch(() => (asked++, version), 60_000) });
      try {
        await tasks.create(makeTask("t1"), "alice");
        for (let i = 0; i < 50; i++) expect((await tasks.view("t1"))?.task.status.state).toBe("working");
        expect(asked).toBe(1);
        await tasks.save(makeTask("t1", { state: "completed", at: ts(2) }));
        expect((await tasks.view("t1"))?.task.status.state).toBe("completed");
        version = 2; // another process committed: not looked at again within the minute
        expect((await tasks.view("t1"))?.task.status.state).toBe("completed");
        expect(cached(storage0(tasks))).toBe(1);
        expect(asked).toBe(1);
        const every = await SqlTaskStore.open(new Kysely<SqlSchema>({ dialect: sqliteDialect(db) }), { watch: new ChangeWatch(() => (asked++, version), 0) });
        for (let i = 0; i < 5; i++) await every.view("t1");
        expect(asked).toBe(6);
      } finally {
        db.close();
      }
    });

    it("caches nothing read inside a transaction that is then rolled back", async () => {
      const storage = await openStorage({ backend: "sqlite", url: dbUrl(path.join(freshDir(), "a2a.db")) });
      try {
        await storage.tasks.create(makeTask("t1"), "alice");
        await expect(
          storage.atomically(async (tx) => {
            await tx.tasks.save(makeTask("t1", { state: "completed", at: ts(4) }));
            expect((await tx.tasks.view("t1"))?.task.status.state).toBe("completed"); // the transaction's own write
            throw new Error("rolled back");
          }),
        ).rejects.toThrow(/rolled back/);
        expect((await storage.tasks.view("t1"))?.task.status.state).toBe("working");
        expect((await storage.tasks.get("t1"))?.task.status.state).toBe("working");
      } finally {
        await storage.close();
      }
    });

    it("never answers from the cache once the database is unusable", async () => {
      const storage = await openStorage({ backend: "sqlite", url: dbUrl(path.join(freshDir(), "a2a.db")) });
      await storage.tasks.create(makeTask("t1"), "alice");
      expect((await storage.tasks.view("t1"))).toBeDefined();
      expect(cached(storage)).toBe(1);
      storage.close();
      await rejectsA2AError(() => storage.tasks.view("t1"), "TASK_STORE_UNAVAILABLE", { operation: "tasks.view" });
    });

    it("a save that loses to a stored terminal state leaves the terminal task readable", async () => {
      const storage = await openStorage({ backend: "sqlite", url: dbUrl(path.join(freshDir(), "a2a.db")) });
      try {
        await storage.tasks.create(makeTask("t1"), "alice");
        await storage.tasks.save(makeTask("t1", { state: "canceled", at: ts(1) }));
        expect((await storage.tasks.view("t1"))?.task.status.state).toBe("canceled");
        expect((await storage.tasks.save(makeTask("t1", { state: "completed", at: ts(2) })))).toEqual({ applied: false, reason: "terminal", state: "canceled" });
        expect((await storage.tasks.view("t1"))?.task.status).toEqual({ state: "canceled", timestamp: ts(1) });
      } finally {
        storage.close();
      }
    });
  });

  it("creates the directory 0700 and the file (and -wal/-shm) 0600", async () => {
    const dir = path.join(freshDir(), "nested", "deeper");
    const file = path.join(dir, "a2a.db");
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    try {
      await storage.tasks.create(makeTask("t1"), "alice");
      expect(mode(dir)).toBe(0o700);
      expect(mode(path.dirname(dir))).toBe(0o700);
      expect(mode(file)).toBe(0o600);
      for (const suffix of ["-wal", "-shm"]) if (fs.existsSync(file + suffix)) expect(mode(file + suffix)).toBe(0o600);
      expect(fs.existsSync(`${file}-wal`)).toBe(true);
    } finally {
      storage.close();
    }
  });

  it("forces an existing file to 0600 and leaves an existing directory alone", async () => {
    const dir = freshDir();
    fs.mkdirSync(dir, { mode: 0o755 });
    fs.chmodSync(dir, 0o755);
    const file = path.join(dir, "a2a.db");
    fs.writeFileSync(file, "", { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    await (await openStorage({ backend: "sqlite", url: dbUrl(file) })).close();
    expect(mode(file)).toBe(0o600);
    expect(mode(dir)).toBe(0o755);
  });

  it("refuses symlinks and non-regular files", async () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    const target = path.join(dir, "real.db");
    fs.writeFileSync(target, "");
    const link = path.join(dir, "link.db");
    fs.symlinkSync(target, link);
    expectStorageError(() => openStorage({ backend: "sqlite", url: dbUrl(link) }), "UNSAFE_PATH", /symbolic link/);
    const dangling = path.join(dir, "dangling.db");
    fs.symlinkSync(path.join(dir, "nowhere.db"), dangling);
    expectStorageError(() => openStorage({ backend: "sqlite", url: dbUrl(dangling) }), "UNSAFE_PATH", /symbolic link/);
    expect(fs.existsSync(path.join(dir, "nowhere.db"))).toBe(false);
    const sub = path.join(dir, "sub.db");
    fs.mkdirSync(sub);
    expectStorageError(() => openStorage({ backend: "sqlite", url: dbUrl(sub) }), "UNSAFE_PATH", /not a regular file/);
    const withWal = path.join(dir, "wal.db");
    fs.symlinkSync(target, `${withWal}-wal`);
    expectStorageError(() => openStorage({ backend: "sqlite", url: dbUrl(withWal) }), "UNSAFE_PATH", /-wal/);
  });

  it("refuses a file that is not a database", async () => {
    const file = path.join(freshDir(), "junk.db");
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, "this is not a sqlite database, not at all".repeat(40));
    expectStorageError(() => openStorage({ backend: "sqlite", url: dbUrl(file) }), "OPEN_FAILED");
  });

  it("keeps everything across close and reopen, including page tokens", async () => {
    const file = path.join(freshDir(), "a2a.db");
    const first = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    await first.tasks.create(makeTask("t1", { at: ts(1) }), "alice", { sessionId: "ses_1" });
    await first.tasks.create(makeTask("t2", { at: ts(2) }), "alice");
    await first.tasks.save(makeTask("t1", { state: "completed", at: ts(3) }));
    await first.sessions.setBinding("alice", "c1", "", "ses_1");
    await first.sessions.setOwner("ses_1", "alice");
    await first.sessions.claim("ses_2", "bob", 3600);
    await first.pushConfigs.set({ taskId: "t1", id: "p", url: "https://x.example/" });
    const token = (await first.tasks.list("alice", { pageSize: 1 })).nextPageToken;
    first.close();
    first.close(); // idempotent
    expect(!fs.existsSync(`${file}-wal`) || fs.statSync(`${file}-wal`).size === 0).toBe(true); // checkpointed

    const second = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    try {
      expect((await second.tasks.get("t1"))).toMatchObject({ owner: "alice", sessionId: "ses_1", task: { status: { state: "completed" } } });
      expect((await second.tasks.save(makeTask("t1", { state: "failed" }))).applied).toBe(false);
      expect((await second.tasks.list("alice", { pageSize: 1, pageToken: token })).tasks.map((t) => t.id)).toEqual(["t2"]);
      expect((await second.sessions.getBinding("alice", "c1", ""))).toBe("ses_1");
      expect((await second.sessions.getOwner("ses_1"))).toBe("alice");
      expect((await second.sessions.getClaim("ses_2"))?.owner).toBe("bob");
      expect(await second.pushConfigs.list("t1")).toEqual([{ taskId: "t1", id: "p", url: "https://x.example/" }]);
      expect(await second.tasks.count()).toBe(2);
    } finally {
      second.close();
    }
  });

  it("sets the durability pragmas", async () => {
    const db = openDatabase({ kind: "file", path: path.join(freshDir(), "a2a.db") });
    try {
      expect(prepare(db.db, "PRAGMA journal_mode").pluck().get()).toBe("wal");
      expect(prepare(db.db, "PRAGMA busy_timeout").pluck().get()).toBe(30000);
      expect(prepare(db.db, "PRAGMA synchronous").pluck().get()).toBe(1); // NORMAL
      expect(prepare(db.db, "PRAGMA foreign_keys").pluck().get()).toBe(1);
      // Read performance: 32 MiB page cache, the file memory-mapped.
      expect(prepare(db.db, "PRAGMA cache_size").pluck().get()).toBe(-32768);
      expect(prepare(db.db, "PRAGMA mmap_size").pluck().get()).toBe(268435456);
      expect(db.migration).toEqual({ from: 0, to: LATEST_SCHEMA_VERSION, applied: MIGRATIONS.map((m) => m.version) });
    } finally {
      db.close();
    }
  });

  it("applies migrations idempotently and atomically", async () => {
    const raw = pinDatabase(new Database(":memory:"));
    try {
      expect(migrate(raw)).toEqual({ from: 0, to: LATEST_SCHEMA_VERSION, applied: MIGRATIONS.map((m) => m.version) });
      expect(migrate(raw)).toEqual({ from: LATEST_SCHEMA_VERSION, to: LATEST_SCHEMA_VERSION, applied: [] });
      expect(readSchemaVersion(raw)).toBe(LATEST_SCHEMA_VERSION);
      const tables = prepare(raw, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
      expect(tables).toEqual([
        "a2a_audit_log", "a2a_governance_trail", "a2a_interrupt_requests", "a2a_pending_session_claims", "a2a_push_configs", "a2a_push_outbox", "a2a_schema_version",
        "a2a_session_bindings", "a2a_session_messages", "a2a_session_owners", "a2a_store_meta", "a2a_subtask_calls", "a2a_task_counts", "a2a_tasks", "sqlite_sequence",
      ]);

      // A failing migration leaves neither its tables nor a version bump behind.
      const failing = [
        { version: 1, description: "base", up: () => {} },
        { version: 2, description: "half", up: (db: Database.Database) => { db.exec("CREATE TABLE half_done (x)"); throw new Error("boom"); } },
      ];
      expect(() => migrate(raw, failing, "other_scope")).toThrow("boom");
      expect(readSchemaVersion(raw, "other_scope")).toBe(1);
      expect(prepare(raw, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'half_done'").pluck().get()).toBe(0);
      expect(() => migrate(raw, [{ version: 2, description: "gap", up: () => {} }], "gap_scope")).toThrow(/contiguous/);
    } finally {
      raw.close();
    }
  });

  it("migrations 4 and 13: a v3 database with data keeps working, and ends with an index per listing order", async () => {
    const file = path.join(freshDir(), "a2a.db");
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const raw = pinDatabase(new Database(file));
    expect(migrate(raw, MIGRATIONS.slice(0, 3))).toEqual({ from: 0, to: 3, applied: [1, 2, 3] });
    raw.close();
    fs.chmodSync(file, 0o600);
    const indexesOf = (db: Database.Database) =>
      prepare(db, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'a2a_tasks' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all();
    const v3 = pinDatabase(new Database(file));
    expect(indexesOf(v3)).toEqual(["a2a_tasks_context_ts", "a2a_tasks_owner_context_ts", "a2a_tasks_owner_ts", "a2a_tasks_state", "a2a_tasks_ts"]);
    v3.close();
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    try {
      const at = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();
      await storage.tasks.create(makeTask("a1", { at: at(1) }), "alice");
      await storage.tasks.create(makeTask("b1", { at: at(2) }), "bob");
      await storage.tasks.create(makeTask("a2", { at: at(3), contextId: "ctx-x" }), "alice");
      expect((await storage.tasks.list(undefined)).tasks.map((t) => t.id)).toEqual(["a2", "b1", "a1"]);
      expect((await storage.tasks.list(undefined, { contextId: "ctx-x" })).tasks.map((t) => t.id)).toEqual(["a2"]);
      expect((await storage.tasks.list("alice")).tasks.map((t) => t.id)).toEqual(["a2", "a1"]);
    } finally {
      storage.close();
    }
    const v4 = pinDatabase(new Database(file));
    try {
      expect(readSchemaVersion(v4)).toBe(LATEST_SCHEMA_VERSION);
      expect(indexesOf(v4)).toEqual([
        "a2a_tasks_context_ts", "a2a_tasks_owner_context_ts", "a2a_tasks_owner_state_ts", "a2a_tasks_owner_ts", "a2a_tasks_state_ts", "a2a_tasks_ts", "a2a_tasks_unfinished",
      ]);
      // The per-owner listings read their index (no sort of the whole table).
      const plan = prepare(v4, "EXPLAIN QUERY PLAN SELECT id FROM a2a_tasks WHERE owner = ? ORDER BY status_timestamp DESC, id ASC LIMIT 10")
        .all("alice")
        .map((r) => (r as { detail: string }).detail)
        .join("; ");
      expect(plan).toContain("a2a_tasks_owner_ts");
    } finally {
      v4.close();
    }
  });

  it("refuses a database with a newer schema version", async () => {
    const file = path.join(freshDir(), "a2a.db");
    await (await openStorage({ backend: "sqlite", url: dbUrl(file) })).close();
    const raw = pinDatabase(new Database(file));
    prepare(raw, "UPDATE a2a_schema_version SET version = ? WHERE name = ?").run(LATEST_SCHEMA_VERSION + 1, SCHEMA_NAME);
    raw.close();
    expectStorageError(() => openStorage({ backend: "sqlite", url: dbUrl(file) }), "SCHEMA_TOO_NEW", new RegExp(`schema version ${LATEST_SCHEMA_VERSION + 1} .* only knows version ${LATEST_SCHEMA_VERSION}`));
  });

  it("turns runtime failures into TASK_STORE_UNAVAILABLE with the operation", async () => {
    const file = path.join(freshDir(), "a2a.db");
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(file), busyTimeoutMs: 20 });
    await storage.tasks.create(makeTask("t1"), "alice");
    const locker = pinDatabase(new Database(file));
    try {
      prepare(locker, "BEGIN IMMEDIATE").run();
      await rejectsA2AError(() => storage.tasks.save(makeTask("t1", { state: "completed" })), "TASK_STORE_UNAVAILABLE", { operation: "tasks.save" });
      await rejectsA2AError(() => storage.sessions.claim("ses_1", "a", 5), "TASK_STORE_UNAVAILABLE", { operation: "sessions.claim" });
      expect((await storage.tasks.get("t1"))?.task.status.state).toBe("working"); // reads still work under WAL; nothing half-written
      prepare(locker, "ROLLBACK").run();
      expect((await storage.tasks.save(makeTask("t1", { state: "completed" }))).applied).toBe(true);
    } finally {
      locker.close();
      storage.close();
    }
    await rejectsA2AError(() => storage.tasks.get("t1"), "TASK_STORE_UNAVAILABLE", { operation: "tasks.get" });
    await rejectsA2AError(() => storage.pushConfigs.list("t1"), "TASK_STORE_UNAVAILABLE", { operation: "pushConfigs.list" });
  });

  it("supports sqlite:///:memory:", async () => {
    const storage = await openStorage({ backend: "sqlite", url: "sqlite:///:memory:" });
    await storage.tasks.create(makeTask("t1"), "alice");
    expect((await storage.tasks.count())).toBe(1);
    expect(storage.description).toBe("sqlite (in-memory)");
    storage.close();
  });
});

describe("store URL and backend", () => {
  const cwd = "/srv/app";
  it.each([
    ["sqlite:///./opencode-a2a.db", { kind: "file", path: "/srv/app/opencode-a2a.db" }],
    ["sqlite:///data/a2a.db", { kind: "file", path: "/srv/app/data/a2a.db" }],
    ["sqlite:///../up.db", { kind: "file", path: "/srv/up.db" }],
    ["sqlite:////var/lib/a2a/a2a.db", { kind: "file", path: "/var/lib/a2a/a2a.db" }],
    ["sqlite+aiosqlite:///./opencode-a2a.db", { kind: "file", path: "/srv/app/opencode-a2a.db" }],
    ["sqlite+aiosqlite:////abs.db", { kind: "file", path: "/abs.db" }],
    ["SQLite:///x.db", { kind: "file", path: "/srv/app/x.db" }],
    ["sqlite:///:memory:", { kind: "memory" }],
    ["sqlite+aiosqlite:///:memory:", { kind: "memory" }],
  ])("%s", (url, expected) => {
    expect(parseStoreUrl(url, cwd)).toEqual(expected);
  });

  it("defaults to ./opencode-a2a.db", async () => {
    expect(parseStoreUrl(undefined, cwd)).toEqual({ kind: "file", path: "/srv/app/opencode-a2a.db" });
  });

  it.each(["sqlite://", "sqlite:///", "sqlite:////", "sqlite:///a.db?mode=ro", "file:a.db", "", "sqlite:///dir/", "mysql+aiomysql:///x"])(
    "rejects %j naming the variable and the accepted forms",
    (url) => {
      expectStorageError(() => parseStoreUrl(url, cwd), "INVALID_URL", /A2A_TASK_STORE_DATABASE_URL=.*Accepted forms: sqlite:\/\/\/relative.*postgres:\/\//);
    },
  );

  it("a PostgreSQL URL names the PostgreSQL store; a malformed one is refused without its password", async () => {
    for (const url of ["postgres://bob:hunter2@db.example:5432/a2a", "postgresql://bob:hunter2@db.example/a2a", "postgres:///a2a?host=/run/postgresql"]) {
      expect(parseStoreUrl(url, cwd)).toEqual({ kind: "postgres", url });
    }
    expect(describeStoreLocation({ kind: "postgres", url: "postgres://bob:hunter2@db.example:5432/a2a" })).toBe("postgresql postgres://bob:***@db.example:5432/a2a");
    for (const url of ["postgres://bob:hunter2@[::1/a2a", "postgresql://bob:hunter2@/a2a"]) {
      let message = "";
      try {
        parseStoreUrl(url, cwd);
      } catch (err) {
        expect((err as StorageError).code).toBe("INVALID_URL");
        message = (err as Error).message;
      }
      expect(message).toMatch(/A2A_TASK_STORE_DATABASE_URL=/);
      expect(message).not.toContain("hunter2");
    }
  });

  it.each([
    ["postgres://bob:s3cr%40t@db:5432/x", "postgres://bob:***@db:5432/x"],
    ["postgres://bob:p@ss@h/db", "postgres://bob:***@h/db"],
    ["postgres://bob:a/b@h/db", "postgres://bob:***@h/db"],
    ["postgres://h/db?password=hunter2&x=1", "postgres://h/db?password=***&x=1"],
    ["postgresql://bob@db/x", "postgresql://bob@db/x"],
    ["sqlite:///a@b.db", "sqlite:///a@b.db"],
  ])("redactUrl(%j) hides the password", (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it("parses the backend", async () => {
    expect(parseStoreBackend(undefined)).toBe("sqlite");
    expect(parseStoreBackend("database")).toBe("sqlite");
    expect(parseStoreBackend("SQLite")).toBe("sqlite");
    expect(parseStoreBackend("memory")).toBe("memory");
    expectStorageError(() => parseStoreBackend("redis"), "INVALID_BACKEND", /A2A_TASK_STORE_BACKEND/);
  });

  it("scope keys: workspace wins over directory", async () => {
    expect(sessionScopeKey()).toBe("");
    expect(sessionScopeKey({ directory: "/w" })).toBe("directory:/w");
    expect(sessionScopeKey({ directory: "/w", workspaceId: "ws" })).toBe("workspace:ws");
  });
});
