// The request rules of message/send and message/stream (the task runtime, ./tasks.ts): what a message may ask for,
// which task it may continue, and what it tells the turn (model, output modes, file contents). All checked before
// anything is created, so a refused request leaves nothing behind.
import { A2AError, invalidParams } from "../contract/errors.js";
import { isTerminal, type Message, type Metadata, type SendParams, type Task, type TaskState } from "../protocol/model.js";
import type { ModelMonitor } from "../upstream/model-check.js";
import { isObject } from "../util/object.js";
import { DIFF_MIME } from "./turn-artifacts.js";

const TEXT_PLAIN = "text/plain";

/** Whether an output mode list admits `mime`: the type itself, its type wildcard, or any. */
function acceptsMime(modes: readonly string[], mime: string): boolean {
  const [type] = mime.split("/");
  return modes.some((m) => {
    const mode = (m.split(";")[0] ?? "").trim().toLowerCase();
    return mode === mime || mode === `${type}/*` || mode === "*/*" || mode === "*";
  });
}

/**
 * The task's output modes: a list that admits no text is refused (CONTENT_TYPE_NOT_SUPPORTED); none given means text
 * and JSON. `diffAsFile`: the client takes the `changes` diff as `text/x-diff` files.
 */
export function outputModes(params: SendParams): { accepted: string[]; diffAsFile: boolean } {
  const modes = params.configuration?.acceptedOutputModes;
  if (modes !== undefined && modes.length > 0 && !modes.some((m) => m === TEXT_PLAIN || m === "text/*" || m === "*/*")) {
    throw new A2AError("CONTENT_TYPE_NOT_SUPPORTED", "acceptedOutputModes must include text/plain", {
      field: "configuration.acceptedOutputModes",
    });
  }
  if (modes === undefined || modes.length === 0) return { accepted: [TEXT_PLAIN, "application/json"], diffAsFile: true };
  return { accepted: modes, diffAsFile: acceptsMime(modes, DIFF_MIME) };
}

/** The request's metadata with the message's over it. */
export function requestMetadata(params: SendParams): Metadata {
  return { ...(params.metadata ?? {}), ...(params.message.metadata ?? {}) };
}

/** A message naming an existing task: its context must be the task's, and the task must not be over. */
export function checkContinuation(message: Message & { taskId: string }, task: Task): void {
  const contextId = message.contextId;
  if (contextId !== undefined && contextId !== task.contextId) {
    throw invalidParams(`contextId ${contextId} does not match task ${message.taskId}`, [{ field: "message.contextId", description: "does not match the task's contextId" }], {}, "field");
  }
  if (isTerminal(task.status.state)) {
    throw new A2AError("UNSUPPORTED_OPERATION", `Task ${message.taskId} is ${task.status.state}; start a new task in the same context`, {
      task_id: message.taskId,
      state: task.status.state,
    });
  }
}

/** A running task continued by someone other than its owner. */
export function notTheOwner(taskId: string, state: TaskState): A2AError {
  return new A2AError("UNSUPPORTED_OPERATION", `Task ${taskId} belongs to another principal; only its owner can continue it`, { task_id: taskId, state });
}

/** A stored non-terminal task without a live turn (the gateway restarted mid-turn) cannot be continued. */
export function noTurnToContinue(taskId: string): A2AError {
  return new A2AError("UNSUPPORTED_OPERATION", `Task ${taskId} has no turn to continue`, { task_id: taskId });
}

/** A follow-up that came too late: its task's turn ended first. */
export function turnEnded(taskId: string, state: TaskState): A2AError {
  return new A2AError("UNSUPPORTED_OPERATION", `Task ${taskId} ended before the follow-up could join its turn (${state}); start a new task in the same context`, {
    task_id: taskId,
    state,
  });
}

/**
 * No usable default model (first run, dead endpoint): refused at once with what to configure, instead of a turn
 * OpenCode retries for a minute. A request that names its own model is not checked.
 */
export async function checkModel(monitor: ModelMonitor | undefined, metadata: Metadata): Promise<void> {
  if (monitor === undefined || modelOf(metadata) !== undefined || monitor.last?.state === "ok") return;
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

/** `metadata.shared.model` ({providerID, modelID} or {provider_id, model_id}): the model the turn runs on. */
export function modelOf(metadata: Metadata): { providerID: string; modelID: string } | undefined {
  const shared = isObject(metadata.shared) ? metadata.shared : undefined;
  const model = isObject(shared?.model) ? shared.model : undefined;
  const providerID = model?.providerID ?? model?.provider_id;
  const modelID = model?.modelID ?? model?.model_id;
  if (typeof providerID === "string" && providerID !== "" && typeof modelID === "string" && modelID !== "") return { providerID, modelID };
  return undefined;
}

/** `metadata.opencode.include_file_contents: true` on the message or the request. */
export function wantsFileContents(metadata: Metadata): boolean {
  const opencode = isObject(metadata.opencode) ? metadata.opencode : undefined;
  return opencode?.include_file_contents === true;
}
