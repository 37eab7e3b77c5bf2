// The A2A task runtime: one class behind send / stream / get / list / cancel / subscribe of both protocol lines.
//
// A task's turn runs in the background as an OpenCode `prompt_async` on its session, observed through the shared
// EventHub and mapped to A2A events by the StreamMapper (./turn.ts). The live task (./live-task.ts) keeps a compact
// snapshot (canonical artifacts, no token fragments) and fans its events out, in one order, to every attached stream.
// The store receives snapshots at state changes and at the end; the first terminal state wins (in SQL) (./lifecycle.ts).
// New tasks are admitted to a bounded number of running turns (./admission.ts) after the request rules (./requests.ts);
// at start, tasks a previous process left running are failed (./restart.ts).
import { randomUUID } from "node:crypto";
import type { Principal } from "../auth/index.js";
import { resolveRouting } from "../bridge/directory.js";
import { sessionTitle, toPromptParts, type PromptPart } from "../bridge/parts.js";
import { explicitSessionId } from "../bridge/sessions.js";
import { A2AError } from "../contract/errors.js";
import type { AbortOutcome } from "../observability/metrics.js";
import { isTerminal, now, type ListParams, type Message, type Metadata, type SendParams, type Task } from "../protocol/model.js";
import { StoreHealth } from "../storage/health.js";
import type { OrphanScope, StoredTask, TaskListResult } from "../storage/tasks.js";
import { traceOfRouting, withTrace, type TraceContext } from "../tracing/index.js";
import { upstreamAbort, type AbortUpstream } from "./abort.js";
import { Admission, type AdmissionStatus } from "./admission.js";
import { FanOut, streamHandle, type StreamHandle } from "./fanout.js";
import { mergeOpencode, TaskLifecycle } from "./lifecycle.js";
import { LiveTask, newTask } from "./live-task.js";
import type { Configure, PendingInterrupt, RuntimeOptions, TurnSpec } from "./options.js";
import { checkContinuation, checkModel, noTurnToContinue, notTheOwner, outputModes, requestMetadata, wantsFileContents } from "./requests.js";
import { failOrphans, loseTurns, releaseAll } from "./restart.js";
import { asTaskError, errorText } from "./task-error.js";
import { TurnLoop } from "./turn.js";
import { RemoteTasks } from "./remote.js";

export type { StreamHandle } from "./fanout.js";
export type { InterruptHooks, PendingInterrupt, RuntimeOptions, TransitionHooks, TurnArtifactOptions, TurnSpec } from "./options.js";

/** Where #visible reads a task no turn runs for here. */
type Lookup = (id: string) => Promise<Pick<StoredTask, "task" | "owner"> | undefined>;
export class TaskRuntime {
  readonly #live = new Map<string, LiveTask>();
  readonly #health: StoreHealth;
  readonly #admission: Admission;
  readonly #lifecycle: TaskLifecycle;
  readonly #turns: TurnLoop;
  readonly #abortUpstream: AbortUpstream;
  /** Tasks whose turn runs on another gateway of the database (PostgreSQL); undefined when this gateway is alone. */
  readonly #remote: RemoteTasks | undefined;

