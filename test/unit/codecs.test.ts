// The protocol codecs (src/protocol/codec): round trips of every model on every dialect, generated-schema validity
// of everything encoded, snake_case input, historyLength views, per-line wire details and field-naming errors.
import fs from "node:fs";
import path from "node:path";
import { Compile } from "typebox/schema";
import { beforeAll, describe, expect, it } from "vitest";
import { generatedDir } from "../../src/contract/catalog.js";
import { A2AError } from "../../src/contract/errors.js";
import { validate } from "../../src/contract/validate.js";
import { CODECS, codecFor, v0_3, v0_3Rest, v1_0, type Codec } from "../../src/protocol/codec/index.js";
import type { Message, Part, PushConfig, SendParams, StreamEvent, Task } from "../../src/protocol/model.js";
import { clientSide, preloadRequestSchemas, requestSchema, SCHEMAS, validRequest, withClient } from "../support/codec-client.js";

const T0 = "2026-01-02T03:04:05.678Z";
const T1 = "2026-01-02T03:05:00.000Z";

const parts: Part[] = [
  { kind: "text", text: "hello", metadata: { lang: "en", nested: { snake_key: 1 } } },
  { kind: "file", file: { bytes: "aGVsbG8=", mimeType: "text/plain", name: "a.txt" } },
  { kind: "file", file: { uri: "https://example.com/a.pdf", mimeType: "application/pdf", name: "a.pdf" }, metadata: { k: true } },
  { kind: "data", data: { some_key: [1, 2, { deep_key: "v" }] } },
];

const msg = (id: string, role: "user" | "agent", p: Part[] = parts): Message => ({
  messageId: id,
  role,
  parts: p,
  taskId: "t-1",
  contextId: "c-1",
  metadata: { opencode_session: "s-1" },
  extensions: ["urn:x:ext"],
  referenceTaskIds: ["t-0"],
});

const task: Task = {
  id: "t-1",
  contextId: "c-1",
  status: { state: "input-required", message: msg("m-q", "agent", [{ kind: "text", text: "which one?" }]), timestamp: T1 },
  history: [msg("m-1", "user"), msg("m-2", "agent"), msg("m-3", "user", [{ kind: "text", text: "third" }])],
  artifacts: [
    { artifactId: "a-1", name: "out", description: "the output", parts, metadata: { size: 3 }, extensions: ["urn:x:ext"] },
    { artifactId: "a-2", parts: [{ kind: "data", data: { ok: true } }] },
  ],
  metadata: { owner: "me" },
};

const pushConfig: PushConfig = {
  id: "p-1",
  taskId: "t-1",
  url: "https://hooks.example.com/a2a",
  token: "tok",
  authentication: { schemes: ["Bearer"], credentials: "secret" },
};

const sendParams: SendParams = {
  message: msg("m-9", "user"),
  configuration: {
    acceptedOutputModes: ["text/plain"],
    historyLength: 2,
    blocking: false,
    pushNotificationConfig: { url: "https://hooks.example.com/x", token: "t", authentication: { schemes: ["Bearer"] } },
  },
  metadata: { trace_id: "abc" },
};

const events: StreamEvent[] = [
  { kind: "task", task },
  { kind: "message", message: msg("m-5", "agent") },
  { kind: "status-update", taskId: "t-1", contextId: "c-1", status: { state: "working", timestamp: T0 }, final: false, metadata: { n: 1 } },
  { kind: "status-update", taskId: "t-1", contextId: "c-1", status: { state: "canceled", timestamp: T1 }, final: true },
  {
    kind: "artifact-update",
    taskId: "t-1",
    contextId: "c-1",
    artifact: { artifactId: "a-1", parts: [{ kind: "text", text: "chunk" }] },
    append: true,
    lastChunk: false,
    metadata: { n: 2 },
  },
];

/** What survives a dialect: 0.3 REST messages have no `referenceTaskIds`. */
function representable(codec: Codec, value: unknown): unknown {
  if (codec.wire !== "0.3-rest") return value;
  return JSON.parse(JSON.stringify(value), (k, v) => (k === "referenceTaskIds" ? undefined : v));
}

