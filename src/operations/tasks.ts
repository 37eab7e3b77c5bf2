// Handlers of the core task operations, shared by JSON-RPC and REST of both lines: decode with the caller's
// codec, run on the TaskRuntime, encode for the caller's line. REST passes path and query parameters in `params`
// and the request body in `params.body`; the query is checked against its route's generated schema first.
import type { TasksHandlers } from "../../generated/types/methods.js";
import { checkQuery, type QueryLookup } from "../contract/query.js";
import { codecFor, type Codec } from "../protocol/codec/index.js";
import { encodeCached, spliceEncoded } from "../protocol/encoded.js";
import type { SendParams, StreamEvent, Task } from "../protocol/model.js";
import type { PushService } from "../push/service.js";
import { filterEvent, filterTask, resultAccess, type ResultAccess } from "../runtime/result-scope.js";
import type { Configure } from "../runtime/options.js";
import type { TaskRuntime } from "../runtime/tasks.js";
import { EventStream } from "./stream.js";
import type { Call } from "./call.js";

function codecOf(call: Call): Codec {
  return codecFor(call.line, call.transport);
}

/** REST sends its payload as the body; JSON-RPC as params. */
function payload(params: Record<string, unknown>, call: Call): unknown {
  return call.transport === "rest" ? (params.body ?? {}) : params;
}

/** REST: path + query parameters without the body, the query checked against the schema of the call's route. */
function pathAndQuery(params: Record<string, unknown>, call: Call, queries: QueryLookup): Record<string, unknown> {
  const schema = queries(call.line, call.method.operation!);
  if (schema !== undefined) checkQuery(schema, params);
  const { body: _body, ...rest } = params;
  return rest;
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
function sendTimeConfig(push: PushService | undefined, call: Call, send: SendParams): Configure | undefined {
  const config = send.configuration?.pushNotificationConfig;
  if (push === undefined || config === undefined) return undefined;
  const fields = codecOf(call).pushFields;
  const where = { field: fields.send, scheme: fields.scheme };
  push.check(config, where);
  return async (task) => {
    await push.set(call.principal, call.line, { ...config, taskId: task.id }, false, where);
  };
}

/** The part of an encoded task's cache key that its dialect and the caller's result scopes make. */
const scopedKey = (codec: Codec, access: ResultAccess): string => `${codec.wire}|${access.artifacts ? "a" : "-"}${access.files ? "f" : "-"}`;

/** A task as the caller may see it, encoded for `view`. */
const encodeFor =
  (codec: Codec, access: ResultAccess, view: Parameters<Codec["task"]>[1]) =>
  (task: Task): unknown =>
    codec.task(filterTask(task, access), view);

export function taskHandlers(runtime: TaskRuntime, push: PushService | undefined, queries: QueryLookup) {
  /** The REST params a handler reads, or the JSON-RPC params as they are. */
  const input = (params: Record<string, unknown>, call: Call) => (call.transport === "rest" ? pathAndQuery(params, call, queries) : params);
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
      const query = codec.decodeTaskQuery(input(params, call));
      const task = await runtime.read(call.principal, query.id);
      const access = resultAccess(call.principal);
      const view = query.historyLength === undefined ? {} : { historyLength: query.historyLength };
      // The answer depends on the snapshot, the dialect, the caller's result scopes and the history length only.
      return encodeCached(task, `${scopedKey(codec, access)}|${query.historyLength ?? ""}`, encodeFor(codec, access, view));
    },
    list: async (params, call) => {
      const codec = codecOf(call);
      const list = codec.decodeListParams(input(params, call));
      const result = await runtime.list(call.principal, list);
      const access = resultAccess(call.principal);
      const includeArtifacts = list.includeArtifacts ?? false;
      const view = { ...(list.historyLength === undefined ? {} : { historyLength: list.historyLength }), includeArtifacts };
      // A listed task's encoding depends on the snapshot, the dialect, the caller's result scopes and the view only;
      // a row listed again unchanged is the same frozen snapshot (src/storage/listed-rows.ts), encoded once.
      const key = `${scopedKey(codec, access)}|list|${list.historyLength ?? ""}|${includeArtifacts ? "a" : "-"}`;
      const page = {
        tasks: result.tasks,
        totalSize: result.totalSize,
        pageSize: result.pageSize,
        ...(list.offset === undefined ? {} : { offset: list.offset }),
        nextPageToken: result.nextPageToken,
      };
      // The texts only are kept: nothing reads a listed task's value but the payload log (which parses it again).
      const encoded = codec.listResult(page, view, (t) => encodeCached(t, key, encodeFor(codec, access, view), false));
      return spliceEncoded(encoded as Record<string, unknown>);
    },
    cancel: async (params, call) => {
      const codec = codecOf(call);
      const { id } = codec.decodeTaskId(input(params, call));
      return codec.task(filterTask(await runtime.cancel(call.principal, id), resultAccess(call.principal)));
    },
    subscribe: async (params, call) => {
      const codec = codecOf(call);
      const { id } = codec.decodeTaskId(call.transport === "rest" ? { ...input(params, call), ...((params.body as object) ?? {}) } : params);
      return toEventStream(codec, await runtime.subscribe(call.principal, id, call.line), resultAccess(call.principal));
    },
  } satisfies TasksHandlers<Call>;
}
