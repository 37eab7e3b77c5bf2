// A2A 0.3 HTTP+JSON codec: ProtoJSON of the 0.3 proto (package `a2a.v1`, spec/a2a/v0_3_rest). No `kind`: a oneof
// is told by its member key. Roles `ROLE_*`, states `TASK_STATE_*` with the 0.3 spelling `TASK_STATE_CANCELLED`
// (internal `unknown` ↔ `TASK_STATE_UNSPECIFIED`); messages carry their parts in `content` and have no
// `referenceTaskIds`; parts are `{text}` | `{file:{fileWithUri|fileWithBytes, mimeType, name}}` | `{data:{data}}`.
// Send results and stream events are wrapped (`{task}` | `{message}` | `{statusUpdate}` | `{artifactUpdate}`;
// status updates keep `final`). Push configs are resources `{name: "tasks/{t}/pushNotificationConfigs/{c}", …}`.
// `GET /v1/tasks` uses the 1.0 token paging that spec/ declares. The proto field names whose json_name differs
// (`request`→`message`, `msg`→`message`, TaskStatus `update`→`message`) are accepted on input.
import { now, type Artifact, type Message, type Part, type PushConfig, type SendParams, type Task, type TaskStatus } from "../model.js";
import {
  arr,
  asDataObject,
  at,
  base64,
  compact,
  enumValue,
  has,
  httpUrl,
  invalid,
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

const STATE_TABLE = protoStates("TASK_STATE_CANCELLED");
const ROLE_NAME = { user: "ROLE_USER", agent: "ROLE_AGENT" } as const;
const RESOURCE = /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]+)$/;

/** The value under `key`, or under the proto field name when its json_name differs (e.g. `msg` for `message`). */
const alias = (o: Obj, key: string, protoName: string): Obj => (has(o, key) || !has(o, protoName) ? o : { ...o, [key]: o[protoName] });

// ---- decode

function decodePart(raw: unknown, path: string): Part {
  const o = obj(raw, path);
  const metadata = optMeta(o, "metadata", path);
  switch (oneOf(o, ["text", "file", "data"], path, "a part")) {
    case "text":
      return compact({ kind: "text", text: reqText(o, "text", path), metadata });
    case "file": {
      const fp = at(path, "file");
      const f = reqObj(o, "file", path);
      const which = oneOf(f, ["fileWithBytes", "fileWithUri"], fp, "a file");
      return compact({
        kind: "file",
        file: compact({
          bytes: which === "fileWithBytes" ? base64(f, "fileWithBytes", fp) : undefined,
          uri: which === "fileWithUri" ? reqStr(f, "fileWithUri", fp) : undefined,
          mimeType: optStr(f, "mimeType", fp),
          name: optStr(f, "name", fp),
        }),
        metadata,
      });
    }
    case "data": {
      const d = reqObj(o, "data", path);
      return compact({ kind: "data", data: reqObj(d, "data", at(path, "data")), metadata });
    }
  }
}

function decodeMsg(o: Obj, path: string): Message {
  return compact({
    messageId: reqStr(o, "messageId", path),
    role: protoRole(o.role, at(path, "role")),
    parts: arr(o, "content", path, true).map((p, i) => decodePart(p, at(at(path, "content"), i))),
    taskId: optStr(o, "taskId", path),
    contextId: optStr(o, "contextId", path),
    metadata: optMeta(o, "metadata", path),
    extensions: optStrArr(o, "extensions", path),
  });
}

function decodeStatus(raw: Obj, path: string): TaskStatus {
  const o = alias(raw, "message", "update");
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
    contextId: reqStr(o, "contextId", path),
    status: decodeStatus(reqObj(o, "status", path), at(path, "status")),
    history: has(o, "history") ? arr(o, "history", path, false).map((m, i) => decodeMsg(obj(m, at(at(path, "history"), i)), at(at(path, "history"), i))) : undefined,
    artifacts: has(o, "artifacts") ? arr(o, "artifacts", path, false).map((a, i) => decodeArtifact(a, at(at(path, "artifacts"), i))) : undefined,
    metadata: optMeta(o, "metadata", path),
  });
}

function decodeNotificationConfig(o: Obj, path: string): Omit<PushConfigInput, "taskId"> {
  const auth = optObj(o, "authentication", path);
  const ap = at(path, "authentication");
  return compact({
    id: optStr(o, "id", path),
    url: httpUrl(o, "url", path),
    token: optStr(o, "token", path),
    authentication: auth && compact({ schemes: optStrArr(auth, "schemes", ap) ?? [], credentials: optStr(auth, "credentials", ap) }),
  });
}

/** `{task}` | `{message}` (| `{statusUpdate}` | `{artifactUpdate}`): exactly one member. */
function unwrap(raw: unknown, keys: readonly string[]): [string, Obj] {
  const o = alias(root(raw), "message", "msg");
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
        file: compact({
          fileWithBytes: p.file.bytes,
          fileWithUri: p.file.bytes === undefined ? p.file.uri : undefined,
          mimeType: p.file.mimeType,
          name: p.file.name,
        }),
        metadata: p.metadata,
      });
    case "data":
      return compact({ data: { data: asDataObject(p.data) }, metadata: p.metadata });
  }
}

