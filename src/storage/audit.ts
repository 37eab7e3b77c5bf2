// The audit log's persistence: one entry per call — who (principal, credential id), how (transport, line), which
// method, about which task/context/session, the outcome (HTTP status, error reason) and the duration. Never a
// secret, never a request or response body. Entries are read newest first with keyset pagination on the id; the
// page token is opaque to clients (base64url of the last id returned). One Kysely implementation serves SQLite
// (table a2a_audit_log, migration 3; trace_id: 6; peer: 10; trace_id index dropped: 14) and PostgreSQL
// (./sql/postgres-migrations.ts, version 7; trace_id index dropped: 13);
// the memory backend is the same store on an in-memory SQLite database.
import type { Insertable, Kysely, Selectable } from "kysely";
import { invalidParams } from "../contract/errors.js";
import { PreparedQuery } from "./sql/prepared.js";
import { int, storeCall } from "./sql/rows.js";
import type { AuditLogTable, SqlSchema } from "./sql/schema.js";

export type AuditTransport = "jsonrpc" | "rest";
export type AuditOutcome = "ok" | "error";
export type AuditLine = "0.3" | "1.0";

/** One audited call, in its wire shape (GET /admin/audit). */
export interface AuditEntry {
  /** Grows with every append; never reused. */
  id: number;
  /** RFC 3339 UTC with milliseconds, e.g. 2025-01-01T00:00:00.000Z. */
  at: string;
  /** null: the credentials were missing or invalid. */
  principal: string | null;
  credential_id: string | null;
  transport: AuditTransport;
  line: AuditLine;
  /** JSON-RPC method name, or the catalog route id (e.g. "GET /tasks/{id}"). */
  method: string;
  /** An outbound call's peer host (`mcp/a2a_call`, `mcp/a2a_discover`). */
  peer?: string;
  task_id?: string;
  context_id?: string;
  session_id?: string;
  outcome: AuditOutcome;
  /** The error reason (e.g. TASK_NOT_FOUND) of a failed call. */
  error_reason?: string;
  /** HTTP status of the response. */
  status: number;
  duration_ms: number;
  client_ip?: string;
  /** W3C trace id (32 hex digits) of the request, as logged and sent upstream. */
  trace_id?: string;
}

/** What append() takes: an entry without its id; `at` as RFC 3339 or epoch ms (stored as millisecond UTC). */
export type NewAuditEntry = Omit<AuditEntry, "id" | "at"> & { at: string | number };

/** Filters of list(); all given ones must match. `since` (inclusive) and `until` (exclusive) are epoch ms. */
export interface AuditFilter {
  principal?: string;
  credential_id?: string;
  method?: string;
  task_id?: string;
  session_id?: string;
  trace_id?: string;
  outcome?: AuditOutcome;
  since?: number;
  until?: number;
}

export interface AuditListResult {
  /** Newest first (id descending). */
  entries: AuditEntry[];
  /** Opaque token of the next (older) page; absent on the last page. */
  next?: string;
}

export interface AuditStore {
  /**
   * Append entries in one transaction (all or nothing), with ids growing in their order. An entry whose `at` is not a
   * date rejects the whole batch (a TypeError) before anything is written.
   */
  append(entries: readonly NewAuditEntry[]): Promise<void>;
  /**
   * Up to `limit` entries matching `filter`, newest first, older than the page `cursor` (a `next` token of an
   * earlier call). A token this store did not issue fails with INVALID_PARAMS (field `page_token`).
   */
  list(filter: AuditFilter, limit: number, cursor?: string): Promise<AuditListResult>;
  /** Delete entries recorded before `beforeMs` (epoch ms). Resolves to how many. */
  prune(beforeMs: number): Promise<number>;
  /** Delete the oldest entries beyond the newest `maxEntries`. Resolves to how many. */
  trim(maxEntries: number): Promise<number>;
}

