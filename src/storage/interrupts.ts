// The interrupt registry's persistence: one binding per pending OpenCode permission/question request, owned by the
// principal whose task raised it. A binding is answerable until `expiresAt` (A2A_INTERRUPT_REQUEST_TTL_SECONDS);
// after that it is a tombstone until `tombstoneExpiresAt` (A2A_INTERRUPT_REQUEST_TOMBSTONE_TTL_SECONDS) so replies
// keep getting "expired" instead of "not found"; then it is gone (purged lazily). Answered/resolved requests are
// removed outright. SQLite and in-memory implementations with the same behaviour; the clock (epoch ms) is injectable.
import type { StoreDatabase } from "./database.js";
import type { Clock } from "./sessions.js";
import { isObject } from "../util/object.js";

export type InterruptType = "permission" | "question";

/** Instance routing of the session that raised the request (where replies must be sent). */
export interface InterruptRouting {
  directory?: string;
  workspace?: string;
}

export interface NewInterrupt {
  requestId: string;
  type: InterruptType;
  owner: string;
  credentialId?: string;
  sessionId: string;
  taskId: string;
  contextId: string;
  /** The normalized details published at `metadata.shared.interrupt.details`. */
  details: Record<string, unknown>;
  routing: InterruptRouting;
}

export interface InterruptRecord extends NewInterrupt {
  /** Epoch milliseconds. */
  createdAt: number;
  expiresAt: number;
  tombstoneExpiresAt: number;
}

export type InterruptLookup =
  | { status: "live"; record: InterruptRecord }
  /** Past its TTL but inside the tombstone window. */
  | { status: "expired"; record: InterruptRecord }
  /** Unknown, another owner's, resolved, or past the tombstone window. */
  | { status: "not_found" };

export interface InterruptStore {
  /**
   * Record a newly asked request, answerable for `ttlSeconds`, then a tombstone for `tombstoneTtlSeconds`. A binding
   * with the same id that still exists (live or tombstone) is kept unchanged: duplicate asked events do not extend
   * it. Returns whether a binding was created.
   */
  add(interrupt: NewInterrupt, ttlSeconds: number, tombstoneTtlSeconds: number): boolean;
  /** The binding as `owner` may see it: another owner's binding is not_found. */
  lookup(requestId: string, owner: string): InterruptLookup;
  /** The binding regardless of owner and expiry (tombstones included), if stored. */
  get(requestId: string): InterruptRecord | undefined;
  /** Discard a binding (answered or resolved). Returns whether one was removed. */
  remove(requestId: string): boolean;
  /** `owner`'s live (unexpired) bindings (every owner's when undefined), optionally of one type, oldest first. */
  listLive(owner: string | undefined, type?: InterruptType): InterruptRecord[];
  /** Every stored binding of the task (live and tombstones), oldest first: its pending requests, its expiries. */
  listForTask(taskId: string): InterruptRecord[];
  /** Every binding past its TTL that is still stored (a tombstone), oldest first: what the governance trail records as expired. */
  listExpired(): InterruptRecord[];
  /** Delete bindings past their tombstone window. Returns how many. */
  purgeExpired(): number;
}

function classify(record: InterruptRecord | undefined, owner: string, now: number): InterruptLookup {
  if (record === undefined || record.owner !== owner || record.tombstoneExpiresAt <= now) return { status: "not_found" };
  return now < record.expiresAt ? { status: "live", record } : { status: "expired", record };
}

function expiry(now: number, ttlSeconds: number, tombstoneTtlSeconds: number): { expiresAt: number; tombstoneExpiresAt: number } {
  const expiresAt = now + Math.max(0, ttlSeconds) * 1000;
  return { expiresAt, tombstoneExpiresAt: expiresAt + Math.max(0, tombstoneTtlSeconds) * 1000 };
}

// ---------------------------------------------------------------------------------------------------------------

export class MemoryInterruptStore implements InterruptStore {
  private readonly byId = new Map<string, InterruptRecord>();

