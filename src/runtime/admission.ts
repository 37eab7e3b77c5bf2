// Admission of the task runtime (./tasks.ts): A2A_MAX_RUNNING_TASKS turns run at once (tasks in `working` count; one
// waiting on an interrupt frees its turn), A2A_TASK_QUEUE_LIMIT tasks wait for one, and anything beyond is refused
// with TASK_QUEUE_FULL before it is created. Waiting tasks are served round robin per principal, oldest first within
// a principal, so one busy principal cannot starve the others.
import { A2AError } from "../contract/errors.js";
import type { Metrics } from "../observability/metrics.js";
import { isTerminal, now } from "../protocol/model.js";
import type { LiveTask } from "./live-task.js";

interface Waiting {
  live: LiveTask;
  begin: () => void;
}

/** A type, not an interface: /health reads it as a plain record of numbers. */
export type AdmissionStatus = { running: number; queued: number; max_running: number; queue_limit: number };

export class Admission {
  /** Tasks whose turn runs (admitted); the ones in `working` count against A2A_MAX_RUNNING_TASKS. */
  readonly #admitted = new Set<LiveTask>();
  /** Tasks waiting for a turn, per principal. */
  readonly #waiting = new Map<string, Waiting[]>();
  #queued = 0;
  /**
   * Turns admit() granted to tasks not entered yet (being created and stored): they count as running, so sends
   * arriving while those writes are awaited cannot all be admitted at once.
   */
  #reserved = 0;

  constructor(
    private readonly limits: { maxRunning: number; queueLimit: number },
    private readonly metrics: Metrics,
    /** The runtime shut down: nothing more is started. */
    private readonly stopped: () => boolean,
  ) {}

  /** Turns running (working) and tasks waiting for one, for /health and metrics. */
  status(): AdmissionStatus {
    const { maxRunning, queueLimit } = this.limits;
    return { running: this.#running(), queued: this.#queued, max_running: maxRunning, queue_limit: queueLimit };
  }

  /**
   * Whether a new task's turn can start at once (then the turn is reserved until enter(…, true) or release()); throws
   * TASK_QUEUE_FULL when it could not even wait for one.
   */
  admit(): boolean {
    const { maxRunning, queueLimit } = this.limits;
    const free = this.#queued === 0 && this.#running() < maxRunning;
    if (!free && this.#queued >= queueLimit) {
      const retry = Math.min(30, Math.max(1, Math.ceil(this.#queued / maxRunning)));
      throw new A2AError(
        "TASK_QUEUE_FULL",
        `${this.#running()} tasks are running and ${this.#queued} waiting (A2A_MAX_RUNNING_TASKS=${maxRunning}, A2A_TASK_QUEUE_LIMIT=${queueLimit}); retry in ${retry} s`,
        { running: this.#running(), queued: this.#queued, limit: queueLimit, retry_after_seconds: retry },
        { headers: { "Retry-After": String(retry) } },
      );
    }
    if (free) this.#reserved++;
    return free;
  }

  /** A turn admit() granted will not be entered (its task could not be created). */
  release(): void {
    this.#reserved--;
    if (this.#queued > 0) queueMicrotask(() => this.#drain());
  }

  /**
   * Runs the task's turn at once (`immediately`, from admit()) or once a turn is free; a task that waits tells its streams its
   * place in the queue (a `queued` progress update).
   */
  enter(live: LiveTask, turn: () => Promise<void>, immediately: boolean): void {
    const begin = (): void => {
      this.#admitted.add(live);
      void turn().finally(() => {
        this.#admitted.delete(live);
        this.#drain();
      });
    };
    if (immediately) {
      this.#reserved--;
      begin();
      return;
    }
    const line = this.#waiting.get(live.owner) ?? [];
    line.push({ live, begin });
    this.#waiting.set(live.owner, line);
    this.#queued++;
    this.metrics.tasksQueued.inc();
    live.fanout.publish({
      kind: "status-update",
      taskId: live.id,
      contextId: live.contextId,
      status: { state: "working", timestamp: now() },
      final: false,
      metadata: { shared: { progress: { type: "queued", part_id: `${live.id}:queued`, position: this.#queued } } },
    });
  }

  /** A running task left `working` (interrupted): its turn may go to a waiting task. */
  paused(): void {
    if (this.#queued > 0) queueMicrotask(() => this.#drain());
  }

  /** A task ended: one that ended while it waited (canceled) gives its place back at once. */
  ended(live: LiveTask): void {
    if (this.#queued === 0) return;
    const line = this.#waiting.get(live.owner);
    const index = line?.findIndex((w) => w.live === live) ?? -1;
    if (line !== undefined && index >= 0) {
      line.splice(index, 1);
      this.#queued--;
      if (line.length === 0) this.#waiting.delete(live.owner);
    }
    queueMicrotask(() => this.#drain());
  }

  #running(): number {
    let n = this.#reserved;
    for (const live of this.#admitted) if (live.state === "working") n++;
    return n;
  }

  /** Starts waiting tasks while turns are free: one principal after the other, each its oldest task first. */
  #drain(): void {
    const { maxRunning } = this.limits;
    while (this.#queued > 0 && this.#running() < maxRunning) {
      const next = this.#waiting.entries().next().value as [string, Waiting[]] | undefined;
      if (next === undefined) break;
      const [owner, line] = next;
      const item = line.shift();
      this.#waiting.delete(owner);
      if (line.length > 0) this.#waiting.set(owner, line); // to the back: the other principals go first
      if (item === undefined) continue;
      this.#queued--;
      if (isTerminal(item.live.state) || this.stopped()) continue; // canceled while it waited
      item.begin();
    }
  }
}
