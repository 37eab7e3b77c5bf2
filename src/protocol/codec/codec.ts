// The one codec: each concept translated once between the internal model and a wire dialect, the dialect's table
// (src/protocol/codec/dialects.ts) filling in what differs. Requests are decoded, answers encoded; the other
// direction (decoding answers) is the tests' (test/support/codec-client.ts).
//
// message/send's params and push config set requests reach the codec validated by the transport against the
// dialect's generated schema (src/transport/*: `validate`): their types, ranges and required members are taken as
// given. Messages are checked in full (tasks/provideInputAndContinue passes its `input` without a line's schema),
// and so are the task and list queries (REST path and query parameters are not validated: strings, coerced here).
import type { Artifact, Message, Metadata, Role, Task, TaskStatus } from "../model.js";
import { LIST_DEFAULT_LIMIT, LIST_DEFAULT_PAGE_SIZE, LIST_MAX_PAGE_SIZE } from "../model.js";
import {
  arr,
  at,
  compact,
  emit,
  has,
  invalid,
  iso,
  obj,
  optBool,
  optInt,
  optMeta,
  optStr,
  optStrArr,
  optTimestamp,
  reqStr,
  root,
  viewArtifacts,
  viewHistory,
  type Codec,
  type Obj,
  type TaskView,
} from "./common.js";
import type { Dialect } from "./dialects.js";