  constructor(private readonly now: Clock = Date.now) {}

  add(interrupt: NewInterrupt, ttlSeconds: number, tombstoneTtlSeconds: number): boolean {
    const now = this.now();
    const existing = this.byId.get(interrupt.requestId);
    if (existing !== undefined && existing.tombstoneExpiresAt > now) return false;
    this.byId.set(interrupt.requestId, structuredClone({ ...interrupt, createdAt: now, ...expiry(now, ttlSeconds, tombstoneTtlSeconds) }));
    return true;
  }

  lookup(requestId: string, owner: string): InterruptLookup {
    const now = this.now();
    const record = this.byId.get(requestId);
    if (record !== undefined && record.tombstoneExpiresAt <= now) this.byId.delete(requestId);
    const found = classify(record, owner, now);
    return found.status === "not_found" ? found : { ...found, record: structuredClone(found.record) };
  }

  get(requestId: string): InterruptRecord | undefined {
    const record = this.byId.get(requestId);
    return record === undefined ? undefined : structuredClone(record);
  }

  remove(requestId: string): boolean {
    return this.byId.delete(requestId);
  }

  listLive(owner: string | undefined, type?: InterruptType): InterruptRecord[] {
    const now = this.now();
    return [...this.byId.values()]
      .filter((r) => (owner === undefined || r.owner === owner) && r.expiresAt > now && (type === undefined || r.type === type))
      .sort((a, b) => a.createdAt - b.createdAt || (a.requestId < b.requestId ? -1 : 1))
      .map((r) => structuredClone(r));
  }

  listForTask(taskId: string): InterruptRecord[] {
    return this.#sorted((r) => r.taskId === taskId);
  }

  listExpired(): InterruptRecord[] {
    const now = this.now();
    return this.#sorted((r) => r.expiresAt <= now);
  }

  #sorted(keep: (r: InterruptRecord) => boolean): InterruptRecord[] {
    return [...this.byId.values()]
      .filter(keep)
      .sort((a, b) => a.createdAt - b.createdAt || (a.requestId < b.requestId ? -1 : 1))
      .map((r) => structuredClone(r));
  }

  purgeExpired(): number {
    const now = this.now();
    let n = 0;
    for (const [id, r] of this.byId) {
      if (r.tombstoneExpiresAt <= now) {
        this.byId.delete(id);
        n++;
      }
    }
    return n;
  }
}

// ---------------------------------------------------------------------------------------------------------------

interface Row {
  request_id: string;
  session_id: string;
  interrupt_type: string;
  owner: string;
  credential_id: string | null;
  task_id: string;
  context_id: string;
  details_json: string;
  routing_json: string;
  created_at: number;
  expires_at: number;
  tombstone_expires_at: number;
}

const COLUMNS =
  "request_id, session_id, interrupt_type, owner, credential_id, task_id, context_id, details_json, routing_json, created_at, expires_at, tombstone_expires_at";

function parseObject(json: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(json);
    return isObject(v) ? v : {};
  } catch {
    return {};
  }
}

function fromRow(row: Row): InterruptRecord {
  const routing = parseObject(row.routing_json);
  return {
    requestId: row.request_id,
    type: row.interrupt_type === "permission" ? "permission" : "question",
    owner: row.owner,
    ...(row.credential_id === null ? {} : { credentialId: row.credential_id }),
    sessionId: row.session_id,
    taskId: row.task_id,
    contextId: row.context_id,
    details: parseObject(row.details_json),
    routing: {
      ...(typeof routing.directory === "string" ? { directory: routing.directory } : {}),
      ...(typeof routing.workspace === "string" ? { workspace: routing.workspace } : {}),
    },
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    tombstoneExpiresAt: row.tombstone_expires_at,
  };
}

export class SqliteInterruptStore implements InterruptStore {
  constructor(
    private readonly store: StoreDatabase,
    private readonly now: Clock = Date.now,
  ) {}