const viaJson = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** snake_case every key except inside metadata / data values (what a ProtoJSON client may send). */
function snake(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snake);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => {
      const key = k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      return [key, k === "metadata" || k === "data" ? v : snake(v)];
    }),
  );
}

/**
 * The same generated JSON Schema compiled at run time. Needed while the ahead-of-time validators of schemas with a
 * `format` (1.0 `timestamp`: date-time) throw "External[0] is not a function": tools/generate/validators.ts keeps
 * the code of typebox `Code()` but drops its `External.variables` (the format checkers) and never calls SetExternal.
 */
function runtimeCheck(id: string, value: unknown): boolean {
  const [group, name] = id.split("/") as [string, string];
  const dir = path.join(generatedDir, "json-schema", group);
  const ctx: Record<string, unknown> = {};
  for (const f of fs.readdirSync(dir)) if (f.endsWith(".json")) ctx[f] = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
  return Compile(ctx as never, ctx[`${name}.json`] as never).Check(value);
}

async function expectSchema(id: string, value: unknown): Promise<void> {
  const json = viaJson(value);
  const label = `${id}: ${JSON.stringify(value).slice(0, 400)}`;
  let verdict: Awaited<ReturnType<typeof validate>>;
  try {
    verdict = await validate(id, json);
  } catch (err) {
    if (!(err instanceof TypeError && /External/.test(err.message))) throw err;
    expect(runtimeCheck(id, json), label).toBe(true);
    return;
  }
  expect(verdict, label).toEqual({ ok: true });
}

function errorOf(fn: () => unknown): A2AError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(A2AError);
    return err as A2AError;
  }
  throw new Error("expected an A2AError");
}

function expectField(fn: () => unknown, field: string): void {
  const err = errorOf(fn);
  expect(err.reason).toBe("INVALID_PARAMS");
  expect(err.data.field).toBe(field);
  expect(err.options.fieldViolations?.[0]?.field).toBe(field);
  expect(err.message).toContain(field);
}

const codecs = Object.values(CODECS).map(withClient);

beforeAll(preloadRequestSchemas);

