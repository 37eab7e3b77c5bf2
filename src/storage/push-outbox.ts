// Push notifications waiting to be delivered. Each (task, config) pair is its own queue: only its oldest entry is
// ever due, so a receiver gets one task's notifications in order even across retries. An entry held for its
// config's quiet hours (`heldUntil`) stands aside until then: it does not hold up the entries after it (what bypasses
// the window), and while it is held the push service may rewrite it (coalescing). An entry leaves the outbox when it
// was delivered, when its config was deleted, when it was given up on or coalesced into another; a restarted gateway
// delivers whatever was still waiting, held entries at the end of their window. One Kysely implementation serves
// SQLite and PostgreSQL (the memory backend is the same store on an in-memory SQLite database). Gateways sharing one
// database each run a worker: claim() hands a queue head to one of them only, leased for a while.
import { PostgresAdapter, type Kysely, type Selectable } from "kysely";
import { int, storeCall } from "./sql/rows.js";
import type { PushOutboxTable, SqlSchema } from "./sql/schema.js";

export interface PushDelivery {
  id: number;
  taskId: string;
  configId: string;
  /** The request body as it will be sent, encoded for the config's protocol line when the event happened. */
  body: string;
  contentType: string;
  /** Attempts made so far. */
  attempts: number;
  /** Epoch ms at which the entry may be tried (again). */
  nextAttemptAt: number;
  createdAt: number;
  lastError?: string;
  /** W3C `traceparent` of the request or task the notification is about (the delivery's parent span). */
  traceparent?: string;
  tracestate?: string;
  /** Held for the config's quiet hours until then (epoch ms): not due before, and rewritable (coalesced) until then. */
  heldUntil?: number;
  /** What a held entry coalesces with: `a2a`, or a typed event's key (src/push/events.ts). */
  coalesceKey?: string;
}

export type NewDelivery = Pick<PushDelivery, "taskId" | "configId" | "body" | "contentType" | "traceparent" | "tracestate" | "heldUntil" | "coalesceKey">;

export interface PushOutboxStore {
  /** Queue notifications (all or none: one INSERT), created at `at` (default: the store's clock), due then or when held until. */
  enqueue(items: NewDelivery[], at?: number): Promise<void>;
  /**
   * The head of every (task, config) queue whose key is not in `busy` and that is due at `now`, the longest
   * waiting first, at most `limit`. Entries still held at `now` are not part of their queue yet. Read-only: with
   * several workers on one database, use claim().
   */
  due(now: number, limit: number, busy: BusyQueues): Promise<PushDelivery[]>;
  /**
   * As due(), and each entry returned is leased to the caller: its nextAttemptAt becomes `now + leaseMs` (as
   * returned) in the same transaction, so no other worker, on this gateway or another sharing the database, takes
   * it or anything behind it in its queue before the lease ends. The caller then remove()s or reschedule()s it.
   * At most one entry per queue.
   */
  claim(now: number, limit: number, busy: BusyQueues, leaseMs: number): Promise<PushDelivery[]>;
  /** When the next queue head or held entry falls due (epoch ms), or undefined when the outbox is empty. */
  nextDueAt(busy: BusyQueues, now: number): Promise<number | undefined>;
  /** The entries of one queue still held at `now`, oldest first. */
  held(taskId: string, configId: string, now: number): Promise<PushDelivery[]>;
  /** Replace a held entry's body (a later notification coalesced into it). */
  rewrite(id: number, body: string): Promise<void>;
  /** Remove one entry (delivered or given up on); false when it was not there (dropped meanwhile). */
  remove(id: number): Promise<boolean>;
  /** `lastError` undefined: the entry keeps none (a lease given back untried). */
  reschedule(id: number, attempts: number, nextAttemptAt: number, lastError: string | undefined): Promise<void>;
  /** Drop what waits for one config, or for every config of the task. Returns how many. */
  drop(taskId: string, configId?: string): Promise<number>;
  size(): Promise<number>;
}

/** The queues to skip (a POST is in flight for them), by queueKey(); a Set or a Map will do. */
export type BusyQueues = Pick<ReadonlySet<string>, "has" | "size">;

