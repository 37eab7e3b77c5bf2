// The task store written once with Kysely for SQLite and PostgreSQL (a2a_tasks); the contract is in ./task-records.ts.
// First terminal state wins in SQL: the save is one UPDATE whose WHERE clause refuses a stored terminal state, atomic
// against any other writer (another request, another gateway on the same database).
import crypto from "node:crypto";
import { PostgresAdapter, type InsertResult, type Kysely, type UpdateResult } from "kysely";
import { DEFAULT_TASK_CACHE_SIZE } from "../config/store-url.js";
import type { ListParams, Task, TaskState } from "../protocol/model.js";
import type { ChangeWatch } from "./change-watch.js";
import { storeUnavailable } from "./database.js";
import { PreparedQuery } from "./sql/prepared.js";
import type { SqliteReaders } from "./sql/readers.js";
import { boundedSet, lruGet } from "../util/lru.js";
import { storeCall } from "./sql/rows.js";
import type { SqlSchema } from "./sql/schema.js";
import { LISTED_ROWS, ListedRows } from "./listed-rows.js";
import { countTasks, listTasks, orphanTasks, type GrowingReads } from "./tasks-list.js";
import { canonicalTimestamp, deepFreeze, invalid, PageTokens, resolveListQuery, serialize, TERMINAL, type SaveResult, type StoredTask, type StoredTaskView, type OrphanScope, type TaskExtra, type TaskListResult, type TaskStore } from "./task-records.js";

export interface SqlTaskStoreOptions {
  /**
   * Read cache (A2A_TASK_STORE_CACHE_SIZE): how many tasks view() keeps parsed and frozen, least recently read
   * dropped first; 0 = off. Default DEFAULT_TASK_CACHE_SIZE. Only with `watch`. 0 also turns off the listings' rows
   * kept parsed (./listed-rows.ts: LISTED_ROWS, with or without a watch).
   */
  cacheSize?: number;
  /**
   * What tells the cache of other connections' commits (./change-watch.ts), shared with the connection's other caches.
   * Without it nothing is cached: on PostgreSQL other gateways write the same rows. Writes through this store are seen
   * at once, other connections' commits within the watch's interval.
   */
  watch?: ChangeWatch;
  /** A SQLite file's reader threads: listings and their totals run there (./sql/readers.ts). */
  readers?: SqliteReaders;
}

/** create()'s row, in the order of its INSERT's arguments. */
type CreateArgs = [
  id: string,
  contextId: string,
  owner: string,
  state: string,
  statusTimestamp: string,
  sessionId: string | null,
  directory: string | null,
  acceptedOutputModes: string | null,
  taskJson: string,
  instance: string | null,
  createdAt: string,
  updatedAt: string,
];

/** What the store objects bound to one database (and to its transactions) share. */
interface Shared {
  tokens: PageTokens;
  views: Map<string, StoredTaskView>;
  cacheSize: number;
  /** Set when cacheSize > 0. */
  watch: ChangeWatch | undefined;
  reads: GrowingReads;
  /**
   * Counts the writes through this store, and the watch's clears: a read that raced either does not cache what it
   * read.
   */
  writes: number;
}

/** view()'s read (./sql/prepared.ts): only what a read needs, no binding columns to fetch and decode. */
const viewRow = new PreparedQuery((q, id: string) => q.selectFrom("a2a_tasks").select(["owner", "task_json"]).where("id", "=", id));

/** create()'s INSERT (every new task); nulls are bound values too. */
const createRow = new PreparedQuery<CreateArgs, InsertResult>((q, id, contextId, owner, state, statusTimestamp, sessionId, directory, modes, taskJson, instance, createdAt, updatedAt) =>
  q
    .insertInto("a2a_tasks")
    .values({
      id,
      context_id: contextId,
      owner,
      state,
      status_timestamp: statusTimestamp,
      session_id: sessionId,
      directory,
      accepted_output_modes: modes,
      task_json: taskJson,
      instance,
      created_at: createdAt,
      updated_at: updatedAt,
    })
    .onConflict((oc) => oc.column("id").doNothing()),
);

