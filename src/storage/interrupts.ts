// The interrupt registry's persistence: one binding per pending OpenCode permission/question request, owned by the
// principal whose task raised it. A binding is answerable until `expiresAt` (A2A_INTERRUPT_REQUEST_TTL_SECONDS);
// after that it is a tombstone until `tombstoneExpiresAt` (A2A_INTERRUPT_REQUEST_TOMBSTONE_TTL_SECONDS) so replies
// keep getting "expired" instead of "not found"; then it is gone (purged lazily). Answered/resolved requests are
// removed outright. One Kysely implementation serves SQLite (and the memory backend's in-memory SQLite) and
// PostgreSQL, which several gateways may share: every write decides in one statement on the current row, so two
// instances never both create, or both remove, the same binding. The clock (epoch ms) is injectable.
import type { Kysely, Selectable } from "kysely";
import type { AbsentGovernance } from "./governance.js";
import type { Clock } from "./sessions.js";
import { int, storeCall } from "./sql/rows.js";
import type { InterruptRequestsTable, SqlSchema } from "./sql/schema.js";
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
   * it; one past its tombstone window is replaced. Returns whether a binding was created (of gateways adding the
   * same id at once, exactly one).
   */
  add(interrupt: NewInterrupt, ttlSeconds: number, tombstoneTtlSeconds: number): Promise<boolean>;
  /** The binding as `owner` may see it: another owner's binding is not_found. One past its tombstone window is deleted. */
  lookup(requestId: string, owner: string): Promise<InterruptLookup>;
  /** The binding regardless of owner and expiry (tombstones included), if stored. */
  get(requestId: string): Promise<InterruptRecord | undefined>;
  /** Discard a binding (answered or resolved). Returns whether one was removed (of gateways removing it at once, exactly one). */
  remove(requestId: string): Promise<boolean>;
  /** `owner`'s live (unexpired) bindings (every owner's when undefined), optionally of one type, oldest first. */
  listLive(owner: string | undefined, type?: InterruptType): Promise<InterruptRecord[]>;
  /** Every stored binding of the task (live and tombstones), oldest first: its pending requests, its expiries. */
  listForTask(taskId: string): Promise<InterruptRecord[]>;
  /** Every binding past its TTL that is still stored (a tombstone), oldest first: what the governance trail records as expired. */
  listExpired(): Promise<InterruptRecord[]>;
  /** Delete bindings past their tombstone window. Returns how many. */
  purgeExpired(): Promise<number>;
}

function classify(record: InterruptRecord | undefined, owner: string, now: number): InterruptLookup {
  if (record === undefined || record.owner !== owner || record.tombstoneExpiresAt <= now) return { status: "not_found" };
  return now < record.expiresAt ? { status: "live", record } : { status: "expired", record };
}

function expiry(now: number, ttlSeconds: number, tombstoneTtlSeconds: number): { expiresAt: number; tombstoneExpiresAt: number } {
  const expiresAt = now + Math.max(0, ttlSeconds) * 1000;
  return { expiresAt, tombstoneExpiresAt: expiresAt + Math.max(0, tombstoneTtlSeconds) * 1000 };
}

type Row = Selectable<InterruptRequestsTable>;

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
    createdAt: int(row.created_at),
    expiresAt: int(row.expires_at),
    tombstoneExpiresAt: int(row.tombstone_expires_at),
  };
}

/** The interrupt store of both SQL backends (SQLite and PostgreSQL), written once with Kysely. */
export class SqlInterruptStore implements InterruptStore {
  constructor(
    private readonly db: Kysely<SqlSchema>,
    private readonly now: Clock = Date.now,
    /** The tasks known to have no binding (./governance.ts): told of every binding before it is written. */
    private readonly known?: Pick<AbsentGovernance, "writing">,
  ) {}

