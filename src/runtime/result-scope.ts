// Result scopes (spec/security.tsp), applied on the internal model before anything is encoded, wherever a task or
// stream event leaves the gateway (the task operations, push deliveries, interrupt answers): without
// `results.read` a returned task carries no artifacts and a stream drops its artifact-update events; without
// `results.files` file parts are removed from artifacts and messages (an artifact or message left without parts is
// dropped, since both need at least one part). A caller holding both scopes gets the runtime's objects untouched.
import { hasScope, type Principal } from "../auth/index.js";
import type { Artifact, Message, Part, StreamEvent, Task } from "../protocol/model.js";

export const RESULTS_READ = "results.read";
export const RESULTS_FILES = "results.files";

/** What of a task's results a caller may receive. */
export interface ResultAccess {
  /** `results.read`: artifacts (and artifact-update events). */
  artifacts: boolean;
  /** `results.files`: file parts in artifacts and messages. */
  files: boolean;
}

export function resultAccess(principal: Principal): ResultAccess {
  return { artifacts: hasScope(principal, RESULTS_READ), files: hasScope(principal, RESULTS_FILES) };
}

const isFile = (p: Part): boolean => p.kind === "file";

/** The message without file parts (unless allowed); undefined when nothing would be left of it. */
export function filterMessage(message: Message, access: ResultAccess): Message | undefined {
  if (access.files || !message.parts.some(isFile)) return message;
  const parts = message.parts.filter((p) => !isFile(p));
  return parts.length === 0 ? undefined : { ...message, parts };
}

/** The artifact as the caller may see it; undefined when it is withheld or nothing would be left of it. */
export function filterArtifact(artifact: Artifact, access: ResultAccess): Artifact | undefined {
  if (!access.artifacts) return undefined;
  if (access.files || !artifact.parts.some(isFile)) return artifact;
  const parts = artifact.parts.filter((p) => !isFile(p));
  return parts.length === 0 ? undefined : { ...artifact, parts };
}

/** The task as the caller may see it (a shallow copy when anything is withheld; the input is never changed). */
export function filterTask(task: Task, access: ResultAccess): Task {
  if (access.artifacts && access.files) return task;
  const out: Task = { ...task };
  if (task.artifacts !== undefined) {
    const artifacts = task.artifacts.flatMap((a) => filterArtifact(a, access) ?? []);
    if (access.artifacts && artifacts.length > 0) out.artifacts = artifacts;
    else delete out.artifacts;
  }
  if (task.history !== undefined) out.history = task.history.flatMap((m) => filterMessage(m, access) ?? []);
  if (task.status.message !== undefined) {
    const message = filterMessage(task.status.message, access);
    const { message: _dropped, ...status } = task.status;
    out.status = message === undefined ? status : { ...status, message };
  }
  return out;
}

/** The stream event as the caller may see it; undefined when it is withheld (artifact updates without results.read). */
export function filterEvent(event: StreamEvent, access: ResultAccess): StreamEvent | undefined {
  if (access.artifacts && access.files) return event;
  switch (event.kind) {
    case "task":
      return { kind: "task", task: filterTask(event.task, access) };
    case "message": {
      const message = filterMessage(event.message, access);
      return message === undefined ? undefined : { kind: "message", message };
    }
    case "status-update": {
      if (event.status.message === undefined) return event;
      const message = filterMessage(event.status.message, access);
      if (message === event.status.message) return event;
      const { message: _dropped, ...status } = event.status;
      return { ...event, status: message === undefined ? status : { ...status, message } };
    }
    case "artifact-update": {
      const artifact = filterArtifact(event.artifact, access);
      return artifact === undefined ? undefined : { ...event, artifact };
    }
  }
}
