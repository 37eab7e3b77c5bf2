// The lifecycle rules of the task runtime (./tasks.ts): how a live task's state changes reach the store (a snapshot
// at every state change, told to the transition hooks in the same transaction; streamed output at most once a second),
// and how a task ends. finish() is the single place a task becomes terminal: first terminal state wins (in SQL), the
// final status event closes every stream once that state is written, and a snapshot the store refuses is saved again
// once it takes writes.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { TurnResult } from "../bridge/stream-mapper.js";
import { A2AError } from "../contract/errors.js";
import type { Metrics } from "../observability/metrics.js";
import { isTerminal, now, type ArtifactUpdateEvent, type Message, type Metadata, type StatusUpdateEvent, type Task, type TaskState } from "../protocol/model.js";
import type { StoreHealth } from "../storage/health.js";
import type { SaveResult, TaskStore } from "../storage/tasks.js";
import { UpstreamError } from "../upstream/errors.js";
import { backoffMs } from "../util/backoff.js";
import { isObject } from "../util/object.js";
import type { AbortUpstream } from "./abort.js";
import type { Admission } from "./admission.js";
import type { LiveTask } from "./live-task.js";
import type { TransitionHooks } from "./options.js";
import { asTaskError, errorText } from "./task-error.js";

/** The failure of a turn as `metadata.opencode.error` (spec: OpenCodeErrorMetadata). */
function errorMetadata(error: UpstreamError | A2AError): Metadata {
  if (error instanceof UpstreamError) {
    const a2a = error.toA2AError();
    return {
      type: a2a.reason,
      kind: error.kind,
      message: error.detail,
      ...(error.status === undefined ? {} : { upstream_status: error.status }),
      ...(error.upstreamName === undefined ? {} : { upstream_error: error.upstreamName }),
    };
  }
  return { type: error.reason, message: error.message };
}

export function mergeOpencode(metadata: Metadata | undefined, opencode: Metadata): Metadata {
  const base = metadata ?? {};
  const current = isObject(base.opencode) ? base.opencode : {};
  return { ...base, opencode: { ...current, ...opencode } };
}

export function mergeShared(metadata: Metadata | undefined, shared: Metadata): Metadata {
  const base = metadata ?? {};
  const current = isObject(base.shared) ? base.shared : {};
  return { ...base, shared: { ...current, ...shared } };
}

export interface LifecycleDeps {
  store: TaskStore;
  health: StoreHealth;
  transitions: TransitionHooks | undefined;
  metrics: Metrics;
  log: Pick<Logger, "warn" | "error">;
  admission: Admission;
  abortUpstream: AbortUpstream;
}

export class TaskLifecycle {
  /** Set by stop(): turns still running are left as stored (the next start marks them failed). */
  #stopped = false;
  /** Terminal snapshots the store refused (full disk, …): saved again once it takes writes. */
  readonly #unsaved = new Map<string, Task>();
  #unsavedTimer: NodeJS.Timeout | undefined;
  #unsavedAttempt = 0;
  #retrying = false;

