// The persistence entry point: openStorage() gives the task store, session store, push config store, interrupt
// registry store, audit log, subtask calls, governance trail and session messages of one backend — SQLite
// (A2A_TASK_STORE_BACKEND=database, the default; a hardened local file or :memory:), PostgreSQL (the same, with a
// postgres:// A2A_TASK_STORE_DATABASE_URL) or "memory" (the same stores on a private in-memory SQLite database) —
// plus close(). Every store is written once with Kysely for both SQL dialects (./sql/).
import { SqlAuditStore, type AuditStore } from "./audit.js";
import { DEFAULT_BUSY_TIMEOUT_MS, openDatabase, type StoreDatabase } from "./database.js";
import { AbsentGovernance, SqlGovernanceStore, type GovernanceStore } from "./governance.js";
import { SqlMessageStore, type MessageStore } from "./messages.js";
import { Kysely } from "kysely";
import { sqliteDialect } from "./sql/sqlite-dialect.js";
import { CHECKPOINT_EVERY_MS, SQLITE_AUTOCHECKPOINT_PAGES, SqliteReaders, type CheckpointStats } from "./sql/readers.js";
import type { SqlSchema } from "./sql/schema.js";
import { storeCall } from "./sql/rows.js";
import { runsDirectly } from "./sql/prepared.js";
import type { StoreTx } from "./tx.js";
import { SqlInterruptStore, type InterruptStore } from "./interrupts.js";
import { SqlPushConfigStore, type PushConfigStore } from "./push-configs.js";
import { SqlPushOutboxStore, type PushOutboxStore } from "./push-outbox.js";
import { SqlSessionStore, type Clock, type SessionStore } from "./sessions.js";
import { SqlSubtaskCallStore, type SubtaskCallStore } from "./subtask-calls.js";
import { SqlTaskStore, type TaskStore } from "./tasks.js";
import { ChangeWatch } from "./change-watch.js";
import type { Pool } from "pg";
import { DEFAULT_TASK_CACHE_SIZE, DEFAULT_TASK_STORE_DATABASE_URL, DEFAULT_TASK_STORE_READERS, describeStoreLocation, parseStoreUrl, redactUrl, StorageError, type StoreLocation } from "../config/store-url.js";

/** What a store is opened as (A2A_TASK_STORE_BACKEND): the URL decides between SQLite and PostgreSQL. */
export type StoreBackend = "sqlite" | "memory";

export interface StorageOptions {
  backend: StoreBackend;
  /** A2A_TASK_STORE_DATABASE_URL (sqlite:/// or postgres://; not for the memory backend); default sqlite:///./opencode-a2a.db. */
  url?: string;
  /** Base for relative database paths (default process.cwd()). */
  cwd?: string;
  /** Clock for claims and bookkeeping (epoch ms); tests inject one. */
  now?: Clock;
  /** SQLite busy_timeout in ms (default 30000). */
  busyTimeoutMs?: number;
  /** A2A_TASK_STORE_CACHE_SIZE: tasks the SQLite store keeps parsed for reads (default DEFAULT_TASK_CACHE_SIZE, 0 = off). */
  taskCacheSize?: number;
  /**
   * A2A_TASK_STORE_READERS: reader threads of a SQLite file for listings and their totals (default
   * DEFAULT_TASK_STORE_READERS; 0 = they run on the gateway's own connection). The memory backend has none.
   */
  taskReaders?: number;
}