describe.each(codecs.map((c) => [c.wire, c] as const))("codec %s", (_wire, codec) => {
  it("Task round-trips (history, artifacts, status message) and validates", async () => {
    const wire = codec.task(task);
    await expectSchema(SCHEMAS[codec.wire].task, wire);
    expect(codec.decodeTask(viaJson(wire))).toEqual(representable(codec, task));
  });

  it("Message with every part kind round-trips and validates", async () => {
    for (const p of parts) {
      const m = msg("m-x", "user", [p]);
      const wire = codec.message(m);
      await expectSchema(SCHEMAS[codec.wire].message, wire);
      expect(codec.decodeMessage(viaJson(wire))).toEqual(representable(codec, m));
    }
  });

  it("send results round-trip and validate", async () => {
    for (const r of [{ kind: "task" as const, task }, { kind: "message" as const, message: msg("m-r", "agent") }]) {
      const wire = codec.sendResult(r);
      await expectSchema(SCHEMAS[codec.wire].send, wire);
      expect(codec.decodeSendResult(viaJson(wire))).toEqual(representable(codec, r));
    }
  });

  it("stream events round-trip and validate", async () => {
    for (const e of events) {
      const wire = codec.streamEvent(e);
      await expectSchema(SCHEMAS[codec.wire].event, wire);
      expect(codec.decodeStreamEvent(viaJson(wire))).toEqual(representable(codec, e));
    }
  });

  it("push configs round-trip and validate (single, list, delete)", async () => {
    const wire = codec.pushConfig(pushConfig);
    await expectSchema(SCHEMAS[codec.wire].pushConfig, wire);
    expect(codec.decodePushConfig(viaJson(wire))).toEqual(pushConfig);
    const list = codec.pushConfigList([pushConfig, { ...pushConfig, id: "p-2", authentication: undefined }]);
    if (codec.wire === "0.3") for (const item of list as unknown[]) await expectSchema(SCHEMAS[codec.wire].pushConfigList, item);
    else await expectSchema(SCHEMAS[codec.wire].pushConfigList, list);
    if (codec.wire === "0.3") expect(codec.pushConfigDeleted()).toBeNull();
    else await expectSchema(codec.wire === "1.0" ? "v1_0/Empty" : "v0_3_rest/Empty", codec.pushConfigDeleted());
  });

  it("send params round-trip and validate; snake_case input decodes the same", async () => {
    const wire = codec.sendParams(sendParams);
    await expectSchema(requestSchema(codec.wire, "send"), wire);
    const expected = representable(codec, sendParams);
    expect(codec.decodeSendParams(viaJson(wire))).toEqual(expected);
    const snaked = snake(wire) as Record<string, any>;
    expect(JSON.stringify(snaked)).toContain("message_id");
    expect(snaked.metadata).toEqual({ trace_id: "abc" });
    expect(codec.decodeSendParams(snaked)).toEqual(expected);
  });

  it("snake_case tasks and events decode like camelCase ones, metadata/data untouched", () => {
    expect(codec.decodeTask(snake(codec.task(task)))).toEqual(representable(codec, task));
    for (const e of events) expect(codec.decodeStreamEvent(snake(codec.streamEvent(e)))).toEqual(representable(codec, e));
    const decoded = codec.decodeMessage(snake(codec.message(msg("m", "user"))));
    expect(decoded.metadata).toEqual({ opencode_session: "s-1" });
    expect(decoded.parts[0]!.metadata).toEqual({ lang: "en", nested: { snake_key: 1 } });
    expect(decoded.parts[3]).toEqual({ kind: "data", data: { some_key: [1, 2, { deep_key: "v" }] } });
  });

  it("historyLength: absent = all, 0 = no history member, n = the n most recent; includeArtifacts", () => {
    const enc = (view?: Parameters<Codec["task"]>[1]) => codec.decodeTask(viaJson(codec.task(task, view)));
    expect(enc().history).toHaveLength(3);
    expect(enc({ historyLength: 0 }).history).toBeUndefined();
    expect("history" in (codec.task(task, { historyLength: 0 }) as object)).toBe(false);
    expect(enc({ historyLength: 2 }).history!.map((m) => m.messageId)).toEqual(["m-2", "m-3"]);
    expect(enc({ historyLength: 50 }).history).toHaveLength(3);
    expect(enc({ includeArtifacts: false }).artifacts).toBeUndefined();
    const sent = codec.decodeSendResult(viaJson(codec.sendResult({ kind: "task", task }, { historyLength: 1 })));
    expect(sent.kind === "task" && sent.task.history!.map((m) => m.messageId)).toEqual(["m-3"]);
  });

  it("list results validate; artifacts left out unless asked, history trimmed", async () => {
    const page = { tasks: [task, { ...task, id: "t-2" }], totalSize: 5, pageSize: 2, offset: 0, nextPageToken: "tok-2" };
    const wire = codec.listResult(page, { historyLength: 1 }) as { tasks: Record<string, any>[] };
    await expectSchema(SCHEMAS[codec.wire].list, wire);
    expect(wire.tasks).toHaveLength(2);
    expect(wire.tasks[0]!.artifacts).toBeUndefined();
    expect(wire.tasks[0]!.history).toHaveLength(1);
    const withArtifacts = codec.listResult(page, { includeArtifacts: true }) as { tasks: Record<string, any>[] };
    expect(withArtifacts.tasks[0]!.artifacts).toHaveLength(2);
    expect(withArtifacts.tasks[0]!.history).toHaveLength(3);
  });

  it("task query / task id params", () => {
    expect(codec.decodeTaskQuery({ id: "t-1", history_length: "3" })).toEqual({ id: "t-1", historyLength: 3 });
    expect(codec.decodeTaskQuery({ id: "t-1" })).toEqual({ id: "t-1" });
    expect(codec.decodeTaskId({ id: "t-1", metadata: { a_b: 1 } })).toEqual({ id: "t-1", metadata: { a_b: 1 } });
    expectField(() => codec.decodeTaskQuery({ id: "t-1", historyLength: -1 }), "historyLength");
    expectField(() => codec.decodeTaskQuery({ id: "t-1", historyLength: 1.5 }), "historyLength");
    expectField(() => codec.decodeTaskQuery({}), "id");
    expectField(() => codec.decodeTaskId({ id: 7 }), "id");
  });

  it("decoding errors name the field", () => {
    const good = codec.sendParams(sendParams) as Record<string, any>;
    const partsKey = codec.wire === "0.3-rest" ? "content" : "parts";
    const withMessage = (patch: Record<string, unknown>) => ({ ...good, message: { ...good.message, ...patch } });
    expectField(() => codec.decodeSendParams(withMessage({ role: "robot" })), "message.role");
    expectField(() => codec.decodeSendParams(withMessage({ [partsKey]: [] })), `message.${partsKey}`);
    expectField(() => codec.decodeSendParams(withMessage({ messageId: "" })), "message.messageId");
    expectField(() => codec.decodeSendParams(withMessage({ messageId: undefined })), "message.messageId");
    expectField(() => codec.decodeSendParams({ ...good, message: undefined }), "message");
    // Checked by the generated validator the transport runs first (the codec takes the request's types as given).
    expectField(() => codec.decodeSendParams(validRequest(codec, "send", { ...good, metadata: "x" })), "metadata");
    expectField(() => codec.decodeSendParams(validRequest(codec, "send", { ...good, configuration: { history_length: -2 } })), "configuration.historyLength");
    const badTask = { ...(codec.task(task) as Record<string, any>) };
    badTask.status = { ...badTask.status, state: "paused" };
    expectField(() => codec.decodeTask(badTask), "status.state");
  });
});

