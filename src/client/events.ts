// What a peer's events add up to (spec: A2aCallResult): the task and context, the latest state, the answer text and,
// for input-required / auth-required, what the peer asks. Events are the @a2a-js/sdk's StreamResponse objects, the
// same for 0.3 and 1.0 peers. The answer is the text of the peer's artifacts (chunks appended or replaced by
// artifact id, in the order artifacts first appeared), leaving out artifacts marked as reasoning, tool calls, diffs or
// files (`metadata.shared.stream.block_type`, as this gateway and the Python reference mark them); a peer that
// answers with a message only gives that message's text.
import { TaskState, type Artifact, type Message, type Part, type StreamResponse, type Task, type TaskStatus } from "@a2a-js/sdk";
import type { PeerTaskState } from "../../generated/types/extensions.js";

/** Block types that are not the answer. */
const NOT_ANSWER = new Set(["reasoning", "tool_call", "changes", "file"]);

const STATE_NAMES: Partial<Record<TaskState, PeerTaskState>> = {
  [TaskState.TASK_STATE_SUBMITTED]: "submitted",
  [TaskState.TASK_STATE_WORKING]: "working",
  [TaskState.TASK_STATE_COMPLETED]: "completed",
  [TaskState.TASK_STATE_FAILED]: "failed",
  [TaskState.TASK_STATE_CANCELED]: "canceled",
  [TaskState.TASK_STATE_INPUT_REQUIRED]: "input-required",
  [TaskState.TASK_STATE_REJECTED]: "rejected",
  [TaskState.TASK_STATE_AUTH_REQUIRED]: "auth-required",
};

export function stateName(state: TaskState | undefined): PeerTaskState {
  return (state === undefined ? undefined : STATE_NAMES[state]) ?? "unknown";
}

/** Terminal states, and the states that wait for the caller: a send is over at either. */
export const FINAL_STATES: ReadonlySet<PeerTaskState> = new Set(["completed", "failed", "canceled", "rejected", "input-required", "auth-required"]);

export function textOf(parts: Part[] | undefined): string {
  return (parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
}

function blockType(artifact: Artifact): string | undefined {
  const stream = (artifact.metadata as { shared?: { stream?: { block_type?: unknown } } } | undefined)?.shared?.stream;
  return typeof stream?.block_type === "string" ? stream.block_type : undefined;
}

/** A human line for one event (the CLI's status notes, the tool's progress messages); undefined for none. */
export function describe(event: StreamResponse): string | undefined {
  const payload = event.payload;
  if (payload === undefined) return undefined;
  switch (payload.$case) {
    case "task":
      return `task ${payload.value.id}: ${stateName(payload.value.status?.state)}`;
    case "statusUpdate": {
      const message = textOf(payload.value.status?.message?.parts);
      return `${stateName(payload.value.status?.state)}${message === "" ? "" : `: ${message}`}`;
    }
    case "message":
      return undefined;
    case "artifactUpdate":
      return undefined;
  }
}

export class PeerAnswer {
  taskId: string | undefined;
  contextId: string | undefined;
  state: PeerTaskState = "unknown";
  #question: string | undefined;
  #message: string | undefined;
  /** Artifact texts by id, in first-seen order; undefined: not part of the answer. */
  readonly #artifacts = new Map<string, string | undefined>();

  /** Takes one event in; returns the answer text it added (for streaming it as it arrives). */
  add(event: StreamResponse): string {
    const payload = event.payload;
    if (payload === undefined) return "";
    switch (payload.$case) {
      case "task":
        return this.#task(payload.value);
      case "statusUpdate":
        this.taskId = payload.value.taskId || this.taskId;
        this.contextId = payload.value.contextId || this.contextId;
        this.#status(payload.value.status);
        return "";
      case "artifactUpdate": {
        this.taskId = payload.value.taskId || this.taskId;
        this.contextId = payload.value.contextId || this.contextId;
        const artifact = payload.value.artifact;
        return artifact === undefined ? "" : this.#artifact(artifact, payload.value.append);
      }
      case "message":
        return this.#messageOnly(payload.value);
    }
  }

  /** A send's result that is not a stream event (a Task or a Message). */
  addResult(result: Task | Message): string {
    return "id" in result && "status" in result ? this.#task(result) : this.#messageOnly(result as Message);
  }

  /** The answer so far: the artifacts' text, else the message's (else the status message's). */
  get text(): string {
    const parts = [...this.#artifacts.values()].filter((t): t is string => t !== undefined && t !== "");
    if (parts.length > 0) return parts.join("\n");
    return this.#message ?? "";
  }

  /** What the peer asks, while it waits for input or authorization. */
  get question(): string | undefined {
    return this.state === "input-required" || this.state === "auth-required" ? this.#question : undefined;
  }

  #task(task: Task): string {
    this.taskId = task.id || this.taskId;
    this.contextId = task.contextId || this.contextId;
    this.#status(task.status);
    let added = "";
    // A task snapshot carries the artifacts whole: they replace what was streamed.
    for (const artifact of task.artifacts ?? []) added += this.#artifact(artifact, false);
    return added;
  }

  #status(status: TaskStatus | undefined): void {
    if (status === undefined) return;
    this.state = stateName(status.state);
    const text = textOf(status.message?.parts);
    if (text !== "") this.#question = text;
  }

  #artifact(artifact: Artifact, append: boolean): string {
    const type = blockType(artifact);
    if (type !== undefined && NOT_ANSWER.has(type)) {
      this.#artifacts.set(artifact.artifactId, undefined);
      return "";
    }
    const text = textOf(artifact.parts);
    const before = this.#artifacts.get(artifact.artifactId) ?? "";
    const after = append ? before + text : text;
    this.#artifacts.set(artifact.artifactId, after);
    // What a reader of the stream sees newly: the appended chunk, or the part of a replacement beyond the old text.
    return after.startsWith(before) ? after.slice(before.length) : "";
  }

  #messageOnly(message: Message): string {
    this.contextId = message.contextId || this.contextId;
    this.taskId = message.taskId || this.taskId;
    const text = textOf(message.parts);
    this.#message = text;
    if (this.state === "unknown") this.state = "completed";
    return text;
  }
}