export interface Storage {
  backend: StoreBackend | "postgres";
  /** For the start-up log, e.g. "sqlite file /srv/a2a/opencode-a2a.db" or "memory". */
  description: string;
  tasks: TaskStore;
  sessions: SessionStore;
  pushConfigs: PushConfigStore;
  /** Push notifications waiting for delivery. */
  pushOutbox: PushOutboxStore;
  /**
   * Runs `fn` all or nothing, with the task and push stores bound to one transaction (SQLite: BEGIN IMMEDIATE; other
   * users of the connection wait for it). A task's state change and the push notifications it queues are written
   * together. `fn` must only use the stores: the transaction holds the connection until it returns.
   */
  atomically<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /** Pending permission/question bindings (a2a.interrupt.*, opencode.permissions/questions.list). */
  interrupts: InterruptStore;
  /** Who called which method on which task/session, and the outcome (GET /admin/audit). */
  audit: AuditStore;
  /** Calls of opencode.subtasks.run and their items. */
  subtaskCalls: SubtaskCallStore;
  /** The governance trail: decisions on interrupt requests and governor feedback, per task. */
  governance: GovernanceStore;
  /** Messages between OpenCode sessions (seed 002). */
  messages: MessageStore;
  /** The query builder every SQL store runs on (SQLite: the same connection as `database`). */
  sql: Kysely<SqlSchema>;
  /** The PostgreSQL pool (postgres backend): the gateways' bus and leases (src/cluster) use it. */
  postgres?: { pool: Pool; url: string };
  /**
   * A SQLite file's listings run on reader threads, started on first use: this starts one now if none runs (a
   * gateway calls it once it serves, ../server/warm.ts, so that its first listing does not wait for a thread to boot).
   * The first thread started also takes over the WAL checkpoints from the gateway's connection (./sql/readers.ts).
   */
  warmThreads?(): void;
  /** What the WAL checkpoints of a SQLite file's reader threads have done (/metrics: a2a_sqlite_wal_*). */
  walCheckpoints?(): Readonly<CheckpointStats>;
  /** The SQLite database (sqlite and memory backends): diagnostics and fault-injection tests. */
  database?: StoreDatabase;
  close(): Promise<void>;
}

/** A2A_TASK_STORE_BACKEND: "database" (seed 000's name) or "sqlite" → sqlite, "memory" → memory; default sqlite. */
export function parseStoreBackend(value: string | undefined): StoreBackend {
  const v = (value ?? "").trim().toLowerCase();
  if (v === "" || v === "database" || v === "sqlite") return "sqlite";
  if (v === "memory") return "memory";
  throw new StorageError("INVALID_BACKEND", `A2A_TASK_STORE_BACKEND=${JSON.stringify(value)} is invalid: use "database" (SQLite) or "memory"`);
}

/** Open the store. Throws StorageError for a bad URL, an unsafe file, a database in use or a schema newer than this build. */
export async function openStorage(options: StorageOptions): Promise<Storage> {
  const now = options.now ?? Date.now;
  // The memory backend is the same stores on a private in-memory SQLite database: one implementation, one behaviour.
  const location: StoreLocation = options.backend === "memory" ? { kind: "memory" } : parseStoreUrl(options.url ?? DEFAULT_TASK_STORE_DATABASE_URL, options.cwd);
  if (location.kind === "postgres") return openPostgresStorage(location.url, now, options.taskCacheSize);
  const db: StoreDatabase = openDatabase(location, options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs });
  const readerCount = options.taskReaders ?? DEFAULT_TASK_STORE_READERS;
  const readers =
    location.kind === "file" && readerCount > 0
      ? new SqliteReaders({
          file: location.path,
          size: readerCount,
          busyTimeoutMs: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS,
          checkpointEveryMs: CHECKPOINT_EVERY_MS,
          // While a reader thread checkpoints, the gateway's connection does not.
          onCheckpointDuty: (held) => {
            if (db.isOpen) db.db.exec(`PRAGMA wal_autocheckpoint = ${held ? 0 : SQLITE_AUTOCHECKPOINT_PAGES}`);
          },
        })
      : undefined;
  try {
    // The stores run on the same connection (./sql/sqlite-dialect.ts); GetTask reads go through the task read cache,
    // listings through the reader threads.
    const dialect = sqliteDialect(db, readers === undefined ? undefined : () => readers.wrote());
    const sql = new Kysely<SqlSchema>({ dialect });
    runsDirectly(sql, dialect.runNow); // prepared queries (GetTask's reads, audit inserts) skip Kysely's executor when the connection is free
    // Both read caches (tasks, tasks without governance) learn of other connections' commits from one watch: a GetTask
    // that misses both asks PRAGMA data_version once.
    const watch = new ChangeWatch(() => db.statement("PRAGMA data_version").pluck().get() as number);
    const tasks = await SqlTaskStore.open(sql, {
      watch,
      ...(options.taskCacheSize === undefined ? {} : { cacheSize: options.taskCacheSize }),
      ...(readers === undefined ? {} : { readers }),
    });
    // Kept like the task read cache (same size, off with it).
    const cacheSize = options.taskCacheSize ?? DEFAULT_TASK_CACHE_SIZE;
    const absent = cacheSize > 0 ? new AbsentGovernance(watch, cacheSize) : undefined;
    return {
      ...stores(sql, tasks, now, absent),
      backend: options.backend === "memory" ? "memory" : "sqlite",
      description: options.backend === "memory" ? "memory (a private in-memory SQLite database)" : describeStoreLocation(location),
      database: db,
      ...(readers === undefined ? {} : { warmThreads: () => readers.warm(), walCheckpoints: () => readers.checkpoints }),
      close: async () => {
        watch.closing();
        if (readers === undefined || readers.threads === 0) {
          db.close();
          await readers?.close();
          return;
        }
        // The reader connections close first: the gateway's, closing last, checkpoints the WAL and removes -wal and
        // -shm. Meanwhile every call fails as on a closed database.
        db.refuse();
        await readers.close();
        db.close();
      },
    };
  } catch (err) {
    db.close();
    await readers?.close();
    throw err;
  }
}

