// The A2A task runtime: one class behind send / stream / get / list / cancel / subscribe of both protocol lines.
//
// A task's turn runs in the background as an OpenCode `prompt_async` on its session, observed through the shared
// EventHub and mapped to A2A events by the StreamMapper. The live task keeps a compact snapshot (canonical
// artifacts, no token fragments) and fans its events out, in one order, to every attached stream. The store
// receives snapshots at state changes and at the end; the first terminal state wins (in SQL).
import { randomUUID } from "node:crypto";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Logger } from "pino";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import { A2AError } from "../contract/errors.js";
import type { Principal } from "../auth/index.js";
import { resolveRouting, type Routing, type RoutingPolicy } from "../bridge/directory.js";
import { sessionTitle, toPromptParts, userText } from "../bridge/parts.js";
import { explicitSessionId, type ResolvedSession, type SessionResolver } from "../bridge/sessions.js";
import { StreamMapper } from "../bridge/stream-mapper.js";
import {
  INTERRUPTED_STATES,
  isTerminal,
  now,
  type Artifact,
  type ArtifactUpdateEvent,
  type ListParams,
  type Message,
  type Metadata,
  type Part,
  type SendParams,
  type StatusUpdateEvent,
  type Task,
  type TaskState,
} from "../protocol/model.js";
import type { SaveResult, TaskStore } from "../storage/tasks.js";
import { StoreHealth } from "../storage/health.js";
import type { ModelMonitor } from "../upstream/model-check.js";
import { backoffMs } from "../util/backoff.js";
import type { EventHub, Subscription } from "../upstream/hub.js";
import type { UpstreamClient } from "../upstream/client.js";
import { UpstreamError } from "../upstream/errors.js";
import { FanOut, type EventQueue } from "./fanout.js";
import type { AbortOutcome, Metrics } from "../observability/metrics.js";
import { isObject } from "../util/object.js";
import { traceOfRouting, withTrace, type TraceContext } from "../tracing/index.js";

export interface RuntimeOptions {
  store: TaskStore;
  upstream: UpstreamClient;
  hub: EventHub;
  sessions: SessionResolver;
  routing: RoutingPolicy;
  metrics: Metrics;
  log: Pick<Logger, "info" | "warn" | "error" | "debug">;
  /** A2A_CANCEL_ABORT_TIMEOUT_SECONDS in ms. */
  cancelAbortTimeoutMs: number;
  /** OPENCODE_TIMEOUT_STREAM in ms: the longest a turn may run (0 = no limit). */
  turnTimeoutMs: number;
  /** How long a turn waits for the upstream event stream to come back before it fails. */
  reconnectGraceMs: number;
  /** What a turn adds to its task at the end: the `changes` diff artifact, and how large an inline file may be. */
  artifacts?: TurnArtifactOptions;
  /** Where store write failures and recoveries are recorded (/health reports it). */
  storeHealth?: StoreHealth;
  /** Whether OpenCode has a usable default model (tasks are refused at once while it has none). */
  model?: ModelMonitor;
  /** A2A_MAX_RUNNING_TASKS and A2A_TASK_QUEUE_LIMIT (default: 32 running, 1000 waiting). */
  admission?: { maxRunning: number; queueLimit: number };
  /** The interrupt registry (src/extensions/interrupt-registry.ts): told of every asked and resolved interrupt. */
  interrupts?: InterruptHooks;
  /** Push notifications (src/push): told of every state change. */
  transitions?: TransitionHooks;
}

/** Observers of task state changes, written in the same store transaction as the change itself. */
export interface TransitionHooks {
  /** Whether the task has anyone to tell (otherwise the save runs alone, without a transaction around it). */
  watches(taskId: string): boolean;
  /** Runs `fn` (the save and `changed`) all or nothing. */
  atomically<T>(fn: () => T): T;
  /** The task's new state was saved; `event` is the status update that carried it, when there was one. */
  changed(task: Task, event?: StatusUpdateEvent): void;
}

const TEXT_PLAIN = "text/plain";

export interface TurnArtifactOptions {
  /** A2A_ARTIFACT_CHANGES: emit the turn's diff as the `changes` artifact. */
  changes: boolean;
  /** A2A_ARTIFACT_FILE_MAX_BYTES: files up to this size are inline bytes, larger ones a reference. */
  fileMaxBytes: number;
}

/** How long after an idle a follow-up OpenCode left unanswered waits for OpenCode's own next loop before it is sent again. */
const FOLLOW_UP_STALL_MS = 1_500;

/** The prompt a follow-up sends into the running turn (parts, and the turn's model). */
interface PromptBody {
  parts: ReturnType<typeof toPromptParts>;
  model?: { providerID: string; modelID: string };
}

/** The upstream turn a live task runs right now. */
interface ActiveTurn {
  mapper: StreamMapper;
  sessionId: string;
  routing: Routing;
  /** Follow-up prompts sent into the turn, by the mapper's follow-up ordinal (sent again if OpenCode stalls them). */
  followUps: PromptBody[];
  stallTimer?: NodeJS.Timeout;
}

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

function mergeOpencode(metadata: Metadata | undefined, opencode: Metadata): Metadata {
  const base = metadata ?? {};
  const current = isObject(base.opencode) ? base.opencode : {};
  return { ...base, opencode: { ...current, ...opencode } };
}

function mergeShared(metadata: Metadata | undefined, shared: Metadata): Metadata {
  const base = metadata ?? {};
  const current = isObject(base.shared) ? base.shared : {};
  return { ...base, shared: { ...current, ...shared } };
}

/**
 * Applies one artifact update to a compact artifact list (text parts of appends are concatenated). A new list is
 * returned; the update's objects are taken over, not copied: events and task snapshots are never written to in
 * place (the runtime replaces fields, the codecs build new objects), so sharing them is safe.
 */
export function applyArtifact(artifacts: Artifact[], update: ArtifactUpdateEvent): Artifact[] {
  const index = artifacts.findIndex((a) => a.artifactId === update.artifact.artifactId);
  if (index < 0 || update.append !== true) {
    const next = [...artifacts];
    if (index < 0) next.push(update.artifact);
    else next[index] = update.artifact;
    return next;
  }
  const current = artifacts[index] as Artifact;
  const parts = [...current.parts];
  for (const part of update.artifact.parts) {
    const last = parts.at(-1);
    if (last?.kind === "text" && part.kind === "text") parts[parts.length - 1] = { ...last, text: last.text + part.text };
    else parts.push(part);
  }
  const next = [...artifacts];
  next[index] = { ...current, parts, ...(update.artifact.metadata === undefined ? {} : { metadata: update.artifact.metadata }) };
  return next;
}

class LiveTask {
  readonly fanout = new FanOut();
  readonly abort = new AbortController();
  /** Resolves when the task is terminal or interrupted (what a blocking send waits for). */
  readonly #waiters = new Set<() => void>();
  sessionId: string | undefined;
  persistTimer: NodeJS.Timeout | undefined;
  /** The client takes `text/x-diff` files (else the `changes` diff comes as text parts). */
  diffAsFile = true;
  /** The message asked for the changed files' contents (`metadata.opencode.include_file_contents`). */
  includeFileContents = false;
  /** The upstream turn in progress (set once its first prompt was sent). */
  turn: ActiveTurn | undefined;
  /** Follow-ups waiting for the turn to start upstream (they are sent into it then). */
  readonly #turnWaiters = new Set<(turn: ActiveTurn | undefined) => void>();

