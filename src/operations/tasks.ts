// Handlers of the core task operations, shared by JSON-RPC and REST of both lines: decode with the caller's
// codec, run on the TaskRuntime, encode for the caller's line. REST passes path and query parameters in `params`
// and the request body in `params.body`.
//
// Result scopes (spec/security.tsp) are applied here, on the internal model, before anything is encoded: without
// `results.read` a returned task carries no artifacts and a stream drops its artifact-update events; without
// `results.files` file parts are removed from artifacts and messages (an artifact or message left without parts is
// dropped, since both need at least one part). A caller holding both scopes gets the runtime's objects untouched.
import { hasScope, type Principal } from "../auth/index.js";
import { codecFor, type Codec } from "../protocol/codec/index.js";
import type { Artifact, Message, Part, SendParams, StreamEvent, Task } from "../protocol/model.js";
import type { PushService } from "../push/service.js";
import type { TaskRuntime } from "../runtime/tasks.js";
import { EventStream } from "./stream.js";
import type { Call, MethodHandler } from "./index.js";

function codecOf(call: Call): Codec {
  return codecFor(call.line, call.transport);
}

/** REST sends its payload as the body; JSON-RPC as params. */
function payload(params: Record<string, unknown>, call: Call): unknown {
  return call.transport === "rest" ? (params.body ?? {}) : params;
}

/** REST: path + query parameters without the body. */
function pathAndQuery(params: Record<string, unknown>): Record<string, unknown> {
  const { body: _body, ...rest } = params;
  return rest;
}

// ---- result scopes ---------------------------------------------------------------------------------------------

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

function toEventStream(codec: Codec, handle: { events: AsyncIterator<StreamEvent>; close(): void }, access: ResultAccess): EventStream {
  const events = handle.events;
  return new EventStream(
    {
      async next() {
        for (;;) {
          const next = await events.next();
          if (next.done) return { value: undefined, done: true };
          const event = filterEvent(next.value, access);
          if (event !== undefined) return { value: codec.streamEvent(event), done: false };
        }
      },
    },
    () => handle.close(),
  );
}

/**
 * The push notification config given with a message (0.3 `configuration.pushNotificationConfig`, 0.3 REST
 * `configuration.pushNotification`, 1.0 `configuration.taskPushNotificationConfig`): checked before anything is
 * created, stored on the task before its turn runs. Ignored, as the SDKs do, when push notifications are off.
 */
function sendTimeConfig(push: PushService | undefined, call: Call, send: SendParams): ((task: Task) => void) | undefined {
  const config = send.configuration?.pushNotificationConfig;
  if (push === undefined || config === undefined) return undefined;
  const fields = codecOf(call).pushFields;
  const where = { field: fields.send, scheme: fields.scheme };
  push.check(config, where);
  return (task) => push.set(call.principal, call.line, { ...config, taskId: task.id }, false, where);
}

export function taskHandlers(runtime: TaskRuntime, push?: PushService): Record<string, MethodHandler> {
  return {
    send: async (params, call) => {
      const codec = codecOf(call);
      const send = codec.decodeSendParams(payload(params, call));
      const task = filterTask(await runtime.send(call.principal, send, sendTimeConfig(push, call, send), call.trace), resultAccess(call.principal));
      const historyLength = send.configuration?.historyLength;
      return codec.sendResult({ kind: "task", task }, historyLength === undefined ? {} : { historyLength });
    },
    stream: async (params, call) => {
      const codec = codecOf(call);
      const send = codec.decodeSendParams(payload(params, call));
      const handle = await runtime.stream(call.principal, send, sendTimeConfig(push, call, send), call.trace);
      return toEventStream(codec, handle, resultAccess(call.principal));
    },
    get: async (params, call) => {
      const codec = codecOf(call);
      const query = codec.decodeTaskQuery(call.transport === "rest" ? pathAndQuery(params) : params);
      const task = filterTask(runtime.read(call.principal, query.id), resultAccess(call.principal));
      return codec.task(task, query.historyLength === undefined ? {} : { historyLength: query.historyLength });
    },
    list: async (params, call) => {
      const codec = codecOf(call);
      const list = codec.decodeListParams(call.transport === "rest" ? pathAndQuery(params) : params);
      const result = runtime.list(call.principal, list);
      const access = resultAccess(call.principal);
      return codec.listResult(
        {
          tasks: result.tasks.map((t) => filterTask(t, access)),
          totalSize: result.totalSize,
          pageSize: result.pageSize,
          ...(list.offset === undefined ? {} : { offset: list.offset }),
          nextPageToken: result.nextPageToken,
        },
        {
          ...(list.historyLength === undefined ? {} : { historyLength: list.historyLength }),
          includeArtifacts: list.includeArtifacts ?? false,
        },
      );
    },
    cancel: async (params, call) => {
      const codec = codecOf(call);
      const { id } = codec.decodeTaskId(call.transport === "rest" ? pathAndQuery(params) : params);
      return codec.task(filterTask(await runtime.cancel(call.principal, id), resultAccess(call.principal)));
    },
    subscribe: async (params, call) => {
      const codec = codecOf(call);
      const { id } = codec.decodeTaskId(call.transport === "rest" ? { ...pathAndQuery(params), ...((params.body as object) ?? {}) } : params);
      return toEventStream(codec, runtime.subscribe(call.principal, id, call.line), resultAccess(call.principal));
    },
  };
}