/** A private in-memory audit log (a gateway without a task store: contract-only setups) keeps at most this many entries. */
export const DEFAULT_MEMORY_AUDIT_ENTRIES = 100_000;

// ---------------------------------------------------------------------------------------------------------------
// Page tokens

export function encodeAuditPageToken(id: number): string {
  return Buffer.from(String(id), "utf8").toString("base64url");
}

/** The id inside a page token; INVALID_PARAMS (field page_token) for anything this store did not issue. */
export function decodeAuditPageToken(token: string): number {
  const text = /^[A-Za-z0-9_-]{1,24}$/.test(token) ? Buffer.from(token, "base64url").toString("utf8") : "";
  const id = /^[1-9][0-9]{0,15}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(id) || encodeAuditPageToken(id) !== token) {
    const detail = "page_token is not a token returned by this endpoint";
    throw invalidParams(detail, [{ field: "page_token", description: "not a token returned as next_page_token" }], { detail });
  }
  return id;
}

/** The latest (and earliest) epoch ms a Date can hold. */
const MAX_DATE_MS = 8.64e15;

/** An entry's time as whole epoch ms (a fraction is dropped, as the ISO form drops it); TypeError when not a date. */
function atMs(at: string | number): bigint {
  const ms = typeof at === "number" ? at : Date.parse(at);
  if (!(Math.abs(ms) <= MAX_DATE_MS)) throw new TypeError(`audit entry time is not a date: ${JSON.stringify(at)}`);
  return BigInt(Math.floor(ms));
}

/** A since/until bound as whole ms: `at_ms >= x` and `at_ms < x` read alike with x rounded up (at_ms is whole). */
function boundMs(ms: number): bigint {
  if (Number.isNaN(ms)) throw new TypeError("audit time filter is not a number");
  return BigInt(Math.ceil(Math.min(Math.max(ms, -MAX_DATE_MS), MAX_DATE_MS)));
}

const isoOf = (ms: number): string => new Date(ms).toISOString();

function clampLimit(limit: number): number {
  return Number.isFinite(limit) ? Math.max(1, Math.floor(limit)) : 1;
}

// ---------------------------------------------------------------------------------------------------------------

type Row = Selectable<AuditLogTable>;

/** The inserted columns, in the order of toRow(): a prepared insert takes each row's values in this order. */
const COLUMNS = [
  "at_ms", "principal", "credential_id", "transport", "line", "method", "task_id", "context_id", "session_id",
  "outcome", "error_reason", "status", "duration_ms", "client_ip", "trace_id", "peer",
] as const;

const toRow = (e: NewAuditEntry): Insertable<AuditLogTable> => ({
  at_ms: atMs(e.at),
  principal: e.principal ?? null,
  credential_id: e.credential_id ?? null,
  transport: e.transport,
  line: e.line,
  method: e.method,
  task_id: e.task_id ?? null,
  context_id: e.context_id ?? null,
  session_id: e.session_id ?? null,
  outcome: e.outcome,
  error_reason: e.error_reason ?? null,
  status: e.status,
  duration_ms: e.duration_ms,
  client_ip: e.client_ip ?? null,
  trace_id: e.trace_id ?? null,
  peer: e.peer ?? null,
});

/** The wire shape: the optional members present only when set, in the wire order (no spreads: pages are large). */
function fromRow(row: Row): AuditEntry {
  const out = {
    id: int(row.id),
    at: isoOf(int(row.at_ms)),
    principal: row.principal,
    credential_id: row.credential_id,
    transport: row.transport as AuditTransport,
    line: row.line as AuditLine,
    method: row.method,
  } as AuditEntry;
  if (row.peer !== null) out.peer = row.peer;
  if (row.task_id !== null) out.task_id = row.task_id;
  if (row.context_id !== null) out.context_id = row.context_id;
  if (row.session_id !== null) out.session_id = row.session_id;
  out.outcome = row.outcome as AuditOutcome;
  if (row.error_reason !== null) out.error_reason = row.error_reason;
  out.status = int(row.status);
  out.duration_ms = Number(row.duration_ms);
  if (row.client_ip !== null) out.client_ip = row.client_ip;
  if (row.trace_id !== null) out.trace_id = row.trace_id;
  return out;
}

