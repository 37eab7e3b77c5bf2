// The client's side of the protocol codecs, for the tests. The gateway only decodes requests and encodes answers
// (src/protocol/codec); the tests also need a request in a dialect's shape (send params) and the answers decoded
// back into the model (tasks, send results, stream events), to round-trip what the gateway says and check that it
// carries the whole model. Also the generated schema ids of each dialect's answers and requests, and a request as
// a transport hands it to a codec (names folded, validated).
import { catalog } from "../../src/contract/catalog.js";
import { invalidPayload } from "../../src/contract/errors.js";
import { preloadValidators, validate } from "../../src/contract/validate.js";
import { arr, at, compact, has, invalid, obj, oneOf, optBool, optMeta, optObj, optStr, optStrArr, optTimestamp, reqObj, reqStr, root, type Obj } from "../../src/protocol/codec/common.js";
import { DIALECTS } from "../../src/protocol/codec/dialects.js";
import type { Codec, PushConfigInput, WireLine } from "../../src/protocol/codec/index.js";
import { isTerminal, now, type Artifact, type PushConfig, type SendParams, type SendResult, type StreamEvent, type Task, type TaskStatus } from "../../src/protocol/model.js";
import { normalizeProtoJson } from "../../src/protocol/protojson-names.js";

/** Generated schema ids of what each wire dialect answers. */
export const SCHEMAS = {
  "0.3": {
    send: "v0_3/SendMessageResult",
    task: "v0_3/Task",
    event: "v0_3/StreamEvent",
    list: "v0_3/ListTasksResult",
    message: "v0_3/Message",
    pushConfig: "v0_3/TaskPushNotificationConfig",
    /** 0.3 JSON-RPC lists configs as a bare array: the schema of one item. */
    pushConfigList: "v0_3/TaskPushNotificationConfig",
  },
  "0.3-rest": {
    send: "v0_3_rest/SendMessageResponse",
    task: "v0_3_rest/Task",
    event: "v0_3_rest/StreamResponse",
    list: "v0_3_rest/ListTasksResponse",
    message: "v0_3_rest/Message",
    pushConfig: "v0_3_rest/TaskPushNotificationConfig",
    pushConfigList: "v0_3_rest/ListTaskPushNotificationConfigResponse",
  },
  "1.0": {
    send: "v1_0/SendMessageResponse",
    task: "v1_0/Task",
    event: "v1_0/StreamResponse",
    list: "v1_0/ListTasksResponse",
    message: "v1_0/Message",
    pushConfig: "v1_0/TaskPushNotificationConfig",
    pushConfigList: "v1_0/ListTaskPushNotificationConfigsResponse",
  },
} as const satisfies Record<WireLine, Record<string, string>>;

type RequestOperation = "send" | "push.set";

/** The generated schema a transport validates a request with: the catalog's params schema, or 0.3 REST's body schema. */
export function requestSchema(wire: WireLine, operation: RequestOperation): string {
  if (wire === "0.3-rest") return catalog.routes.find((r) => r.line === "0.3" && r.operation === operation && r.body_schema !== null)!.body_schema!;
  return catalog.methods.find((m) => m.line === wire && m.operation === operation)!.params_schema;
}

/** Loads the validators validRequest uses, so that it answers at once. */
export async function preloadRequestSchemas(): Promise<void> {
  const wires = Object.keys(SCHEMAS) as WireLine[];
  await preloadValidators(wires.flatMap((w) => [requestSchema(w, "send"), requestSchema(w, "push.set")]));
}

/** `raw` as a transport hands it to the codec: through JSON, proto field names folded, validated (INVALID_PARAMS). */
export function validRequest(codec: Codec, operation: RequestOperation, raw: unknown): unknown {
  const id = requestSchema(codec.wire, operation);
  const value = normalizeProtoJson(id, JSON.parse(JSON.stringify(raw)));
  const verdict = validate(id, value);
  if (verdict instanceof Promise) throw new Error(`the validator of ${id} is not loaded: call preloadRequestSchemas first`);
  if (!verdict.ok) throw invalidPayload("Invalid params", verdict.violations);
  return value;
}

export interface ClientSide {
  sendParams(params: SendParams): unknown;
  decodeTask(raw: unknown, field?: string): Task;
  decodeSendResult(raw: unknown): SendResult;
  decodeStreamEvent(raw: unknown): StreamEvent;
}

