// Push notifications waiting to be delivered. Each (task, config) pair is its own queue: only its oldest entry is
// ever due, so a receiver gets one task's notifications in order even across retries. An entry leaves the outbox
// when it was delivered, when its config was deleted, or when it was given up on; a restarted gateway (SQLite)
// delivers whatever was still waiting. SQLite and in-memory alike.
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
}

export type NewDelivery = Pick<PushDelivery, "taskId" | "configId" | "body" | "contentType" | "traceparent" | "tracestate">;

export interface PushOutboxStore {
  /** Queue notifications (all or none), due at once. */
  enqueue(items: NewDelivery[]): void;
  /**
   * The head of every (task, config) queue whose key is not in `busy` and that is due at `now`, the longest
   * waiting first, at most `limit`.
   */
  due(now: number, limit: number, busy: BusyQueues): PushDelivery[];
  /** When the next queue head falls due (epoch ms), or undefined when the outbox is empty. */
  nextDueAt(busy: BusyQueues): number | undefined;
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

  enqueue(items: NewDelivery[]): void {
    const at = this.now();
    for (const item of items) {
      const id = this.#nextId++;
      this.#entries.set(id, { id, ...item, attempts: 0, nextAttemptAt: at, createdAt: at });
    }
  }

  #heads(busy: BusyQueues): PushDelivery[] {
    const heads = new Map<string, PushDelivery>();
    // Map iteration follows insertion, i.e. id order: the first entry seen of a queue is its head.
    for (const entry of this.#entries.values()) {
      const key = queueKey(entry.taskId, entry.configId);
      if (!heads.has(key) && !busy.has(key)) heads.set(key, entry);
    }
    return [...heads.values()];
  }

  due(now: number, limit: number, busy: BusyQueues): PushDelivery[] {
    return this.#heads(busy)
      .filter((e) => e.nextAttemptAt <= now)
      .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.id - b.id)
      .slice(0, limit)
      .map((e) => ({ ...e }));
  }

  nextDueAt(busy: BusyQueues): number | undefined {
    let next: number | undefined;
    for (const e of this.#heads(busy)) if (next === undefined || e.nextAttemptAt < next) next = e.nextAttemptAt;
    return next;
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
}

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
});

// The head of each queue, the smallest id per (task_id, config_id), with the given columns.
const heads = (columns: string): string => `SELECT ${columns} FROM a2a_push_outbox o
  JOIN (SELECT MIN(id) AS id FROM a2a_push_outbox GROUP BY task_id, config_id) h ON h.id = o.id`;

export class SqlitePushOutboxStore implements PushOutboxStore {
  constructor(
    private readonly store: StoreDatabase,
    private readonly now: () => number = Date.now,
  ) {}

  enqueue(items: NewDelivery[]): void {
    if (items.length === 0) return;
    this.store.transaction("pushOutbox.enqueue", () => {
      const at = this.now();
      const insert = this.store.statement(
        "INSERT INTO a2a_push_outbox (task_id, config_id, body, content_type, attempts, next_attempt_at, created_at, traceparent, tracestate) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?)",
      );
      for (const item of items) insert.run(item.taskId, item.configId, item.body, item.contentType, at, at, item.traceparent ?? null, item.tracestate ?? null);
    });
  }

  #heads(busy: BusyQueues, where: string, ...args: unknown[]): Row[] {
    // Busy queues are few (at most the delivery concurrency): filtered here rather than in SQL.
    const rows = this.store.guard("pushOutbox.due", () => this.store.statement(`${heads("o.*")} ${where}`).all(...args) as Row[]);
    return busy.size === 0 ? rows : rows.filter((r) => !busy.has(queueKey(r.task_id, r.config_id)));
  }

  due(now: number, limit: number, busy: BusyQueues): PushDelivery[] {
    return this.#heads(busy, "WHERE o.next_attempt_at <= ? ORDER BY o.next_attempt_at, o.id LIMIT ?", now, limit + busy.size)
      .slice(0, limit)
      .map(fromRow);
  }

  nextDueAt(busy: BusyQueues): number | undefined {
    // Only the queue keys and times: the bodies stay on disk.
    const rows = this.store.guard("pushOutbox.nextDueAt", () =>
      this.store
        .statement(`${heads("o.task_id, o.config_id, o.next_attempt_at")} ORDER BY o.next_attempt_at, o.id LIMIT ?`)
        .all(busy.size + 1) as Pick<Row, "task_id" | "config_id" | "next_attempt_at">[],
    );
    return rows.find((r) => !busy.has(queueKey(r.task_id, r.config_id)))?.next_attempt_at;
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