  constructor(private readonly opts: RuntimeOptions) {
    this.#health = opts.storeHealth ?? new StoreHealth();
    this.#admission = new Admission(opts.admission ?? { maxRunning: 32, queueLimit: 1_000 }, opts.metrics, () => this.#lifecycle.stopped);
    const abortUpstream = (this.#abortUpstream = upstreamAbort(opts));
    const { store, transitions, metrics, log } = opts;
    this.#lifecycle = new TaskLifecycle({ store, health: this.#health, transitions, metrics, log, admission: this.#admission, abortUpstream });
    this.#turns = new TurnLoop({ opts, lifecycle: this.#lifecycle, admission: this.#admission, live: this.#live, abortUpstream });
    this.#remote = RemoteTasks.serving(opts, this, (id) => this.#live.has(id));
  }

  /** The other gateway running the task's turn, when it runs on one (never for a task live here). */
  readonly runnerOf = (taskId: string | undefined, principal?: Principal): Promise<string | undefined> => this.#remote?.runner(taskId, principal) ?? Promise.resolve(undefined);

  /** The live tasks whose turn has an OpenCode session (the MCP tools attribute OpenCode's calls to them). */
  onSessions(): LiveTask[] {
    return [...this.#live.values()].filter((live) => live.sessionId !== undefined);
  }

  /** Turns running (working) and tasks waiting for one, for /health and metrics. */
  admission(): AdmissionStatus {
    return this.#admission.status();
  }

  /** Whether the store takes writes (for /health). */
  get storeHealth(): StoreHealth {
    return this.#health;
  }

  /** Tasks with a turn in progress. */
  get active(): number {
    return this.#live.size;
  }

  /**
   * message/send: starts (or continues) a task. Blocking (default) waits until the task is terminal or
   * interrupted; non-blocking returns the working task at once. `spec`: a subtask's agent, command and start gate.
   */
  async send(principal: Principal, params: SendParams, configure?: Configure, trace?: TraceContext, spec?: TurnSpec): Promise<Task> {
    const peer = await this.runnerOf(params.message.taskId, principal);
    if (peer !== undefined) return this.#remote!.send(peer, principal, params, configure, trace);
    const { live } = await this.#start(principal, params, undefined, configure, trace, spec);
    // Blocking: the answer is in the store before it is given, so a read of the task anywhere sees it.
    if (params.configuration?.blocking !== false) await live.settled().then(() => live.writes);
    // As a read of the task gives it (the governance summary, when it has one).
    return (await this.#annotation(live.id))(live.task);
  }

  /** message/stream: starts a task and returns its event stream (the Task first). */
  async stream(principal: Principal, params: SendParams, configure?: Configure, trace?: TraceContext): Promise<StreamHandle> {
    const peer = await this.runnerOf(params.message.taskId, principal);
    if (peer !== undefined) return this.#remote!.stream(peer, principal, params, configure, trace);
    const { queue } = await this.#start(principal, params, (l) => l.fanout.subscribe({ kind: "task", task: l.task }), configure, trace);
    return streamHandle(queue, this.opts.metrics);
  }

  /**
   * `configure` runs once the task exists and before its turn can change its state (the push notification config
   * given with the message is stored there, so it sees every state change).
   */
  async #start<T = undefined>(
    principal: Principal,
    params: SendParams,
    attach?: (live: LiveTask) => T,
    configure?: Configure,
    trace?: TraceContext,
    spec?: TurnSpec,
  ): Promise<{ live: LiveTask; queue: T }> {
    const message = params.message;
    const modes = outputModes(params);
    const parts = toPromptParts(message); // data parts become framed JSON text; refuses what OpenCode cannot take, before anything is created
    const metadata = requestMetadata(params);
    // The routing carries the request's trace context to every OpenCode call made for the task (src/tracing withTrace).
    const routing = withTrace(resolveRouting(metadata, this.opts.routing), trace);
    if (message.taskId !== undefined) {
      const live = await this.#continue(principal, message as Message & { taskId: string }, parts, metadata, configure);
      return { live, queue: attach?.(live) as T };
    }
    const contextId = message.contextId ?? randomUUID();
    // An explicitly named session is checked before anything is created: a session owned by someone else, or
    // unknown to OpenCode, is the caller's error (SESSION_FORBIDDEN / SESSION_NOT_FOUND), not a failed task.
    const preResolved =
      explicitSessionId(metadata) === undefined ? undefined : await this.opts.sessions.resolve(principal, contextId, metadata, routing, sessionTitle(message));
    await checkModel(this.opts.model, metadata);
    // Admission: a free turn, or a place in the bounded queue, else refused before anything is created (gated: later).
    // A turn admitted now is reserved until the task enters it; a task that is not created gives it back.
    const gate = spec?.gate;
    const admitNow = gate === undefined ? this.#admission.admit() : false;
    try {
      const task = newTask(message, contextId, modes.accepted, gate === undefined ? "working" : "submitted");
      if (spec?.opencode !== undefined) task.metadata = mergeOpencode(task.metadata, spec.opencode);
      const taskId = task.id;
      const live = new LiveTask(task, principal.id, routing, principal.trustLevel, principal.scopes, principal.admin);
      live.diffAsFile = modes.diffAsFile;
      live.includeFileContents = wantsFileContents(metadata);
      await this.#lifecycle.write(() =>
        this.opts.store.create(task, principal.id, {
          acceptedOutputModes: modes.accepted,
          ...("directory" in routing ? { directory: routing.directory } : {}),
          ...(this.opts.cluster === undefined ? {} : { instance: this.opts.cluster.instance }),
        }),
      );
      this.#live.set(taskId, live);
      if (configure !== undefined) {
        try {
          await configure(live.task);
        } catch (error) {
          // The config could not be stored (the store failed): the task is not started and the request fails.
          this.#live.delete(taskId);
          try {
            this.#lifecycle.fail(live, asTaskError(error));
          } catch {
            // The store is down: the task stays as created, and a restart fails it.
          }
          throw error;
        }
      }
      const queue = attach?.(live) as T;
      const request = { principal, message, metadata, parts, routing, acceptedOutputModes: modes.accepted, preResolved, agent: spec?.agent, command: spec?.command };
      const turn = (): Promise<void> =>
        this.#turns.run(live, request).catch((error: unknown) => {
          this.opts.log.error({ err: errorText(error), taskId }, "turn crashed");
          this.#lifecycle.fail(live, asTaskError(error));
        });
      if (gate === undefined) this.#admission.enter(live, turn, admitNow);
      else void gate.then((go) => this.#opened(live, go, turn));
      return { live, queue };
    } catch (error) {
      if (admitNow) this.#admission.release();
      throw error;
    }
  }

