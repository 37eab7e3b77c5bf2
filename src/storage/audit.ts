// The audit log's persistence: one entry per call — who (principal, credential id), how (transport, line), which
// method, about which task/context/session, the outcome (HTTP status, error reason) and the duration. Never a
// secret, never a request or response body. Entries are read newest first with keyset pagination on the id; the
// page token is opaque to clients (base64url of the last id returned). SQLite (table a2a_audit_log, migration 3; trace_id: 6; peer: 10)
// and a bounded in-memory implementation (drops the oldest entries beyond `maxEntries`) behave the same.
import { invalidParams } from "../contract/errors.js";
import type { StoreDatabase } from "./database.js";

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
  /** Append entries in one transaction (all or nothing). */
  append(entries: readonly NewAuditEntry[]): void;
  /**
   * Up to `limit` entries matching `filter`, newest first, older than the page `cursor` (a `next` token of an
   * earlier call). A token this store did not issue fails with INVALID_PARAMS (field `page_token`).
   */
  list(filter: AuditFilter, limit: number, cursor?: string): AuditListResult;
  /** Delete entries recorded before `beforeMs` (epoch ms). Returns how many. */
  prune(beforeMs: number): number;
  /** Delete the oldest entries beyond the newest `maxEntries`. Returns how many. */
  trim(maxEntries: number): number;
}

/** The in-memory store keeps at most this many entries by default. */
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

function atMs(at: string | number): number {
  const ms = typeof at === "number" ? at : Date.parse(at);
  if (!Number.isFinite(ms)) throw new TypeError(`audit entry time is not a date: ${JSON.stringify(at)}`);
  return ms;
}

const isoOf = (ms: number): string => new Date(ms).toISOString();

/** A copy with the optional members present only when set (the stored shape). */
function normalise(entry: NewAuditEntry, id: number, ms: number): AuditEntry {
  // Member by member in the wire order (no spreads: this runs once per audited call).
  const out = {
    id,
    at: isoOf(ms),
    principal: entry.principal ?? null,
    credential_id: entry.credential_id ?? null,
    transport: entry.transport,
    line: entry.line,
    method: entry.method,
  } as AuditEntry;
  if (entry.peer != null) out.peer = entry.peer;
  if (entry.task_id != null) out.task_id = entry.task_id;
  if (entry.context_id != null) out.context_id = entry.context_id;
  if (entry.session_id != null) out.session_id = entry.session_id;
  out.outcome = entry.outcome;
  if (entry.error_reason != null) out.error_reason = entry.error_reason;
  out.status = entry.status;
  out.duration_ms = entry.duration_ms;
  if (entry.client_ip != null) out.client_ip = entry.client_ip;
  if (entry.trace_id != null) out.trace_id = entry.trace_id;
  return out;
}

function clampLimit(limit: number): number {
  return Number.isFinite(limit) ? Math.max(1, Math.floor(limit)) : 1;
}

// ---------------------------------------------------------------------------------------------------------------

interface MemoryRow {
  entry: AuditEntry;
  atMs: number;
}

export class MemoryAuditStore implements AuditStore {
  /** Ascending by id. */
  private rows: MemoryRow[] = [];
  private lastId = 0;

  constructor(private readonly maxEntries: number = DEFAULT_MEMORY_AUDIT_ENTRIES) {}

  append(entries: readonly NewAuditEntry[]): void {
    const prepared = entries.map((e) => ({ e, ms: atMs(e.at) })); // validate all before adding any
    for (const { e, ms } of prepared) this.rows.push({ entry: normalise(e, ++this.lastId, ms), atMs: ms });
    const excess = this.rows.length - Math.max(0, this.maxEntries);
    if (excess > 0) this.rows.splice(0, excess);
  }

  list(filter: AuditFilter, limit: number, cursor?: string): AuditListResult {
    const before = cursor === undefined ? Infinity : decodeAuditPageToken(cursor);
    const max = clampLimit(limit);
    const entries: AuditEntry[] = [];
    let more = false;
    for (let i = this.rows.length - 1; i >= 0; i--) {
      const row = this.rows[i]!;
      if (row.entry.id >= before || !matches(row, filter)) continue;
      if (entries.length === max) {
        more = true;
        break;
      }
      entries.push(structuredClone(row.entry));
    }
    const last = entries[entries.length - 1];
    return more && last !== undefined ? { entries, next: encodeAuditPageToken(last.id) } : { entries };
  }

  trim(maxEntries: number): number {
    const excess = this.rows.length - Math.max(0, maxEntries);
    if (excess <= 0) return 0;
    this.rows.splice(0, excess);
    return excess;
  }

  prune(beforeMs: number): number {
    const kept = this.rows.filter((r) => r.atMs >= beforeMs);
    const removed = this.rows.length - kept.length;
    this.rows = kept;
    return removed;
  }
}

function matches(row: MemoryRow, f: AuditFilter): boolean {
  const e = row.entry;
  return (
    (f.principal === undefined || e.principal === f.principal) &&
    (f.credential_id === undefined || e.credential_id === f.credential_id) &&
    (f.method === undefined || e.method === f.method) &&
    (f.task_id === undefined || e.task_id === f.task_id) &&
    (f.session_id === undefined || e.session_id === f.session_id) &&
    (f.trace_id === undefined || e.trace_id === f.trace_id) &&
    (f.outcome === undefined || e.outcome === f.outcome) &&
    (f.since === undefined || row.atMs >= f.since) &&
    (f.until === undefined || row.atMs < f.until)
  );
}

// ---------------------------------------------------------------------------------------------------------------

