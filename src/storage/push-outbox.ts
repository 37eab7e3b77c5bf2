// Push notifications waiting to be delivered. Each (task, config) pair is its own queue: only its oldest entry is
// ever due, so a receiver gets one task's notifications in order even across retries. An entry held for its
// config's quiet hours (`heldUntil`) stands aside until then: it does not hold up the entries after it (what bypasses
// the window), and while it is held the push service may rewrite it (coalescing). An entry leaves the outbox when it
// was delivered, when its config was deleted, when it was given up on or coalesced into another; a restarted gateway
// (SQLite) delivers whatever was still waiting, held entries at the end of their window. SQLite and in-memory alike.
import type { StoreDatabase } from "./database.js";

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
  /** Queue notifications (all or none), created at `at` (default: the store's clock), due then or when held until. */
  enqueue(items: NewDelivery[], at?: number): void;
  /**
   * The head of every (task, config) queue whose key is not in `busy` and that is due at `now`, the longest
   * waiting first, at most `limit`. Entries still held at `now` are not part of their queue yet.
   */
  due(now: number, limit: number, busy: BusyQueues): PushDelivery[];
  /** When the next queue head or held entry falls due (epoch ms), or undefined when the outbox is empty. */
  nextDueAt(busy: BusyQueues, now: number): number | undefined;
  /** The entries of one queue still held at `now`, oldest first. */
  held(taskId: string, configId: string, now: number): PushDelivery[];
  /** Replace a held entry's body (a later notification coalesced into it). */
  rewrite(id: number, body: string): void;
  /** Remove one entry (delivered or given up on); false when it was not there (dropped meanwhile). */
  remove(id: number): boolean;
  reschedule(id: number, attempts: number, nextAttemptAt: number, lastError: string): void;
  /** Drop what waits for one config, or for every config of the task. Returns how many. */
  drop(taskId: string, configId?: string): number;
  size(): number;
}

/** The queues to skip (a POST is in flight for them), by queueKey(); a Set or a Map will do. */
export type BusyQueues = Pick<ReadonlySet<string>, "has" | "size">;

/** The key of a (task, config) queue, as `due()` expects in `busy`. */
export const queueKey = (taskId: string, configId: string): string => `${taskId}\u0000${configId}`;

export class MemoryPushOutboxStore implements PushOutboxStore {
  readonly #entries = new Map<number, PushDelivery>();
  #nextId = 1;

  constructor(private readonly now: () => number = Date.now) {}

  enqueue(items: NewDelivery[], at = this.now()): void {
    for (const item of items) {
      const id = this.#nextId++;
      this.#entries.set(id, { id, ...item, attempts: 0, nextAttemptAt: item.heldUntil ?? at, createdAt: at });
    }
  }