describe("0.3 JSON-RPC specifics", () => {
  it("kind discriminators, lowercase enums, bare results, final on status updates", () => {
    const t = v0_3.task(task) as Record<string, any>;
    expect(t.kind).toBe("task");
    expect(t.status.state).toBe("input-required");
    expect(t.history[0].kind).toBe("message");
    expect(t.history[0].role).toBe("user");
    expect(t.history[0].parts.map((p: any) => p.kind)).toEqual(["text", "file", "file", "data"]);
    expect(v0_3.sendResult({ kind: "task", task })).toEqual(t);
    const su = v0_3.streamEvent(events[3]!) as Record<string, any>;
    expect(su).toMatchObject({ kind: "status-update", final: true, status: { state: "canceled" } });
  });

  it("a non-object data value (from a 1.0 client) travels as {value}", async () => {
    const m = msg("m-d", "agent", [{ kind: "data", data: [1, "two"] }]);
    const wire = v0_3.message(m) as Record<string, any>;
    expect(wire.parts[0].data).toEqual({ value: [1, "two"] });
    await expectSchema("v0_3/Message", wire);
  });

  it("file part with both bytes and uri, or neither, is refused naming the file", () => {
    const base = v0_3.message(msg("m", "user")) as Record<string, any>;
    const withPart = (p: unknown) => ({ message: { ...base, parts: [p] } });
    expectField(() => v0_3.decodeSendParams(withPart({ kind: "file", file: { bytes: "aGk=", uri: "https://x/y" } })), "message.parts.0.file");
    expectField(() => v0_3.decodeSendParams(withPart({ kind: "file", file: { name: "x" } })), "message.parts.0.file");
    expectField(() => v0_3.decodeSendParams(withPart({ kind: "file", file: { bytes: "not base64!" } })), "message.parts.0.file.bytes");
    expectField(() => v0_3.decodeSendParams(withPart({ kind: "data", data: [1] })), "message.parts.0.data");
    expectField(() => v0_3.decodeSendParams(withPart({ kind: "image", text: "x" })), "message.parts.0.kind");
    expectField(() => v0_3.decodeSendParams(withPart({ kind: "text" })), "message.parts.0.text");
    expectField(() => v0_3.decodeMessage({ ...base, kind: "task" }), "kind");
  });

  it("tasks/list: limit/offset params (defaults 20/0), {tasks,total,limit,offset,hasMore} result", async () => {
    expect(v0_3.decodeListParams({})).toEqual({ limit: 20, offset: 0 });
    expect(v0_3.decodeListParams({ context_id: "c", status: "input-required", limit: 5, offset: 10, history_length: 0, include_artifacts: true })).toEqual({
      contextId: "c",
      state: "input-required",
      limit: 5,
      offset: 10,
      historyLength: 0,
      includeArtifacts: true,
    });
    expectField(() => v0_3.decodeListParams({ limit: 0 }), "limit");
    expectField(() => v0_3.decodeListParams({ limit: 101 }), "limit");
    expectField(() => v0_3.decodeListParams({ offset: -1 }), "offset");
    expectField(() => v0_3.decodeListParams({ status: "TASK_STATE_WORKING" }), "status");
    const r = v0_3.listResult({ tasks: [task], totalSize: 3, pageSize: 1, offset: 1 }) as Record<string, any>;
    expect(r).toMatchObject({ total: 3, limit: 1, offset: 1, hasMore: true });
    expect((v0_3.listResult({ tasks: [task], totalSize: 3, pageSize: 1, offset: 2 }) as Record<string, any>).hasMore).toBe(false);
    await expectSchema("v0_3/ListTasksResult", r);
  });

  it("push config params: set {taskId, pushNotificationConfig}, get/delete {id, pushNotificationConfigId}", () => {
    expect(v0_3.decodePushConfig({ task_id: "t", push_notification_config: { url: "https://h/x" } })).toEqual({ taskId: "t", url: "https://h/x" });
    expect(v0_3.decodePushConfigRef({ id: "t", push_notification_config_id: "p" })).toEqual({ taskId: "t", id: "p" });
    expect(v0_3.decodePushConfigRef({ id: "t" })).toEqual({ taskId: "t" });
    expectField(() => v0_3.decodePushConfig({ taskId: "t", pushNotificationConfig: { url: "ftp://h/x" } }), "pushNotificationConfig.url");
    expectField(() => v0_3.decodePushConfig(validRequest(v0_3, "push.set", { taskId: "t" })), "pushNotificationConfig");
  });

  it("the reference's wire example decodes", async () => {
    const params = { message: { kind: "message", role: "user", messageId: "m-1", parts: [{ kind: "text", text: "hi" }] } };
    await expectSchema("v0_3/MessageSendParams", params);
    expect(v0_3.decodeSendParams(params)).toEqual({ message: { messageId: "m-1", role: "user", parts: [{ kind: "text", text: "hi" }] } });
  });
});

