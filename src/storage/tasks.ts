// The task store: compact canonical snapshots of the internal Task (src/protocol/model.ts) with the owner and the
// turn's binding (session, directory, accepted output modes), in SQLite or in memory with the same behaviour.
// - First terminal state wins: a save never overwrites a stored terminal state (one conditional UPDATE in SQL).
// - Listing is owner-scoped (undefined owner = admin, all tasks), ordered by status timestamp descending then id
//   ascending, with 0.3 offset pagination (limit/offset → total, hasMore) and 1.0 keyset pagination (pageSize/
//   pageToken → nextPageToken, totalSize). Page tokens are HMAC-signed (timestamp, id) cursors bound to the query's
//   filters, so tampered or foreign tokens are rejected with INVALID_PARAMS.
import crypto from "node:crypto";
import { A2AError } from "../contract/errors.js";
import { TERMINAL_STATES, type ListParams, type Task, type TaskState } from "../protocol/model.js";
import type { StoreDatabase } from "./database.js";
import { DEFAULT_TASK_CACHE_SIZE } from "../config/store-url.js";

export interface TaskExtra {
  acceptedOutputModes?: string[];
  sessionId?: string;
  directory?: string;
}

export interface StoredTask extends TaskExtra {
  task: Task;
  owner: string;
  /** ISO 8601, when the row was created / last written. */
  createdAt: string;
  updatedAt: string;
}

/** What TaskStore.view returns: never to be modified (it may be frozen and shared). */
export interface StoredTaskView {
  readonly task: Task;
  readonly owner: string;
}

/** Freezes a parsed snapshot and everything in it (plain JSON: objects, arrays, primitives). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/** The name src/runtime uses for a stored task. */
export type TaskRecord = StoredTask;

export type SaveResult =
  | { applied: true }
  /** `terminal`: the stored task already reached `state` (terminal) and keeps it; `not_found`: no such task. */
  | { applied: false; reason: "terminal"; state: TaskState }
  | { applied: false; reason: "not_found" };

export interface TaskListResult {
  tasks: Task[];
  /** Tasks matching the filters across all pages (0.3 `total`, 1.0 `totalSize`). */
  total: number;
  totalSize: number;
  hasMore: boolean;
  /** Cursor for the next page; "" on the last page. */
  nextPageToken: string;
  /** The page size that was applied. */
  pageSize: number;
}

export interface TaskStore {
  /** Insert a new task. A duplicate id → A2AError("INVALID_PARAMS"). */
  create(task: Task, owner: string, extra?: TaskExtra): void;
  get(id: string): StoredTask | undefined;
  /**
   * The task and its owner for callers that only read it (GetTask encodes it): unlike get(), the task may be shared
   * between calls and with the store (the memory store keeps it, deeply frozen, until the task is saved again).
   * Optional: a store without it is read through get().
   */
  view?(id: string): StoredTaskView | undefined;
  /** Replace the snapshot unless the stored state is already terminal. */
  save(task: Task): SaveResult;
  /** Update the binding fields of an existing task (only the given keys). Returns false when the task is unknown. */
  updateExtra(id: string, extra: TaskExtra): boolean;
  /** List tasks of `owner` (undefined = every owner). */
  list(owner: string | undefined, params?: ListParams): TaskListResult;
  count(): number;
}

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;
const TERMINAL = [...TERMINAL_STATES];
const KNOWN_STATES: ReadonlySet<string> = new Set<TaskState>([
  "submitted", "working", "input-required", "completed", "canceled", "failed", "rejected", "auth-required", "unknown",
]);

// ---------------------------------------------------------------------------------------------------------------
// Shared pieces

const invalid = (field: string, message: string): A2AError => new A2AError("INVALID_PARAMS", message, { field });

/** Canonical sortable form of a status timestamp (ISO 8601 UTC with milliseconds); unparseable → epoch. */
export function canonicalTimestamp(value: string | undefined): string {
  const ms = value === undefined ? NaN : Date.parse(value);
  return new Date(Number.isNaN(ms) ? 0 : ms).toISOString();
}

function pageSizeOf(value: number | undefined, field: string): number {
  if (value === undefined || value === 0) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(value) || value < 0) throw invalid(field, `${field} must be a positive integer`);
  return Math.min(value, MAX_PAGE_SIZE);
}

