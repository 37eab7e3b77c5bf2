// One task whose turn runs in this process (the task runtime, ./tasks.ts): its current snapshot, the streams attached
// to it (FanOut), who waits for it to settle, and the upstream turn it runs.
//
// The snapshot is never written to: every change replaces it (update()), so a task handed out (a send's answer, a
// stream's first event, a GetTask) stays as it was, without a copy. Its nested objects are shared with the events
// that carried them, and nobody writes to those either (the runtime replaces fields, the codecs build new objects).
import { randomUUID } from "node:crypto";
import type { Routing } from "../bridge/directory.js";
import type { PromptPart } from "../bridge/parts.js";
import type { InterruptSignal, StreamMapper } from "../bridge/stream-mapper.js";
import { INTERRUPTED_STATES, isTerminal, now, type Artifact, type Message, type Task, type TaskState } from "../protocol/model.js";
import { FanOut } from "./fanout.js";
import { GovernedRequests } from "./governed.js";
import type { FileChange, PendingInterrupt, TurnRef } from "./options.js";

/** A prompt sent into a turn (parts, and the turn's model and agent). */
export interface PromptBody {
  parts: PromptPart[];
  model?: { providerID: string; modelID: string };
  /** The OpenCode agent that answers (prompt `agent`); OpenCode's default agent when absent. */
  agent?: string;
  /** Run this OpenCode command (`POST /session/{id}/command`) with these arguments instead of a prompt. */
  command?: { name: string; arguments: string };
}

/** The upstream turn a live task runs right now. */
export interface ActiveTurn {
  mapper: StreamMapper;
  sessionId: string;
  routing: Routing;
  /** The agent the turn runs as (follow-ups go to it too). */
  agent?: string;
  /** The model of the turn's prompt (governors' follow-ups use it too). */
  model?: PromptBody["model"];
  /** Follow-up prompts sent into the turn, by the mapper's follow-up ordinal (sent again if OpenCode stalls them). */
  followUps: PromptBody[];
  stallTimer?: NodeJS.Timeout;
  /** Post-run reviews of the turn so far (RuntimeOptions.review). */
  reviewRounds?: number;
  /** OpenCode's diff as the last review read it, when nothing ran in the turn since (the `changes` artifact reuses it). */
  reviewedChanges?: FileChange[];
}

/** A new task for `message`, with the output modes it negotiated. */
export function newTask(message: Message, contextId: string, acceptedOutputModes: string[], state: "working" | "submitted" = "working"): Task {
  const taskId = randomUUID();
  // The message was decoded from this request alone (nothing else holds it): kept as is, no copy.
  const userMessage: Message = { ...message, taskId, contextId, role: "user" };
  return {
    id: taskId,
    contextId,
    // Working from the start: the turn is handed to OpenCode right away (one store write fewer per task). Submitted
    // only when the turn waits for something before it may start (a subtask waiting for its group and slot).
    status: { state, timestamp: now() },
    history: [userMessage],
    metadata: { opencode: { output_negotiation: { accepted_output_modes: acceptedOutputModes } } },
  };
}

export class LiveTask {
  readonly fanout = new FanOut();
  readonly abort = new AbortController();
  readonly id: string;
  readonly contextId: string;
  #task: Task;
  /** Resolves when the task is terminal or interrupted (what a blocking send waits for). */
  readonly #waiters = new Set<() => void>();
  /** Resolve when the task is terminal. */
  readonly #endWaiters = new Set<() => void>();
  sessionId: string | undefined;
  persistTimer: NodeJS.Timeout | undefined;
  /** The task's store writes, one after another (TaskLifecycle): settles when every write queued so far is done. */
  writes: Promise<void> = Promise.resolve();
  /** The client takes `text/x-diff` files (else the `changes` diff comes as text parts). */
  diffAsFile = true;
  /** The message asked for the changed files' contents (`metadata.opencode.include_file_contents`). */
  includeFileContents = false;
  /** The upstream turn in progress (set once its first prompt was sent). */
  turn: ActiveTurn | undefined;
  /** The interrupt of the status update that set the current state (the task keeps it at `metadata.shared.interrupt`). */
  interrupt: InterruptSignal | undefined;
  /** Permission requests a governance policy answered (the task does not wait on them). */
  readonly governed = new GovernedRequests();
  /** Follow-ups waiting for the turn to start upstream (they are sent into it then). */
  readonly #turnWaiters = new Set<(turn: ActiveTurn | undefined) => void>();

