// Push notifications waiting to be delivered. Each (task, config) pair is its own queue: only its oldest entry is
// ever due, so a receiver gets one task's notifications in order even across retries. An entry held for its
// config's quiet hours (`heldUntil`) stands aside until then: it does not hold up the entries after it (what bypasses
// the window), and while it is held the push service may rewrite it (coalescing). An entry leaves the outbox when it
// was delivered, when its config was deleted, when it was given up on or coalesced into another; a restarted gateway
// delivers whatever was still waiting, held entries at the end of their window. One Kysely implementation serves
// SQLite and PostgreSQL (the memory backend is the same store on an in-memory SQLite database). Gateways sharing one
// database each run a worker: claim() hands a queue head to one of them only, leased for a while.
import { PostgresAdapter, sql, type Kysely, type Selectable } from "kysely";
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
  /**
   * Queue notifications (all or none: one INSERT), created at `at` (default: the store's clock), due then or when held
   * until. Serialized per task with every other transaction queueing for the same task (see serialize()).
   */
  enqueue(items: NewDelivery[], at?: number): Promise<void>;
  /**
   * Makes the caller's transaction the only one queueing notifications for `taskId` until it ends, so a task's
   * entries get their ids in the order their transactions commit: no worker can see a later entry of a queue while
   * an earlier one is still uncommitted. PostgreSQL: a transaction-level advisory lock (enqueue() takes it too);
   * SQLite: nothing to do, its writers are serialized. A transaction that writes a push config and then queues for
   * its task calls this first, before the config write, so that it takes its locks in the order a state change does
   * (this lock, then the config row) and the two cannot deadlock. Outside a transaction: no effect.
   */
  serialize(taskId: string): Promise<void>;
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
  /**
   * Remove one entry (delivered or given up on); false when it was not there (dropped meanwhile). `lease`: the
   * nextAttemptAt claim() returned; the entry is removed only while that lease is still the entry's (false when it
   * ran out and another worker claimed the entry again: that worker decides about it now).
   */
  remove(id: number, lease?: number): Promise<boolean>;
  /** `lastError` undefined: the entry keeps none (a lease given back untried). `lease`: as for remove(). */
  reschedule(id: number, attempts: number, nextAttemptAt: number, lastError: string | undefined, lease?: number): Promise<void>;
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

/** The first key of the per-task advisory locks of enqueue() (PostgreSQL), any fixed 32-bit number: "a2ap". */
const TASK_LOCK_SPACE = 0x61326170;

const isPostgres = (db: Kysely<SqlSchema>): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

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
      if (this.db.isTransaction || !isPostgres(this.db)) return this.#insert(this.db, items, at);
      // PostgreSQL outside a caller's transaction: one of its own, for the per-task lock to cover the INSERT.
      return this.db.transaction().execute((trx) => this.#insert(trx, items, at));
    });
  }

  async #insert(db: Kysely<SqlSchema>, items: NewDelivery[], at: number): Promise<void> {
    await this.#serialize(
      db,
      items.map((item) => item.taskId),
    );
    // One multi-row INSERT: all or none, ids in the order of `items`.
    await db
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
  }

  serialize(taskId: string): Promise<void> {
    return storeCall("pushOutbox.serialize", () => this.#serialize(this.db, [taskId]));
  }

  async #serialize(db: Kysely<SqlSchema>, taskIds: string[]): Promise<void> {
    if (!db.isTransaction || !isPostgres(db)) return;
    // Sorted: two transactions locking some of the same tasks take them in one order. Re-entrant within a
    // transaction. The two-key form (objsubid 2) never meets the gateway's and the migration's one-key locks; tasks
    // whose hashes collide are merely serialized together.
    for (const taskId of [...new Set(taskIds)].sort()) {
      await sql`SELECT pg_advisory_xact_lock(${TASK_LOCK_SPACE}, hashtext(${taskId}))`.execute(db);
    }
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
    const postgres = isPostgres(trx);
    // One entry per queue at a time, in id order, across workers:
    // - Only a queue's head (its smallest id not held) can be taken; a head leased to a worker, or rescheduled after
    //   a failed attempt, is still the head (not due before its lease or retry time), so what is behind it waits.
    //   A head whose lease ran out (its worker died mid-POST) is due again: taken again before anything behind it.
    // - PostgreSQL: the heads found are locked (FOR UPDATE OF o); heads another claim holds locked are skipped (SKIP
    //   LOCKED, not counted against the limit), never replaced by the entry behind them: the heads come from this
    //   statement's snapshot, where the locked head is still there. A head another worker leased, or removed, and
    //   committed meanwhile is re-checked on its new version: no longer due (skipped) or gone. So two claims in
    //   parallel take different queues. SQLite: the whole claim runs under the writer lock (BEGIN IMMEDIATE).
    // - The ids within a queue are its commit order, so the snapshot never misses an earlier entry of a queue whose
    //   later entry it sees: every transaction queueing for a task holds that task's lock (serialize(), taken by
    //   enqueue() and by a config write before it) until it commits, and identity values are drawn after the lock.
    //   Besides, a task's state changes are written by the gateway running its turn, one after another (its write
    //   queue, src/runtime/lifecycle.ts), and any state change (a cancel or a restart sweep on another gateway too)
    //   first UPDATEs the task's row, whose lock it holds to its commit; the task lock also covers a config set that
    //   announces the task's current state, which does not write the task row.
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

  remove(id: number, lease?: number): Promise<boolean> {
    return storeCall("pushOutbox.remove", async () => {
      const result = await this.db
        .deleteFrom("a2a_push_outbox")
        .where("id", "=", BigInt(id))
        .$if(lease !== undefined, (q) => q.where("next_attempt_at", "=", BigInt(lease!)))
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  reschedule(id: number, attempts: number, nextAttemptAt: number, lastError: string | undefined, lease?: number): Promise<void> {
    return storeCall("pushOutbox.reschedule", async () => {
      // With `lease`: only while the lease is still the caller's (the lease end is the claim's token: a later claim
      // of the entry, after this one ran out, leased it until a later time).
      await this.db
        .updateTable("a2a_push_outbox")
        .set({ attempts, next_attempt_at: BigInt(nextAttemptAt), last_error: lastError ?? null })
        .where("id", "=", BigInt(id))
        .$if(lease !== undefined, (q) => q.where("next_attempt_at", "=", BigInt(lease!)))
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