interface Cursor {
  ts: string;
  id: string;
}

/** The normalized query: filters, page size, and where the page starts (offset or after a cursor). */
export interface ListQuery {
  owner: string | undefined;
  contextId: string | undefined;
  state: TaskState | undefined;
  after: string | undefined;
  pageSize: number;
  offset: number;
  cursor: Cursor | undefined;
  /** What a page token is bound to. */
  scope: string;
}

/** Signs and verifies page tokens: base64url(JSON [ts, id]) "." base64url(HMAC(scope, payload))[:16 bytes]. */
export class PageTokens {
  constructor(private readonly key: Buffer) {}

  private mac(scope: string, payload: string): Buffer {
    return crypto.createHmac("sha256", this.key).update(scope).update("\n").update(payload).digest().subarray(0, 16);
  }

  encode(scope: string, cursor: Cursor): string {
    const payload = Buffer.from(JSON.stringify([cursor.ts, cursor.id])).toString("base64url");
    return `${payload}.${this.mac(scope, payload).toString("base64url")}`;
  }

  decode(scope: string, token: string): Cursor {
    const bad = () => invalid("pageToken", "pageToken is invalid or does not belong to this query");
    const [payload, sig, extra] = token.split(".");
    if (payload === undefined || sig === undefined || extra !== undefined) throw bad();
    const given = Buffer.from(sig, "base64url");
    const expected = this.mac(scope, payload);
    if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) throw bad();
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    } catch {
      throw bad();
    }
    if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== "string" || typeof parsed[1] !== "string") throw bad();
    return { ts: parsed[0], id: parsed[1] };
  }
}

/** Validate and normalize ListParams for `owner`. */
export function resolveListQuery(owner: string | undefined, params: ListParams, tokens: PageTokens): ListQuery {
  if (params.state !== undefined && !KNOWN_STATES.has(params.state)) throw invalid("state", `unknown task state ${String(params.state)}`);
  let after: string | undefined;
  if (params.statusTimestampAfter !== undefined && params.statusTimestampAfter !== "") {
    const ms = Date.parse(params.statusTimestampAfter);
    if (Number.isNaN(ms)) throw invalid("statusTimestampAfter", "statusTimestampAfter must be an ISO 8601 timestamp");
    after = new Date(ms).toISOString();
  }
  const pageSize = params.pageSize !== undefined ? pageSizeOf(params.pageSize, "pageSize") : pageSizeOf(params.limit, "limit");
  const offset = params.offset ?? 0;
  if (!Number.isInteger(offset) || offset < 0) throw invalid("offset", "offset must be a non-negative integer");
  const contextId = params.contextId === "" ? undefined : params.contextId;
  const scope = JSON.stringify([owner ?? null, contextId ?? null, params.state ?? null, after ?? null]);
  let cursor: Cursor | undefined;
  if (params.pageToken !== undefined && params.pageToken !== "") {
    if (offset > 0) throw invalid("offset", "offset and pageToken cannot be combined");
    cursor = tokens.decode(scope, params.pageToken);
  }
  return { owner, contextId, state: params.state, after, pageSize, offset, cursor, scope };
}

const serialize = (task: Task): string => JSON.stringify(task);
const isTerminalState = (state: string): boolean => TERMINAL_STATES.has(state as TaskState);

// ---------------------------------------------------------------------------------------------------------------
// In memory

interface MemoryRow {
  id: string;
  owner: string;
  contextId: string;
  state: TaskState;
  ts: string;
  json: string;
  /** The parsed snapshot handed out by view(), made on first read and dropped when the snapshot changes. */
  view: StoredTaskView | undefined;
  extra: TaskExtra;
  createdAt: string;
  updatedAt: string;
}

const copyExtra = (extra: TaskExtra): TaskExtra => {
  const out: TaskExtra = {};
  if (extra.acceptedOutputModes !== undefined) out.acceptedOutputModes = [...extra.acceptedOutputModes];
  if (extra.sessionId !== undefined) out.sessionId = extra.sessionId;
  if (extra.directory !== undefined) out.directory = extra.directory;
  return out;
};