  constructor(
    task: Task,
    readonly owner: string,
    readonly routing: Routing,
    /** The trust level the owner started the task at (governance rules may match it). */
    readonly trustLevel?: string,
    /** The owner's scopes when the task started (what the OpenCode credential of the MCP tools acts with). */
    readonly scopes?: ReadonlySet<string>,
    /** Whether the owner was an admin when the task started. */
    readonly admin = false,
  ) {
    this.#task = task;
    this.id = task.id;
    this.contextId = task.contextId;
  }

  /** The task now (a snapshot nobody writes to). */
  get task(): Task {
    return this.#task;
  }

  get state(): TaskState {
    return this.#task.status.state;
  }

  /** Replaces fields of the task (a new snapshot; the previous one is left as it was). */
  update(fields: Partial<Task>): void {
    this.#task = { ...this.#task, ...fields };
  }

  /** An artifact as a client now holds it: replaces the one with its id, or comes last. */
  putArtifact(artifact: Artifact): void {
    const artifacts = [...(this.#task.artifacts ?? [])];
    const index = artifacts.findIndex((a) => a.artifactId === artifact.artifactId);
    if (index < 0) artifacts.push(artifact);
    else artifacts[index] = artifact;
    this.update({ artifacts });
  }

  settled(): Promise<void> {
    if (isTerminal(this.state) || INTERRUPTED_STATES.has(this.state)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  /** Resolves when the task is terminal. */
  ended(): Promise<void> {
    if (isTerminal(this.state)) return Promise.resolve();
    return new Promise((resolve) => this.#endWaiters.add(resolve));
  }

  wake(): void {
    if (isTerminal(this.state)) {
      this.turnChanged();
      for (const resolve of this.#endWaiters) resolve();
      this.#endWaiters.clear();
    }
    if (!(isTerminal(this.state) || INTERRUPTED_STATES.has(this.state))) return;
    for (const resolve of this.#waiters) resolve();
    this.#waiters.clear();
  }

  /**
   * Shutdown deadline: blocking sends answer with the task as it is, streams get a last status event (the current
   * state, `final: true`, `metadata.shared.shutdown`) and end. The task itself is left as it is.
   */
  release(): void {
    this.fanout.publish({
      kind: "status-update",
      taskId: this.id,
      contextId: this.contextId,
      status: this.#task.status,
      final: true,
      metadata: { shared: { shutdown: { reason: "the gateway is shutting down; the task was not finished", state: this.state } } },
    });
    this.fanout.close();
    for (const resolve of this.#waiters) resolve();
    this.#waiters.clear();
  }

  /** The interrupt the task waits on (announced by the status update that set `input-required`), if any. */
  pendingInterrupt(): PendingInterrupt | undefined {
    const interrupt = this.interrupt;
    if (this.state !== "input-required" || this.sessionId === undefined || interrupt?.phase !== "asked") return undefined;
    return this.interruptOf(interrupt);
  }

  /** An interrupt of this task as the interrupt hooks take it. */
  interruptOf(interrupt: InterruptSignal & { phase: "asked" }): PendingInterrupt {
    const { requestId, type, details } = interrupt;
    return { requestId, type, details, ...this.turnRef() };
  }

  /** The task's turn as the observers take it (the session: the turn's, else none yet). */
  turnRef(sessionId: string = this.sessionId ?? "", routing: Routing = this.routing): TurnRef {
    return {
      taskId: this.id,
      contextId: this.contextId,
      sessionId,
      owner: this.owner,
      routing,
      ...(this.trustLevel === undefined ? {} : { trustLevel: this.trustLevel }),
    };
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