export function clientSide(codec: Codec): ClientSide {
  const d = DIALECTS[codec.wire];
  const schemas = SCHEMAS[codec.wire];
  const sendKey = d.push.fields.send.slice("configuration.".length);
  /** camelCase keys, and on ProtoJSON the proto field names whose json_name differs (0.3 `msg`, `update`). */
  const parse = (schema: string, raw: unknown, field = ""): Obj => root(normalizeProtoJson(schema, raw), field);

  function decodeStatus(o: Obj, path: string): TaskStatus {
    const m = optObj(o, "message", path);
    return compact({
      state: d.states.decode(o.state, at(path, "state"), "task state"),
      message: m && codec.decodeMessage(m, at(path, "message")),
      // The internal model always carries a timestamp; a wire status without one is stamped on arrival.
      timestamp: optTimestamp(o, "timestamp", path) ?? now(),
    });
  }

  function decodeArtifact(raw: unknown, path: string): Artifact {
    const o = obj(raw, path);
    return compact({
      artifactId: reqStr(o, "artifactId", path),
      name: optStr(o, "name", path),
      description: optStr(o, "description", path),
      parts: arr(o, "parts", path, true).map((p, i) => d.parts.decode(p, at(at(path, "parts"), i))),
      metadata: optMeta(o, "metadata", path),
      extensions: optStrArr(o, "extensions", path),
    });
  }

  function decodeTask(o: Obj, path: string): Task {
    if (d.tagged && has(o, "kind") && o.kind !== "task") throw invalid(at(path, "kind"), 'must be "task"');
    const item = (key: string, i: number): string => at(at(path, key), i);
    return compact({
      id: reqStr(o, "id", path),
      // Optional in the 1.0 proto; the internal model always has one.
      contextId: codec.wire === "1.0" ? (optStr(o, "contextId", path) ?? "") : reqStr(o, "contextId", path),
      status: decodeStatus(reqObj(o, "status", path), at(path, "status")),
      history: has(o, "history") ? arr(o, "history", path, false).map((m, i) => codec.decodeMessage(obj(m, item("history", i)), item("history", i))) : undefined,
      artifacts: has(o, "artifacts") ? arr(o, "artifacts", path, false).map((a, i) => decodeArtifact(a, item("artifacts", i))) : undefined,
      metadata: optMeta(o, "metadata", path),
    });
  }

  /**
   * A result or event and its model kind: 0.3 JSON-RPC's names itself with `kind`, ProtoJSON's is the one member
   * of its wrapper (decoded at the member's path).
   */
  function member(schema: string, raw: unknown, keys: readonly string[]): [string, Obj, string] {
    const o = parse(schema, raw);
    if (d.tagged) return [String(o.kind), o, ""];
    const key = oneOf(o, keys, "", "the response");
    return [key.replace(/[A-Z]/, (c) => `-${c.toLowerCase()}`), obj(o[key], key), key];
  }

  function decodeEvent(kind: string, o: Obj, path: string): StreamEvent {
    switch (kind) {
      case "task":
        return { kind: "task", task: decodeTask(o, path) };
      case "message":
        return { kind: "message", message: codec.decodeMessage(o, path) };
      case "status-update": {
        const status = decodeStatus(reqObj(o, "status", path), at(path, "status"));
        // 1.0 has no `final`: the stream closes after a terminal state.
        const final = d.final ? (optBool(o, "final", path) ?? false) : isTerminal(status.state);
        const ids = { taskId: reqStr(o, "taskId", path), contextId: reqStr(o, "contextId", path) };
        return compact({ kind: "status-update" as const, ...ids, status, final, metadata: optMeta(o, "metadata", path) });
      }
      case "artifact-update":
        return compact({
          kind: "artifact-update" as const,
          taskId: reqStr(o, "taskId", path),
          contextId: reqStr(o, "contextId", path),
          artifact: decodeArtifact(reqObj(o, "artifact", path), at(path, "artifact")),
          append: optBool(o, "append", path),
          lastChunk: optBool(o, "lastChunk", path),
          metadata: optMeta(o, "metadata", path),
        });
      default:
        throw invalid("kind", 'must be "task", "message", "status-update" or "artifact-update"');
    }
  }

  return {
    sendParams(p) {
      const c = p.configuration;
      // A send configuration's webhook is a push config's wire shape without the task (0.3: the inner config).
      const webhook = (w: Omit<PushConfigInput, "taskId">): unknown => {
        const wire = codec.pushConfig({ ...w, taskId: undefined } as unknown as PushConfig) as Obj;
        return codec.wire === "1.0" ? wire : wire.pushNotificationConfig;
      };
      const blocking = codec.wire === "1.0" ? { returnImmediately: c?.blocking === undefined ? undefined : !c.blocking } : { blocking: c?.blocking };
      return compact({
        message: codec.message(p.message),
        configuration:
          c &&
          compact({
            acceptedOutputModes: c.acceptedOutputModes,
            historyLength: c.historyLength,
            [sendKey]: c.pushNotificationConfig && webhook(c.pushNotificationConfig),
            ...blocking,
          }),
        metadata: p.metadata,
      });
    },
    decodeTask: (raw, field = "") => decodeTask(parse(schemas.task, raw, field), field),
    decodeSendResult(raw) {
      const [kind, o, path] = member(schemas.send, raw, ["task", "message"]);
      if (kind !== "task" && kind !== "message") throw invalid("kind", 'must be "task" or "message"');
      return kind === "task" ? { kind, task: decodeTask(o, path) } : { kind, message: codec.decodeMessage(o, path) };
    },
    decodeStreamEvent(raw) {
      const [kind, o, path] = member(schemas.event, raw, ["task", "message", "statusUpdate", "artifactUpdate"]);
      return decodeEvent(kind, o, path);
    },
  };
}

/** A codec with its client side, for the round trips. */
export const withClient = (codec: Codec): Codec & ClientSide => ({ ...codec, ...clientSide(codec) });
