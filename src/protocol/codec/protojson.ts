// The ProtoJSON envelopes the 0.3 HTTP+JSON and the 1.0 codecs share: `{task}` / `{message}` SendMessage results,
// `{task}` / `{message}` / `{statusUpdate}` / `{artifactUpdate}` stream responses, ListTasks pages and push
// config lists. Each codec supplies its own encoders/decoders of the inner objects (parts, states, roles differ).
import { isTerminal, type Artifact, type Message, type PushConfig, type Task, type TaskStatus } from "../model.js";
import { at, compact, optBool, optMeta, reqObj, reqStr, root, type Codec, type Obj, type TaskView } from "./common.js";

export interface ProtoJsonInner {
  encTask(task: Task, view?: TaskView): Obj;
  encMessage(message: Message): Obj;
  encStatus(status: TaskStatus): Obj;
  encArtifact(artifact: Artifact): Obj;
  pushConfig(config: PushConfig): Obj;
  decodeTaskObj(o: Obj, path: string): Task;
  decodeMsg(o: Obj, path: string): Message;
  decodeStatus(o: Obj, path: string): TaskStatus;
  decodeArtifact(raw: unknown, path: string): Artifact;
  /** The one member of a oneof wrapper (`{task}`, `{statusUpdate}`, …), with the line's field aliases. */
  unwrap(raw: unknown, keys: readonly string[]): [string, Obj];
  /** 0.3 HTTP+JSON carries `final` on status updates; 1.0 has none (a terminal state closes the stream). */
  wireFinal: boolean;
}

type Envelopes = Pick<
  Codec,
  "task" | "message" | "sendResult" | "streamEvent" | "listResult" | "pushConfig" | "pushConfigList" | "pushConfigDeleted" | "decodeTask" | "decodeSendResult" | "decodeStreamEvent"
>;

export function protoJsonEnvelopes(p: ProtoJsonInner): Envelopes {
  return {
    task: p.encTask,
    message: p.encMessage,
    sendResult: (r, view) => (r.kind === "task" ? { task: p.encTask(r.task, view) } : { message: p.encMessage(r.message) }),
    streamEvent(e) {
      switch (e.kind) {
        case "task":
          return { task: p.encTask(e.task) };
        case "message":
          return { message: p.encMessage(e.message) };
        case "status-update":
          return {
            statusUpdate: compact({
              taskId: e.taskId,
              contextId: e.contextId,
              status: p.encStatus(e.status),
              final: p.wireFinal ? e.final : undefined,
              metadata: e.metadata,
            }),
          };
        case "artifact-update":
          return {
            artifactUpdate: compact({
              taskId: e.taskId,
              contextId: e.contextId,
              artifact: p.encArtifact(e.artifact),
              append: e.append,
              lastChunk: e.lastChunk,
              metadata: e.metadata,
            }),
          };
      }
    },
    listResult: (page, view = {}) => ({
      tasks: page.tasks.map((t) => p.encTask(t, { historyLength: view.historyLength, includeArtifacts: view.includeArtifacts ?? false })),
      nextPageToken: page.nextPageToken ?? "",
      pageSize: page.pageSize,
      totalSize: page.totalSize,
    }),
    pushConfig: p.pushConfig,
    pushConfigList: (cs) => ({ configs: cs.map(p.pushConfig), nextPageToken: "" }),
    pushConfigDeleted: () => ({}),
    decodeTask: (raw, field = "") => p.decodeTaskObj(root(raw, field), field),
    decodeSendResult(raw) {
      const [key, o] = p.unwrap(raw, ["task", "message"]);
      return key === "task" ? { kind: "task", task: p.decodeTaskObj(o, "task") } : { kind: "message", message: p.decodeMsg(o, "message") };
    },
    decodeStreamEvent(raw) {
      const [key, o] = p.unwrap(raw, ["task", "message", "statusUpdate", "artifactUpdate"]);
      switch (key) {
        case "task":
          return { kind: "task", task: p.decodeTaskObj(o, key) };
        case "message":
          return { kind: "message", message: p.decodeMsg(o, key) };
        case "statusUpdate": {
          const status = p.decodeStatus(reqObj(o, "status", key), at(key, "status"));
          return compact({
            kind: "status-update" as const,
            taskId: reqStr(o, "taskId", key),
            contextId: reqStr(o, "contextId", key),
            status,
            final: p.wireFinal ? (optBool(o, "final", key) ?? false) : isTerminal(status.state),
            metadata: optMeta(o, "metadata", key),
          });
        }
        default:
          return compact({
            kind: "artifact-update" as const,
            taskId: reqStr(o, "taskId", key),
            contextId: reqStr(o, "contextId", key),
            artifact: p.decodeArtifact(reqObj(o, "artifact", key), at(key, "artifact")),
            append: optBool(o, "append", key),
            lastChunk: optBool(o, "lastChunk", key),
            metadata: optMeta(o, "metadata", key),
          });
      }
    },
  };
}
