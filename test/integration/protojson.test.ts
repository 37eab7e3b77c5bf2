// proto3 JSON rules on the ProtoJSON surfaces (0.3 REST `/v1/*`, 1.0 REST, 1.0 JSON-RPC): snake_case bodies and
// query parameters, both spellings at once, free-form metadata keys, the wrapped push config create request and the
// proto3 default of an absent 0.3 REST `blocking` (DECISIONS 13).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hang, text } from "../../tools/upstream/script.js";
import { call, rpc } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import {
  errorFields,
  expectError,
  expectOk,
  MODES,
  partsOf,
  qs,
  stateOf,
  TERMINAL,
  textOf,
  until,
  type Mode,
  type Reply,
} from "../support/task-wire.js";

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway({ A2A_PUSH_ALLOW_PRIVATE_NETWORKS: "true" });
});
afterAll(async () => {
  await g?.close();
});

/** The ProtoJSON modes: every mode but 0.3 JSON-RPC. */
const PROTOJSON = MODES.filter((m) => !(m.line === "0.3" && m.transport === "jsonrpc"));

let id = 0;
async function send(m: Mode, body: Record<string, unknown>): Promise<Reply> {
  const rpcId = ++id;
  if (m.transport === "jsonrpc") return { ...(await rpc(g.url, { jsonrpc: "2.0", id: rpcId, method: "SendMessage", params: body }, { "A2A-Version": "1.0" })), rpcId };
  return { ...(await call(g.url, `${m.line === "0.3" ? "/v1" : ""}/message:send`, { method: "POST", headers: { "A2A-Version": m.line }, body })), rpcId };
}
async function get(m: Mode, query: Record<string, unknown>, taskId?: string): Promise<Reply> {
  const rpcId = ++id;
  if (m.transport === "jsonrpc") {
    const method = taskId === undefined ? "ListTasks" : "GetTask";
    return { ...(await rpc(g.url, { jsonrpc: "2.0", id: rpcId, method, params: { ...query, ...(taskId === undefined ? {} : { id: taskId }) } }, { "A2A-Version": "1.0" })), rpcId };
  }
  const path = `${m.line === "0.3" ? "/v1" : ""}/tasks${taskId === undefined ? "" : `/${taskId}`}${qs(query)}`;
  return { ...(await call(g.url, path, { headers: { "A2A-Version": m.line } })), rpcId };
}

/** A send body in proto snake_case: message fields, configuration and a metadata map with snake_case user keys. */
function snakeSend(m: Mode, words: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const contentKey = m.line === "0.3" ? "content" : "parts";
  return {
    message: { message_id: randomUUID(), role: "ROLE_USER", [contentKey]: [{ text: words, metadata: { part_key: { inner_key: 1 } } }], metadata: { trace_id: "t-1", nested_map: { user_key: true } } },
    configuration: { accepted_output_modes: ["text/plain"], history_length: 5, ...(m.line === "0.3" ? { blocking: true } : { return_immediately: false }) },
    metadata: { request_key: { deep_key: 2 } },
    ...extra,
  };
}
function camelSend(m: Mode, words: string): Record<string, unknown> {
  const contentKey = m.line === "0.3" ? "content" : "parts";
  return {
    message: { messageId: randomUUID(), role: "ROLE_USER", [contentKey]: [{ text: words, metadata: { part_key: { inner_key: 1 } } }], metadata: { trace_id: "t-1", nested_map: { user_key: true } } },
    configuration: { acceptedOutputModes: ["text/plain"], historyLength: 5, ...(m.line === "0.3" ? { blocking: true } : { returnImmediately: false }) },
    metadata: { request_key: { deep_key: 2 } },
  };
}

const taskOf = (result: any): any => result.task;
const promptTexts = (sessionId: string): string[] =>
  g.stub.requests
    .filter((r) => r.method === "POST" && r.path === `/session/${sessionId}/prompt_async`)
    .map((r) => ((r.body as any).parts as any[]).map((p) => p.text ?? "").join("\n"));

