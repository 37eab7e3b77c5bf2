// A2A 1.0 codec: ProtoJSON of proto `lf.a2a.v1` (spec/a2a/v1_0), the same shapes on JSON-RPC and HTTP+JSON.
// Roles `ROLE_*`, states `TASK_STATE_*` with the 1.0 spelling `TASK_STATE_CANCELED` (internal `unknown` ↔
// `TASK_STATE_UNSPECIFIED`, which 1.0 keeps as its zero value). Parts are a oneof `{text}` | `{raw}` (base64, ↔ file
// bytes) | `{url}` (↔ file uri) | `{data}` (any JSON) with `mediaType` / `filename` / `metadata`. SendMessage answers
// `{task}` | `{message}`; streams carry StreamResponse wrappers; status updates have no `final` (the stream closes
// instead; decoding derives `final` = terminal state). Push configs are flat `{id, taskId, url, token,
// authentication{scheme, credentials}}`. ListTasks pages by token: `{tasks, nextPageToken, pageSize, totalSize}`.
import { now, type Artifact, type Message, type Part, type PushConfig, type SendParams, type Task, type TaskStatus } from "../model.js";
import {
  arr,
  at,
  base64,
  compact,
  enumValue,
  has,
  httpUrl,
  iso,
  obj,
  oneOf,
  optBool,
  optInt,
  optMeta,
  optObj,
  optStr,
  optStrArr,
  optTimestamp,
  protoRole,
  protoStateName,
  protoStates,
  reqObj,
  reqStr,
  reqText,
  root,
  stateFilter,
  viewArtifacts,
  viewHistory,
  type Codec,
  type Obj,
  PUSH_FIELDS,
  type PushConfigInput,
  type TaskView,
} from "./common.js";
import { protoJsonEnvelopes } from "./protojson.js";

const STATE_TABLE = protoStates("TASK_STATE_CANCELED");
const ROLE_NAME = { user: "ROLE_USER", agent: "ROLE_AGENT" } as const;

// ---- decode

function decodePart(raw: unknown, path: string): Part {
  const o = obj(raw, path);
  const metadata = optMeta(o, "metadata", path);
  const mimeType = optStr(o, "mediaType", path);
  const name = optStr(o, "filename", path);
  switch (oneOf(o, ["text", "raw", "url", "data"], path, "a part")) {
    case "text":
      return compact({ kind: "text", text: reqText(o, "text", path), metadata });
    case "raw":
      return compact({ kind: "file", file: compact({ bytes: base64(o, "raw", path), mimeType, name }), metadata });
    case "url":
      return compact({ kind: "file", file: compact({ uri: reqStr(o, "url", path), mimeType, name }), metadata });
    case "data":
      return compact({ kind: "data", data: o.data, mimeType, name, metadata });
  }
}

function decodeMsg(o: Obj, path: string): Message {
  return compact({
    messageId: reqStr(o, "messageId", path),
    role: protoRole(o.role, at(path, "role")),
    parts: arr(o, "parts", path, true).map((p, i) => decodePart(p, at(at(path, "parts"), i))),
    taskId: optStr(o, "taskId", path),
    contextId: optStr(o, "contextId", path),
    metadata: optMeta(o, "metadata", path),
    extensions: optStrArr(o, "extensions", path),
    referenceTaskIds: optStrArr(o, "referenceTaskIds", path),
  });
}

function decodeStatus(o: Obj, path: string): TaskStatus {
  const m = optObj(o, "message", path);
  return compact({
    state: enumValue(STATE_TABLE, o.state, at(path, "state"), "task state"),
    message: m && decodeMsg(m, at(path, "message")),
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
    parts: arr(o, "parts", path, true).map((p, i) => decodePart(p, at(at(path, "parts"), i))),
    metadata: optMeta(o, "metadata", path),
    extensions: optStrArr(o, "extensions", path),
  });
}

function decodeTaskObj(o: Obj, path: string): Task {
  return compact({
    id: reqStr(o, "id", path),
    // Optional in the 1.0 proto; the internal model always has one.
    contextId: optStr(o, "contextId", path) ?? "",
    status: decodeStatus(reqObj(o, "status", path), at(path, "status")),
    history: has(o, "history") ? arr(o, "history", path, false).map((m, i) => decodeMsg(obj(m, at(at(path, "history"), i)), at(at(path, "history"), i))) : undefined,
    artifacts: has(o, "artifacts") ? arr(o, "artifacts", path, false).map((a, i) => decodeArtifact(a, at(at(path, "artifacts"), i))) : undefined,
    metadata: optMeta(o, "metadata", path),
  });
}

/** A flat TaskPushNotificationConfig without its task (`tenant` is ignored: single-tenant gateway). */
function decodeFlatConfig(o: Obj, path: string): Omit<PushConfigInput, "taskId"> {
  const auth = optObj(o, "authentication", path);
  const ap = at(path, "authentication");
  return compact({
    id: optStr(o, "id", path),
    url: httpUrl(o, "url", path),
    token: optStr(o, "token", path),
    authentication: auth && compact({ schemes: [reqStr(auth, "scheme", ap)] as string[], credentials: optStr(auth, "credentials", ap) }),
  });
}

function unwrap(raw: unknown, keys: readonly string[]): [string, Obj] {
  const o = root(raw);
  const key = oneOf(o, keys, "", "the response");
  return [key, obj(o[key], key)];
}

// ---- encode