  constructor(
    public task: Task,
    readonly owner: string,
    readonly routing: Routing,
  ) {}

  get state(): TaskState {
    return this.task.status.state;
  }

  settled(): Promise<void> {
    if (isTerminal(this.state) || INTERRUPTED_STATES.has(this.state)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  wake(): void {
    if (isTerminal(this.state)) this.turnChanged();
    if (!(isTerminal(this.state) || INTERRUPTED_STATES.has(this.state))) return;
    for (const resolve of this.#waiters) resolve();
    this.#waiters.clear();
  }

  /** Wakes every waiter whatever the state (shutdown: blocking sends answer with the task as it is). */
  release(): void {
    for (const resolve of this.#waiters) resolve();
    this.#waiters.clear();
  }

  /** The running upstream turn once OpenCode has started it; undefined when the task ends first. */
  turnStarted(): Promise<ActiveTurn | undefined> {
    if (isTerminal(this.state)) return Promise.resolve(undefined);
    if (this.turn?.mapper.started === true) return Promise.resolve(this.turn);
    return new Promise((resolve) => this.#turnWaiters.add(resolve));
  }

  /** Wakes turnStarted() waiters when the turn started upstream or the task ended. */
  turnChanged(): void {
    if (this.#turnWaiters.size === 0) return;
    const ended = isTerminal(this.state);
    if (!ended && this.turn?.mapper.started !== true) return;
    for (const resolve of this.#turnWaiters) resolve(ended ? undefined : this.turn);
    this.#turnWaiters.clear();
  }
}

type TurnOutcome = "completed" | "failed" | "vanished";

/** An OpenCode permission or question a live task waits on. */
export interface PendingInterrupt {
  requestId: string;
  type: "permission" | "question";
  /** As published at `metadata.shared.interrupt.details` (questions, options, reply_options, …). */
  details: Metadata;
  taskId: string;
  contextId: string;
  sessionId: string;
  owner: string;
  routing: Routing;
}

/** Where the interrupt registry (src/extensions/interrupt-registry.ts) plugs into the runtime. */
export interface InterruptHooks {
  asked(interrupt: PendingInterrupt): void;
  resolved(event: { requestId: string; type: "permission" | "question"; taskId: string }): void;
  /** Answer the pending interrupt with a follow-up message (question: its text); throws a typed A2AError. */
  answer?(principal: Principal, interrupt: PendingInterrupt, message: Message): Promise<void>;
}

export interface StreamHandle {
  events: EventQueue;
  /** Called when the client goes away. */
  close(): void;
}

export class TaskRuntime {
  readonly #live = new Map<string, LiveTask>();
  /** Set by shutdown(): turns still running are left as stored (the next start marks them failed). */
  #stopped = false;
  readonly #health: StoreHealth;
  /** Tasks whose turn runs (admitted); the ones in `working` count against A2A_MAX_RUNNING_TASKS. */
  readonly #admitted = new Set<LiveTask>();
  /** Tasks waiting for a turn, per principal (served round robin, oldest first within a principal). */
  readonly #waiting = new Map<string, { live: LiveTask; begin: () => void }[]>();
  #queued = 0;
  /** Terminal snapshots the store refused (full disk, …): saved again once it takes writes. */
  readonly #unsaved = new Map<string, Task>();
  #unsavedTimer: NodeJS.Timeout | undefined;
  #unsavedAttempt = 0;

  constructor(private readonly opts: RuntimeOptions) {
    this.#health = opts.storeHealth ?? new StoreHealth();
    this.#health.onRecovered(() => this.#retryUnsaved());
  }

  /** Turns running (working) and tasks waiting for one, for /health and metrics. */
  admission(): { running: number; queued: number; max_running: number; queue_limit: number } {
    const { maxRunning, queueLimit } = this.#limits;
    return { running: this.#running(), queued: this.#queued, max_running: maxRunning, queue_limit: queueLimit };
  }

  get #limits(): { maxRunning: number; queueLimit: number } {
    return this.opts.admission ?? { maxRunning: 32, queueLimit: 1_000 };
  }

  #running(): number {
    let n = 0;
    for (const live of this.#admitted) if (live.state === "working") n++;
    return n;
  }

  /** Starts waiting tasks while turns are free: one principal after the other, each its oldest task first. */
  #drain(): void {
    const { maxRunning } = this.#limits;
    while (this.#queued > 0 && this.#running() < maxRunning) {
      const next = this.#waiting.entries().next().value as [string, { live: LiveTask; begin: () => void }[]] | undefined;
      if (next === undefined) break;
      const [owner, line] = next;
      const item = line.shift();
      this.#waiting.delete(owner);
      if (line.length > 0) this.#waiting.set(owner, line); // to the back: the other principals go first
      if (item === undefined) continue;
      this.#queued--;
      if (isTerminal(item.live.state) || this.#stopped) continue; // canceled while it waited
      item.begin();
    }
  }

  /** Whether the store takes writes (for /health). */
  get storeHealth(): StoreHealth {
    return this.#health;
  }

  /** Runs one store write and records its outcome; a failure is rethrown (typed TASK_STORE_UNAVAILABLE). */
  #write<T>(write: () => T): T {
    let result: T;
    try {
      result = write();
    } catch (error) {
      this.#health.failed(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    this.#health.succeeded();
    return result;
  }

  /** Saves the terminal snapshots the store refused, until it takes them (backoff 0.5 s … 30 s). */
  #retryUnsaved(): void {
    if (this.#unsaved.size === 0 || this.#stopped) return;
    if (this.#unsavedTimer !== undefined) clearTimeout(this.#unsavedTimer);
    this.#unsavedTimer = undefined;
    for (const [id, task] of [...this.#unsaved]) {
      try {
        this.#unsaved.delete(id);
        this.#saveState(task);
      } catch {
        this.#unsaved.set(id, task);
        break;
      }
    }
    if (this.#unsaved.size === 0) {
      this.#unsavedAttempt = 0;
      return;
    }
    this.#unsavedTimer = setTimeout(() => {
      this.#unsavedTimer = undefined;
      this.#retryUnsaved();
    }, backoffMs(this.#unsavedAttempt++, 500, 30_000));
    this.#unsavedTimer.unref();
  }

  /** Tasks with a turn in progress. */
  get active(): number {
    return this.#live.size;
  }

  // ---- send / stream ------------------------------------------------------------------------------------------

  /**
   * message/send: starts (or continues) a task. Blocking (default) waits until the task is terminal or
   * interrupted; non-blocking returns the working task at once.
   */
  async send(principal: Principal, params: SendParams, configure?: (task: Task) => void, trace?: TraceContext): Promise<Task> {
    const live = await this.#start(principal, params, undefined, configure, trace);
    if (params.configuration?.blocking !== false) await live.settled();
    // A terminal task is never written to again (#apply / #finish stop at a terminal state): no copy needed.
    return isTerminal(live.state) ? live.task : structuredClone(live.task);
  }

  /** message/stream: starts a task and returns its event stream (the Task first). */
  async stream(principal: Principal, params: SendParams, configure?: (task: Task) => void, trace?: TraceContext): Promise<StreamHandle> {
    const live = await this.#start(principal, params, (l) => l.fanout.subscribe({ kind: "task", task: structuredClone(l.task) }), configure, trace);
    return this.#handle(live.queue);
  }

  #handle(events: EventQueue): StreamHandle {
    this.opts.metrics.streamRequests.inc();
    this.opts.metrics.streamActive.inc();
    let closed = false;
    return {
      events,
      close: () => {
        if (closed) return;
        closed = true;
        this.opts.metrics.streamActive.dec();
        void events.return();
      },
    };
  }

  /**
   * `configure` runs once the task exists and before its turn can change its state (the push notification config
   * given with the message is stored there, so it sees every state change).
   */
  async #start<T = undefined>(
    principal: Principal,
    params: SendParams,
    attach?: (live: LiveTask) => T,
    configure?: (task: Task) => void,
    trace?: TraceContext,
  ): Promise<LiveTask & { queue: T }> {
    const message = params.message;
    const modes = params.configuration?.acceptedOutputModes;
    if (modes !== undefined && modes.length > 0 && !modes.some((m) => m === TEXT_PLAIN || m === "text/*" || m === "*/*")) {
      throw new A2AError("CONTENT_TYPE_NOT_SUPPORTED", "acceptedOutputModes must include text/plain", {
        field: "configuration.acceptedOutputModes",
      });
    }
    const acceptedOutputModes = modes !== undefined && modes.length > 0 ? modes : [TEXT_PLAIN, "application/json"];
    const parts = toPromptParts(message); // data parts become framed JSON text; refuses what OpenCode cannot take, before anything is created
    const metadata = { ...(params.metadata ?? {}), ...(message.metadata ?? {}) };
    // The routing carries the request's trace context to every OpenCode call made for the task (src/tracing withTrace).
    const routing = withTrace(resolveRouting(metadata, this.opts.routing), trace);

    let contextId = message.contextId;
    if (message.taskId !== undefined) {
      const previous = this.#visible(principal, message.taskId);
      if (contextId !== undefined && contextId !== previous.task.contextId) {
        throw new A2AError("INVALID_PARAMS", `contextId ${contextId} does not match task ${message.taskId}`, { field: "message.contextId" }, {
          fieldViolations: [{ field: "message.contextId", description: "does not match the task's contextId" }],
        });
      }
      if (isTerminal(previous.task.status.state)) {
        throw new A2AError("UNSUPPORTED_OPERATION", `Task ${message.taskId} is ${previous.task.status.state}; start a new task in the same context`, {
          task_id: message.taskId,
          state: previous.task.status.state,
        });
      }
      const existing = this.#live.get(message.taskId);
      const pending = existing === undefined ? undefined : this.#pendingInterrupt(existing);
      if (existing !== undefined && pending !== undefined && this.opts.interrupts?.answer !== undefined) {
        // The A2A way of answering OpenCode's question: a follow-up message to the input-required task.
        const answer: Message = { ...structuredClone(message), taskId: existing.task.id, contextId: existing.task.contextId, role: "user" };
        await this.opts.interrupts.answer(principal, pending, answer);
        // Only once the answer went through: a refused answer changes nothing, the config included.
        configure?.(existing.task);
        existing.task.history = [...(existing.task.history ?? []), answer];
        this.#resume(existing);
        return Object.assign(existing, { queue: attach?.(existing) as T });
      }
      if (existing !== undefined && existing.owner === principal.id) {
        // A follow-up while the task works: taken into the running OpenCode turn (same session), as a correction.
        await this.#followUp(existing, message, parts, metadata, configure);
        return Object.assign(existing, { queue: attach?.(existing) as T });
      }
      if (existing !== undefined) {
        throw new A2AError("UNSUPPORTED_OPERATION", `Task ${message.taskId} belongs to another principal; only its owner can continue it`, {
          task_id: message.taskId,
          state: previous.task.status.state,
        });
      }
      // A stored non-terminal task without a live turn (the gateway restarted mid-turn) cannot be continued.
      throw new A2AError("UNSUPPORTED_OPERATION", `Task ${message.taskId} has no turn to continue`, { task_id: message.taskId });
    }
    contextId ??= randomUUID();
    // An explicitly named session is checked before anything is created: a session owned by someone else, or
    // unknown to OpenCode, is the caller's error (SESSION_FORBIDDEN / SESSION_NOT_FOUND), not a failed task.
    const preResolved =
      explicitSessionId(metadata) === undefined
        ? undefined
        : await this.opts.sessions.resolve(principal, contextId, metadata, routing, sessionTitle(message));

    // No usable default model (first run, dead endpoint): refused at once with what to configure, instead of a turn
    // OpenCode retries for a minute. A request that names its own model is not checked.
    const monitor = this.opts.model;
    if (monitor !== undefined && modelOf(metadata) === undefined && monitor.last?.state !== "ok") {
      // Not known to be fine: the check in progress (start-up), or a fresh one at most every 2 s (5 s while it could
      // not be decided, e.g. an OpenCode that does not answer /config).
      const last = monitor.last;
      const check = await monitor.current(last === undefined ? 60_000 : last.state === "unknown" ? 5_000 : 2_000);
      if (check.state === "unavailable") {
        throw new A2AError("UPSTREAM_MODEL_UNAVAILABLE", `OpenCode has no usable model: ${check.reason ?? "unknown reason"}`, {
          ...(check.provider === undefined ? {} : { provider: check.provider }),
          ...(check.model === undefined ? {} : { model: check.model }),
          reason: check.reason ?? "",
        });
      }
    }

    // Admission: a free turn, or a place in the bounded queue; else refused before anything is created.
    const { maxRunning, queueLimit } = this.#limits;
    const admitNow = this.#queued === 0 && this.#running() < maxRunning;
    if (!admitNow && this.#queued >= queueLimit) {
      const retry = Math.min(30, Math.max(1, Math.ceil(this.#queued / maxRunning)));
      throw new A2AError(
        "TASK_QUEUE_FULL",
        `${this.#running()} tasks are running and ${this.#queued} waiting (A2A_MAX_RUNNING_TASKS=${maxRunning}, A2A_TASK_QUEUE_LIMIT=${queueLimit}); retry in ${retry} s`,
        { running: this.#running(), queued: this.#queued, limit: queueLimit, retry_after_seconds: retry },
        { headers: { "Retry-After": String(retry) } },
      );
    }

    const taskId = randomUUID();
    // The message was decoded from this request alone (nothing else holds it): kept as is, no copy.
    const userMessage: Message = { ...message, taskId, contextId, role: "user" };
    const task: Task = {
      id: taskId,
      contextId,
      // Working from the start: the turn is handed to OpenCode right away (one store write fewer per task).
      status: { state: "working", timestamp: now() },
      history: [userMessage],
      metadata: {
        opencode: { output_negotiation: { accepted_output_modes: acceptedOutputModes } },
      },
    };
    const live = new LiveTask(task, principal.id, routing);
    live.diffAsFile = modes === undefined || modes.length === 0 || acceptsMime(modes, DIFF_MIME);
    live.includeFileContents = wantsFileContents(metadata);
    this.#write(() => this.opts.store.create(task, principal.id, { acceptedOutputModes, ...("directory" in routing ? { directory: routing.directory } : {}) }));
    this.#live.set(taskId, live);
    if (configure !== undefined) {
      try {
        configure(live.task);
      } catch (error) {
        // The config could not be stored (the store failed): the task is not started and the request fails.
        this.#live.delete(taskId);
        try {
          this.#fail(live, asTaskError(error));
        } catch {
          // The store is down: the task stays as created, and a restart fails it.
        }
        throw error;
      }
    }
    const queue = attach?.(live) as T;
    const begin = (): void => {
      this.#admitted.add(live);
      void this.#run(live, principal, params, parts, routing, acceptedOutputModes, preResolved)
        .catch((error: unknown) => {
          this.opts.log.error({ err: error instanceof Error ? error.message : String(error), taskId }, "turn crashed");
          this.#fail(live, asTaskError(error));
        })
        .finally(() => {
          this.#admitted.delete(live);
          this.#drain();
        });
    };
    if (admitNow) begin();
    else {
      const line = this.#waiting.get(principal.id) ?? [];
      line.push({ live, begin });
      this.#waiting.set(principal.id, line);
      this.#queued++;
      this.opts.metrics.tasksQueued.inc();
      const status = { state: "working" as const, timestamp: now() };
      live.fanout.publish({
        kind: "status-update",
        taskId,
        contextId,
        status,
        final: false,
        metadata: { shared: { progress: { type: "queued", part_id: `${taskId}:queued`, position: this.#queued } } },
      });
    }
    return Object.assign(live, { queue });
  }

  /**
   * Sends a follow-up message into the task's running turn: OpenCode takes input while busy and answers it in the
   * same loop, so the task goes on (same session, one history) and ends when OpenCode has answered everything.
   * Waits until the turn has started upstream; refused when the turn ends first.
   */
  async #followUp(
    live: LiveTask,
    message: Message,
    parts: ReturnType<typeof toPromptParts>,
    metadata: Metadata,
    configure: ((task: Task) => void) | undefined,
  ): Promise<void> {
    const turn = await live.turnStarted();
    const ended = (): A2AError =>
      new A2AError("UNSUPPORTED_OPERATION", `Task ${live.task.id} ended before the follow-up could join its turn (${live.state}); start a new task in the same context`, {
        task_id: live.task.id,
        state: live.state,
      });
    if (turn === undefined || isTerminal(live.state)) throw ended();
    const ordinal = turn.mapper.acceptFollowUp();
    if (ordinal === undefined) throw ended();
    const model = modelOf(metadata);
    const body: PromptBody = { parts, ...(model === undefined ? {} : { model }) };
    turn.followUps[ordinal] = body;
    try {
      await this.#prompt(turn.sessionId, turn.routing, body, live.abort.signal);
    } catch (error) {
      turn.mapper.withdrawFollowUp(ordinal);
      throw error;
    }
    configure?.(live.task);
    const followUp: Message = { ...message, taskId: live.task.id, contextId: live.task.contextId, role: "user" };
    live.task.history = [...(live.task.history ?? []), followUp];
    this.opts.metrics.followUps.inc();
    this.#persistSoon(live);
  }

  #prompt(sessionId: string, routing: Routing, body: PromptBody, signal: AbortSignal): Promise<unknown> {
    return this.opts.upstream.call(
      "sessionPromptAsync",
      (c) => sdk.sessionPromptAsync({ ...c, path: { sessionID: sessionId }, body }),
      { ...routing, sessionId, signal },
    );
  }

  /** After an idle that left follow-ups unanswered: what OpenCode still has not started on is prompted again. */
  #stalled(live: LiveTask, turn: ActiveTurn): void {
    if (turn.stallTimer !== undefined) return;
    turn.stallTimer = setTimeout(() => {
      turn.stallTimer = undefined;
      if (isTerminal(live.state)) return;
      const ordinals = turn.mapper.stalledFollowUps();
      void (async () => {
        // Each stalled follow-up waits for the next new user message again: its own, prompted once more.
        for (const ordinal of ordinals) {
          const body = turn.followUps[ordinal];
          if (body === undefined || isTerminal(live.state)) continue;
          this.opts.log.warn({ taskId: live.task.id, sessionId: turn.sessionId }, "OpenCode went idle without answering a follow-up; sending it again");
          await this.#prompt(turn.sessionId, turn.routing, body, live.abort.signal);
        }
      })().catch((error: unknown) => {
        this.#fail(live, asTaskError(error));
        live.abort.abort();
      });
    }, FOLLOW_UP_STALL_MS);
    turn.stallTimer.unref();
  }

  async #run(
    live: LiveTask,
    principal: Principal,
    params: SendParams,
    parts: ReturnType<typeof toPromptParts>,
    routing: Routing,
    acceptedOutputModes: string[],
    preResolved: ResolvedSession | undefined,
  ): Promise<void> {
    const message = params.message;
    const metadata = { ...(params.metadata ?? {}), ...(message.metadata ?? {}) };
    let resolved: ResolvedSession;
    try {
      resolved = preResolved ?? (await this.opts.sessions.resolve(principal, live.task.contextId, metadata, routing, sessionTitle(message)));
    } catch (error) {
      this.#fail(live, asTaskError(error));
      return;
    }
    const model = modelOf(metadata);
    const body = { parts, ...(model === undefined ? {} : { model }) };
    const run = (session: ResolvedSession, mayVanish: boolean): Promise<TurnOutcome> => {
      live.sessionId = session.sessionId;
      live.task.metadata = mergeShared(live.task.metadata, { session: { id: session.sessionId } });
      return this.opts.sessions.withLock(session.sessionId, () =>
        this.#turn(live, session.sessionId, routing, body, acceptedOutputModes, userText(message), mayVanish),
      );
    };
    // A bound session can vanish upstream (deleted, or an OpenCode data reset): forget the binding and run the turn
    // once more on a fresh session of the same context.
    let outcome = await run(resolved, resolved.bindingKey !== undefined && !resolved.claimed);
    if (outcome === "vanished" && resolved.bindingKey !== undefined) {
      this.opts.log.warn({ taskId: live.task.id, sessionId: resolved.sessionId }, "bound session vanished upstream; creating a new one");
      this.opts.sessions.forget(principal, resolved.bindingKey);
      try {
        resolved = await this.opts.sessions.resolve(principal, live.task.contextId, metadata, routing, sessionTitle(message));
      } catch (error) {
        this.#fail(live, asTaskError(error));
        return;
      }
      outcome = await run(resolved, false);
    }
    if (resolved.claimed) {
      if (outcome === "completed") this.opts.sessions.confirm(principal, resolved.sessionId);
      else this.opts.sessions.release(principal, resolved.sessionId);
    }
  }

  /**
   * Runs one prompt on the session and maps its events. "vanished": OpenCode does not know the session (404 on
   * the prompt) and `mayVanish` allowed the caller to retry on a new one; the task is then left untouched.
   */
  async #turn(
    live: LiveTask,
    sessionId: string,
    routing: Routing,
    body: PromptBody,
    acceptedOutputModes: string[],
    text: string,
    mayVanish: boolean,
  ): Promise<TurnOutcome> {
    if (isTerminal(live.state)) return "failed"; // canceled while waiting for the session
    let sub: Subscription | undefined;
    const timers: NodeJS.Timeout[] = [];
    try {
      sub = this.opts.hub.subscribe({ sessions: [sessionId], types: StreamMapper.EVENT_TYPES });
      await sub.ready(10_000);
      const mapper = new StreamMapper({
        taskId: live.task.id,
        contextId: live.task.contextId,
        sessionId,
        userText: text,
        acceptedOutputModes,
        ...(this.opts.artifacts === undefined ? {} : { fileMaxBytes: this.opts.artifacts.fileMaxBytes }),
      });
      try {
        await this.#prompt(sessionId, routing, body, live.abort.signal);
      } catch (error) {
        if (mayVanish && error instanceof UpstreamError && error.kind === "http" && error.status === 404) return "vanished";
        throw error;
      }
      const turn: ActiveTurn = { mapper, sessionId, routing, followUps: [] };
      live.turn = turn;
      const stop = (reason: UpstreamError | A2AError): void => {
        if (!isTerminal(live.state)) this.#fail(live, reason);
        sub?.close();
      };
      if (this.opts.turnTimeoutMs > 0) {
        timers.push(
          setTimeout(() => {
            void this.#abortUpstream(sessionId, routing);
            stop(new UpstreamError({ kind: "timeout", operation: "turn", detail: `turn exceeded ${this.opts.turnTimeoutMs / 1000} s (OPENCODE_TIMEOUT_STREAM)`, timeoutSeconds: this.opts.turnTimeoutMs / 1000 }));
          }, this.opts.turnTimeoutMs),
        );
      }
      live.abort.signal.addEventListener("abort", () => sub?.close(), { once: true });
      let grace: NodeJS.Timeout | undefined;
      for await (const item of sub) {
        if (isTerminal(live.state)) break;
        if (item.type === "disconnected") {
          grace ??= setTimeout(() => stop(item.error), this.opts.reconnectGraceMs);
          timers.push(grace);
          continue;
        }
        if (item.type === "reconnected") {
          if (grace !== undefined) clearTimeout(grace);
          grace = undefined;
          // Events emitted while the connection was down are gone; if the turn ended meanwhile, finish from a snapshot.
          const ended = await this.#resync(live, mapper, sessionId, routing);
          if (ended) break;
          continue;
        }
        const outputs = mapper.push(item.event);
        let terminal = false;
        for (const out of outputs) {
          if (out.kind === "terminal") terminal = true;
          else if (out.kind === "stalled") this.#stalled(live, turn);
          else this.#apply(live, out);
        }
        live.turnChanged();
        if (terminal) break;
      }
      if (turn.stallTimer !== undefined) clearTimeout(turn.stallTimer);
      if (isTerminal(live.state) || this.#stopped) return "failed";
      return (await this.#complete(live, mapper, routing)) ? "completed" : "failed";
    } catch (error) {
      if (!isTerminal(live.state)) {
        this.#fail(live, asTaskError(error));
      }
      return "failed";
    } finally {
      for (const t of timers) clearTimeout(t);
      sub?.close();
      if (isTerminal(live.state) || this.#stopped) this.#live.delete(live.task.id);
    }
  }

  /** After a reconnect: is the session still busy? If not, the turn ended while we were not listening. */
  async #resync(live: LiveTask, mapper: StreamMapper, sessionId: string, routing: Routing): Promise<boolean> {
    try {
      const status = await this.opts.upstream.call("sessionStatus", (c) => sdk.sessionStatus({ ...c }), { ...routing });
      if (isObject(status) && isObject(status[sessionId])) return false; // still busy: events keep coming
      const messages = await this.opts.upstream.call(
        "sessionMessages",
        (c) => sdk.sessionMessages({ ...c, path: { sessionID: sessionId }, query: { ...c.query, limit: 20 } }),
        { ...routing, sessionId },
      );
      this.#applyAll(live, mapper.resync(Array.isArray(messages) ? messages : []));
      if (!mapper.answerFinished) {
        // Not busy, yet the answer was never finished: OpenCode restarted or dropped the turn. Never a truncated
        // "completed": the task fails and keeps what arrived, marked partial.
        this.turnLost(live.task.id, "OpenCode no longer runs this turn and its answer was never finished (it restarted or lost the turn)");
        return true;
      }
      // The idle itself was missed: the session is not busy any more, so the turn is over.
      this.#applyAll(live, mapper.push({ id: "resync", type: "session.idle", properties: { sessionID: sessionId } }));
      return true;
    } catch (error) {
      this.opts.log.warn({ err: error instanceof Error ? error.message : String(error), taskId: live.task.id }, "resync after reconnect failed");
      return false;
    }
  }

  #applyAll(live: LiveTask, outputs: ReturnType<StreamMapper["push"]>): void {
    for (const out of outputs) if (out.kind !== "terminal" && out.kind !== "stalled") this.#apply(live, out);
  }

  #apply(live: LiveTask, event: ArtifactUpdateEvent | StatusUpdateEvent): void {
    if (isTerminal(live.state)) return;
    if (event.kind === "artifact-update") {
      live.task.artifacts = applyArtifact(live.task.artifacts ?? [], event);
      this.#persistSoon(live);
      if (event.artifact.metadata?.shared !== undefined && (event.artifact.metadata.shared as Metadata).stream !== undefined) {
        const block = ((event.artifact.metadata.shared as Metadata).stream as Metadata).block_type;
        if (block === "tool_call") this.opts.metrics.toolCallChunks.inc();
      }
      live.fanout.publish(event);
      return;
    }
    const changed = event.status.state !== live.state;
    const shared = isObject(event.metadata?.shared) ? (event.metadata.shared as Metadata) : undefined;
    const interrupt = isObject(shared?.interrupt) ? shared.interrupt : undefined;
    if (interrupt !== undefined && typeof interrupt.type === "string" && typeof interrupt.request_id === "string") {
      const type = interrupt.type === "permission" ? "permission" : "question";
      if (interrupt.phase === "asked") {
        this.opts.metrics.interruptRequests.inc({ type });
        this.opts.interrupts?.asked({
          requestId: interrupt.request_id,
          type,
          details: isObject(interrupt.details) ? interrupt.details : {},
          taskId: live.task.id,
          contextId: live.task.contextId,
          sessionId: live.sessionId ?? "",
          owner: live.owner,
          routing: live.routing,
        });
      } else if (interrupt.phase === "resolved") {
        this.opts.metrics.interruptResolved.inc({ type });
        this.opts.interrupts?.resolved({ requestId: interrupt.request_id, type, taskId: live.task.id });
      }
    }
    live.task.status = event.status;
    if (changed && this.#queued > 0 && event.status.state !== "working") queueMicrotask(() => this.#drain());
    if (changed) {
      if (interrupt !== undefined) live.task.metadata = mergeShared(live.task.metadata, { interrupt });
      this.#saveState(live.task, event);
    }
    live.fanout.publish(event);
    live.wake();
  }

  /** The interrupt a live task waits on (from its last input-required status), if any. */
  #pendingInterrupt(live: LiveTask): PendingInterrupt | undefined {
    if (live.state !== "input-required" || live.sessionId === undefined) return undefined;
    const shared = isObject(live.task.metadata?.shared) ? (live.task.metadata.shared as Metadata) : undefined;
    const interrupt = isObject(shared?.interrupt) ? shared.interrupt : undefined;
    if (interrupt === undefined || interrupt.phase !== "asked" || typeof interrupt.request_id !== "string") return undefined;
    if (interrupt.type !== "permission" && interrupt.type !== "question") return undefined;
    return {
      requestId: interrupt.request_id,
      type: interrupt.type,
      details: isObject(interrupt.details) ? interrupt.details : {},
      taskId: live.task.id,
      contextId: live.task.contextId,
      sessionId: live.sessionId,
      owner: live.owner,
      routing: live.routing,
    };
  }

  /** The pending interrupt of a task the caller can see (for tasks/provideInputAndContinue). */
  pendingInterrupt(principal: Principal, taskId: string): PendingInterrupt | undefined {
    this.#visible(principal, taskId);
    const live = this.#live.get(taskId);
    return live === undefined ? undefined : this.#pendingInterrupt(live);
  }

  /**
   * After the caller answered the pending interrupt: the task is working again at once (OpenCode confirms with
   * its *.replied event shortly after), so a blocking send waits for the continued turn.
   */
  resume(principal: Principal, taskId: string): Task {
    this.#visible(principal, taskId);
    const live = this.#live.get(taskId);
    if (live === undefined) throw new A2AError("TASK_NOT_FOUND", undefined, { task_id: taskId });
    this.#resume(live);
    return structuredClone(live.task);
  }

  #resume(live: LiveTask): void {
    if (live.state !== "input-required") return;
    const status = { state: "working" as const, timestamp: now() };
    live.task.status = status;
    const event: StatusUpdateEvent = { kind: "status-update", taskId: live.task.id, contextId: live.task.contextId, status, final: false };
    this.#saveState(live.task, event);
    live.fanout.publish({ ...event, status: structuredClone(status) });
  }

  /** Resolves when the task is terminal or interrupted again (blocking tasks/provideInputAndContinue). */
  async settled(principal: Principal, taskId: string): Promise<Task> {
    this.#visible(principal, taskId);
    const live = this.#live.get(taskId);
    if (live !== undefined) await live.settled();
    return this.get(principal, taskId);
  }

  /**
   * Saves a task whose state just changed, and tells the transition hooks in the same transaction when the save
   * applied (a task already terminal in the store keeps its state and nobody is told).
   */
  #saveState(task: Task, event?: StatusUpdateEvent): SaveResult {
    const hooks = this.opts.transitions;
    if (hooks === undefined || !hooks.watches(task.id)) return this.#write(() => this.opts.store.save(task));
    return this.#write(() =>
      hooks.atomically(() => {
        const result = this.opts.store.save(task);
        if (result.applied) hooks.changed(task, event);
        return result;
      }),
    );
  }

  /** Streamed output reaches the store at most once a second (compact snapshots), so a crash loses little. */
  #persistSoon(live: LiveTask): void {
    if (live.persistTimer !== undefined) return;
    live.persistTimer = setTimeout(() => {
      live.persistTimer = undefined;
      if (isTerminal(live.state) || this.#stopped) return;
      try {
        this.#write(() => this.opts.store.save(live.task));
      } catch (error) {
        // The store refuses the running task's progress (full disk, …): the task fails with that reason (its final
        // state is saved once the store takes writes again) and its OpenCode turn is stopped.
        this.opts.log.error({ err: error instanceof Error ? error.message : String(error), taskId: live.task.id }, "task store refused a running task's progress");
        this.#fail(live, asTaskError(error));
        live.abort.abort();
        if (live.sessionId !== undefined) void this.#abortUpstream(live.sessionId, live.routing);
      }
    }, 1_000);
    live.persistTimer.unref();
  }

  async #complete(live: LiveTask, mapper: StreamMapper, routing: Routing): Promise<boolean> {
    // What the turn changed, read from OpenCode before the mapper is finished (its events continue the sequence).
    const extras = mapper.terminal === undefined ? [] : await this.#turnArtifacts(live, mapper, routing);
    if (isTerminal(live.state) || this.#stopped) return false; // canceled (or stopped) while OpenCode was asked
    const result = mapper.finish();
    if (!isTerminal(result.state)) {
      // The event stream ended without the turn's end (hub stopped): never report a running task as finished.
      this.#fail(live, new UpstreamError({ kind: "unreachable", operation: "event-stream", detail: "the upstream event stream ended before the turn finished" }));
      return false;
    }
    if (result.finalTextChunk !== undefined) this.#apply(live, result.finalTextChunk);
    live.task.artifacts = result.artifacts;
    for (const update of extras) this.#apply(live, update);
    const usage = result.usage === undefined ? {} : { usage: result.usage };
    live.task.metadata = mergeShared(live.task.metadata, usage);
    if (result.error !== undefined && result.state !== "completed") {
      this.#finish(live, result.state, result.error.detail, usage, errorMetadata(result.error));
      return false;
    }
    const reply: Message = {
      messageId: randomUUID(),
      role: "agent",
      parts: [{ kind: "text", text: result.finalText }],
      taskId: live.task.id,
      contextId: live.task.contextId,
    };
    live.task.history = [...(live.task.history ?? []), reply];
    this.#finish(live, result.state, undefined, usage);
    return result.state === "completed";
  }

  /**
   * The turn's `changes` artifact (OpenCode's diff of each of the turn's user messages: one `text/x-diff` file part
   * per changed file) and, when the message asked for them (`metadata.opencode.include_file_contents`), one file
   * artifact per added or modified file. A failing read is logged and noted on the task, never fails the turn.
   */
  async #turnArtifacts(live: LiveTask, mapper: StreamMapper, routing: Routing): Promise<ArtifactUpdateEvent[]> {
    const options = this.opts.artifacts;
    const sessionId = live.turn?.sessionId;
    if (options === undefined || !options.changes || sessionId === undefined) return [];
    const out: ArtifactUpdateEvent[] = [];
    try {
      const diffs: FileChange[] = [];
      for (const messageID of mapper.userMessageIds) {
        const listed = await this.opts.upstream.call(
          "sessionDiff",
          (c) => sdk.sessionDiff({ ...c, path: { sessionID: sessionId }, query: { ...c.query, messageID } }),
          { ...routing, sessionId, signal: live.abort.signal },
        );
        if (Array.isArray(listed)) for (const d of listed) if (isObject(d) && typeof d.file === "string") diffs.push(d as FileChange);
      }
      if (diffs.length === 0) return out;
      out.push(mapper.artifactEvent(`${live.task.id}:changes`, "changes", changesParts(diffs, live.diffAsFile), "changes", "opencode_diff", changesSummary(diffs)));
      this.opts.metrics.turnArtifacts.inc({ kind: "changes" });
      if (live.includeFileContents) {
        for (const file of changedFiles(diffs)) {
          const part = await this.#fileContent(live, sessionId, routing, file, options.fileMaxBytes);
          out.push(mapper.artifactEvent(`${live.task.id}:file:${file}`, file, [part], "file", "opencode_file", { opencode: { file: { path: file } } }));
          this.opts.metrics.turnArtifacts.inc({ kind: "file" });
        }
      }
    } catch (error) {
      if (isTerminal(live.state)) return [];
      const message = error instanceof Error ? error.message : String(error);
      this.opts.log.warn({ err: message, taskId: live.task.id, sessionId }, "could not read the turn's changes from OpenCode");
      live.task.metadata = mergeOpencode(live.task.metadata, { changes_error: { message } });
    }
    return out;
  }

  /** One changed file's content from OpenCode: inline bytes up to `maxBytes`, else a `file://` reference. */
  async #fileContent(live: LiveTask, sessionId: string, routing: Routing, file: string, maxBytes: number): Promise<Part> {
    const read = await this.opts.upstream.call(
      "fileRead",
      (c) => sdk.fileRead({ ...c, query: { ...c.query, path: file } }),
      { ...routing, sessionId, signal: live.abort.signal },
    );
    const content = isObject(read) && typeof read.content === "string" ? read.content : "";
    const binary = isObject(read) && read.type === "binary";
    const bytes = binary ? Buffer.from(content, "base64") : Buffer.from(content, "utf8");
    const mimeType = isObject(read) && typeof read.mimeType === "string" ? read.mimeType : binary ? "application/octet-stream" : "text/plain";
    const name = file.split("/").at(-1) ?? file;
    if (bytes.length <= maxBytes) return { kind: "file", file: { bytes: bytes.toString("base64"), mimeType, name }, metadata: { opencode: { path: file, size: bytes.length } } };
    const root = "directory" in routing ? routing.directory : this.opts.routing.root;
    return {
      kind: "file",
      file: { uri: pathToFileURL(path.join(root, file)).href, mimeType, name },
      metadata: { opencode: { path: file, size: bytes.length, omitted: "size", max_bytes: maxBytes } },
    };
  }

  #fail(live: LiveTask, error: UpstreamError | A2AError): void {
    const state: TaskState = error instanceof UpstreamError ? error.taskState : "failed";
    const text = error instanceof UpstreamError ? error.detail : error.message;
    this.#finish(live, state, text, {}, errorMetadata(error));
  }

  /** The single place a task becomes terminal: snapshot, store (first terminal wins), final event, close. */
  #finish(live: LiveTask, state: TaskState, statusText: string | undefined, shared: Metadata, error?: Metadata): void {
    if (isTerminal(live.state) || this.#stopped) return;
    if (live.persistTimer !== undefined) clearTimeout(live.persistTimer);
    live.persistTimer = undefined;
    const status = {
      state,
      timestamp: now(),
      ...(statusText === undefined
        ? {}
        : {
            message: {
              messageId: randomUUID(),
              role: "agent" as const,
              parts: [{ kind: "text" as const, text: statusText }],
              taskId: live.task.id,
              contextId: live.task.contextId,
            },
          }),
    };
    live.task.status = status;
    live.task.metadata = mergeShared(live.task.metadata, shared);
    if (error !== undefined) live.task.metadata = mergeOpencode(live.task.metadata, { error });
    try {
      this.#saveState(live.task);
    } catch (saveError) {
      // Clients still get the final status; the store gets it once it takes writes again.
      this.opts.log.error({ err: saveError instanceof Error ? saveError.message : String(saveError), taskId: live.task.id }, "task store refused a final state; retrying");
      this.#unsaved.set(live.task.id, live.task);
      this.#retryUnsaved();
    }
    this.opts.metrics.tasksFinished.inc({ state });
    live.fanout.publish({
      kind: "status-update",
      taskId: live.task.id,
      contextId: live.task.contextId,
      status: { ...status },
      final: true,
      metadata: {
        shared: { ...(live.sessionId === undefined ? {} : { session: { id: live.sessionId } }), ...shared },
        ...(error === undefined ? {} : { opencode: { error } }),
      },
    });
    live.fanout.close();
    live.wake();
    if (this.#queued > 0) {
      // A task that ends while it waits (canceled) gives its place back at once.
      const line = this.#waiting.get(live.owner);
      const index = line?.findIndex((w) => w.live === live) ?? -1;
      if (line !== undefined && index >= 0) {
        line.splice(index, 1);
        this.#queued--;
        if (line.length === 0) this.#waiting.delete(live.owner);
      }
      queueMicrotask(() => this.#drain());
    }
  }

  // ---- get / list -----------------------------------------------------------------------------------------

  /**
   * The task as the caller may see it: another principal's task is TaskNotFound, never "forbidden". A task without a
   * live turn comes from `lookup` (the store's get by default).
   */
  #visible(
    principal: Principal,
    taskId: string,
    lookup: (id: string) => { task: Task; owner: string } | undefined = (id) => this.opts.store.get(id),
  ): { task: Task; owner: string } {
    const live = this.#live.get(taskId);
    if (live !== undefined && (live.owner === principal.id || principal.admin)) return { task: live.task, owner: live.owner };
    const record = lookup(taskId);
    if (record === undefined || (record.owner !== principal.id && principal.admin !== true)) {
      throw new A2AError("TASK_NOT_FOUND", undefined, { task_id: taskId });
    }
    return { task: record.task, owner: record.owner };
  }

  get(principal: Principal, taskId: string): Task {
    const { task } = this.#visible(principal, taskId);
    // A stored task is a fresh copy already; a live one is still being written to.
    return this.#live.get(taskId)?.task === task ? structuredClone(task) : task;
  }

  /**
   * get() for a caller that only reads the task (GetTask encodes it for the wire): a stored task comes from the
   * store's view() and may be shared and frozen, so nothing is copied for it; a live one is still copied.
   */
  /** The trace context of a live task's turn (the request that started it), for its logs and push deliveries. */
  traceOf(taskId: string): TraceContext | undefined {
    return traceOfRouting(this.#live.get(taskId)?.routing);
  }

  read(principal: Principal, taskId: string): Task {
    const store = this.opts.store;
    const { task } = this.#visible(principal, taskId, (id) => (store.view !== undefined ? store.view(id) : store.get(id)));
    return this.#live.get(taskId)?.task === task ? structuredClone(task) : task;
  }

  list(principal: Principal, params: ListParams) {
    return this.opts.store.list(principal.admin ? undefined : principal.id, params);
  }

  // ---- cancel -------------------------------------------------------------------------------------------------

  /** Canceled at once and idempotent; the upstream abort is best effort within A2A_CANCEL_ABORT_TIMEOUT_SECONDS. */
  async cancel(principal: Principal, taskId: string): Promise<Task> {
    const started = performance.now();
    this.opts.metrics.cancelRequests.inc();
    const { task } = this.#visible(principal, taskId);
    let outcome: AbortOutcome = "not_attempted";
    try {
      if (task.status.state === "canceled") return structuredClone(task);
      if (isTerminal(task.status.state)) {
        throw new A2AError("TASK_NOT_CANCELABLE", `Task ${taskId} is already ${task.status.state}`, { task_id: taskId, state: task.status.state });
      }
      const live = this.#live.get(taskId);
      if (live === undefined) {
        // Stored as running but no turn is live (the gateway restarted mid-turn): cancel the record.
        const stored = structuredClone(task);
        stored.status = { state: "canceled", timestamp: now() };
        this.#saveState(stored);
        return stored;
      }
      this.#finish(live, "canceled", undefined, {});
      live.abort.abort();
      if (live.sessionId !== undefined) outcome = await this.#abortUpstream(live.sessionId, live.routing);
      return structuredClone(live.task);
    } finally {
      this.opts.metrics.cancelDuration.observe({ abort_outcome: outcome }, performance.now() - started);
    }
  }

  async #abortUpstream(sessionId: string, routing: Routing): Promise<AbortOutcome> {
    const m = this.opts.metrics;
    m.cancelAbortAttempts.inc();
    try {
      await this.opts.upstream.abort(sessionId, { ...routing, timeout: this.opts.cancelAbortTimeoutMs });
      m.cancelAbortSuccess.inc();
      return "success";
    } catch (error) {
      if (error instanceof UpstreamError && error.kind === "timeout") {
        m.cancelAbortTimeout.inc();
        return "timeout";
      }
      m.cancelAbortError.inc();
      this.opts.log.warn({ err: error instanceof Error ? error.message : String(error), sessionId }, "upstream abort failed");
      return "error";
    }
  }

  // ---- subscribe ----------------------------------------------------------------------------------------------

  /**
   * tasks/resubscribe / SubscribeToTask: the current Task first, then the live events. A terminal task: 0.3
   * replays it once and closes; 1.0 answers UnsupportedOperation.
   */
  subscribe(principal: Principal, taskId: string, line: "0.3" | "1.0"): StreamHandle {
    const { task } = this.#visible(principal, taskId);
    const live = this.#live.get(taskId);
    if (live === undefined || isTerminal(live.state)) {
      if (line === "1.0" || !isTerminal(task.status.state)) {
        throw new A2AError("UNSUPPORTED_OPERATION", `Task ${taskId} is ${task.status.state}: there is no live stream to subscribe to`, {
          task_id: taskId,
          state: task.status.state,
        });
      }
      const replay = new FanOut();
      const queue = replay.subscribe({ kind: "task", task: structuredClone(task) });
      replay.close();
      return this.#handle(queue);
    }
    return this.#handle(live.fanout.subscribe({ kind: "task", task: structuredClone(live.task) }));
  }

  /**
   * At start: tasks a previous process left running cannot be continued (their turn's events are gone), so they
   * end as failed with GATEWAY_RESTARTED. Returns how many.
   */
  failOrphans(): number {
    const message = "The gateway restarted while this task was running; its turn cannot be continued.";
    const error = { type: "GATEWAY_RESTARTED", message };
    let failed = 0;
    for (const state of ["submitted", "working", "input-required", "auth-required"] as const) {
      for (;;) {
        const page = this.opts.store.list(undefined, { state, pageSize: 100 });
        let applied = 0;
        for (const task of page.tasks) {
          task.status = {
            state: "failed",
            timestamp: now(),
            message: { messageId: randomUUID(), role: "agent", parts: [{ kind: "text", text: message }], taskId: task.id, contextId: task.contextId },
          };
          task.metadata = mergeOpencode(task.metadata, { error });
          if (this.#saveState(task).applied) applied++;
        }
        failed += applied;
        if (applied === 0) break; // the page is empty (or nothing could change): done with this state
      }
    }
    if (failed > 0) this.opts.log.warn({ failed }, "tasks left running by a previous process were marked failed");
    return failed;
  }

  /**
   * OpenCode lost the task's turn (its process died or restarted mid-turn): the task fails with UPSTREAM_TURN_LOST,
   * keeps the output that arrived (artifacts marked `metadata.opencode.partial`) and the usage reported so far.
   */
  turnLost(taskId: string, detail: string): void {
    const live = this.#live.get(taskId);
    if (live === undefined || isTerminal(live.state)) return;
    live.task.artifacts = (live.task.artifacts ?? []).map((a) => ({ ...a, metadata: mergeOpencode(a.metadata, { partial: true }) }));
    const usage = live.turn?.mapper.usage;
    if (usage !== undefined) live.task.metadata = mergeShared(live.task.metadata, { usage });
    this.opts.log.warn({ taskId, sessionId: live.sessionId, detail }, "upstream turn lost");
    this.#finish(live, "failed", `${detail}; the output so far is kept, marked partial.`, usage === undefined ? {} : { usage }, {
      type: "UPSTREAM_TURN_LOST",
      message: detail,
    });
    live.abort.abort();
  }

  /** The OpenCode process ended (managed mode): every turn in progress is lost with it. Returns how many. */
  upstreamLost(detail: string): number {
    let lost = 0;
    for (const live of [...this.#live.values()]) {
      if (isTerminal(live.state) || live.sessionId === undefined) continue;
      this.turnLost(live.task.id, detail);
      lost++;
    }
    return lost;
  }

  /**
   * Shutdown deadline: every client still waiting on a task gets its current state now. Blocking sends return the
   * task as it is; streams get a last status event (the current state, `final: true`, `metadata.shared.shutdown`)
   * and end. The tasks themselves are left as they are (a restart fails the unfinished ones as GATEWAY_RESTARTED).
   */
  release(): number {
    let released = 0;
    for (const live of this.#live.values()) {
      if (isTerminal(live.state)) continue;
      released++;
      live.fanout.publish({
        kind: "status-update",
        taskId: live.task.id,
        contextId: live.task.contextId,
        status: structuredClone(live.task.status),
        final: true,
        metadata: { shared: { shutdown: { reason: "the gateway is shutting down; the task was not finished", state: live.state } } },
      });
      live.fanout.close();
      live.release();
    }
    return released;
  }

  /** Streams still running at shutdown are told the gateway stops; their tasks stay as stored. */
  shutdown(): void {
    this.#stopped = true;
    if (this.#unsavedTimer !== undefined) clearTimeout(this.#unsavedTimer);
    for (const live of this.#live.values()) {
      live.abort.abort();
      live.fanout.close();
    }
  }
}

/** Any failure as what a task can fail with: typed errors as they are, anything else INTERNAL_ERROR. */
function asTaskError(error: unknown): UpstreamError | A2AError {
  return error instanceof UpstreamError || error instanceof A2AError ? error : new A2AError("INTERNAL_ERROR", error instanceof Error ? error.message : String(error));
}

/** One entry of OpenCode's session diff (SnapshotFileDiff). */
interface FileChange {
  file: string;
  patch?: string;
  additions?: number;
  deletions?: number;
  status?: "added" | "deleted" | "modified";
}

const DIFF_MIME = "text/x-diff";

/** The `changes` artifact's parts: one per changed file, a `text/x-diff` file part (or text when the client takes text only). */
function changesParts(diffs: FileChange[], asFile: boolean): Part[] {
  return diffs.map((d) => {
    const metadata = { opencode: { change: { path: d.file, status: d.status ?? "modified", additions: d.additions ?? 0, deletions: d.deletions ?? 0 } } };
    const patch = d.patch ?? "";
    return asFile
      ? { kind: "file" as const, file: { bytes: Buffer.from(patch, "utf8").toString("base64"), mimeType: DIFF_MIME, name: `${d.file}.diff` }, metadata }
      : { kind: "text" as const, text: patch, metadata };
  });
}

function changesSummary(diffs: FileChange[]): Metadata {
  const files = diffs.map((d) => ({ path: d.file, status: d.status ?? "modified", additions: d.additions ?? 0, deletions: d.deletions ?? 0 }));
  return {
    opencode: {
      changes: {
        mime_type: DIFF_MIME,
        files,
        additions: files.reduce((n, f) => n + f.additions, 0),
        deletions: files.reduce((n, f) => n + f.deletions, 0),
      },
    },
  };
}

/** Files the turn added or modified (once each, in diff order); deleted files have no content. */
function changedFiles(diffs: FileChange[]): string[] {
  const last = new Map<string, FileChange>();
  for (const d of diffs) {
    last.delete(d.file);
    last.set(d.file, d);
  }
  return [...last.values()].filter((d) => d.status !== "deleted").map((d) => d.file);
}

/** Whether an output mode list admits `mime`: the type itself, its type wildcard, or any. */
function acceptsMime(modes: readonly string[], mime: string): boolean {
  const [type] = mime.split("/");
  return modes.some((m) => {
    const mode = (m.split(";")[0] ?? "").trim().toLowerCase();
    return mode === mime || mode === `${type}/*` || mode === "*/*" || mode === "*";
  });
}

/** `metadata.opencode.include_file_contents: true` on the message or the request. */
function wantsFileContents(metadata: Metadata): boolean {
  const opencode = isObject(metadata.opencode) ? metadata.opencode : undefined;
  return opencode?.include_file_contents === true;
}

function modelOf(metadata: Metadata): { providerID: string; modelID: string } | undefined {
  const shared = isObject(metadata.shared) ? metadata.shared : undefined;
  const model = isObject(shared?.model) ? shared.model : undefined;
  const providerID = model?.providerID ?? model?.provider_id;
  const modelID = model?.modelID ?? model?.model_id;
  if (typeof providerID === "string" && providerID !== "" && typeof modelID === "string" && modelID !== "") return { providerID, modelID };
  return undefined;
}