/** save()'s UPDATE (a turn's write). The terminal guard is the WHERE clause itself: atomic against any other writer. */
const saveRow = new PreparedQuery<[taskJson: string, state: string, statusTimestamp: string, contextId: string, updatedAt: string, id: string], UpdateResult>(
  (q, taskJson, state, statusTimestamp, contextId, updatedAt, id) =>
    q
      .updateTable("a2a_tasks")
      .set({ task_json: taskJson, state, status_timestamp: statusTimestamp, context_id: contextId, updated_at: updatedAt })
      .where("id", "=", id)
      .where("state", "not in", TERMINAL),
);

const PAGE_TOKEN_KEY = "page_token_key";

/**
 * Tasks in a2a_tasks: indexed columns (state, context_id, owner, status_timestamp) next to the JSON snapshot.
 *
 * view() (GetTask) is served, on SQLite, from a bounded read cache of parsed, deeply frozen snapshots. It stays exact:
 *   - a save through this store drops the task's entry before it writes, and a read that overlapped a write does not
 *     fill the cache;
 *   - another process's commits are noticed through the change watch (./change-watch.ts: SQLite's `PRAGMA
 *     data_version`, asked at most every 100 ms, shared with the connection's other caches): the whole cache is
 *     dropped when it moved. Asking before every read cost about a tenth of a cached GetTask; only another process
 *     writing the same file needs it, and it is seen at most that late. When the counter fails (the database is
 *     unusable or closed) view() fails with TASK_STORE_UNAVAILABLE, as a read would, and asks again at the next call;
 *   - nothing read inside a transaction is cached (it may yet be rolled back).
 */
export class SqlTaskStore implements TaskStore {
  private constructor(
    private readonly db: Kysely<SqlSchema>,
    private readonly shared: Shared,
    private readonly inTransaction: boolean,
  ) {}

  /** Opens the store on `db`: reads (or makes, once for every gateway on the database) the page token key. */
  static async open(db: Kysely<SqlSchema>, options: SqlTaskStoreOptions = {}): Promise<SqlTaskStore> {
    const key = await storeCall("tasks.open", async () => {
      await db
        .insertInto("a2a_store_meta")
        .values({ key: PAGE_TOKEN_KEY, value: crypto.randomBytes(32).toString("hex") })
        .onConflict((oc) => oc.column("key").doNothing())
        .execute();
      const row = await db.selectFrom("a2a_store_meta").select("value").where("key", "=", PAGE_TOKEN_KEY).executeTakeFirstOrThrow();
      return Buffer.from(row.value, "hex");
    });
    const { watch } = options;
    const cacheSize = watch === undefined ? 0 : (options.cacheSize ?? DEFAULT_TASK_CACHE_SIZE);
    const shared: Shared = {
      tokens: new PageTokens(key),
      views: new Map(),
      cacheSize,
      watch: cacheSize > 0 ? watch : undefined,
      reads: {
        dialect: db.getExecutor().adapter instanceof PostgresAdapter ? "postgres" : "sqlite",
        ...(options.readers === undefined ? {} : { readers: options.readers }),
        ...(options.cacheSize === 0 ? {} : { listed: new ListedRows(LISTED_ROWS) }),
      },
      writes: 0,
    };
    shared.watch?.subscribe(() => {
      shared.views.clear();
      shared.writes++;
    });
    return new SqlTaskStore(db, shared, false);
  }

  /**
   * The same store writing through `trx` (Storage.atomically): it shares the read cache's invalidation and never fills
   * it. Its listings do keep rows (./listed-rows.ts): a row is reused only for the same text, committed or not.
   */
  within(trx: Kysely<SqlSchema>): SqlTaskStore {
    return new SqlTaskStore(trx, this.shared, true);
  }

  async create(task: Task, owner: string, extra: TaskExtra = {}): Promise<void> {
    this.shared.writes++;
    const stamp = new Date().toISOString();
    const modes = extra.acceptedOutputModes === undefined ? null : JSON.stringify(extra.acceptedOutputModes);
    const status = canonicalTimestamp(task.status.timestamp);
    const row: CreateArgs = [task.id, task.contextId, owner, task.status.state, status, extra.sessionId ?? null, extra.directory ?? null, modes, serialize(task), extra.instance ?? null, stamp, stamp];
    const result = await storeCall("tasks.create", () => createRow.run(this.db, ...row));
    if (Number(result.numAffectedRows ?? 0n) === 0) throw invalid("id", `task ${task.id} already exists`);
  }

