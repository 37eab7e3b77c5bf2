// A2A 0.3 JSON-RPC codec: the plain TS-type JSON of spec v0.3.0 (spec/a2a/v0_3). Every polymorphic object names
// itself with `kind`; states and roles are lowercase strings; results are bare (a Task or a Message, not wrapped);
// stream events are bare objects and status updates carry `final`; push configs nest as
// `{taskId, pushNotificationConfig}`; `tasks/list` (gateway addition, seed 004 + spec) pages by limit / offset.
import { now, type Artifact, type Message, type Part, type PushConfig, type SendParams, type Task, type TaskState, type TaskStatus } from "../model.js";
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
  reqObj,
  reqStr,
  reqText,
  root,
  STATES,
  viewArtifacts,
  viewHistory,
  type Codec,
  type Obj,
  PUSH_FIELDS,
  type PushConfigInput,
  type TaskView,
} from "./common.js";

const STATE_TABLE = STATES.map((s) => [s, s] as const);
const ROLE_TABLE = [
  ["user", "user"],
  ["agent", "agent"],
] as const;

/** A `kind`, when present, must be the expected one. */
function expectKind(o: Obj, kind: string, path: string): void {
  if (has(o, "kind") && o.kind !== kind) throw invalid(at(path, "kind"), `must be "${kind}"`);
}

// ---- decode

function decodePart(raw: unknown, path: string): Part {
  const o = obj(raw, path);
  // `kind` is the discriminator; without it the single content member decides.
  const kind = has(o, "kind") ? o.kind : oneOf(o, ["text", "file", "data"], path, "a part");
  const metadata = optMeta(o, "metadata", path);
  switch (kind) {
    case "text":
      return compact({ kind: "text", text: reqText(o, "text", path), metadata });
    case "file": {
      const fp = at(path, "file");
      const f = reqObj(o, "file", path);
      const which = oneOf(f, ["bytes", "uri"], fp, "a file");
      return compact({
        kind: "file",
        file: compact({
          bytes: which === "bytes" ? base64(f, "bytes", fp) : undefined,
          uri: which === "uri" ? reqStr(f, "uri", fp) : undefined,
          mimeType: optStr(f, "mimeType", fp),
          name: optStr(f, "name", fp),
        }),
        metadata,
      });
    }
    case "data":
      return compact({ kind: "data", data: reqObj(o, "data", path), metadata });
    default:
      throw invalid(at(path, "kind"), 'must be "text", "file" or "data"');
  }
}