function encMessage(m: Message): Obj {
  return compact({
    messageId: m.messageId,
    contextId: m.contextId,
    taskId: m.taskId,
    role: ROLE_NAME[m.role],
    content: m.parts.map(encPart),
    metadata: m.metadata,
    extensions: m.extensions,
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

const encNotificationConfig = (c: Omit<PushConfigInput, "taskId">): Obj =>
  compact({ id: c.id, url: c.url, token: c.token, authentication: c.authentication && compact({ ...c.authentication }) });

function encSendParams(p: SendParams): Obj {
  const c = p.configuration;
  return compact({
    message: encMessage(p.message),
    configuration:
      c &&
      compact({
        acceptedOutputModes: c.acceptedOutputModes,
        pushNotification: c.pushNotificationConfig && encNotificationConfig(c.pushNotificationConfig),
        historyLength: c.historyLength,
        blocking: c.blocking,
      }),
    metadata: p.metadata,
  });
}

const pushConfig = (c: PushConfig): Obj => ({
  name: `tasks/${c.taskId}/pushNotificationConfigs/${c.id}`,
  pushNotificationConfig: encNotificationConfig(c),
});

export const v0_3Rest: Codec = {
  wire: "0.3-rest",
  pushFields: PUSH_FIELDS["0.3-rest"],
  schemas: {
    task: "v0_3_rest/Task",
    message: "v0_3_rest/Message",
    sendParams: "v0_3_rest/SendMessageRequest",
    sendResult: "v0_3_rest/SendMessageResponse",
    streamEvent: "v0_3_rest/StreamResponse",
    listResult: "v0_3_rest/ListTasksResponse",
    pushConfig: "v0_3_rest/TaskPushNotificationConfig",
    pushConfigList: "v0_3_rest/ListTaskPushNotificationConfigResponse",
  },

  decodeSendParams(raw) {
    const o = alias(root(raw), "message", "request");
    const c = optObj(o, "configuration", "");
    const push = c && optObj(c, "pushNotification", "configuration");
    return compact({
      message: decodeMsg(reqObj(o, "message", ""), "message"),
      configuration:
        c &&
        compact({
          acceptedOutputModes: optStrArr(c, "acceptedOutputModes", "configuration"),
          historyLength: optInt(c, "historyLength", "configuration", 0),
          // proto3: an absent bool is false, so a configuration without `blocking` is non-blocking (what
          // @a2a-js/sdk's 0.3 REST client sends for a non-blocking call). No configuration at all: the default.
          blocking: optBool(c, "blocking", "configuration") ?? false,
          pushNotificationConfig: push && decodeNotificationConfig(push, "configuration.pushNotification"),
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
      contextId: optStr(o, "contextId", ""),
      state: stateFilter(STATE_TABLE, o, "status"),
      pageSize: optInt(o, "pageSize", "", 1, 100) ?? 50,
      pageToken: optStr(o, "pageToken", "") || undefined,
      historyLength: optInt(o, "historyLength", "", 0),
      includeArtifacts: optBool(o, "includeArtifacts", ""),
    });
  },
  decodePushConfig(raw, taskId) {
    let o = root(raw);
    let path = "";
    let configId: string | undefined;
    // The whole proto CreateTaskPushNotificationConfigRequest `{parent, configId, config}`, or its `config` alone.
    if (has(o, "config") || has(o, "parent") || has(o, "configId")) {
      if (has(o, "pushNotificationConfig")) throw invalid("pushNotificationConfig", "must be inside config when the request is wrapped ({parent, configId, config})");
      const parent = optStr(o, "parent", "");
      if (parent !== undefined && parent !== "") {
        const task = /^tasks\/([^/]+)$/.exec(parent)?.[1];
        if (task === undefined) throw invalid("parent", "must be tasks/{taskId}");
        if (taskId !== undefined && task !== taskId) throw invalid("parent", `names task ${task}, but the path names task ${taskId}`);
        taskId ??= task;
      }
      configId = optStr(o, "configId", "") || undefined;
      o = reqObj(o, "config", "");
      path = "config";
    }
    const name = optStr(o, "name", path);
    const parsed = name ? RESOURCE.exec(name) : null;
    if (name && !parsed) throw invalid(at(path, "name"), "must be tasks/{taskId}/pushNotificationConfigs/{configId}");
    if (parsed && taskId !== undefined && parsed[1] !== taskId) throw invalid(at(path, "name"), `names task ${parsed[1]}, but the path names task ${taskId}`);
    const cfgPath = at(path, "pushNotificationConfig");
    const cfg = decodeNotificationConfig(reqObj(o, "pushNotificationConfig", path), cfgPath);
    const ids = [
      [at(cfgPath, "id"), cfg.id],
      [at(path, "name"), parsed?.[2]],
      ["configId", configId],
    ].filter((e): e is [string, string] => e[1] !== undefined);
    const clash = ids.find(([, id]) => id !== ids[0]![1]);
    if (clash) throw invalid(clash[0], `names config ${clash[1]}, but ${ids[0]![0]} names config ${ids[0]![1]}`);
    const task = taskId ?? parsed?.[1];
    if (!task) throw invalid(at(path, "name"), "is required (it names the task)");
    return compact({ ...cfg, id: ids[0]?.[1], taskId: task });
  },
  decodePushConfigRef(raw) {
    const o = root(raw);
    return compact({ taskId: reqStr(o, "id", ""), id: optStr(o, "configId", "") });
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
    wireFinal: true,
  }),
};
