// The gateway's one internal model of A2A tasks, messages, parts, artifacts and stream events. Every protocol line
// and transport is a codec over it (src/protocol/codec/*): 0.3 JSON-RPC (`kind` shapes, lowercase states),
// 0.3 REST (ProtoJSON with `content`, `ROLE_*`, `TASK_STATE_*`), 1.0 (ProtoJSON, oneof parts, wrappers).
// The task store keeps these objects (compact snapshots), the runtime produces them, the codecs shape them.
import { ListTasksParamsBounds, type Role as WireRole, type TaskState as WireTaskState } from "../../generated/types/v0_3.js";
import { ListTasksRequestBounds } from "../../generated/types/v1_0.js";

/** Task states (A2A 0.3 names, generated from spec/; 1.0 maps them to TASK_STATE_*). */
export type TaskState = WireTaskState;

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(["completed", "canceled", "failed", "rejected"]);
/** States in which a task waits for its client (the turn is paused, not over). */
export const INTERRUPTED_STATES: ReadonlySet<TaskState> = new Set(["input-required", "auth-required"]);

export const isTerminal = (state: TaskState): boolean => TERMINAL_STATES.has(state);

export type Role = WireRole;

export type Metadata = Record<string, unknown>;

/** File content: inline base64 bytes or a URI (exactly one). */
export interface FileContent {
  bytes?: string;
  uri?: string;
  mimeType?: string;
  name?: string;
}

export type Part =
  | { kind: "text"; text: string; metadata?: Metadata }
  | { kind: "file"; file: FileContent; metadata?: Metadata }
  /** `mimeType` / `name`: 1.0 `mediaType` / `filename` of a data part (0.3 data parts have neither). */
  | { kind: "data"; data: unknown; mimeType?: string; name?: string; metadata?: Metadata };

export interface Message {
  messageId: string;
  role: Role;
  parts: Part[];
  taskId?: string;
  contextId?: string;
  metadata?: Metadata;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface TaskStatus {
  state: TaskState;
  message?: Message;
  /** ISO 8601 UTC. */
  timestamp: string;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: Metadata;
  extensions?: string[];
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: Metadata;
}

export interface StatusUpdateEvent {
  kind: "status-update";
  taskId: string;
  contextId: string;
  status: TaskStatus;
  /** 0.3 only on the wire: the last event of the stream. */
  final: boolean;
  metadata?: Metadata;
}

export interface ArtifactUpdateEvent {
  kind: "artifact-update";
  taskId: string;
  contextId: string;
  artifact: Artifact;
  /** Append these parts to the artifact with the same id (else replace it). */
  append?: boolean;
  lastChunk?: boolean;
  metadata?: Metadata;
}

/** What a stream carries: the task first, then updates; a bare message only when no task was created. */
export type StreamEvent =
  | { kind: "task"; task: Task }
  | { kind: "message"; message: Message }
  | StatusUpdateEvent
  | ArtifactUpdateEvent;

/** The result of message/send: the task (or, for protocols that allow it, a direct message). */
export type SendResult = { kind: "task"; task: Task } | { kind: "message"; message: Message };

/** A push notification config as stored (the line's shape is the codec's business). */
export interface PushConfig {
  id: string;
  taskId: string;
  url: string;
  token?: string;
  authentication?: { schemes: string[]; credentials?: string };
  /** Seed 004: the events to send (absent: every state change). See src/push/events.ts. */
  enabledEvents?: ("status_change" | "message" | "input_required" | "artifact")[];
  /** Seed 004: the daily quiet window, `HH:MM` in `quietHoursTimeZone` (default UTC). See src/push/quiet-hours.ts. */
  quietHoursStart?: string;
  quietHoursEnd?: string;
  quietHoursTimeZone?: string;
  /** What the webhook receives: the line's A2A payload (absent, `a2a`) or seed 004's typed events. */
  payloadFormat?: "a2a" | "events";
  /** When the config was first set (ISO 8601; seed 004's `createdAt`). Never on the wire in A2A shapes. */
  createdAt?: string;
  /** What the config has seen of its task (src/push/events.ts PushMark): its events are told against it. Never on the wire. */
  mark?: { state: TaskState; messages: string[]; artifacts: string[] };
  /** The protocol line the config was set on: the shape of its webhook bodies (absent: 0.3). Never on the wire. */
  line?: "0.3" | "1.0";
  /**
   * The result scopes (results.read, results.files) of the principal who set the config: its webhooks carry no more
   * than that principal may read (absent: everything). Never on the wire.
   */
  access?: { artifacts: boolean; files: boolean };
  /** The principal who set the config: others who can see the task see it without its secrets. Never on the wire. */
  owner?: string;
}

/** Parameters of message/send and message/stream after decoding (either line). */
export interface SendParams {
  message: Message;
  configuration?: {
    acceptedOutputModes?: string[];
    historyLength?: number;
    /** false = return at once (0.3 `blocking: false`, 1.0 `returnImmediately: true`). */
    blocking?: boolean;
    pushNotificationConfig?: Omit<PushConfig, "taskId" | "id"> & { id?: string };
  };
  metadata?: Metadata;
}

/** Task listing bounds, as spec/ declares them: the largest 1.0 page (and 0.3 limit); the defaults of each line. */
export const LIST_MAX_PAGE_SIZE: number = Math.max(ListTasksRequestBounds.pageSize.maximum, ListTasksParamsBounds.limit.maximum);
export const LIST_DEFAULT_PAGE_SIZE: number = ListTasksRequestBounds.pageSize.default;
export const LIST_DEFAULT_LIMIT: number = ListTasksParamsBounds.limit.default;

export interface ListParams {
  contextId?: string;
  state?: TaskState;
  /** 0.3 (seed 004) offset pagination. */
  limit?: number;
  offset?: number;
  /** 1.0 token pagination. */
  pageSize?: number;
  pageToken?: string;
  historyLength?: number;
  statusTimestampAfter?: string;
  includeArtifacts?: boolean;
}

let lastMs = Number.NaN;
let lastIso = "";
/** The current time as an ISO 8601 string (the string is reused within the same millisecond). */
export function now(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