/**
 * The most rows one INSERT carries (16 parameters each: 8,192, under SQLite's 32,766 and PostgreSQL's 65,535). A
 * batch is written as INSERTs of power-of-two row counts (150 rows: 128 + 16 + 4 + 2), so there are at most ten
 * distinct statement texts: SQLite keeps one prepared statement per text for the life of the process (./pin.ts).
 */
const MAX_INSERT_ROWS = 512;

function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  let i = 0;
  for (let size = MAX_INSERT_ROWS; size >= 1; size /= 2) {
    while (rows.length - i >= size) {
      out.push(rows.slice(i, i + size));
      i += size;
    }
  }
  return out;
}

/**
 * The equality filters in a fixed order, then the time bounds and the cursor: list() builds its SQL from the filters
 * present, so there are at most 2^10 distinct statement texts (each prepared once on SQLite).
 */
const EQUALS = ["principal", "credential_id", "method", "task_id", "session_id", "trace_id", "outcome"] as const;

/**
 * How many entries a listing filtered by trace_id reads per page at most. trace_id has no index (SQLite migration 14,
 * PostgreSQL 13 dropped it: its keys are random, so each entry cost a write of a page of it, as much as the rest of
 * the entry's write): a listing filtered by trace_id and not by task_id (whose index finds the task's entries) reads
 * the newest AUDIT_TRACE_WINDOW entries before its page token. Its page may hold fewer than `limit` entries and still
 * carry a next page token when older entries remain: the next page goes on below the entries this one read.
 */
export const AUDIT_TRACE_WINDOW = 20_000;

export interface SqlAuditStoreOptions {
  /** AUDIT_TRACE_WINDOW unless given (tests). */
  traceWindow?: number;
}

/**
 * The audit store of both SQL backends (SQLite and PostgreSQL), written once with Kysely. Ids come from the
 * database (SQLite AUTOINCREMENT, a PostgreSQL identity column): unique across every gateway on the database and
 * never reused, so a page token names the same place whatever is appended or pruned after it. Entries another
 * gateway is appending while a listing pages are in it only if committed before the page that would hold them is
 * read — as for any entry appended meanwhile — and no entry is ever listed twice in one paging.
 */
/**
 * The INSERT of each chunk size, a prepared query (./sql/prepared.ts): Kysely would otherwise build and compile a
 * statement of up to 8,192 parameters for every batch, which cost as much CPU as SQLite's own work.
 */
const inserts = new Map<number, PreparedQuery<string[], unknown>>();

export class SqlAuditStore implements AuditStore {
  readonly #traceWindow: number;

  constructor(
    private readonly db: Kysely<SqlSchema>,
    options: SqlAuditStoreOptions = {},
  ) {
    this.#traceWindow = Math.max(1, Math.floor(options.traceWindow ?? AUDIT_TRACE_WINDOW));
  }

  /**
   * The window of a trace_id listing (see AUDIT_TRACE_WINDOW): the lowest id it reads, and whether older entries
   * remain below it; undefined when the listing is not windowed or the window reaches the oldest entry.
   */
  async #traceWindowEdge(filter: AuditFilter, before: number | undefined): Promise<{ low: bigint; more: boolean } | undefined> {
    if (filter.trace_id === undefined || filter.task_id !== undefined) return undefined;
    let edge = this.db.selectFrom("a2a_audit_log").select("id");
    if (before !== undefined) edge = edge.where("id", "<", BigInt(before));
    const ids = await edge.orderBy("id", "desc").limit(2).offset(this.#traceWindow - 1).execute();
    if (ids.length === 0) return undefined;
    return { low: BigInt(int(ids[0]!.id)), more: ids.length > 1 };
  }