/** Tasks in a Map, stored as JSON snapshots so callers never share objects with the store. */
export class MemoryTaskStore implements TaskStore {
  private readonly rows = new Map<string, MemoryRow>();
  private readonly tokens = new PageTokens(crypto.randomBytes(32));

  create(task: Task, owner: string, extra: TaskExtra = {}): void {
    if (this.rows.has(task.id)) throw invalid("id", `task ${task.id} already exists`);
    const stamp = new Date().toISOString();
    this.rows.set(task.id, {
      id: task.id,
      owner,
      contextId: task.contextId,
      state: task.status.state,
      ts: canonicalTimestamp(task.status.timestamp),
      json: serialize(task),
      view: undefined,
      extra: copyExtra(extra),
      createdAt: stamp,
      updatedAt: stamp,
    });
  }

  get(id: string): StoredTask | undefined {
    const row = this.rows.get(id);
    if (row === undefined) return undefined;
    return { task: JSON.parse(row.json) as Task, owner: row.owner, ...copyExtra(row.extra), createdAt: row.createdAt, updatedAt: row.updatedAt };
  }

  view(id: string): StoredTaskView | undefined {
    const row = this.rows.get(id);
    if (row === undefined) return undefined;
    return (row.view ??= { task: deepFreeze(JSON.parse(row.json) as Task), owner: row.owner });
  }

  save(task: Task): SaveResult {
    const row = this.rows.get(task.id);
    if (row === undefined) return { applied: false, reason: "not_found" };
    if (isTerminalState(row.state)) return { applied: false, reason: "terminal", state: row.state };
    row.contextId = task.contextId;
    row.state = task.status.state;
    row.ts = canonicalTimestamp(task.status.timestamp);
    row.json = serialize(task);
    row.view = undefined;
    row.updatedAt = new Date().toISOString();
    return { applied: true };
  }

  updateExtra(id: string, extra: TaskExtra): boolean {
    const row = this.rows.get(id);
    if (row === undefined) return false;
    row.extra = { ...row.extra, ...copyExtra(extra) };
    return true;
  }