export function codecOf(d: Dialect): Codec {
  const { fields, parts } = d;
  const references = fields.message.includes("referenceTaskIds");
  /** The send configuration's push config member (its error field is `configuration.<member>`). */
  const sendKey = d.push.fields.send.slice("configuration.".length);

  /** A message's author; the proto zero value ROLE_UNSPECIFIED is none. */
  function role(v: unknown, field: string): Role {
    const r = d.roles.decode(v, field, "role");
    if (r === undefined) throw invalid(field, `must be ${d.roles.names.filter((n) => !n.endsWith("_UNSPECIFIED")).join(" or ")}`);
    return r;
  }

  function decodeMessage(o: Obj, path: string): Message {
    if (d.tagged && has(o, "kind") && o.kind !== "message") throw invalid(at(path, "kind"), 'must be "message"');
    return compact({
      messageId: reqStr(o, "messageId", path),
      role: role(o.role, at(path, "role")),
      parts: arr(o, parts.messageKey, path, true).map((p, i) => parts.decode(p, at(at(path, parts.messageKey), i))),
      taskId: optStr(o, "taskId", path),
      contextId: optStr(o, "contextId", path),
      metadata: optMeta(o, "metadata", path),
      extensions: optStrArr(o, "extensions", path),
      referenceTaskIds: references ? optStrArr(o, "referenceTaskIds", path) : undefined,
    });
  }

  const message = (m: Message): Obj =>
    emit(fields.message, {
      kind: "message",
      messageId: m.messageId,
      contextId: m.contextId,
      taskId: m.taskId,
      role: d.roles.wire(m.role),
      [parts.messageKey]: m.parts.map(parts.encode),
      metadata: m.metadata,
      extensions: m.extensions,
      referenceTaskIds: m.referenceTaskIds,
    });

  const status = (s: TaskStatus): Obj => compact({ state: d.states.wire(s.state), message: s.message && message(s.message), timestamp: iso(s.timestamp) });

  const artifact = (a: Artifact): Obj =>
    compact({
      artifactId: a.artifactId,
      name: a.name,
      description: a.description,
      parts: a.parts.map(parts.encode),
      metadata: a.metadata,
      extensions: a.extensions,
    });

  const task = (t: Task, view?: TaskView): Obj =>
    emit(fields.task, {
      kind: "task",
      id: t.id,
      contextId: t.contextId,
      status: status(t.status),
      history: viewHistory(t, view)?.map(message),
      artifacts: viewArtifacts(t, view)?.map(artifact),
      metadata: t.metadata,
    });

  /** A result or stream event: bare and `kind`-tagged on 0.3 JSON-RPC, else the oneof's one-key wrapper. */
  const member = (key: string, value: Obj): Obj => (d.tagged ? value : { [key]: value });
  const tag = (kind: string): string | undefined => (d.tagged ? kind : undefined);

  return {
    wire: d.wire,
    pushFields: d.push.fields,

    decodeSendParams(raw) {
      const o = root(raw);
      const c = o.configuration as Obj | undefined;
      const push = c?.[sendKey] as Obj | undefined;
      return compact({
        message: decodeMessage(obj(o.message, "message"), "message"),
        configuration:
          c &&
          compact({
            acceptedOutputModes: c.acceptedOutputModes as string[] | undefined,
            historyLength: c.historyLength as number | undefined,
            blocking: d.blocking(c),
            pushNotificationConfig: push && d.push.decodeWebhook(push, d.push.fields.send),
          }),
        metadata: o.metadata as Metadata | undefined,
      });
    },
    decodeMessage: (raw, field = "") => decodeMessage(root(raw, field), field),
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
      const contextId = optStr(o, "contextId", "") || undefined;
      const state = has(o, "status") ? d.states.decode(o.status, "status", "task state") : undefined;
      const page =
        d.list.paging === "offset"
          ? { limit: optInt(o, "limit", "", 1, LIST_MAX_PAGE_SIZE) ?? LIST_DEFAULT_LIMIT, offset: optInt(o, "offset", "", 0) ?? 0 }
          : { pageSize: optInt(o, "pageSize", "", 1, LIST_MAX_PAGE_SIZE) ?? LIST_DEFAULT_PAGE_SIZE, pageToken: optStr(o, "pageToken", "") || undefined };
      return compact({
        contextId,
        // The proto zero value means no filter, like absence.
        state: state === d.states.unspecified ? undefined : state,
        ...page,
        historyLength: optInt(o, "historyLength", "", 0),
        statusTimestampAfter: d.list.statusTimestampAfter ? optTimestamp(o, "statusTimestampAfter", "") : undefined,
        includeArtifacts: optBool(o, "includeArtifacts", ""),
      });
    },
    decodePushConfig: (raw, taskId) => d.push.decodeSet(root(raw), taskId),
    decodePushConfigRef: (raw, needsConfig = false) => d.push.decodeRef(root(raw), needsConfig),

    task,
    message,
    sendResult: (r, view) => (r.kind === "task" ? member("task", task(r.task, view)) : member("message", message(r.message))),
    streamEvent(e) {
      switch (e.kind) {
        case "task":
          return member("task", task(e.task));
        case "message":
          return member("message", message(e.message));
        case "status-update": {
          const { taskId, contextId, metadata } = e;
          const final = d.final ? e.final : undefined;
          return member("statusUpdate", compact({ kind: tag(e.kind), taskId, contextId, status: status(e.status), final, metadata }));
        }
        case "artifact-update": {
          const { taskId, contextId, append, lastChunk, metadata } = e;
          return member("artifactUpdate", compact({ kind: tag(e.kind), taskId, contextId, artifact: artifact(e.artifact), append, lastChunk, metadata }));
        }
      }
    },
    listResult(page, view = {}, encodeTask = (t) => task(t, { historyLength: view.historyLength, includeArtifacts: view.includeArtifacts ?? false })) {
      const tasks = page.tasks.map(encodeTask);
      if (d.list.paging === "token") return { tasks, nextPageToken: page.nextPageToken ?? "", pageSize: page.pageSize, totalSize: page.totalSize };
      const offset = page.offset ?? 0;
      return { tasks, total: page.totalSize, limit: page.pageSize, offset, hasMore: offset + page.tasks.length < page.totalSize };
    },
    pushConfig: d.push.encode,
    pushConfigSet: (config, raw) => d.push.encodeSet(config, root(raw)),
    pushSetField: (raw) => d.push.setField(root(raw)),
    pushConfigList: (cs, nextPageToken = "") => (d.tagged ? cs.map(d.push.encode) : { configs: cs.map(d.push.encode), nextPageToken }),
    pushConfigDeleted: () => (d.tagged ? null : {}),
  };
}