describe.each(PROTOJSON)("proto3 JSON names on $name", (m) => {
  it("a snake_case send gives the same task as the camelCase one; metadata keys are left as sent", async () => {
    g.stub.script(text("same answer"));
    const snake = taskOf(await expectOk(m, await send(m, snakeSend(m, "spell it the proto way")), "send"));
    g.stub.script(text("same answer"));
    const camel = taskOf(await expectOk(m, await send(m, camelSend(m, "spell it the proto way")), "send"));
    for (const task of [snake, camel]) {
      expect(stateOf(task)).toBe("completed");
      expect(task.history).toHaveLength(2);
      expect(textOf(partsOf(task.history[0]))).toBe("spell it the proto way");
      expect(textOf(partsOf(task.history[1]))).toBe("same answer");
      expect(task.history[0].metadata).toEqual({ trace_id: "t-1", nested_map: { user_key: true } });
      expect(partsOf(task.history[0])[0].metadata).toEqual({ part_key: { inner_key: 1 } });
      expect(task.metadata.opencode.output_negotiation.accepted_output_modes).toEqual(["text/plain"]);
    }
    // OpenCode was prompted with the same text both times.
    expect(promptTexts(snake.metadata.shared.session.id)).toEqual(["spell it the proto way"]);
    expect(promptTexts(camel.metadata.shared.session.id)).toEqual(["spell it the proto way"]);
    // GetTask round-trips the user's snake_case metadata keys untouched.
    const again = await expectOk(m, await get(m, { history_length: 2 }, snake.id), "task");
    expect(again.history[0].metadata).toEqual({ trace_id: "t-1", nested_map: { user_key: true } });
  });

  it("snake_case query parameters (params on JSON-RPC) mean what the camelCase ones mean", async () => {
    g.stub.script(text("one"));
    const first = taskOf(await expectOk(m, await send(m, snakeSend(m, "first of the context")), "send"));
    g.stub.script(text("two"));
    const second = taskOf(
      await expectOk(m, await send(m, { ...snakeSend(m, "second of the context"), message: { ...(snakeSend(m, "second of the context").message as object), context_id: first.contextId } }), "send"),
    );
    expect(second.contextId).toBe(first.contextId);

    const bySnake = await expectOk(m, await get(m, { history_length: 1 }, first.id), "task");
    const byCamel = await expectOk(m, await get(m, { historyLength: 1 }, first.id), "task");
    expect(bySnake.history).toHaveLength(1);
    expect(bySnake).toEqual(byCamel);

    const listSnake = await expectOk(m, await get(m, { context_id: first.contextId, page_size: 1, include_artifacts: true, history_length: 0 }), "list");
    const listCamel = await expectOk(m, await get(m, { contextId: first.contextId, pageSize: 1, includeArtifacts: true, historyLength: 0 }), "list");
    expect(listSnake.tasks).toHaveLength(1);
    expect(listSnake.totalSize).toBe(2);
    expect(listSnake.tasks[0].artifacts.length).toBeGreaterThan(0);
    expect(listSnake.tasks[0].history).toBeUndefined();
    expect(listSnake).toEqual(listCamel);
    const nextSnake = await expectOk(m, await get(m, { context_id: first.contextId, page_size: 1, page_token: listSnake.nextPageToken }), "list");
    const nextCamel = await expectOk(m, await get(m, { contextId: first.contextId, pageSize: 1, pageToken: listSnake.nextPageToken }), "list");
    expect(nextSnake.tasks.map((t: any) => t.id)).toEqual(nextCamel.tasks.map((t: any) => t.id));
    expect(new Set([listSnake.tasks[0].id, nextSnake.tasks[0].id])).toEqual(new Set([first.id, second.id]));
    if (m.line === "1.0") {
      const later = await expectOk(m, await get(m, { context_id: first.contextId, status_timestamp_after: "2999-01-01T00:00:00Z" }), "list");
      expect(later.tasks).toEqual([]);
    }
  });

  it("both spellings of one field are INVALID_PARAMS naming the field", async () => {
    const body = snakeSend(m, "twice");
    (body.message as Record<string, unknown>).messageId = "camel-too";
    const err = await expectError(m, await send(m, body), "INVALID_PARAMS");
    const { fields, text: detail } = errorFields(m, err);
    expect(fields, detail).toContain("message.messageId");
    expect(detail).toMatch(/message_id/);

    const query = await get(m, { history_length: 1, historyLength: 2 }, "any-task");
    expect(errorFields(m, await expectError(m, query, "INVALID_PARAMS")).fields).toContain("historyLength");
  });

  it("a field of the other line that would change the meaning is refused by name, not ignored", async () => {
    const config = m.line === "0.3" ? { returnImmediately: true } : { blocking: false };
    const before = g.stub.requests.length;
    const err = await expectError(m, await send(m, { ...camelSend(m, "wrong line"), configuration: config }), "INVALID_PARAMS");
    expect(errorFields(m, err).fields).toContain(`configuration.${Object.keys(config)[0]}`);
    expect(g.stub.requests.slice(before).some((r) => r.path.endsWith("/prompt_async"))).toBe(false);
  });
});