/** The key of a (task, config) queue, as `due()` and `claim()` expect in `busy`. */
export const queueKey = (taskId: string, configId: string): string => `${taskId}\u0000${configId}`;

type Row = Selectable<PushOutboxTable>;

const fromRow = (r: Row): PushDelivery => ({
  id: int(r.id),
  taskId: r.task_id,
  configId: r.config_id,
  body: r.body,
  contentType: r.content_type,
  attempts: int(r.attempts),
  nextAttemptAt: int(r.next_attempt_at),
  createdAt: int(r.created_at),
  ...(r.last_error === null ? {} : { lastError: r.last_error }),
  ...(r.traceparent === null ? {} : { traceparent: r.traceparent }),
  ...(r.tracestate === null ? {} : { tracestate: r.tracestate }),
  ...(r.held_until === null ? {} : { heldUntil: int(r.held_until) }),
  ...(r.coalesce_key === null ? {} : { coalesceKey: r.coalesce_key }),
});

const notBusy = (busy: BusyQueues) => (r: Pick<Row, "task_id" | "config_id">) => busy.size === 0 || !busy.has(queueKey(r.task_id, r.config_id));

/** The push outbox of both SQL backends (SQLite and PostgreSQL), written once with Kysely. */
export class SqlPushOutboxStore implements PushOutboxStore {
  constructor(
    private readonly db: Kysely<SqlSchema>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The head of each queue, the smallest id per (task_id, config_id) among the entries not held at `now`, as `o`.
   * Busy queues are few (at most the delivery concurrency): the callers filter them out rather than the SQL.
   */
  #heads(db: Kysely<SqlSchema>, now: number) {
    return db.selectFrom("a2a_push_outbox as o").innerJoin(
      (eb) =>
        eb
          .selectFrom("a2a_push_outbox")
          .select((e) => e.fn.min("id").as("id"))
          .where((e) => e.or([e("held_until", "is", null), e("held_until", "<=", BigInt(now))]))
          .groupBy(["task_id", "config_id"])
          .as("h"),
      (join) => join.onRef("h.id", "=", "o.id"),
    );
  }

  enqueue(items: NewDelivery[], at = this.now()): Promise<void> {
    return storeCall("pushOutbox.enqueue", async () => {
      if (items.length === 0) return;
      // One multi-row INSERT: all or none, ids in the order of `items`.
      await this.db
        .insertInto("a2a_push_outbox")
        .values(
          items.map((item) => ({
            task_id: item.taskId,
            config_id: item.configId,
            body: item.body,
            content_type: item.contentType,
            attempts: 0,
            next_attempt_at: BigInt(item.heldUntil ?? at),
            created_at: BigInt(at),
            last_error: null,
            traceparent: item.traceparent ?? null,
            tracestate: item.tracestate ?? null,
            held_until: item.heldUntil === undefined ? null : BigInt(item.heldUntil),
            coalesce_key: item.coalesceKey ?? null,
          })),
        )
        .execute();
    });
  }

  due(now: number, limit: number, busy: BusyQueues): Promise<PushDelivery[]> {
    return storeCall("pushOutbox.due", async () => {
      if (limit <= 0) return [];
      const rows = await this.#heads(this.db, now)
        .selectAll("o")
        .where("o.next_attempt_at", "<=", BigInt(now))
        .orderBy("o.next_attempt_at")
        .orderBy("o.id")
        .limit(limit + busy.size)
        .execute();
      return rows.filter(notBusy(busy)).slice(0, limit).map(fromRow);
    });
  }