  async get(id: string): Promise<StoredTask | undefined> {
    const row = await storeCall("tasks.get", () =>
      this.db
        .selectFrom("a2a_tasks")
        .select(["owner", "task_json", "session_id", "directory", "accepted_output_modes", "created_at", "updated_at", "instance"])
        .where("id", "=", id)
        .executeTakeFirst(),
    );
    if (row === undefined) return undefined;
    const out: StoredTask = { task: JSON.parse(row.task_json) as Task, owner: row.owner, createdAt: row.created_at, updatedAt: row.updated_at };
    if (row.accepted_output_modes !== null) out.acceptedOutputModes = JSON.parse(row.accepted_output_modes) as string[];
    if (row.session_id !== null) out.sessionId = row.session_id;
    if (row.directory !== null) out.directory = row.directory;
    if (row.instance !== null) out.instance = row.instance;
    return out;
  }

  async view(id: string): Promise<StoredTaskView | undefined> {
    const shared = this.shared;
    const caching = shared.cacheSize > 0 && !this.inTransaction;
    if (caching) {
      try {
        shared.watch!.check();
      } catch (err) {
        throw storeUnavailable("tasks.view", err);
      }
      const hit = lruGet(shared.views, id);
      if (hit !== undefined) return hit;
    }
    const writes = shared.writes;
    const row = (await storeCall("tasks.view", () => viewRow.execute(this.db, id)))[0];
    if (row === undefined) return undefined;
    const view: StoredTaskView = { task: JSON.parse(row.task_json) as Task, owner: row.owner };
    if (caching && writes === shared.writes) {
      deepFreeze(view.task);
      boundedSet(shared.views, id, view, shared.cacheSize);
    }
    return view;
  }

  /** Tasks view() holds parsed (for tests). */
  get cachedViews(): number {
    return this.shared.views.size;
  }

  async save(task: Task): Promise<SaveResult> {
    this.shared.writes++;
    this.shared.views.delete(task.id);
    return storeCall("tasks.save", async () => {
      const result = await saveRow.run(this.db, serialize(task), task.status.state, canonicalTimestamp(task.status.timestamp), task.contextId, new Date().toISOString(), task.id);
      if (Number(result.numAffectedRows) === 1) return { applied: true } as const;
      const row = await this.db.selectFrom("a2a_tasks").select("state").where("id", "=", task.id).executeTakeFirst();
      return row === undefined ? ({ applied: false, reason: "not_found" } as const) : ({ applied: false, reason: "terminal", state: row.state as TaskState } as const);
    });
  }

  async updateExtra(id: string, extra: TaskExtra): Promise<boolean> {
    const set: { session_id?: string; directory?: string; accepted_output_modes?: string } = {};
    if (extra.sessionId !== undefined) set.session_id = extra.sessionId;
    if (extra.directory !== undefined) set.directory = extra.directory;
    if (extra.acceptedOutputModes !== undefined) set.accepted_output_modes = JSON.stringify(extra.acceptedOutputModes);
    return storeCall("tasks.updateExtra", async () => {
      if (Object.keys(set).length === 0) {
        return (await this.db.selectFrom("a2a_tasks").select("id").where("id", "=", id).executeTakeFirst()) !== undefined;
      }
      const result = await this.db.updateTable("a2a_tasks").set(set).where("id", "=", id).executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    });
  }

  async orphans(scope: OrphanScope | undefined, limit: number): Promise<Task[]> {
    const rows = await storeCall("tasks.orphans", () => orphanTasks(this.db, this.shared.reads, scope, limit));
    return rows.map((json) => JSON.parse(json) as Task);
  }

  async list(owner: string | undefined, params: ListParams = {}): Promise<TaskListResult> {
    const q = resolveListQuery(owner, params, this.shared.tokens);
    return storeCall("tasks.list", () => listTasks(this.db, this.shared.reads, this.inTransaction, q, this.shared.tokens));
  }

  async count(): Promise<number> {
    return storeCall("tasks.count", () => countTasks(this.db, this.shared.reads, this.inTransaction));
  }
}