describe("0.3 REST specifics", () => {
  const rest = clientSide(v0_3Rest);

  it("content instead of parts, ROLE_*, TASK_STATE_CANCELLED, nested data, fileWith*", () => {
    const m = v0_3Rest.message(msg("m", "agent")) as Record<string, any>;
    expect(m.parts).toBeUndefined();
    expect(m.referenceTaskIds).toBeUndefined();
    expect(m.role).toBe("ROLE_AGENT");
    expect(m.content).toEqual([
      { text: "hello", metadata: { lang: "en", nested: { snake_key: 1 } } },
      { file: { fileWithBytes: "aGVsbG8=", mimeType: "text/plain", name: "a.txt" } },
      { file: { fileWithUri: "https://example.com/a.pdf", mimeType: "application/pdf", name: "a.pdf" }, metadata: { k: true } },
      { data: { data: { some_key: [1, 2, { deep_key: "v" }] } } },
    ]);
    const su = v0_3Rest.streamEvent(events[3]!) as Record<string, any>;
    expect(su).toEqual({ statusUpdate: { taskId: "t-1", contextId: "c-1", status: { state: "TASK_STATE_CANCELLED", timestamp: T1 }, final: true } });
    expect(rest.decodeTask({ id: "t", contextId: "c", status: { state: "TASK_STATE_UNSPECIFIED", timestamp: T0 } }).status.state).toBe("unknown");
    expectField(() => rest.decodeTask({ id: "t", contextId: "c", status: { state: "TASK_STATE_CANCELED" } }), "status.state");
  });

  it("proto field names whose json_name differs are accepted (request, msg, update) and enum numbers", () => {
    const m = v0_3Rest.message(msg("m", "user"));
    expect(v0_3Rest.decodeSendParams(validRequest(v0_3Rest, "send", { request: m })).message.messageId).toBe("m");
    const r = rest.decodeSendResult({ msg: m });
    expect(r.kind).toBe("message");
    const t = rest.decodeTask({ id: "t", context_id: "c", status: { state: 5, update: m, timestamp: T0 } });
    expect(t.status.state).toBe("canceled");
    expect(t.status.message?.messageId).toBe("m");
    expect(v0_3Rest.decodeMessage({ message_id: "x", role: 1, content: [{ text: "hi" }] }).role).toBe("user");
    expectField(() => v0_3Rest.decodeMessage({ messageId: "x", role: 0, content: [{ text: "hi" }] }), "role");
  });

  it("a part must carry exactly one of text/file/data; a file exactly one of fileWithUri/fileWithBytes", () => {
    const withPart = (p: unknown) => ({ messageId: "x", role: "ROLE_USER", content: [p] });
    expectField(() => v0_3Rest.decodeMessage(withPart({ text: "a", data: { data: {} } })), "content.0");
    expectField(() => v0_3Rest.decodeMessage(withPart({ metadata: {} })), "content.0");
    expectField(() => v0_3Rest.decodeMessage(withPart({ file: { fileWithUri: "https://x", fileWithBytes: "aGk=" } })), "content.0.file");
    expectField(() => v0_3Rest.decodeMessage(withPart({ data: { notData: 1 } })), "content.0.data.data");
  });

  it("GET /v1/tasks: token paging with query strings, {tasks,nextPageToken,pageSize,totalSize}", () => {
    expect(v0_3Rest.decodeListParams({ page_size: "10", status: "TASK_STATE_CANCELLED", include_artifacts: "true", historyLength: "0", pageToken: "abc" })).toEqual({
      state: "canceled",
      pageSize: 10,
      pageToken: "abc",
      historyLength: 0,
      includeArtifacts: true,
    });
    expect(v0_3Rest.decodeListParams({ status: "TASK_STATE_UNSPECIFIED" })).toEqual({ pageSize: 50 });
    expectField(() => v0_3Rest.decodeListParams({ pageSize: "many" }), "pageSize");
    expectField(() => v0_3Rest.decodeListParams({ includeArtifacts: "yes" }), "includeArtifacts");
    expect(v0_3Rest.listResult({ tasks: [], totalSize: 0, pageSize: 50 })).toEqual({ tasks: [], nextPageToken: "", pageSize: 50, totalSize: 0 });
  });

  it("push configs are resources named tasks/{t}/pushNotificationConfigs/{c}", () => {
    expect(v0_3Rest.pushConfig(pushConfig)).toMatchObject({ name: "tasks/t-1/pushNotificationConfigs/p-1" });
    // Create body: the task comes from the path, the name is optional.
    expect(v0_3Rest.decodePushConfig({ push_notification_config: { url: "https://h/x" } }, "t-9")).toEqual({ taskId: "t-9", url: "https://h/x" });
    expectField(() => v0_3Rest.decodePushConfig({ name: "nope", pushNotificationConfig: { url: "https://h/x" } }), "name");
    expectField(() => v0_3Rest.decodePushConfig({ pushNotificationConfig: { url: "https://h/x" } }), "name");
    expect(v0_3Rest.decodePushConfigRef({ id: "t", configId: "p" })).toEqual({ taskId: "t", id: "p" });
  });

  it("the reference's wire example decodes", async () => {
    const body = { message: { messageId: "m-1", role: "ROLE_USER", content: [{ text: "hi" }] } };
    await expectSchema("v0_3_rest/SendMessageRequest", body);
    expect(v0_3Rest.decodeSendParams(body).message.parts).toEqual([{ kind: "text", text: "hi" }]);
  });
});

