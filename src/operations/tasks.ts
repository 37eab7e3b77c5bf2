// Handlers of the core task operations, shared by JSON-RPC and REST of both lines: decode with the caller's
// codec, run on the TaskRuntime, encode for the caller's line. REST passes path and query parameters in `params`
// and the request body in `params.body`.
import { codecFor, type Codec } from "../protocol/codec/index.js";
import type { StreamEvent } from "../protocol/model.js";
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

function toEventStream(codec: Codec, handle: { events: AsyncIterator<StreamEvent>; close(): void }): EventStream {
  const events = handle.events;
  return new EventStream(
    {
      async next() {
        const next = await events.next();
        return next.done ? { value: undefined, done: true } : { value: codec.streamEvent(next.value), done: false };
      },
    },
    () => handle.close(),
  );
}

export function taskHandlers(runtime: TaskRuntime): Record<string, MethodHandler> {
  return {
    send: async (params, call) => {
      const codec = codecOf(call);
      const send = codec.decodeSendParams(payload(params, call));
      const task = await runtime.send(call.principal, send);
      const historyLength = send.configuration?.historyLength;
      return codec.sendResult({ kind: "task", task }, historyLength === undefined ? {} : { historyLength });
    },
    stream: async (params, call) => {
      const codec = codecOf(call);
      const handle = await runtime.stream(call.principal, codec.decodeSendParams(payload(params, call)));
      return toEventStream(codec, handle);
    },
    get: async (params, call) => {
      const codec = codecOf(call);
      const query = codec.decodeTaskQuery(call.transport === "rest" ? pathAndQuery(params) : params);
      const task = runtime.get(call.principal, query.id);
      return codec.task(task, query.historyLength === undefined ? {} : { historyLength: query.historyLength });
    },
    list: async (params, call) => {
      const codec = codecOf(call);
      const list = codec.decodeListParams(call.transport === "rest" ? pathAndQuery(params) : params);
      const result = runtime.list(call.principal, list);
      return codec.listResult(
        {
          tasks: result.tasks,
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
      return codec.task(await runtime.cancel(call.principal, id));
    },
    subscribe: async (params, call) => {
      const codec = codecOf(call);
      const { id } = codec.decodeTaskId(call.transport === "rest" ? { ...pathAndQuery(params), ...((params.body as object) ?? {}) } : params);
      return toEventStream(codec, runtime.subscribe(call.principal, id, call.line));
    },
  };
}