interface Row {
  id: number;
  at_ms: number;
  principal: string | null;
  credential_id: string | null;
  transport: AuditTransport;
  line: AuditLine;
  method: string;
  task_id: string | null;
  context_id: string | null;
  session_id: string | null;
  outcome: AuditOutcome;
  error_reason: string | null;
  status: number;
  duration_ms: number;
  client_ip: string | null;
  trace_id: string | null;
  peer: string | null;
}

const COLUMNS =
  "id, at_ms, principal, credential_id, transport, line, method, task_id, context_id, session_id, outcome, error_reason, status, duration_ms, client_ip, trace_id, peer";

const ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
const insertOf = (rows: number): string => `INSERT INTO a2a_audit_log (${COLUMNS.slice("id, ".length)}) VALUES ${Array(rows).fill(ROW).join(", ")}`;
const INSERT = insertOf(1);
/** Rows per multi-row INSERT (16 parameters each, well under SQLite's 32,766). */
const INSERT_CHUNK = 64;
const INSERT_MANY = insertOf(INSERT_CHUNK);

/**
 * The filter columns in a fixed order: list() builds its SQL from the filters present, so there are at most 2^10
 * distinct statement texts, each prepared once and cached (and pinned) by StoreDatabase.
 */
const CONDITIONS: readonly [keyof AuditFilter, string][] = [
  ["principal", "principal = ?"],
  ["credential_id", "credential_id = ?"],
  ["method", "method = ?"],
  ["task_id", "task_id = ?"],
  ["session_id", "session_id = ?"],
  ["trace_id", "trace_id = ?"],
  ["outcome", "outcome = ?"],
  ["since", "at_ms >= ?"],
  ["until", "at_ms < ?"],
];

function fromRow(row: Row): AuditEntry {
  return {
    id: row.id,
    at: isoOf(row.at_ms),
    principal: row.principal,
    credential_id: row.credential_id,
    transport: row.transport,
    line: row.line,
    method: row.method,
    ...(row.peer === null ? {} : { peer: row.peer }),
    ...(row.task_id === null ? {} : { task_id: row.task_id }),
    ...(row.context_id === null ? {} : { context_id: row.context_id }),
    ...(row.session_id === null ? {} : { session_id: row.session_id }),
    outcome: row.outcome,
    ...(row.error_reason === null ? {} : { error_reason: row.error_reason }),
    status: row.status,
    duration_ms: row.duration_ms,
    ...(row.client_ip === null ? {} : { client_ip: row.client_ip }),
    ...(row.trace_id === null ? {} : { trace_id: row.trace_id }),
  };
}

export class SqliteAuditStore implements AuditStore {
  constructor(private readonly store: StoreDatabase) {}

  append(entries: readonly NewAuditEntry[]): void {
    if (entries.length === 0) return;
    const values = (e: NewAuditEntry): unknown[] => [
      atMs(e.at),
      e.principal ?? null,
      e.credential_id ?? null,
      e.transport,
      e.line,
      e.method,
      e.task_id ?? null,
      e.context_id ?? null,
      e.session_id ?? null,
      e.outcome,
      e.error_reason ?? null,
      e.status,
      e.duration_ms,
      e.client_ip ?? null,
      e.trace_id ?? null,
      e.peer ?? null,
    ];
    const rows = entries.map(values); // every entry checked (atMs throws) before anything is written
    this.store.transaction("audit.append", () => {
      let i = 0;
      if (rows.length >= INSERT_CHUNK) {
        const many = this.store.statement(INSERT_MANY);
        for (; i + INSERT_CHUNK <= rows.length; i += INSERT_CHUNK) many.run(rows.slice(i, i + INSERT_CHUNK).flat());
      }
      const one = this.store.statement(INSERT);
      for (; i < rows.length; i++) one.run(rows[i]);
    });
  }

  list(filter: AuditFilter, limit: number, cursor?: string): AuditListResult {
    const before = cursor === undefined ? undefined : decodeAuditPageToken(cursor);
    const max = clampLimit(limit);
    const where: string[] = [];
    const args: unknown[] = [];
    for (const [key, condition] of CONDITIONS) {
      const value = filter[key];
      if (value === undefined) continue;
      where.push(condition);
      args.push(value);
    }
    if (before !== undefined) {
      where.push("id < ?");
      args.push(before);
    }
    const sql =
      `SELECT ${COLUMNS} FROM a2a_audit_log` + (where.length ? ` WHERE ${where.join(" AND ")}` : "") + " ORDER BY id DESC LIMIT ?";
    return this.store.guard("audit.list", () => {
      const rows = this.store.statement(sql).all(...args, max + 1) as Row[];
      const entries = rows.slice(0, max).map(fromRow);
      const last = entries[entries.length - 1];
      return rows.length > max && last !== undefined ? { entries, next: encodeAuditPageToken(last.id) } : { entries };
    });
  }

  prune(beforeMs: number): number {
    return this.store.guard("audit.prune", () => this.store.statement("DELETE FROM a2a_audit_log WHERE at_ms < ?").run(beforeMs).changes);
  }

  trim(maxEntries: number): number {
    // The id of the newest entry beyond the bound (by the primary key: no scan of the table), then one range delete.
    return this.store.guard("audit.trim", () => {
      const edge = this.store.statement("SELECT id FROM a2a_audit_log ORDER BY id DESC LIMIT 1 OFFSET ?").pluck().get(Math.max(0, maxEntries)) as number | undefined;
      return edge === undefined ? 0 : this.store.statement("DELETE FROM a2a_audit_log WHERE id <= ?").run(edge).changes;
    });
  }
}