describe("0.3 REST: an absent configuration.blocking is false (proto3 default)", () => {
  const m = MODES.find((x) => x.line === "0.3" && x.transport === "rest")!;

  it("a configuration without blocking returns a working task at once; the turn finishes later", async () => {
    g.stub.script(text(["slow ", "turn"], { delayMs: 300 }));
    const started = Date.now();
    const res = await send(m, { message: { messageId: randomUUID(), role: "ROLE_USER", content: [{ text: "no blocking field" }] }, configuration: { acceptedOutputModes: [] } });
    const task = taskOf(await expectOk(m, res, "send"));
    expect(Date.now() - started).toBeLessThan(500);
    expect(stateOf(task)).toBe("working");
    const done = await until("the task to finish", async () => {
      const t = await expectOk(m, await get(m, {}, task.id), "task");
      return TERMINAL.has(stateOf(t)) ? t : undefined;
    });
    expect(stateOf(done)).toBe("completed");
  });

  it("no configuration at all is blocking (the server default); blocking: true is blocking", async () => {
    for (const configuration of [undefined, { blocking: true }]) {
      g.stub.script(text(["slow ", "turn"], { delayMs: 100 }));
      const body = { message: { messageId: randomUUID(), role: "ROLE_USER", content: [{ text: "wait for me" }] }, ...(configuration ? { configuration } : {}) };
      expect(stateOf(taskOf(await expectOk(m, await send(m, body), "send")))).toBe("completed");
    }
  });

  it("0.3 JSON-RPC takes snake_case names too, and refuses both spellings of one field instead of picking one", async () => {
    g.stub.script(text("snake on 0.3 json-rpc"));
    const ok = await rpc(g.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: { message: { kind: "message", message_id: randomUUID(), role: "user", parts: [{ kind: "text", text: "snake" }] }, configuration: { history_length: 1 } },
    });
    expect(ok.body.result?.status?.state, ok.text).toBe("completed");
    expect(ok.body.result.history).toHaveLength(1);
    const both = await rpc(g.url, {
      jsonrpc: "2.0",
      id: 2,
      method: "message/send",
      params: { message: { kind: "message", message_id: "a", messageId: "b", role: "user", parts: [{ kind: "text", text: "twice" }] } },
    });
    expect(both.body.error?.code, both.text).toBe(-32602);
    expect(JSON.stringify(both.body.error.data)).toMatch(/message\.messageId/);
  });

  it("0.3 JSON-RPC keeps its own default: a configuration without blocking is blocking", async () => {
    g.stub.script(text(["slow ", "turn"], { delayMs: 100 }));
    const res = await rpc(g.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "json-rpc default" }] }, configuration: { acceptedOutputModes: [] } },
    });
    expect(res.body.result?.status?.state, res.text).toBe("completed");
  });

  it("a non-blocking task can be canceled while it runs", async () => {
    g.stub.script(hang({ chunks: ["started"], holdMs: 10_000 }));
    const task = taskOf(await expectOk(m, await send(m, { message: { messageId: randomUUID(), role: "ROLE_USER", content: [{ text: "hang on" }] }, configuration: {} }), "send"));
    expect(stateOf(task)).toBe("working");
    const canceled = await call(g.url, `/v1/tasks/${task.id}:cancel`, { method: "POST" });
    expect(canceled.status, canceled.text).toBe(200);
    expect(stateOf(canceled.body)).toBe("canceled");
  });
});