  add(interrupt: NewInterrupt, ttlSeconds: number, tombstoneTtlSeconds: number): boolean {
    return this.store.transaction("interrupts.add", () => {
      const now = this.now();
      // A binding past its tombstone window is gone: a request id seen again starts afresh.
      this.store.statement("DELETE FROM a2a_interrupt_requests WHERE request_id = ? AND tombstone_expires_at <= ?").run(interrupt.requestId, now);
      const { expiresAt, tombstoneExpiresAt } = expiry(now, ttlSeconds, tombstoneTtlSeconds);
      const routing: InterruptRouting = {
        ...(interrupt.routing.directory === undefined ? {} : { directory: interrupt.routing.directory }),
        ...(interrupt.routing.workspace === undefined ? {} : { workspace: interrupt.routing.workspace }),
      };
      const result = this.store
        .statement(
          `INSERT INTO a2a_interrupt_requests (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (request_id) DO NOTHING`,
        )
        .run(
          interrupt.requestId,
          interrupt.sessionId,
          interrupt.type,
          interrupt.owner,
          interrupt.credentialId ?? null,
          interrupt.taskId,
          interrupt.contextId,
          JSON.stringify(interrupt.details),
          JSON.stringify(routing),
          now,
          expiresAt,
          tombstoneExpiresAt,
        );
      return result.changes > 0;
    });
  }

  private row(requestId: string): InterruptRecord | undefined {
    const row = this.store.statement(`SELECT ${COLUMNS} FROM a2a_interrupt_requests WHERE request_id = ?`).get(requestId) as Row | undefined;
    return row === undefined ? undefined : fromRow(row);
  }

  lookup(requestId: string, owner: string): InterruptLookup {
    return this.store.guard("interrupts.lookup", () => {
      const now = this.now();
      const record = this.row(requestId);
      if (record !== undefined && record.tombstoneExpiresAt <= now) {
        this.store.statement("DELETE FROM a2a_interrupt_requests WHERE request_id = ? AND tombstone_expires_at <= ?").run(requestId, now);
      }
      return classify(record, owner, now);
    });
  }

  get(requestId: string): InterruptRecord | undefined {
    return this.store.guard("interrupts.get", () => this.row(requestId));
  }

  remove(requestId: string): boolean {
    return this.store.guard(
      "interrupts.remove",
      () => this.store.statement("DELETE FROM a2a_interrupt_requests WHERE request_id = ?").run(requestId).changes > 0,
    );
  }

  listLive(owner: string | undefined, type?: InterruptType): InterruptRecord[] {
    return this.store.guard("interrupts.listLive", () => {
      const now = this.now();
      // `? IS NULL OR col = ?` keeps one statement per shape; the owner index still serves the per-owner case.
      const rows = this.store
        .statement(
          `SELECT ${COLUMNS} FROM a2a_interrupt_requests WHERE (? IS NULL OR owner = ?) AND (? IS NULL OR interrupt_type = ?) AND expires_at > ? ORDER BY created_at, request_id`,
        )
        .all(owner ?? null, owner ?? null, type ?? null, type ?? null, now) as Row[];
      return rows.map(fromRow);
    });
  }

  listForTask(taskId: string): InterruptRecord[] {
    return this.store.guard("interrupts.listForTask", () =>
      (this.store.statement(`SELECT ${COLUMNS} FROM a2a_interrupt_requests WHERE task_id = ? ORDER BY created_at, request_id`).all(taskId) as Row[]).map(fromRow),
    );
  }

  listExpired(): InterruptRecord[] {
    return this.store.guard("interrupts.listExpired", () =>
      (this.store.statement(`SELECT ${COLUMNS} FROM a2a_interrupt_requests WHERE expires_at <= ? ORDER BY created_at, request_id`).all(this.now()) as Row[]).map(fromRow),
    );
  }

  purgeExpired(): number {
    return this.store.guard(
      "interrupts.purgeExpired",
      () => this.store.statement("DELETE FROM a2a_interrupt_requests WHERE tombstone_expires_at <= ?").run(this.now()).changes,
    );
  }
}