  #heads(busy: BusyQueues, now: number): PushDelivery[] {
    const heads = new Map<string, PushDelivery>();
    // Map iteration follows insertion, i.e. id order: the first entry seen of a queue is its head.
    for (const entry of this.#entries.values()) {
      const key = queueKey(entry.taskId, entry.configId);
      if (!heads.has(key) && !busy.has(key) && !isHeld(entry, now)) heads.set(key, entry);
    }
    return [...heads.values()];
  }

  due(now: number, limit: number, busy: BusyQueues): PushDelivery[] {
    return this.#heads(busy, now)
      .filter((e) => e.nextAttemptAt <= now)
      .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.id - b.id)
      .slice(0, limit)
      .map((e) => ({ ...e }));
  }

  nextDueAt(busy: BusyQueues, now: number): number | undefined {
    let next: number | undefined;
    for (const e of this.#heads(busy, now)) if (next === undefined || e.nextAttemptAt < next) next = e.nextAttemptAt;
    for (const e of this.#entries.values()) if (isHeld(e, now) && (next === undefined || e.heldUntil! < next)) next = e.heldUntil;
    return next;
  }

  held(taskId: string, configId: string, now: number): PushDelivery[] {
    return [...this.#entries.values()].filter((e) => e.taskId === taskId && e.configId === configId && isHeld(e, now)).map((e) => ({ ...e }));
  }

  rewrite(id: number, body: string): void {
    const entry = this.#entries.get(id);
    if (entry !== undefined) entry.body = body;
  }

  remove(id: number): boolean {
    return this.#entries.delete(id);
  }

  reschedule(id: number, attempts: number, nextAttemptAt: number, lastError: string): void {
    const entry = this.#entries.get(id);
    if (entry !== undefined) Object.assign(entry, { attempts, nextAttemptAt, lastError });
  }

  drop(taskId: string, configId?: string): number {
    let n = 0;
    for (const [id, e] of this.#entries) {
      if (e.taskId === taskId && (configId === undefined || e.configId === configId)) {
        this.#entries.delete(id);
        n++;
      }
    }
    return n;
  }

  size(): number {
    return this.#entries.size;
  }
}

interface Row {
  id: number;
  task_id: string;
  config_id: string;
  body: string;
  content_type: string;
  attempts: number;
  next_attempt_at: number;
  created_at: number;
  last_error: string | null;
  traceparent: string | null;
  tracestate: string | null;
  held_until: number | null;
  coalesce_key: string | null;
}

const isHeld = (e: Pick<PushDelivery, "heldUntil">, now: number): boolean => e.heldUntil !== undefined && e.heldUntil > now;

const fromRow = (r: Row): PushDelivery => ({
  id: r.id,
  taskId: r.task_id,
  configId: r.config_id,
  body: r.body,
  contentType: r.content_type,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  createdAt: r.created_at,
  ...(r.last_error === null ? {} : { lastError: r.last_error }),
  ...(r.traceparent === null ? {} : { traceparent: r.traceparent }),
  ...(r.tracestate === null ? {} : { tracestate: r.tracestate }),
  ...(r.held_until === null ? {} : { heldUntil: r.held_until }),
  ...(r.coalesce_key === null ? {} : { coalesceKey: r.coalesce_key }),
});

// The head of each queue, the smallest id per (task_id, config_id) among the entries not held at the first bound
// parameter (now), with the given columns.
const heads = (columns: string): string => `SELECT ${columns} FROM a2a_push_outbox o
  JOIN (SELECT MIN(id) AS id FROM a2a_push_outbox WHERE held_until IS NULL OR held_until <= ? GROUP BY task_id, config_id) h ON h.id = o.id`;

export class SqlitePushOutboxStore implements PushOutboxStore {
  constructor(
    private readonly store: StoreDatabase,
    private readonly now: () => number = Date.now,
  ) {}

  enqueue(items: NewDelivery[], at = this.now()): void {
    if (items.length === 0) return;
    this.store.transaction("pushOutbox.enqueue", () => {
      const insert = this.store.statement(
        `INSERT INTO a2a_push_outbox (task_id, config_id, body, content_type, attempts, next_attempt_at, created_at, traceparent, tracestate, held_until, coalesce_key)
         VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)`,
      );
      for (const item of items) {
        const { taskId, configId, body, contentType, heldUntil, coalesceKey } = item;
        insert.run(taskId, configId, body, contentType, heldUntil ?? at, at, item.traceparent ?? null, item.tracestate ?? null, heldUntil ?? null, coalesceKey ?? null);
      }
    });
  }

  #heads(busy: BusyQueues, where: string, ...args: unknown[]): Row[] {
    // Busy queues are few (at most the delivery concurrency): filtered here rather than in SQL.
    const rows = this.store.guard("pushOutbox.due", () => this.store.statement(`${heads("o.*")} ${where}`).all(...args) as Row[]);
    return busy.size === 0 ? rows : rows.filter((r) => !busy.has(queueKey(r.task_id, r.config_id)));
  }

  due(now: number, limit: number, busy: BusyQueues): PushDelivery[] {
    return this.#heads(busy, "WHERE o.next_attempt_at <= ? ORDER BY o.next_attempt_at, o.id LIMIT ?", now, now, limit + busy.size)
      .slice(0, limit)
      .map(fromRow);
  }

  nextDueAt(busy: BusyQueues, now: number): number | undefined {
    // Only the queue keys and times: the bodies stay on disk.
    return this.store.guard("pushOutbox.nextDueAt", () => {
      const rows = this.store
        .statement(`${heads("o.task_id, o.config_id, o.next_attempt_at")} ORDER BY o.next_attempt_at, o.id LIMIT ?`)
        .all(now, busy.size + 1) as Pick<Row, "task_id" | "config_id" | "next_attempt_at">[];
      const head = rows.find((r) => !busy.has(queueKey(r.task_id, r.config_id)))?.next_attempt_at;
      const held = this.store.statement("SELECT MIN(held_until) AS at FROM a2a_push_outbox WHERE held_until > ?").get(now) as { at: number | null };
      return held.at === null ? head : head === undefined ? held.at : Math.min(head, held.at);
    });
  }

  held(taskId: string, configId: string, now: number): PushDelivery[] {
    return this.store.guard("pushOutbox.held", () =>
      (
        this.store.statement("SELECT * FROM a2a_push_outbox WHERE task_id = ? AND config_id = ? AND held_until > ? ORDER BY id").all(taskId, configId, now) as Row[]
      ).map(fromRow),
    );
  }

  rewrite(id: number, body: string): void {
    this.store.guard("pushOutbox.rewrite", () => this.store.statement("UPDATE a2a_push_outbox SET body = ? WHERE id = ?").run(body, id));
  }

  remove(id: number): boolean {
    return this.store.guard("pushOutbox.remove", () => this.store.statement("DELETE FROM a2a_push_outbox WHERE id = ?").run(id).changes > 0);
  }

  reschedule(id: number, attempts: number, nextAttemptAt: number, lastError: string): void {
    this.store.guard("pushOutbox.reschedule", () =>
      this.store.statement("UPDATE a2a_push_outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?").run(attempts, nextAttemptAt, lastError, id),
    );
  }

  drop(taskId: string, configId?: string): number {
    return this.store.guard("pushOutbox.drop", () =>
      configId === undefined
        ? this.store.statement("DELETE FROM a2a_push_outbox WHERE task_id = ?").run(taskId).changes
        : this.store.statement("DELETE FROM a2a_push_outbox WHERE task_id = ? AND config_id = ?").run(taskId, configId).changes,
    );
  }

  size(): number {
    return this.store.guard("pushOutbox.size", () => (this.store.statement("SELECT COUNT(*) AS n FROM a2a_push_outbox").get() as { n: number }).n);
  }
}