function decodeMsg(o: Obj, path: string): Message {
  expectKind(o, "message", path);
  return compact({
    messageId: reqStr(o, "messageId", path),
    role: enumValue(ROLE_TABLE, o.role, at(path, "role"), "role"),
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
  expectKind(o, "task", path);
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

// ---- encode

function encPart(p: Part): Obj {
  switch (p.kind) {
    case "text":
      return compact({ kind: "text", text: p.text, metadata: p.metadata });
    case "file":
      return compact({
        kind: "file",
        file: compact({ bytes: p.file.bytes, uri: p.file.bytes === undefined ? p.file.uri : undefined, name: p.file.name, mimeType: p.file.mimeType }),
        metadata: p.metadata,
      });
    case "data":
      return compact({ kind: "data", data: asDataObject(p.data), metadata: p.metadata });
  }
}

function encMessage(m: Message): Obj {
  return compact({
    kind: "message",
    role: m.role,
    parts: m.parts.map(encPart),
    messageId: m.messageId,
    taskId: m.taskId,
    contextId: m.contextId,
    referenceTaskIds: m.referenceTaskIds,
    extensions: m.extensions,
    metadata: m.metadata,
  });
}

const encStatus = (s: TaskStatus): Obj =>
  compact({ state: s.state satisfies TaskState, message: s.message && encMessage(s.message), timestamp: iso(s.timestamp) });

const encArtifact = (a: Artifact): Obj =>
  compact({ artifactId: a.artifactId, name: a.name, description: a.description, parts: a.parts.map(encPart), metadata: a.metadata, extensions: a.extensions });

function encTask(t: Task, view?: TaskView): Obj {
  return compact({
    kind: "task",
    id: t.id,
    contextId: t.contextId,
    status: encStatus(t.status),
    history: viewHistory(t, view)?.map(encMessage),
    artifacts: viewArtifacts(t, view)?.map(encArtifact),
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
        historyLength: c.historyLength,
        pushNotificationConfig: c.pushNotificationConfig && encNotificationConfig(c.pushNotificationConfig),
        blocking: c.blocking,
      }),
    metadata: p.metadata,
  });
}

const pushConfig = (c: PushConfig): Obj => ({ taskId: c.taskId, pushNotificationConfig: encNotificationConfig(c) });

export const v0_3: Codec = {
  wire: "0.3",
  pushFields: PUSH_FIELDS["0.3"],
  schemas: {
    task: "v0_3/Task",
    message: "v0_3/Message",
    sendParams: "v0_3/MessageSendParams",
    sendResult: "v0_3/SendMessageResult",
    streamEvent: "v0_3/StreamEvent",
    listResult: "v0_3/ListTasksResult",
    pushConfig: "v0_3/TaskPushNotificationConfig",
    pushConfigList: "v0_3/TaskPushNotificationConfig",
  },

  decodeSendParams(raw) {
    const o = root(raw);
    const c = optObj(o, "configuration", "");
    const push = c && optObj(c, "pushNotificationConfig", "configuration");
    return compact({
      message: decodeMsg(reqObj(o, "message", ""), "message"),
      configuration:
        c &&
        compact({
          acceptedOutputModes: optStrArr(c, "acceptedOutputModes", "configuration"),
          historyLength: optInt(c, "historyLength", "configuration", 0),
          blocking: optBool(c, "blocking", "configuration"),
          pushNotificationConfig: push && decodeNotificationConfig(push, "configuration.pushNotificationConfig"),
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
      state: has(o, "status") ? enumValue(STATE_TABLE, o.status, "status", "task state") : undefined,
      limit: optInt(o, "limit", "", 1, 100) ?? 20,
      offset: optInt(o, "offset", "", 0) ?? 0,
      historyLength: optInt(o, "historyLength", "", 0),
      includeArtifacts: optBool(o, "includeArtifacts", ""),
    });
  },
  decodePushConfig(raw, taskId) {
    const o = root(raw);
    const cfg = decodeNotificationConfig(reqObj(o, "pushNotificationConfig", ""), "pushNotificationConfig");
    return { ...cfg, taskId: taskId ?? reqStr(o, "taskId", "") };
  },
  decodePushConfigRef(raw) {
    const o = root(raw);
    return compact({ taskId: reqStr(o, "id", ""), id: optStr(o, "pushNotificationConfigId", "") });
  },

  task: encTask,
  message: encMessage,
  sendResult: (r, view) => (r.kind === "task" ? encTask(r.task, view) : encMessage(r.message)),
  streamEvent(e) {
    switch (e.kind) {
      case "task":
        return encTask(e.task);
      case "message":
        return encMessage(e.message);
      case "status-update":
        return compact({ kind: e.kind, taskId: e.taskId, contextId: e.contextId, status: encStatus(e.status), final: e.final, metadata: e.metadata });
      case "artifact-update":
        return compact({
          kind: e.kind,
          taskId: e.taskId,
          contextId: e.contextId,
          artifact: encArtifact(e.artifact),
          append: e.append,
          lastChunk: e.lastChunk,
          metadata: e.metadata,
        });
    }
  },
  listResult(page, view = {}) {
    const offset = page.offset ?? 0;
    return {
      tasks: page.tasks.map((t) => encTask(t, { historyLength: view.historyLength, includeArtifacts: view.includeArtifacts ?? false })),
      total: page.totalSize,
      limit: page.pageSize,
      offset,
      hasMore: offset + page.tasks.length < page.totalSize,
    };
  },
  pushConfig,
  pushConfigList: (cs) => cs.map(pushConfig),
  pushConfigDeleted: () => null,

  sendParams: encSendParams,
  decodeTask: (raw, field = "") => decodeTaskObj(root(raw, field), field),
  decodeSendResult(raw) {
    const o = root(raw);
    if (o.kind === "message") return { kind: "message", message: decodeMsg(o, "") };
    if (o.kind === "task") return { kind: "task", task: decodeTaskObj(o, "") };
    throw invalid("kind", 'must be "task" or "message"');
  },
  decodeStreamEvent(raw) {
    const o = root(raw);
    switch (o.kind) {
      case "task":
        return { kind: "task", task: decodeTaskObj(o, "") };
      case "message":
        return { kind: "message", message: decodeMsg(o, "") };
      case "status-update":
        return compact({
          kind: "status-update" as const,
          taskId: reqStr(o, "taskId", ""),
          contextId: reqStr(o, "contextId", ""),
          status: decodeStatus(reqObj(o, "status", ""), "status"),
          final: optBool(o, "final", "") ?? false,
          metadata: optMeta(o, "metadata", ""),
        });
      case "artifact-update":
        return compact({
          kind: "artifact-update" as const,
          taskId: reqStr(o, "taskId", ""),
          contextId: reqStr(o, "contextId", ""),
          artifact: decodeArtifact(reqObj(o, "artifact", ""), "artifact"),
          append: optBool(o, "append", ""),
          lastChunk: optBool(o, "lastChunk", ""),
          metadata: optMeta(o, "metadata", ""),
        });
      default:
        throw invalid("kind", 'must be "task", "message", "status-update" or "artifact-update"');
    }
  },
};