  claim(now: number, limit: number, busy: BusyQueues, leaseMs: number): Promise<PushDelivery[]> {
    return storeCall("pushOutbox.claim", async () => {
      if (limit <= 0) return [];
      // Bound to a caller's transaction: claim inside it. Otherwise a transaction of its own (SQLite: BEGIN IMMEDIATE,
      // the writer lock held from the read of the heads to the lease; PostgreSQL: the row locks below).
      if (this.db.isTransaction) return this.#claim(this.db, now, limit, busy, leaseMs);
      return this.db.transaction().execute((trx) => this.#claim(trx, now, limit, busy, leaseMs));
    });
  }

  async #claim(trx: Kysely<SqlSchema>, now: number, limit: number, busy: BusyQueues, leaseMs: number): Promise<PushDelivery[]> {
    const postgres = trx.getExecutor().adapter instanceof PostgresAdapter;
    // PostgreSQL: the heads found are locked (FOR UPDATE OF o), and heads another worker holds locked are skipped
    // (SKIP LOCKED: not counted against the limit). A head another worker leased and committed meanwhile is
    // re-checked by PostgreSQL on its new version: no longer due, so skipped; one removed meanwhile is gone. A
    // queue's later entry is never a head while its (leased) head is there, so a queue stays in order.
    const rows = await this.#heads(trx, now)
      .selectAll("o")
      .where("o.next_attempt_at", "<=", BigInt(now))
      .orderBy("o.next_attempt_at")
      .orderBy("o.id")
      .limit(limit + busy.size)
      .$if(postgres, (q) => q.forUpdate("o").skipLocked())
      .execute();
    const taken = rows.filter(notBusy(busy)).slice(0, limit);
    if (taken.length === 0) return [];
    const until = now + leaseMs;
    await trx
      .updateTable("a2a_push_outbox")
      .set({ next_attempt_at: BigInt(until) })
      .where(
        "id",
        "in",
        taken.map((r) => BigInt(r.id)),
      )
      .execute();
    return taken.map((r) => ({ ...fromRow(r), nextAttemptAt: until }));
  }

  nextDueAt(busy: BusyQueues, now: number): Promise<number | undefined> {
    return storeCall("pushOutbox.nextDueAt", async () => {
      // Only the queue keys and times: the bodies stay in the database.
      const rows = await this.#heads(this.db, now)
        .select(["o.task_id", "o.config_id", "o.next_attempt_at"])
        .orderBy("o.next_attempt_at")
        .orderBy("o.id")
        .limit(busy.size + 1)
        .execute();
      const first = rows.find(notBusy(busy));
      const head = first === undefined ? undefined : int(first.next_attempt_at);
      const held = await this.db
        .selectFrom("a2a_push_outbox")
        .select((e) => e.fn.min("held_until").as("at"))
        .where("held_until", ">", BigInt(now))
        .executeTakeFirst();
      const at = held?.at ?? null;
      if (at === null) return head;
      return head === undefined ? int(at) : Math.min(head, int(at));
    });
  }

  held(taskId: string, configId: string, now: number): Promise<PushDelivery[]> {
    return storeCall("pushOutbox.held", async () =>
      (
        await this.db
          .selectFrom("a2a_push_outbox")
          .selectAll()
          .where("task_id", "=", taskId)
          .where("config_id", "=", configId)
          .where("held_until", ">", BigInt(now))
          .orderBy("id")
          .execute()
      ).map(fromRow),
    );
  }

  rewrite(id: number, body: string): Promise<void> {
    return storeCall("pushOutbox.rewrite", async () => {
      await this.db.updateTable("a2a_push_outbox").set({ body }).where("id", "=", BigInt(id)).execute();
    });
  }

  remove(id: number): Promise<boolean> {
    return storeCall("pushOutbox.remove", async () => {
      const result = await this.db.deleteFrom("a2a_push_outbox").where("id", "=", BigInt(id)).executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  reschedule(id: number, attempts: number, nextAttemptAt: number, lastError: string | undefined): Promise<void> {
    return storeCall("pushOutbox.reschedule", async () => {
      await this.db
        .updateTable("a2a_push_outbox")
        .set({ attempts, next_attempt_at: BigInt(nextAttemptAt), last_error: lastError ?? null })
        .where("id", "=", BigInt(id))
        .execute();
    });
  }

  drop(taskId: string, configId?: string): Promise<number> {
    return storeCall("pushOutbox.drop", async () => {
      const result = await this.db
        .deleteFrom("a2a_push_outbox")
        .where("task_id", "=", taskId)
        .$if(configId !== undefined, (q) => q.where("config_id", "=", configId!))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }

  size(): Promise<number> {
    return storeCall("pushOutbox.size", async () => {
      const row = await this.db
        .selectFrom("a2a_push_outbox")
        .select((e) => e.fn.countAll<bigint | string>().as("n"))
        .executeTakeFirstOrThrow();
      return int(row.n);
    });
  }
}