function encPart(p: Part): Obj {
  switch (p.kind) {
    case "text":
      return compact({ text: p.text, metadata: p.metadata });
    case "file":
      return compact({
        raw: p.file.bytes,
        url: p.file.bytes === undefined ? p.file.uri : undefined,
        mediaType: p.file.mimeType,
        filename: p.file.name,
        metadata: p.metadata,
      });
    case "data":
      return compact({ data: p.data, mediaType: p.mimeType, filename: p.name, metadata: p.metadata });
  }
}

function encMessage(m: Message): Obj {
  return compact({
    messageId: m.messageId,
    contextId: m.contextId,
    taskId: m.taskId,
    role: ROLE_NAME[m.role],
    parts: m.parts.map(encPart),
    metadata: m.metadata,
    extensions: m.extensions,
    referenceTaskIds: m.referenceTaskIds,
  });
}

const encStatus = (s: TaskStatus): Obj =>
  compact({ state: protoStateName(STATE_TABLE, s.state), message: s.message && encMessage(s.message), timestamp: iso(s.timestamp) });

const encArtifact = (a: Artifact): Obj =>
  compact({ artifactId: a.artifactId, name: a.name, description: a.description, parts: a.parts.map(encPart), metadata: a.metadata, extensions: a.extensions });

function encTask(t: Task, view?: TaskView): Obj {
  return compact({
    id: t.id,
    contextId: t.contextId,
    status: encStatus(t.status),
    artifacts: viewArtifacts(t, view)?.map(encArtifact),
    history: viewHistory(t, view)?.map(encMessage),
    metadata: t.metadata,
  });
}

/**
 * 1.0 authenticates a webhook with one scheme: the first of the stored `schemes`. With no scheme there is nothing
 * to put in an Authorization header, so `authentication` is left out.
 */
function encFlatConfig(c: Omit<PushConfigInput, "taskId"> & { taskId?: string }): Obj {
  const scheme = c.authentication?.schemes[0];
  return compact({
    id: c.id,
    taskId: c.taskId,
    url: c.url,
    token: c.token,
    authentication: scheme === undefined ? undefined : compact({ scheme, credentials: c.authentication?.credentials }),
  });
}

function encSendParams(p: SendParams): Obj {
  const c = p.configuration;
  return compact({
    message: encMessage(p.message),
    configuration:
      c &&
      compact({
        acceptedOutputModes: c.acceptedOutputModes,
        taskPushNotificationConfig: c.pushNotificationConfig && encFlatConfig(c.pushNotificationConfig),
        historyLength: c.historyLength,
        returnImmediately: c.blocking === undefined ? undefined : !c.blocking,
      }),
    metadata: p.metadata,
  });
}

const pushConfig = (c: PushConfig): Obj => encFlatConfig(c);

export const v1_0: Codec = {
  wire: "1.0",
  pushFields: PUSH_FIELDS["1.0"],
  schemas: {
    task: "v1_0/Task",
    message: "v1_0/Message",
    sendParams: "v1_0/SendMessageRequest",
    sendResult: "v1_0/SendMessageResponse",
    streamEvent: "v1_0/StreamResponse",
    listResult: "v1_0/ListTasksResponse",
    pushConfig: "v1_0/TaskPushNotificationConfig",
    pushConfigList: "v1_0/ListTaskPushNotificationConfigsResponse",
  },

  decodeSendParams(raw) {
    const o = root(raw);
    const c = optObj(o, "configuration", "");
    const push = c && optObj(c, "taskPushNotificationConfig", "configuration");
    const returnImmediately = c && optBool(c, "returnImmediately", "configuration");
    return compact({
      message: decodeMsg(reqObj(o, "message", ""), "message"),
      configuration:
        c &&
        compact({
          acceptedOutputModes: optStrArr(c, "acceptedOutputModes", "configuration"),
          historyLength: optInt(c, "historyLength", "configuration", 0),
          blocking: returnImmediately === undefined ? undefined : !returnImmediately,
          pushNotificationConfig: push && decodeFlatConfig(push, "configuration.taskPushNotificationConfig"),
        }),
      metadata: optMeta(o, "metadata", ""),
    });
  },
  decodeMessage: (raw, field = "") => decodeMsg(root(raw, field), field),
  decodeTaskQuery(raw) {
    const o = root(raw);
    return compact({ id: reqStr(o, "id", ""), historyLength: optInt(o, "historyLength", "", 0) });
  },
  decodeTaskId(raw) {
    const o = root(raw);
    return compact({ id: reqStr(o, "id", ""), metadata: optMeta(o, "metadata", "") });
  },
  decodeListParams(raw) {
    const o = root(raw);
    return compact({
      contextId: optStr(o, "contextId", "") || undefined,
      state: stateFilter(STATE_TABLE, o, "status"),
      pageSize: optInt(o, "pageSize", "", 1, 100) ?? 50,
      pageToken: optStr(o, "pageToken", "") || undefined,
      historyLength: optInt(o, "historyLength", "", 0),
      statusTimestampAfter: optTimestamp(o, "statusTimestampAfter", ""),
      includeArtifacts: optBool(o, "includeArtifacts", ""),
    });
  },
  decodePushConfig(raw, taskId) {
    const o = root(raw);
    return { ...decodeFlatConfig(o, ""), taskId: taskId ?? reqStr(o, "taskId", "") };
  },
  decodePushConfigRef(raw) {
    const o = root(raw);
    return compact({ taskId: reqStr(o, "taskId", ""), id: optStr(o, "id", "") });
  },

  sendParams: encSendParams,
  ...protoJsonEnvelopes({
    encTask,
    encMessage,
    encStatus,
    encArtifact,
    pushConfig,
    decodeTaskObj,
    decodeMsg,
    decodeStatus,
    decodeArtifact,
    unwrap,
    wireFinal: false,
  }),
};