describe("0.3 REST push config create: the wrapped proto request", () => {
  const m = MODES.find((x) => x.line === "0.3" && x.transport === "rest")!;
  let taskId: string;
  beforeAll(async () => {
    g.stub.script(text("done"));
    taskId = taskOf(await expectOk(m, await send(m, camelSend(m, "a task for webhooks")), "send")).id;
  });
  const create = (body: unknown): Promise<Reply> =>
    call(g.url, `/v1/tasks/${taskId}/pushNotificationConfigs`, { method: "POST", body }).then((r) => ({ ...r, rpcId: 0 }));

  it("{parent, config_id, config: {name, push_notification_config}} registers the config like the bare form", async () => {
    const wrapped = await create({
      parent: `tasks/${taskId}`,
      config_id: "wrapped-1",
      config: { push_notification_config: { url: "https://hooks.example.com/wrapped", token: "tok-w", authentication: { schemes: ["Bearer"], credentials: "c" } } },
    });
    expect(wrapped.status, wrapped.text).toBe(200);
    expect(wrapped.body).toEqual({
      name: `tasks/${taskId}/pushNotificationConfigs/wrapped-1`,
      pushNotificationConfig: { id: "wrapped-1", url: "https://hooks.example.com/wrapped", token: "tok-w", authentication: { schemes: ["Bearer"], credentials: "c" } },
    });
    const bare = await create({ name: `tasks/${taskId}/pushNotificationConfigs/bare-1`, push_notification_config: { url: "https://hooks.example.com/bare" } });
    expect(bare.status, bare.text).toBe(200);
    expect(bare.body.name).toBe(`tasks/${taskId}/pushNotificationConfigs/bare-1`);
    const list = await call(g.url, `/v1/tasks/${taskId}/pushNotificationConfigs`);
    expect(list.body.configs.map((c: any) => c.pushNotificationConfig.id).sort()).toEqual(["bare-1", "wrapped-1"]);
    const one = await call(g.url, `/v1/tasks/${taskId}/pushNotificationConfigs/wrapped-1`);
    expect(one.body.pushNotificationConfig.url).toBe("https://hooks.example.com/wrapped");
  });

  it.each([
    ["a parent naming another task", () => ({ parent: "tasks/someone-else", config: { pushNotificationConfig: { url: "https://h.example.com/x" } } }), "parent"],
    ["a parent that is not a task name", () => ({ parent: "projects/x", config: { pushNotificationConfig: { url: "https://h.example.com/x" } } }), "parent"],
    ["a config name naming another task", () => ({ config: { name: "tasks/other/pushNotificationConfigs/c", pushNotificationConfig: { url: "https://h.example.com/x" } } }), "config.name"],
    ["config_id disagreeing with the config's id", (t: string) => ({ parent: `tasks/${t}`, configId: "a", config: { pushNotificationConfig: { id: "b", url: "https://h.example.com/x" } } }), "configId"],
    ["config and a bare pushNotificationConfig at once", (t: string) => ({ parent: `tasks/${t}`, config: { pushNotificationConfig: { url: "https://h.example.com/x" } }, pushNotificationConfig: { url: "https://h.example.com/y" } }), "config"],
  ])("%s is INVALID_PARAMS", async (_, body, field) => {
    const res = await create(body(taskId));
    const err = await expectError(m, res, "INVALID_PARAMS");
    const { fields, text: detail } = errorFields(m, err);
    expect(fields.some((f) => f === field || f.startsWith(`${field}.`)), detail).toBe(true);
  });
});