  /** The gate of a `submitted` task opened: its turn is admitted (it works from then on), or it never runs. */
  #opened(live: LiveTask, go: boolean, turn: () => Promise<void>): void {
    if (go && !isTerminal(live.state) && !this.#lifecycle.stopped) {
      try {
        this.#lifecycle.begin(live);
        // Nothing between admit() and enter(): a reserved turn is always entered.
        this.#admission.enter(live, turn, this.#admission.admit());
        return;
      } catch (error) {
        this.#lifecycle.fail(live, asTaskError(error));
      }
    } else if (!isTerminal(live.state)) this.#lifecycle.finish(live, "canceled", undefined, {});
    this.#live.delete(live.id);
  }

  /** Resolves when the task is terminal (at once when no turn of it is live here). */
  ended = (taskId: string): Promise<void> => this.#live.get(taskId)?.ended() ?? Promise.resolve();

  /** A message to an existing task: the answer to its pending interrupt, or a follow-up into its running turn. */
  async #continue(
    principal: Principal,
    message: Message & { taskId: string },
    parts: PromptPart[],
    metadata: Metadata,
    configure: Configure | undefined,
  ): Promise<LiveTask> {
    const previous = await this.#visible(principal, message.taskId);
    checkContinuation(message, previous.task);
    const existing = this.#live.get(message.taskId);
    const pending = existing === undefined ? undefined : existing.pendingInterrupt();
    if (existing !== undefined && pending !== undefined && this.opts.interrupts?.answer !== undefined) {
      // The A2A way of answering OpenCode's question: a follow-up message to the input-required task.
      const answer: Message = { ...message, taskId: existing.id, contextId: existing.contextId, role: "user" };
      await this.opts.interrupts.answer(principal, pending, answer);
      // Only once the answer went through: a refused answer changes nothing, the config included.
      await configure?.(existing.task);
      existing.update({ history: [...(existing.task.history ?? []), answer] });
      this.#lifecycle.resume(existing);
      return existing;
    }
    // A follow-up while the task works: taken into the running OpenCode turn (same session), as a correction.
    if (existing !== undefined && existing.owner === principal.id) {
      await this.#turns.followUp(existing, message, parts, metadata, configure);
      return existing;
    }
    if (existing !== undefined) throw notTheOwner(message.taskId, previous.task.status.state);
    throw noTurnToContinue(message.taskId);
  }

  /** The pending interrupt of a task the caller can see (for tasks/provideInputAndContinue). */
  async pendingInterrupt(principal: Principal, taskId: string): Promise<PendingInterrupt | undefined> {
    await this.#visible(principal, taskId);
    const peer = await this.runnerOf(taskId);
    return peer === undefined ? this.#live.get(taskId)?.pendingInterrupt() : this.#remote!.pendingInterrupt(peer, principal, taskId);
  }

  /**
   * After the caller answered the pending interrupt: the task is working again at once (OpenCode confirms with
   * its *.replied event shortly after), so a blocking send waits for the continued turn.
   */
  async resume(principal: Principal, taskId: string): Promise<Task> {
    await this.#visible(principal, taskId);
    const peer = await this.runnerOf(taskId);
    if (peer !== undefined) return this.#remote!.resume(peer, principal, taskId);
    const live = this.#live.get(taskId);
    if (live === undefined) throw new A2AError("TASK_NOT_FOUND", undefined, { task_id: taskId });
    this.#lifecycle.resume(live);
    return live.task;
  }

  /** Resolves when the task is terminal or interrupted again (blocking tasks/provideInputAndContinue). */
  async settled(principal: Principal, taskId: string): Promise<Task> {
    await this.#visible(principal, taskId);
    const peer = await this.runnerOf(taskId);
    if (peer !== undefined) return this.#remote!.settled(peer, principal, taskId);
    const live = this.#live.get(taskId);
    if (live !== undefined) await live.settled().then(() => live.writes);
    return this.get(principal, taskId);
  }

  /**
   * The task as the caller may see it: another principal's task is TaskNotFound, never "forbidden". A task without a
   * live turn comes from `lookup` (the store's get by default). Without the governance summary (see #readable).
   */
  async #visible(principal: Principal, taskId: string, lookup: Lookup = (id) => this.opts.store.get(id)): Promise<{ task: Task; owner: string }> {
    const live = this.#live.get(taskId);
    if (live !== undefined && (live.owner === principal.id || principal.admin)) return { task: live.task, owner: live.owner };
    const record = await lookup(taskId);
    if (record === undefined || (record.owner !== principal.id && principal.admin !== true)) {
      throw new A2AError("TASK_NOT_FOUND", undefined, { task_id: taskId });
    }
    return { task: record.task, owner: record.owner };
  }

  /** What the interrupt hooks add to a task that is read (the governance summary, current at every read). */
  readonly #annotation = (taskId: string): Promise<(task: Task) => Task> => this.opts.interrupts?.annotation?.(taskId) ?? Promise.resolve((task) => task);

  /** #visible() with the governance summary; read first, so no wait comes between the task's snapshot and its use. */
  async #readable(principal: Principal, taskId: string, lookup?: Lookup): Promise<Task> {
    const annotate = await this.#annotation(taskId);
    return annotate((await this.#visible(principal, taskId, lookup)).task);
  }

  /** The task if the caller may see it (else TASK_NOT_FOUND), without the governance summary: a visibility check. */
  async visible(principal: Principal, taskId: string): Promise<Task> {
    return (await this.#visible(principal, taskId)).task;
  }

  /** A live task's snapshot is never written to, and a stored task is a fresh copy: neither is copied. */
  async get(principal: Principal, taskId: string): Promise<Task> {
    return this.#readable(principal, taskId);
  }

  /**
   * get() for a caller that only reads the task (GetTask encodes it for the wire): a stored task comes from the
   * store's view() and may be shared and frozen.
   */
  async read(principal: Principal, taskId: string): Promise<Task> {
    return this.#readable(principal, taskId, (id) => this.opts.store.view(id));
  }

  /** The trace context of a live task's turn (the request that started it), for its logs and push deliveries. */
  traceOf(taskId: string): TraceContext | undefined {
    return traceOfRouting(this.#live.get(taskId)?.routing);
  }

  list(principal: Principal, params: ListParams): Promise<TaskListResult> {
    return this.opts.store.list(principal.admin ? undefined : principal.id, params);
  }

  /** Canceled at once and idempotent; the upstream abort is best effort within A2A_CANCEL_ABORT_TIMEOUT_SECONDS. */
  async cancel(principal: Principal, taskId: string): Promise<Task> {
    const started = performance.now();
    this.opts.metrics.cancelRequests.inc();
    const task = await this.#readable(principal, taskId);
    let outcome: AbortOutcome = "not_attempted";
    try {
      if (task.status.state === "canceled") return (await this.#annotation(taskId))(task);
      if (isTerminal(task.status.state)) {
        throw new A2AError("TASK_NOT_CANCELABLE", `Task ${taskId} is already ${task.status.state}`, { task_id: taskId, state: task.status.state });
      }
      const live = this.#live.get(taskId);
      const peer = await this.runnerOf(taskId);
      const canceled = peer === undefined ? undefined : await this.#remote!.cancel(peer, principal, taskId);
      if (canceled !== undefined) return canceled;
      if (live === undefined) {
        // Stored as running but no turn is live (the gateway restarted mid-turn): cancel the record.
        const stored: Task = { ...task, status: { state: "canceled", timestamp: now() } };
        await this.#lifecycle.save(stored);
        return (await this.#annotation(taskId))(stored);
      }
      this.#lifecycle.finish(live, "canceled", undefined, {});
      live.abort.abort();
      if (live.sessionId !== undefined) outcome = await this.#abortUpstream(live.sessionId, live.routing);
      return live.task;
    } finally {
      this.opts.metrics.cancelDuration.observe({ abort_outcome: outcome }, performance.now() - started);
    }
  }

  /**
   * tasks/resubscribe / SubscribeToTask: the current Task first, then the live events. A terminal task: 0.3
   * replays it once and closes; 1.0 answers UnsupportedOperation.
   */
  async subscribe(principal: Principal, taskId: string, line: "0.3" | "1.0"): Promise<StreamHandle> {
    const annotate = await this.#annotation(taskId);
    const task = annotate((await this.#visible(principal, taskId)).task);
    const live = this.#live.get(taskId);
    const peer = isTerminal(task.status.state) ? undefined : await this.runnerOf(taskId);
    if (peer !== undefined) return this.#remote!.subscribe(peer, principal, taskId, line);
    if (live === undefined || isTerminal(live.state)) {
      if (line === "1.0" || !isTerminal(task.status.state)) {
        throw new A2AError("UNSUPPORTED_OPERATION", `Task ${taskId} is ${task.status.state}: there is no live stream to subscribe to`, {
          task_id: taskId,
          state: task.status.state,
        });
      }
      const replay = new FanOut();
      const queue = replay.subscribe({ kind: "task", task: annotate(task) });
      replay.close();
      return streamHandle(queue, this.opts.metrics);
    }
    return streamHandle(live.fanout.subscribe({ kind: "task", task: annotate(live.task) }), this.opts.metrics);
  }

  /**
   * Tasks no live gateway runs fail with GATEWAY_RESTARTED: at start, and (PostgreSQL) at every lease renewal for the
   * gateways whose lease ran out (`scope`; undefined: this gateway is alone, every unfinished task). Returns how many.
   */
  failOrphans(scope?: OrphanScope): Promise<number> {
    return failOrphans(this.opts.store, (task) => this.#lifecycle.save(task), this.opts.log, scope);
  }

  /** OpenCode lost the turn (died or restarted): UPSTREAM_TURN_LOST, keeping the output (`partial`) and usage so far. */
  turnLost(taskId: string, detail: string): void {
    const live = this.#live.get(taskId);
    if (live !== undefined) this.#lifecycle.turnLost(live, detail);
  }

  /** The OpenCode process ended (managed mode): every turn in progress is lost with it. Returns how many. */
  upstreamLost(detail: string): number {
    return loseTurns(this.#live.values(), (live) => this.#lifecycle.turnLost(live, detail));
  }

  /**
   * Shutdown deadline: blocking sends return the task as it is; streams get a last status event (current state,
   * `final: true`, `metadata.shared.shutdown`) and end. Tasks stay as they are (a restart fails the unfinished ones).
   */
  release(): number {
    return releaseAll(this.#live.values());
  }

  /** Streams still running at shutdown end; their tasks stay as stored once the writes already queued are done. */
  async shutdown(): Promise<void> {
    this.#lifecycle.stop();
    for (const live of this.#live.values()) {
      live.abort.abort();
      live.fanout.close();
    }
    await Promise.allSettled([...this.#live.values()].map((live) => live.writes));
  }
}