  #rows() {
    return this.db.selectFrom("a2a_interrupt_requests").selectAll();
  }

  add(interrupt: NewInterrupt, ttlSeconds: number, tombstoneTtlSeconds: number): Promise<boolean> {
    this.known?.writing(interrupt.taskId);
    return storeCall("interrupts.add", async () => {
      const now = this.now();
      const { expiresAt, tombstoneExpiresAt } = expiry(now, ttlSeconds, tombstoneTtlSeconds);
      const routing: InterruptRouting = {
        ...(interrupt.routing.directory === undefined ? {} : { directory: interrupt.routing.directory }),
        ...(interrupt.routing.workspace === undefined ? {} : { workspace: interrupt.routing.workspace }),
      };
      // One statement: a new id is inserted; a stored one is overwritten only when past its tombstone window (a
      // request id seen again then starts afresh), so a live binding or a tombstone is kept and nothing is counted.
      // PostgreSQL locks the conflicting row, so of two gateways adding the same id one inserts and the other sees it.
      const result = await this.db
        .insertInto("a2a_interrupt_requests")
        .values({
          request_id: interrupt.requestId,
          session_id: interrupt.sessionId,
          interrupt_type: interrupt.type,
          owner: interrupt.owner,
          credential_id: interrupt.credentialId ?? null,
          task_id: interrupt.taskId,
          context_id: interrupt.contextId,
          details_json: JSON.stringify(interrupt.details),
          routing_json: JSON.stringify(routing),
          created_at: BigInt(now),
          expires_at: BigInt(expiresAt),
          tombstone_expires_at: BigInt(tombstoneExpiresAt),
        })
        .onConflict((oc) =>
          oc
            .column("request_id")
            .doUpdateSet((eb) => ({
              session_id: eb.ref("excluded.session_id"),
              interrupt_type: eb.ref("excluded.interrupt_type"),
              owner: eb.ref("excluded.owner"),
              credential_id: eb.ref("excluded.credential_id"),
              task_id: eb.ref("excluded.task_id"),
              context_id: eb.ref("excluded.context_id"),
              details_json: eb.ref("excluded.details_json"),
              routing_json: eb.ref("excluded.routing_json"),
              created_at: eb.ref("excluded.created_at"),
              expires_at: eb.ref("excluded.expires_at"),
              tombstone_expires_at: eb.ref("excluded.tombstone_expires_at"),
            }))
            .where("a2a_interrupt_requests.tombstone_expires_at", "<=", BigInt(now)),
        )
        .executeTakeFirst();
      return result.numInsertedOrUpdatedRows === 1n;
    });
  }

  lookup(requestId: string, owner: string): Promise<InterruptLookup> {
    return storeCall("interrupts.lookup", async () => {
      const now = this.now();
      const row = await this.#rows().where("request_id", "=", requestId).executeTakeFirst();
      const record = row === undefined ? undefined : fromRow(row);
      if (record !== undefined && record.tombstoneExpiresAt <= now) {
        // Conditional: a binding another gateway added afresh meanwhile is not touched.
        await this.db.deleteFrom("a2a_interrupt_requests").where("request_id", "=", requestId).where("tombstone_expires_at", "<=", BigInt(now)).execute();
      }
      return classify(record, owner, now);
    });
  }

  get(requestId: string): Promise<InterruptRecord | undefined> {
    return storeCall("interrupts.get", async () => {
      const row = await this.#rows().where("request_id", "=", requestId).executeTakeFirst();
      return row === undefined ? undefined : fromRow(row);
    });
  }

  remove(requestId: string): Promise<boolean> {
    return storeCall("interrupts.remove", async () => {
      const result = await this.db.deleteFrom("a2a_interrupt_requests").where("request_id", "=", requestId).executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  listLive(owner: string | undefined, type?: InterruptType): Promise<InterruptRecord[]> {
    return storeCall("interrupts.listLive", async () => {
      const rows = await this.#rows()
        .$if(owner !== undefined, (q) => q.where("owner", "=", owner!))
        .$if(type !== undefined, (q) => q.where("interrupt_type", "=", type!))
        .where("expires_at", ">", BigInt(this.now()))
        .orderBy("created_at")
        .orderBy("request_id")
        .execute();
      return rows.map(fromRow);
    });
  }

  listForTask(taskId: string): Promise<InterruptRecord[]> {
    return storeCall("interrupts.listForTask", async () =>
      (await this.#rows().where("task_id", "=", taskId).orderBy("created_at").orderBy("request_id").execute()).map(fromRow),
    );
  }

  listExpired(): Promise<InterruptRecord[]> {
    return storeCall("interrupts.listExpired", async () =>
      (await this.#rows().where("expires_at", "<=", BigInt(this.now())).orderBy("created_at").orderBy("request_id").execute()).map(fromRow),
    );
  }

  purgeExpired(): Promise<number> {
    return storeCall("interrupts.purgeExpired", async () => {
      const result = await this.db.deleteFrom("a2a_interrupt_requests").where("tombstone_expires_at", "<=", BigInt(this.now())).executeTakeFirst();
      return int(result.numDeletedRows);
    });
  }
}