  #insert(db: Kysely<SqlSchema>, rows: Insertable<AuditLogTable>[]): Promise<unknown> {
    let prepared = inserts.get(rows.length);
    if (prepared === undefined) {
      const size = rows.length;
      prepared = new PreparedQuery<string[], unknown>((qb, ...args) =>
        qb.insertInto("a2a_audit_log").values(
          Array.from({ length: size }, (_, r) => Object.fromEntries(COLUMNS.map((c, k) => [c, args[r * COLUMNS.length + k]])) as unknown as Insertable<AuditLogTable>),
        ),
      );
      inserts.set(size, prepared);
    }
    const args: unknown[] = [];
    for (const row of rows) for (const c of COLUMNS) args.push(row[c]);
    return prepared.execute(db, ...(args as string[]));
  }

  append(entries: readonly NewAuditEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    let rows: Insertable<AuditLogTable>[];
    try {
      rows = entries.map(toRow); // every entry checked (atMs throws) before anything is written
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return storeCall("audit.append", async () => {
      const parts = chunks(rows);
      if (parts.length === 1) {
        await this.#insert(this.db, parts[0]!);
        return;
      }
      await this.db.transaction().execute(async (trx) => {
        for (const part of parts) await this.#insert(trx, part);
      });
    });
  }

  list(filter: AuditFilter, limit: number, cursor?: string): Promise<AuditListResult> {
    let before: number | undefined;
    try {
      before = cursor === undefined ? undefined : decodeAuditPageToken(cursor); // INVALID_PARAMS, not a store failure
    } catch (err) {
      return Promise.reject(err as Error);
    }
    const max = clampLimit(limit);
    let since: bigint | undefined, until: bigint | undefined;
    try {
      since = filter.since === undefined ? undefined : boundMs(filter.since);
      until = filter.until === undefined ? undefined : boundMs(filter.until);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return storeCall("audit.list", async () => {
      let query = this.db
        .selectFrom("a2a_audit_log")
        .select([
          "id", "at_ms", "principal", "credential_id", "transport", "line", "method", "task_id", "context_id", "session_id",
          "outcome", "error_reason", "status", "duration_ms", "client_ip", "trace_id", "peer",
        ]);
      for (const key of EQUALS) {
        const value = filter[key];
        if (value !== undefined) query = query.where(key, "=", value);
      }
      if (since !== undefined) query = query.where("at_ms", ">=", since);
      if (until !== undefined) query = query.where("at_ms", "<", until);
      if (before !== undefined) query = query.where("id", "<", BigInt(before));
      const window = await this.#traceWindowEdge(filter, before);
      if (window !== undefined) query = query.where("id", ">=", window.low);
      const rows = await query.orderBy("id", "desc").limit(max + 1).execute();
      const entries = rows.slice(0, max).map(fromRow);
      const last = entries[entries.length - 1];
      if (rows.length > max && last !== undefined) return { entries, next: encodeAuditPageToken(last.id) };
      // The window ended before the page filled: the next page reads the entries below it.
      return window?.more === true ? { entries, next: encodeAuditPageToken(Number(window.low)) } : { entries };
    });
  }

  prune(beforeMs: number): Promise<number> {
    let before: bigint;
    try {
      before = boundMs(beforeMs);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return storeCall("audit.prune", async () => {
      const result = await this.db.deleteFrom("a2a_audit_log").where("at_ms", "<", before).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }

  trim(maxEntries: number): Promise<number> {
    // The id of the newest entry beyond the bound (by the primary key: no scan of the table), then one range delete.
    return storeCall("audit.trim", async () => {
      const edge = await this.db
        .selectFrom("a2a_audit_log")
        .select("id")
        .orderBy("id", "desc")
        .limit(1)
        .offset(Math.max(0, Math.floor(maxEntries)))
        .executeTakeFirst();
      if (edge === undefined) return 0;
      const result = await this.db.deleteFrom("a2a_audit_log").where("id", "<=", edge.id).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}