/**
 * PostgreSQL: a pool and the schema migrated under an advisory lock (./sql/postgres.ts). Any number of gateways may
 * share the database: the live side of a task (its events, cancel, interrupt replies, the sweep of a dead gateway's
 * tasks) goes between them through src/cluster, which uses `postgres.pool`.
 */
async function openPostgresStorage(url: string, now: Clock, cacheSize: number | undefined): Promise<Storage> {
  const { openPostgres } = await import("./sql/postgres.js"); // the pg client is loaded for PostgreSQL only
  const pg = await openPostgres(url);
  try {
    // No read cache for GetTask (other gateways write the same rows); listings keep their rows (./listed-rows.ts).
    const tasks = await SqlTaskStore.open(pg.db, cacheSize === undefined ? {} : { cacheSize });
    return {
      ...stores(pg.db, tasks, now),
      backend: "postgres",
      description: describeStoreLocation({ kind: "postgres", url }),
      postgres: { pool: pg.pool, url },
      close: () => pg.close(),
    };
  } catch (err) {
    await pg.close().catch(() => undefined);
    if (err instanceof StorageError) throw err;
    throw new StorageError("OPEN_FAILED", `Cannot open the PostgreSQL task store ${redactUrl(url)}: ${(err as Error).message}`, { cause: err });
  }
}

/** Every store on one query builder, and the transaction that binds the task and push stores to one connection. */
function stores(
  sql: Kysely<SqlSchema>,
  tasks: SqlTaskStore,
  now: Clock,
  absent?: AbsentGovernance,
): Omit<Storage, "backend" | "description" | "database" | "postgres" | "close"> {
  return {
    sql,
    tasks,
    sessions: new SqlSessionStore(sql, now),
    pushConfigs: new SqlPushConfigStore(sql, now),
    pushOutbox: new SqlPushOutboxStore(sql, now),
    atomically: (fn) =>
      storeCall("atomically", () =>
        sql.transaction().execute((trx) => fn({ tasks: tasks.within(trx), pushConfigs: new SqlPushConfigStore(trx, now), pushOutbox: new SqlPushOutboxStore(trx, now) })),
      ),
    interrupts: new SqlInterruptStore(sql, now, absent),
    audit: new SqlAuditStore(sql),
    subtaskCalls: new SqlSubtaskCallStore(sql),
    governance: new SqlGovernanceStore(sql, absent),
    messages: new SqlMessageStore(sql),
  };
}

export { StoreDatabase, openDatabase, storeUnavailable, DEFAULT_BUSY_TIMEOUT_MS } from "./database.js";
export { migrate, readSchemaVersion, MIGRATIONS, LATEST_SCHEMA_VERSION, SCHEMA_NAME, type Migration, type MigrationResult } from "./migrations.js";
export * from "./tasks.js";
export * from "./sessions.js";
export * from "./push-configs.js";
export * from "./interrupts.js";
export * from "./audit.js";
export * from "./subtask-calls.js";
export * from "./governance.js";
export * from "./messages.js";
export type { StoreTx } from "./tx.js";
export * from "../config/store-url.js";