  list(owner: string | undefined, params: ListParams = {}): TaskListResult {
    const q = resolveListQuery(owner, params, this.tokens);
    const matching = [...this.rows.values()]
      .filter(
        (r) =>
          (q.owner === undefined || r.owner === q.owner) &&
          (q.contextId === undefined || r.contextId === q.contextId) &&
          (q.state === undefined || r.state === q.state) &&
          (q.after === undefined || r.ts > q.after),
      )
      .sort((a, b) => (a.ts === b.ts ? (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : a.ts > b.ts ? -1 : 1));
    const c = q.cursor;
    const start = c === undefined ? matching : matching.filter((r) => r.ts < c.ts || (r.ts === c.ts && r.id > c.id));
    const window = start.slice(q.offset, q.offset + q.pageSize + 1);
    return page(q, window.map((r) => ({ ts: r.ts, id: r.id, json: r.json })), matching.length, this.tokens);
  }

  count(): number {
    return this.rows.size;
  }
}

/** Build the result from up to pageSize+1 rows in order. */
function page(q: ListQuery, rows: { ts: string; id: string; json: string }[], total: number, tokens: PageTokens): TaskListResult {
  const hasMore = rows.length > q.pageSize;
  const shown = hasMore ? rows.slice(0, q.pageSize) : rows;
  const last = shown[shown.length - 1];
  return {
    tasks: shown.map((r) => JSON.parse(r.json) as Task),
    total,
    totalSize: total,
    hasMore,
    nextPageToken: hasMore && last !== undefined ? tokens.encode(q.scope, { ts: last.ts, id: last.id }) : "",
    pageSize: q.pageSize,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// SQLite

interface SqlRow {
  id: string;
  owner: string;
  task_json: string;
  session_id: string | null;
  directory: string | null;
  accepted_output_modes: string | null;
  created_at: string;
  updated_at: string;
}

const TERMINAL_SQL = TERMINAL.map((s) => `'${s}'`).join(", ");

export interface SqliteTaskStoreOptions {
  /**
   * Read cache (A2A_TASK_STORE_CACHE_SIZE): how many tasks view() keeps parsed and frozen, least recently read
   * dropped first; 0 = off. Default DEFAULT_TASK_CACHE_SIZE.
   */
  cacheSize?: number;
}


/**
 * Tasks in a2a_tasks: indexed columns (state, context_id, owner, status_timestamp) next to the JSON snapshot.
 *
 * view() (GetTask) is served from a bounded read cache of parsed, deeply frozen snapshots. It stays exact:
 *   - a save through this store drops the task's entry before it writes;
 *   - every read first asks SQLite for `PRAGMA data_version`, which changes when another connection (another
 *     process on the same file, a repair by hand) commits; the whole cache is dropped then. The same query fails
 *     like any other read when the database is unusable, so a cached task is never served from a broken store;
 *   - nothing read inside a transaction is cached (it may yet be rolled back).
 */
export class SqliteTaskStore implements TaskStore {
  private readonly tokens: PageTokens;
  readonly #views = new Map<string, StoredTaskView>();
  readonly #cacheSize: number;
  #dataVersion = -1;

  constructor(
    private readonly store: StoreDatabase,
    options: SqliteTaskStoreOptions = {},
  ) {
    this.#cacheSize = options.cacheSize ?? DEFAULT_TASK_CACHE_SIZE;
    this.tokens = new PageTokens(
      store.transaction("tasks.open", () => {
        store
          .statement("INSERT OR IGNORE INTO a2a_store_meta (key, value) VALUES ('page_token_key', ?)")
          .run(crypto.randomBytes(32).toString("hex"));
        const row = store.statement("SELECT value FROM a2a_store_meta WHERE key = 'page_token_key'").get() as { value: string };
        return Buffer.from(row.value, "hex");
      }),
    );
  }

  create(task: Task, owner: string, extra: TaskExtra = {}): void {
    this.store.guard("tasks.create", () => {
      const stamp = new Date().toISOString();
      const result = this.store
        .statement(
          `INSERT INTO a2a_tasks (id, context_id, owner, state, status_timestamp, session_id, directory,
             accepted_output_modes, task_json, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
        )
        .run(
          task.id,
          task.contextId,
          owner,
          task.status.state,
          canonicalTimestamp(task.status.timestamp),
          extra.sessionId ?? null,
          extra.directory ?? null,
          extra.acceptedOutputModes === undefined ? null : JSON.stringify(extra.acceptedOutputModes),
          serialize(task),
          stamp,
          stamp,
        );
      if (result.changes === 0) throw invalid("id", `task ${task.id} already exists`);
    });
  }

  get(id: string): StoredTask | undefined {
    return this.store.guard("tasks.get", () => {
      const row = this.store
        .statement(
          "SELECT id, owner, task_json, session_id, directory, accepted_output_modes, created_at, updated_at FROM a2a_tasks WHERE id = ?",
        )
        .get(id) as SqlRow | undefined;
      if (row === undefined) return undefined;
      const out: StoredTask = { task: JSON.parse(row.task_json) as Task, owner: row.owner, createdAt: row.created_at, updatedAt: row.updated_at };
      if (row.accepted_output_modes !== null) out.acceptedOutputModes = JSON.parse(row.accepted_output_modes) as string[];
      if (row.session_id !== null) out.sessionId = row.session_id;
      if (row.directory !== null) out.directory = row.directory;
      return out;
    });
  }

  view(id: string): StoredTaskView | undefined {
    return this.store.guard("tasks.view", () => {
      const caching = this.#cacheSize > 0;
      if (caching) {
        const version = this.store.statement("PRAGMA data_version").pluck().get() as number;
        if (version !== this.#dataVersion) {
          this.#views.clear();
          this.#dataVersion = version;
        }
        const hit = this.#views.get(id);
        if (hit !== undefined) {
          // Most recently read last: the first key is the one to drop.
          this.#views.delete(id);
          this.#views.set(id, hit);
          return hit;
        }
      }
      // Only what a read needs: no binding columns to fetch and decode.
      const row = this.store.statement("SELECT owner, task_json FROM a2a_tasks WHERE id = ?").get(id) as
        | { owner: string; task_json: string }
        | undefined;
      if (row === undefined) return undefined;
      const view: StoredTaskView = { task: JSON.parse(row.task_json) as Task, owner: row.owner };
      if (caching && !this.store.db.inTransaction) {
        deepFreeze(view.task);
        this.#views.set(id, view);
        if (this.#views.size > this.#cacheSize) this.#views.delete(this.#views.keys().next().value!);
      }
      return view;
    });
  }

  /** Tasks view() holds parsed (for tests). */
  get cachedViews(): number {
    return this.#views.size;
  }

  save(task: Task): SaveResult {
    this.#views.delete(task.id);
    return this.store.guard("tasks.save", () => {
      // The terminal guard is the WHERE clause itself: atomic against any other writer.
      const result = this.store
        .statement(
          `UPDATE a2a_tasks SET task_json = ?, state = ?, status_timestamp = ?, context_id = ?, updated_at = ?
           WHERE id = ? AND state NOT IN (${TERMINAL_SQL})`,
        )
        .run(serialize(task), task.status.state, canonicalTimestamp(task.status.timestamp), task.contextId, new Date().toISOString(), task.id);
      if (result.changes === 1) return { applied: true } as const;
      const row = this.store.statement("SELECT state FROM a2a_tasks WHERE id = ?").get(task.id) as { state: TaskState } | undefined;
      return row === undefined ? ({ applied: false, reason: "not_found" } as const) : ({ applied: false, reason: "terminal", state: row.state } as const);
    });
  }

  updateExtra(id: string, extra: TaskExtra): boolean {
    return this.store.guard("tasks.updateExtra", () => {
      const result = this.store
        .statement(
          `UPDATE a2a_tasks SET
             session_id = CASE WHEN ? THEN ? ELSE session_id END,
             directory = CASE WHEN ? THEN ? ELSE directory END,
             accepted_output_modes = CASE WHEN ? THEN ? ELSE accepted_output_modes END
           WHERE id = ?`,
        )
        .run(
          extra.sessionId !== undefined ? 1 : 0,
          extra.sessionId ?? null,
          extra.directory !== undefined ? 1 : 0,
          extra.directory ?? null,
          extra.acceptedOutputModes !== undefined ? 1 : 0,
          extra.acceptedOutputModes === undefined ? null : JSON.stringify(extra.acceptedOutputModes),
          id,
        );
      return result.changes === 1;
    });
  }

  list(owner: string | undefined, params: ListParams = {}): TaskListResult {
    const q = resolveListQuery(owner, params, this.tokens);
    return this.store.guard("tasks.list", () => {
      const where: string[] = [];
      const args: unknown[] = [];
      const filters: [string, unknown][] = [
        ["owner = ?", q.owner],
        ["context_id = ?", q.contextId],
        ["state = ?", q.state],
        ["status_timestamp > ?", q.after],
      ];
      for (const [clause, value] of filters) {
        if (value === undefined) continue;
        where.push(clause);
        args.push(value);
      }
      const filter = where.length === 0 ? "" : `WHERE ${where.join(" AND ")}`;
      const total = (this.store.statement(`SELECT COUNT(*) AS n FROM a2a_tasks ${filter}`).get(...args) as { n: number }).n;
      const pageWhere = [...where];
      const pageArgs = [...args];
      if (q.cursor !== undefined) {
        pageWhere.push("(status_timestamp < ? OR (status_timestamp = ? AND id > ?))");
        pageArgs.push(q.cursor.ts, q.cursor.ts, q.cursor.id);
      }
      const sql =
        `SELECT id, status_timestamp AS ts, task_json AS json FROM a2a_tasks ` +
        `${pageWhere.length === 0 ? "" : `WHERE ${pageWhere.join(" AND ")}`} ` +
        `ORDER BY status_timestamp DESC, id ASC LIMIT ? OFFSET ?`;
      const rows = this.store.statement(sql).all(...pageArgs, q.pageSize + 1, q.offset) as { id: string; ts: string; json: string }[];
      return page(q, rows, total, this.tokens);
    });
  }

  count(): number {
    return this.store.guard("tasks.count", () => (this.store.statement("SELECT COUNT(*) AS n FROM a2a_tasks").get() as { n: number }).n);
  }
}