describe("1.0 specifics", () => {
  const client = clientSide(v1_0);

  it("oneof parts: text | raw | url | data with mediaType/filename", () => {
    const m = v1_0.message(msg("m", "user")) as Record<string, any>;
    expect(m.role).toBe("ROLE_USER");
    expect(m.parts).toEqual([
      { text: "hello", metadata: { lang: "en", nested: { snake_key: 1 } } },
      { raw: "aGVsbG8=", mediaType: "text/plain", filename: "a.txt" },
      { url: "https://example.com/a.pdf", mediaType: "application/pdf", filename: "a.pdf", metadata: { k: true } },
      { data: { some_key: [1, 2, { deep_key: "v" }] } },
    ]);
    expect(v1_0.decodeMessage({ messageId: "m", role: "ROLE_AGENT", parts: [{ data: [1, 2] }, { data: "s" }] }).parts).toEqual([
      { kind: "data", data: [1, 2] },
      { kind: "data", data: "s" },
    ]);
  });

  it("wrappers, TASK_STATE_CANCELED, no final (derived from the state on decode)", () => {
    expect(Object.keys(v1_0.sendResult({ kind: "task", task }) as object)).toEqual(["task"]);
    expect(Object.keys(v1_0.sendResult({ kind: "message", message: msg("m", "agent") }) as object)).toEqual(["message"]);
    const su = v1_0.streamEvent(events[3]!) as Record<string, any>;
    expect(su).toEqual({ statusUpdate: { taskId: "t-1", contextId: "c-1", status: { state: "TASK_STATE_CANCELED", timestamp: T1 } } });
    const working = client.decodeStreamEvent({ statusUpdate: { taskId: "t", contextId: "c", status: { state: "TASK_STATE_INPUT_REQUIRED" } } });
    expect(working).toMatchObject({ kind: "status-update", final: false, status: { state: "input-required" } });
    expect(v1_0.task({ ...task, status: { state: "unknown", timestamp: T0 } })).toMatchObject({ status: { state: "TASK_STATE_UNSPECIFIED" } });
    expectField(() => client.decodeTask({ id: "t", status: { state: "TASK_STATE_CANCELLED" } }), "status.state");
    expectField(() => client.decodeStreamEvent({ task: v1_0.task(task), message: v1_0.message(msg("m", "agent")) }), "(root)");
  });

  it("returnImmediately is blocking inverted; taskPushNotificationConfig is flat with one scheme", () => {
    expect(v1_0.decodeSendParams({ message: v1_0.message(msg("m", "user")), configuration: { return_immediately: true } }).configuration).toEqual({ blocking: false });
    expect(v1_0.decodeSendParams({ message: v1_0.message(msg("m", "user")), configuration: { returnImmediately: false } }).configuration).toEqual({ blocking: true });
    const wire = client.sendParams(sendParams) as Record<string, any>;
    expect(wire.configuration).toEqual({
      acceptedOutputModes: ["text/plain"],
      taskPushNotificationConfig: { url: "https://hooks.example.com/x", token: "t", authentication: { scheme: "Bearer" } },
      historyLength: 2,
      returnImmediately: true,
    });
    expect(v1_0.pushConfig(pushConfig)).toEqual({
      id: "p-1",
      taskId: "t-1",
      url: "https://hooks.example.com/a2a",
      token: "tok",
      authentication: { scheme: "Bearer", credentials: "secret" },
    });
    expect(v1_0.decodePushConfig({ url: "https://h/x", tenant: "ignored" }, "t-from-path")).toEqual({ taskId: "t-from-path", url: "https://h/x" });
    expectField(() => v1_0.decodePushConfig({ url: "https://h/x" }), "taskId");
    expectField(() => v1_0.decodePushConfig(validRequest(v1_0, "push.set", { taskId: "t", url: "https://h/x", authentication: { credentials: "c" } })), "authentication.scheme");
    expect(v1_0.decodePushConfigRef({ task_id: "t", id: "p" })).toEqual({ taskId: "t", id: "p" });
  });

  it("a part must carry exactly one content member; raw must be base64", () => {
    const withPart = (p: unknown) => ({ message: { messageId: "x", role: "ROLE_USER", parts: [p] } });
    expectField(() => v1_0.decodeSendParams(withPart({ raw: "aGk=", url: "https://x/y" })), "message.parts.0");
    expectField(() => v1_0.decodeSendParams(withPart({ mediaType: "text/plain" })), "message.parts.0");
    expectField(() => v1_0.decodeSendParams(withPart({ raw: "%%%" })), "message.parts.0.raw");
    expectField(() => v1_0.decodeSendParams({ message: { messageId: "x", role: "ROLE_UNSPECIFIED", parts: [{ text: "a" }] } }), "message.role");
  });

  it("ListTasks: token paging, default page size 50, statusTimestampAfter normalized", () => {
    expect(v1_0.decodeListParams({})).toEqual({ pageSize: 50 });
    expect(
      v1_0.decodeListParams({ contextId: "c", status: "TASK_STATE_WORKING", page_size: 100, page_token: "n", status_timestamp_after: "2026-01-01T01:00:00+01:00", includeArtifacts: false }),
    ).toEqual({ contextId: "c", state: "working", pageSize: 100, pageToken: "n", statusTimestampAfter: "2026-01-01T00:00:00.000Z", includeArtifacts: false });
    expectField(() => v1_0.decodeListParams({ pageSize: 0 }), "pageSize");
    expectField(() => v1_0.decodeListParams({ status: "working" }), "status");
    expectField(() => v1_0.decodeListParams({ statusTimestampAfter: "yesterday" }), "statusTimestampAfter");
    const r = v1_0.listResult({ tasks: [task], totalSize: 1, pageSize: 50 });
    expect(r).toMatchObject({ nextPageToken: "", pageSize: 50, totalSize: 1 });
  });

  it("the reference's wire examples decode and encode", async () => {
    const params = { message: { messageId: "m-1", role: "ROLE_USER", parts: [{ text: "hi" }] }, configuration: { returnImmediately: true } };
    await expectSchema("v1_0/SendMessageRequest", params);
    expect(v1_0.decodeSendParams(params)).toEqual({
      message: { messageId: "m-1", role: "user", parts: [{ kind: "text", text: "hi" }] },
      configuration: { blocking: false },
    });
    const result = v1_0.sendResult({ kind: "task", task: { id: "t-1", contextId: "c-1", status: { state: "working", timestamp: T0 } } });
    expect(result).toEqual({ task: { id: "t-1", contextId: "c-1", status: { state: "TASK_STATE_WORKING", timestamp: T0 } } });
  });
});

