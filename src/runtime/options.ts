// What the task runtime (./tasks.ts) is built with: its dependencies and limits, and the observers it reports to
// (the interrupt registry of src/extensions and the push notifications of src/push).
import type { Logger } from "pino";
import type { Principal } from "../auth/index.js";
import type { Routing, RoutingPolicy } from "../bridge/directory.js";
import type { Cluster } from "../cluster/index.js";
import type { SessionResolver } from "../bridge/sessions.js";
import type { Metrics } from "../observability/metrics.js";
import type { Message, Metadata, StatusUpdateEvent, Task } from "../protocol/model.js";
import type { StoreHealth } from "../storage/health.js";
import type { TaskStore } from "../storage/tasks.js";
import type { StoreTx } from "../storage/tx.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { EventHub } from "../upstream/hub.js";
import type { ModelMonitor } from "../upstream/model-check.js";

export interface RuntimeOptions {
  store: TaskStore;
  /** The gateways of the database (src/cluster): tasks record the instance running them; others forward to it. */
  cluster?: Cluster;
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
  /** Post-run governors (src/governance/governors.ts): review each completed turn before its task completes. */
  review?: TurnReview;
}

/** One entry of OpenCode's session diff (SnapshotFileDiff). */
export interface FileChange {
  file: string;
  patch?: string;
  additions?: number;
  deletions?: number;
  status?: "added" | "deleted" | "modified";
}

/** A live task's turn as the observers see it: the task, its session, its owner and where it runs. */
export interface TurnRef {
  taskId: string;
  contextId: string;
  sessionId: string;
  owner: string;
  /** The trust level the owner started the task at. */
  trustLevel?: string;
  routing: Routing;
}

/** The task whose turn is reviewed. */
export type ReviewSubject = TurnRef;

/** What a review of a completed turn is given. */
export interface ReviewInput {
  /** 1 for the turn's own work, then one more per follow-up the review sent into it. */
  round: number;
  /** OpenCode's diff of the turn so far (every user message of it); empty when it could not be read. */
  changes: FileChange[];
  /** Why the diff could not be read (the governors are not run on a diff that may be incomplete). */
  changesError?: string;
  /** The turn's text so far. */
  finalText: string;
  /** Aborts when the task is canceled or the gateway stops. */
  signal: AbortSignal;
  /** Told which governors review, before they start (not called when none does). */
  started(governors: string[]): void;
}

/** What the governors said about one round. */
export interface ReviewVerdict {
  round: number;
  status: "ok" | "needs_attention" | "rejected";
  governors: string[];
  /** One line per governor (as recorded in the trail). */
  summary: string[];
  /** The prompt to run next in the task's session, when follow-ups are on and rounds are left. */
  followUp?: string;
}

/** Where post-run governors plug into the runtime: asked when a turn completes, before its task does. */
export interface TurnReview {
  /** Whether any governor may review this task's turns (cheap: when false, no diff is read). */
  reviews(subject: ReviewSubject): boolean;
  /** Runs the governors that apply and records their feedback; undefined when none ran. */
  review(subject: ReviewSubject, input: ReviewInput): Promise<ReviewVerdict | undefined>;
}

export interface TurnArtifactOptions {
  /** A2A_ARTIFACT_CHANGES: emit the turn's diff as the `changes` artifact. */
  changes: boolean;
  /** A2A_ARTIFACT_FILE_MAX_BYTES: files up to this size are inline bytes, larger ones a reference. */
  fileMaxBytes: number;
}

/**
 * Runs once a task exists and before its turn can change its state (a send's push notification config is stored
 * there, so it sees every state change); a failure fails the request.
 */
export type Configure = (task: Task) => void | Promise<void>;

/** Observers of task state changes, written in the same store transaction as the change itself. */
export interface TransitionHooks {
  /** Runs `fn` (the save and `changed`) in one store transaction, with the stores bound to it: all or nothing. */
  atomically<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /** The task's new state was saved in `tx`; `event` is the status update that carried it, when there was one. */
  changed(tx: StoreTx, task: Task, event?: StatusUpdateEvent): Promise<void>;
}

/** An OpenCode permission or question a live task waits on. */
export interface PendingInterrupt extends TurnRef {
  requestId: string;
  type: "permission" | "question";
  /** As published at `metadata.shared.interrupt.details` (questions, options, reply_options, …). */
  details: Metadata;
}

/** Where the interrupt registry (src/extensions/interrupt-registry.ts) plugs into the runtime. */
export interface InterruptHooks {
  /** Records the request's binding; never rejects (a failure is logged: the request is then answerable only in OpenCode). */
  asked(interrupt: PendingInterrupt): Promise<void>;
  /** Discards the request's binding; never rejects (a failure is logged). */
  resolved(event: { requestId: string; type: "permission" | "question"; taskId: string }): Promise<void>;
  /** Answer the pending interrupt with a follow-up message (question: its text); throws a typed A2AError. */
  answer?(principal: Principal, interrupt: PendingInterrupt, message: Message): Promise<void>;
  /**
   * Asked before an interrupt is applied to the task: true when a governance policy answers it itself (the task does
   * not turn `input-required` for it); `manual` puts it back on the manual flow if that answer cannot be delivered.
   */
  govern?(interrupt: PendingInterrupt, manual: () => void): boolean;
  /**
   * What makes the task as a reader gets it (with the governance summary; the task itself when there is nothing to
   * add): read now, applied to the task's snapshot of the moment it resolves. Never rejects.
   */
  annotation?(taskId: string): Promise<(task: Task) => Task>;
}

/** How a task's turn runs when it is not a plain prompt of the default agent (a subtask's turn). */
export interface TurnSpec {
  /** The OpenCode agent the turn runs as (prompt `agent`). */
  agent?: string;
  /** An OpenCode command the turn runs (`POST /session/{id}/command`), the message text being its arguments. */
  command?: string;
  /**
   * The task is created `submitted` and its turn waits for this: true = start now (admitted like any new turn, then
   * `working`); false = never (the task, if it has not ended, ends canceled).
   */
  gate?: Promise<boolean>;
  /** Keys the new task carries in `metadata.opencode` from the start (e.g. `subtask`). */
  opencode?: Metadata;
}
