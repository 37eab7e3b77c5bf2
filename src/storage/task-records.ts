// The task store: compact canonical snapshots of the internal Task (src/protocol/model.ts) with the owner and the
// turn's binding (session, directory, accepted output modes), in SQLite or PostgreSQL with the same behaviour.
// - First terminal state wins: a save never overwrites a stored terminal state (one conditional UPDATE in SQL).
// - Listing is owner-scoped (undefined owner = admin, all tasks), ordered by status timestamp descending then id
//   ascending, with 0.3 offset pagination (limit/offset → total, hasMore) and 1.0 keyset pagination (pageSize/
//   pageToken → nextPageToken, totalSize). Page tokens are HMAC-signed (timestamp, id) cursors bound to the query's
//   filters, so tampered or foreign tokens are rejected with INVALID_PARAMS.
import crypto from "node:crypto";
import { A2AError, invalidParams } from "../contract/errors.js";
import { LIST_DEFAULT_PAGE_SIZE, LIST_MAX_PAGE_SIZE, TERMINAL_STATES, type ListParams, type Task, type TaskState } from "../protocol/model.js";

export interface TaskExtra {
  acceptedOutputModes?: string[];
  sessionId?: string;
  directory?: string;
  /** The gateway instance that runs the task's turn (src/cluster); set at create. */
  instance?: string;
}

/** Which unfinished tasks TaskStore.orphans() gives: those of no live instance, and those of `stale` (a restarted one). */
export interface OrphanScope {
  stale?: string;
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
export function deepFreeze<T>(value: T): T {
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
  create(task: Task, owner: string, extra?: TaskExtra): Promise<void>;
  get(id: string): Promise<StoredTask | undefined>;
  /**
   * The task and its owner for callers that only read it (GetTask encodes it): unlike get(), the task may be shared
   * between calls and with the store (a read cache keeps it, deeply frozen, until the task is saved again).
   */
  view(id: string): Promise<StoredTaskView | undefined>;
  /** Replace the snapshot unless the stored state is already terminal. */
  save(task: Task): Promise<SaveResult>;
  /** Update the binding fields of an existing task (only the given keys). Returns false when the task is unknown. */
  updateExtra(id: string, extra: TaskExtra): Promise<boolean>;
  /**
   * Up to `limit` tasks in a non-terminal state that no live gateway runs (PostgreSQL: their instance holds no lease
   * in a2a_instances now, or is `scope.stale`, or is unknown). `scope` undefined: every non-terminal task (one
   * gateway per database, at its start).
   */
  orphans(scope: OrphanScope | undefined, limit: number): Promise<Task[]>;
  /** List tasks of `owner` (undefined = every owner). */
  list(owner: string | undefined, params?: ListParams): Promise<TaskListResult>;
  count(): Promise<number>;
}

export const TERMINAL = [...TERMINAL_STATES];
const KNOWN_STATES: ReadonlySet<string> = new Set<TaskState>([
  "submitted", "working", "input-required", "completed", "canceled", "failed", "rejected", "auth-required", "unknown",
]);

// ---------------------------------------------------------------------------------------------------------------
// Shared pieces

/** INVALID_PARAMS naming `field` in its data only (no field violations in the error details). */
export const invalid = (field: string, message: string): A2AError => invalidParams(message, [], { field });

/** Canonical sortable form of a status timestamp (ISO 8601 UTC with milliseconds); unparseable → epoch. */
export function canonicalTimestamp(value: string | undefined): string {
  const ms = value === undefined ? NaN : Date.parse(value);
  return new Date(Number.isNaN(ms) ? 0 : ms).toISOString();
}

function pageSizeOf(value: number | undefined, field: string): number {
  if (value === undefined || value === 0) return LIST_DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(value) || value < 0) throw invalid(field, `${field} must be a positive integer`);
  return Math.min(value, LIST_MAX_PAGE_SIZE);
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

export const serialize = (task: Task): string => JSON.stringify(task);

/** Build the result from up to pageSize+1 rows in order; `parse` turns a row's JSON into its task. */
export function page(
  q: ListQuery,
  rows: { ts: string; id: string; json: string }[],
  total: number,
  tokens: PageTokens,
  parse: (id: string, json: string) => Task = (_id, json) => JSON.parse(json) as Task,
): TaskListResult {
  const hasMore = rows.length > q.pageSize;
  const shown = hasMore ? rows.slice(0, q.pageSize) : rows;
  const last = shown[shown.length - 1];
  return {
    tasks: shown.map((r) => parse(r.id, r.json)),
    total,
    totalSize: total,
    hasMore,
    nextPageToken: hasMore && last !== undefined ? tokens.encode(q.scope, { ts: last.ts, id: last.id }) : "",
    pageSize: q.pageSize,
  };
}