  constructor(private readonly deps: LifecycleDeps) {
    deps.health.onRecovered(() => this.#retryUnsaved());
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Shutdown: no task changes state any more. */
  stop(): void {
    this.#stopped = true;
    if (this.#unsavedTimer !== undefined) clearTimeout(this.#unsavedTimer);
  }

  /** Runs one store write and records its outcome; a failure is rethrown (typed TASK_STORE_UNAVAILABLE). */
  async write<T>(write: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await write();
    } catch (error) {
      this.deps.health.failed(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    this.deps.health.succeeded();
    return result;
  }

  /**
   * Saves a task whose state just changed, and tells the transition hooks in the same transaction when the save
   * applied (a task already terminal in the store keeps its state and nobody is told). Not ordered with a live task's
   * queued writes: for stored tasks no turn runs for (a restart's orphans, a cancel without a live turn).
   */
  save(task: Task, event?: StatusUpdateEvent): Promise<SaveResult> {
    const { store, transitions: hooks } = this.deps;
    if (hooks === undefined) return this.write(() => store.save(task));
    return this.write(() =>
      hooks.atomically(async (tx) => {
        const result = await tx.tasks.save(task);
        if (result.applied) await hooks.changed(tx, task, event);
        return result;
      }),
    );
  }

  /**
   * Queues the live task's current snapshot behind its earlier writes, so the store sees its states in the order
   * they happened (`tell`: a state change, told to the hooks). A failure goes to `refused`; the queue goes on.
   */
  #queue(live: LiveTask, tell: boolean, event: StatusUpdateEvent | undefined, refused: (error: unknown, task: Task) => void): void {
    const task = live.task;
    live.writes = live.writes
      .then(() => (tell ? this.save(task, event) : this.write(() => this.deps.store.save(task))))
      .then(
        () => undefined,
        (error: unknown) => refused(error, task),
      );
  }

  /**
   * The store refused a running task's progress or state change (full disk, …): the task fails with that reason
   * (its final state is saved once the store takes writes again) and its OpenCode turn is stopped.
   */
  readonly #refusedRunning = (live: LiveTask) => (error: unknown) => {
    this.deps.log.error({ err: errorText(error), taskId: live.id }, "task store refused a running task's progress");
    if (isTerminal(live.state)) return;
    this.fail(live, asTaskError(error));
    live.abort.abort();
    if (live.sessionId !== undefined) void this.deps.abortUpstream(live.sessionId, live.routing);
  };

  /** Streamed output reaches the store at most once a second (compact snapshots), so a crash loses little. */
  persistSoon(live: LiveTask): void {
    if (live.persistTimer !== undefined) return;
    live.persistTimer = setTimeout(() => {
      live.persistTimer = undefined;
      if (isTerminal(live.state) || this.#stopped) return;
      this.#queue(live, false, undefined, this.#refusedRunning(live));
    }, 1_000);
    live.persistTimer.unref();
  }

  /** A state change of a running task reaches the store (in order) and the transition hooks. */
  changed(live: LiveTask, event?: StatusUpdateEvent): void {
    this.#queue(live, true, event, this.#refusedRunning(live));
  }

  /** A `submitted` task's turn starts: it works from now on (saved and told like any state change). */
  begin(live: LiveTask): void {
    if (live.state === "submitted") this.#working(live);
  }

  /**
   * After the caller answered the pending interrupt: the task is working again at once (OpenCode confirms with
   * its *.replied event shortly after), so a blocking send waits for the continued turn.
   */
  resume(live: LiveTask): void {
    if (live.state === "input-required") this.#working(live);
  }

  /** The task works (again): saved and told like any state change. */
  #working(live: LiveTask): void {
    const status = { state: "working" as const, timestamp: now() };
    live.update({ status });
    const event: StatusUpdateEvent = { kind: "status-update", taskId: live.id, contextId: live.contextId, status, final: false };
    this.changed(live, event);
    live.fanout.publish(event);
  }

  /**
   * The end of a turn OpenCode finished (`result`, and the artifacts the runtime read for it): the answer's text
   * as the agent's reply, the usage, the final state. True when the task completed.
   */
  complete(live: LiveTask, result: TurnResult, extras: ArtifactUpdateEvent[]): boolean {
    if (!isTerminal(result.state)) {
      // The event stream ended without the turn's end (hub stopped): never report a running task as finished.
      this.fail(live, new UpstreamError({ kind: "unreachable", operation: "event-stream", detail: "the upstream event stream ended before the turn finished" }));
      return false;
    }
    if (result.finalTextChunk !== undefined) live.fanout.publish(result.finalTextChunk);
    live.update({ artifacts: result.artifacts });
    for (const update of extras) {
      live.putArtifact(update.artifact);
      live.fanout.publish(update);
    }
    const usage = result.usage === undefined ? {} : { usage: result.usage };
    live.update({ metadata: mergeShared(live.task.metadata, usage) });
    if (result.error !== undefined && result.state !== "completed") {
      this.finish(live, result.state, result.error.detail, usage, errorMetadata(result.error));
      return false;
    }
    const reply: Message = { messageId: randomUUID(), role: "agent", parts: [{ kind: "text", text: result.finalText }], taskId: live.id, contextId: live.contextId };
    live.update({ history: [...(live.task.history ?? []), reply] });
    this.finish(live, result.state, undefined, usage);
    return result.state === "completed";
  }

  /**
   * OpenCode lost the task's turn (its process died or restarted mid-turn): the task fails with UPSTREAM_TURN_LOST,
   * keeps the output that arrived (artifacts marked `metadata.opencode.partial`) and the usage reported so far.
   */
  turnLost(live: LiveTask, detail: string): void {
    if (isTerminal(live.state)) return;
    live.update({ artifacts: (live.task.artifacts ?? []).map((a) => ({ ...a, metadata: mergeOpencode(a.metadata, { partial: true }) })) });
    const usage = live.turn?.mapper.usage;
    if (usage !== undefined) live.update({ metadata: mergeShared(live.task.metadata, { usage }) });
    this.deps.log.warn({ taskId: live.id, sessionId: live.sessionId, detail }, "upstream turn lost");
    this.finish(live, "failed", `${detail}; the output so far is kept, marked partial.`, usage === undefined ? {} : { usage }, {
      type: "UPSTREAM_TURN_LOST",
      message: detail,
    });
    live.abort.abort();
  }

  fail(live: LiveTask, error: UpstreamError | A2AError): void {
    const state: TaskState = error instanceof UpstreamError ? error.taskState : "failed";
    const text = error instanceof UpstreamError ? error.detail : error.message;
    this.finish(live, state, text, {}, errorMetadata(error));
  }

  /** The single place a task becomes terminal: snapshot, store (first terminal wins), final event, close. */
  finish(live: LiveTask, state: TaskState, statusText: string | undefined, shared: Metadata, error?: Metadata): void {
    if (isTerminal(live.state) || this.#stopped) return;
    if (live.persistTimer !== undefined) clearTimeout(live.persistTimer);
    live.persistTimer = undefined;
    const status = {
      state,
      timestamp: now(),
      ...(statusText === undefined
        ? {}
        : { message: { messageId: randomUUID(), role: "agent" as const, parts: [{ kind: "text" as const, text: statusText }], taskId: live.id, contextId: live.contextId } }),
    };
    const metadata = mergeShared(live.task.metadata, shared);
    live.update({ status, metadata: error === undefined ? metadata : mergeOpencode(metadata, { error }) });
    this.#queue(live, true, undefined, (saveError, task) => {
      // Clients still get the final status; the store gets it once it takes writes again.
      this.deps.log.error({ err: errorText(saveError), taskId: live.id }, "task store refused a final state; retrying");
      this.#unsaved.set(live.id, task);
      this.#retryUnsaved();
    });
    this.deps.metrics.tasksFinished.inc({ state });
    const final: StatusUpdateEvent = {
      kind: "status-update",
      taskId: live.id,
      contextId: live.contextId,
      status: { ...status },
      final: true,
      metadata: {
        shared: { ...(live.sessionId === undefined ? {} : { session: { id: live.sessionId } }), ...shared },
        ...(error === undefined ? {} : { opencode: { error } }),
      },
    };
    this.deps.admission.ended(live);
    // The final event goes out once the final state is written (or refused, then clients still get it): a client
    // that reads the task after its stream ended, here or on another gateway, reads that state.
    void this.afterWrites(live).then(() => {
      live.fanout.publish(final);
      live.fanout.close();
      live.wake();
    });
  }

  /**
   * Settles once every write queued so far for the live task is done (stored or refused, never rejects): a
   * terminal or interrupted state is published after it, so the store never trails a stream's last event.
   */
  afterWrites(live: LiveTask): Promise<void> {
    return live.writes;
  }

  /** Saves the terminal snapshots the store refused, until it takes them (backoff 0.5 s … 30 s). */
  #retryUnsaved(): void {
    if (this.#unsaved.size === 0 || this.#stopped || this.#retrying) return;
    if (this.#unsavedTimer !== undefined) clearTimeout(this.#unsavedTimer);
    this.#unsavedTimer = undefined;
    this.#retrying = true;
    void this.#saveUnsaved().finally(() => {
      this.#retrying = false;
      if (this.#unsaved.size === 0) {
        this.#unsavedAttempt = 0;
        return;
      }
      if (this.#stopped) return;
      this.#unsavedTimer = setTimeout(() => {
        this.#unsavedTimer = undefined;
        this.#retryUnsaved();
      }, backoffMs(this.#unsavedAttempt++, 500, 30_000));
      this.#unsavedTimer.unref();
    });
  }

  async #saveUnsaved(): Promise<void> {
    for (const [id, task] of [...this.#unsaved]) {
      try {
        this.#unsaved.delete(id);
        await this.save(task);
      } catch {
        if (!this.#unsaved.has(id)) this.#unsaved.set(id, task);
        return;
      }
    }
  }
}