describe("schema checks discriminate", () => {
  it("a dialect's output does not pass another dialect's schema; bad timestamps fail", async () => {
    expect((await validate("v0_3/Task", viaJson(v0_3Rest.task(task)))).ok).toBe(false);
    expect((await validate("v0_3_rest/Task", viaJson(v0_3.task(task)))).ok).toBe(false);
    expect((await validate("v0_3_rest/StreamResponse", viaJson(v1_0.streamEvent(events[2]!)))).ok).toBe(false); // no `final`
    expect(runtimeCheck("v1_0/Task", viaJson(v0_3Rest.task({ ...task, status: { state: "canceled", timestamp: T0 } })))).toBe(false); // CANCELLED
    expect(runtimeCheck("v1_0/Task", { id: "t", status: { state: "TASK_STATE_WORKING", timestamp: "yesterday" } })).toBe(false);
    expect(runtimeCheck("v1_0/Task", { id: "t", status: { state: "TASK_STATE_WORKING", timestamp: T0 } })).toBe(true);
  });
});

describe("codecFor", () => {
  it("picks the dialect by line and transport; 1.0 shares one codec", () => {
    expect(codecFor("0.3", "jsonrpc")).toBe(v0_3);
    expect(codecFor("0.3", "rest")).toBe(v0_3Rest);
    expect(codecFor("1.0", "jsonrpc")).toBe(v1_0);
    expect(codecFor("1.0", "rest")).toBe(v1_0);
  });

  it("timestamps go out as ISO 8601 UTC", () => {
    for (const codec of codecs) {
      const t = codec.task({ ...task, status: { state: "working", timestamp: "2026-01-02T04:04:05+01:00" } }) as Record<string, any>;
      expect(t.status.timestamp).toBe("2026-01-02T03:04:05.000Z");
    }
  });
});
