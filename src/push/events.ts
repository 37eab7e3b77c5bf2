// The events of a task's state change, as a push config sees them (seed 004's `enabledEvents` and typed events; the
// models are declared in spec/a2a/v0_3/models.tsp: PushEventType, PushEvent). Each config keeps a mark of what it has
// seen of its task (the state, the agent messages, the artifacts); a state change yields, against that mark:
//   status_change   every state change {old_state, new_state};
//   input_required  the change to input-required {prompt: the status message's text, input_types};
//   message         each agent message new to the config (the turn's reply in the history, a status message) once;
//   artifact        each artifact new to the config once {artifact_type, artifact_name, artifact_size}.
// Coalescing (quiet hours) merges a held event with a later one of the same key: status_change keeps the first
// old_state, everything else is replaced by the later one.
import type { Artifact, Message, Task, TaskState } from "../protocol/model.js";

export type PushEventName = "status_change" | "message" | "input_required" | "artifact";

/** What a config has seen of its task: the state, the ids of the agent messages and of the artifacts. */
export interface PushMark {
  state: TaskState;
  messages: string[];
  artifacts: string[];
}

/** One typed event: seed 004's `{event, task_id, timestamp, data}`. */
export interface TypedEvent {
  event: PushEventName;
  task_id: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** The media types an answer to an input-required task may take: a message's text (or an a2a.interrupt.* reply). */
const INPUT_TYPES = ["text/plain"];

/** What a config that has seen nothing yet knows: every task starts submitted. */
export const UNSEEN: PushMark = { state: "submitted", messages: [], artifacts: [] };

/** The agent messages of a task: its history's, then its status message (an interrupt's question, a failure's reason). */
function agentMessages(task: Task): Message[] {
  const out = (task.history ?? []).filter((m) => m.role === "agent");
  const status = task.status.message;
  if (status !== undefined && status.role === "agent" && !out.some((m) => m.messageId === status.messageId)) out.push(status);
  return out;
}

/** The mark of `task` as it is now. */
export function markOf(task: Task): PushMark {
  return { state: task.status.state, messages: agentMessages(task).map((m) => m.messageId), artifacts: (task.artifacts ?? []).map((a) => a.artifactId) };
}

const textOf = (m: Message): string => m.parts.flatMap((p) => (p.kind === "text" ? [p.text] : [])).join("\n");

/** seed 004's artifact data: the kind of its first file or data part (else text), its name, its size in bytes. */
function artifactData(a: Artifact): Record<string, unknown> {
  let size = 0;
  let type: "file" | "data" | "text" = "text";
  for (const p of a.parts) {
    if (p.kind === "text") size += Buffer.byteLength(p.text, "utf8");
    else if (p.kind === "data") size += Buffer.byteLength(JSON.stringify(p.data) ?? "", "utf8");
    else if (p.file.bytes !== undefined) size += Buffer.byteLength(p.file.bytes, "base64");
    else {
      // A reference (uri): the size OpenCode reported for the file, when it did.
      const reported = (p.metadata?.opencode as { size?: unknown } | undefined)?.size;
      if (typeof reported === "number") size += reported;
    }
    if (type === "text" && p.kind !== "text") type = p.kind;
  }
  return { artifact_type: type, artifact_name: a.name ?? a.artifactId, artifact_size: size };
}

/** An event with what it coalesces with while held: its type, or for an artifact the artifact (one each). */
export interface KeyedEvent {
  key: string;
  event: TypedEvent;
}

/** The events `task`'s state change yields for a config that had seen `mark` (in the order they are sent). */
export function eventsOf(mark: PushMark, task: Task): KeyedEvent[] {
  const base = { task_id: task.id, timestamp: task.status.timestamp };
  const state = task.status.state;
  const out: KeyedEvent[] = [];
  const add = (event: TypedEvent, key: string = event.event) => out.push({ key, event });
  if (state !== mark.state) add({ event: "status_change", ...base, data: { old_state: mark.state, new_state: state } });
  if (state === "input-required" && mark.state !== "input-required") {
    const prompt = task.status.message === undefined ? "" : textOf(task.status.message);
    add({ event: "input_required", ...base, data: { prompt, input_types: [...INPUT_TYPES] } });
  }
  const seenMessages = new Set(mark.messages);
  for (const m of agentMessages(task)) {
    if (!seenMessages.has(m.messageId)) add({ event: "message", ...base, data: { message_role: "assistant", message_content: textOf(m) } });
  }
  const seenArtifacts = new Set(mark.artifacts);
  for (const a of task.artifacts ?? []) {
    if (!seenArtifacts.has(a.artifactId)) add({ event: "artifact", ...base, data: artifactData(a) }, `artifact:${a.artifactId}`);
  }
  return out;
}

/** `later` coalesced into the held `earlier` (same key): a status change runs from the first old state to the last new one. */
export function coalesced(earlier: TypedEvent, later: TypedEvent): TypedEvent {
  if (later.event !== "status_change") return later;
  return { ...later, data: { ...later.data, old_state: earlier.data.old_state } };
}
