// opencode.subtasks.run / get / cancel against the stub OpenCode (issue 18): how items become tasks, the order of
// groups, the per-caller cap, every error path (per item and whole call), cancel, wait, the rate limit and the
// command form. The real OpenCode runs are in test/e2e/subtasks.test.ts.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { text, tool } from "../../tools/upstream/script.js";
import type { RecordedRequest } from "../../tools/upstream/stub.js";
import { openStorage } from "../../src/storage/index.js";
import { expectRpcError, expectValid } from "../support/contract.js";
import { storeFault } from "../support/faults.js";
import { rpc, TEST_TOKEN, type HttpResult } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

type Obj = Record<string, any>;
const CAP = 2;
const TERMINAL = new Set(["completed", "canceled", "failed", "rejected"]);
let tg: TaskGateway;
let rpcId = 0;

async function call(method: string, params: Obj, url = tg.url, headers: Record<string, string> = {}): Promise<HttpResult> {
  const id = ++rpcId;
  const res = await rpc(url, { jsonrpc: "2.0", id, method, params }, { "A2A-Version": "0.3", ...headers });
  expect(res.status, res.text).toBe(200);
  return res;
}

async function ok(method: string, params: Obj, url?: string, headers?: Record<string, string>): Promise<Obj> {
  const res = await call(method, params, url, headers);
  expect(res.body.error, res.text).toBeUndefined();
  return res.body.result as Obj;
}

async function run(params: Obj, url?: string, headers?: Record<string, string>): Promise<Obj> {
  const result = await ok("opencode.subtasks.run", params, url, headers);
  await expectValid("extensions/SubtasksCallResult", result);
  return result;
}

const item = (over: Obj = {}): Obj => ({ agent: "general", prompt: "look around", description: "a look", ...over });
const task = (id: string, url?: string): Promise<Obj> => ok("tasks/get", { id }, url);
const sessionCreates = (since: number): RecordedRequest[] => tg.stub.requests.slice(since).filter((r) => r.method === "POST" && r.path === "/session");
const prompts = (since: number, sessionId?: string): RecordedRequest[] =>
  tg.stub.requests.slice(since).filter((r) => r.method === "POST" && /^\/session\/[^/]+\/prompt_async$/.test(r.path) && (sessionId === undefined || r.path.includes(sessionId)));

async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 15));
  }
}

/**
 * Polls the tasks until every one is terminal: when each was first seen working and terminal, and the most seen
 * working at once (tasks and the stub's busy sessions).
 */
async function watch(ids: string[], ms = 20_000): Promise<{ started: Map<string, number>; ended: Map<string, number>; most: number; busiest: number }> {
  const started = new Map<string, number>();
  const ended = new Map<string, number>();
  let most = 0;
  let busiest = 0;
  const deadline = Date.now() + ms;
  while (ended.size < ids.length) {
    if (Date.now() > deadline) throw new Error(`tasks did not end: ${ids.filter((id) => !ended.has(id)).join(", ")}`);
    const states = await Promise.all(ids.map(async (id) => [id, (await task(id)).status.state as string] as const));
    busiest = Math.max(busiest, tg.stub.stats().busySessions);
    const now = Date.now();
    let working = 0;
    for (const [id, state] of states) {
      if (state !== "submitted" && !started.has(id)) started.set(id, now);
      if (state === "working") working++;
      if (TERMINAL.has(state) && !ended.has(id)) ended.set(id, now);
    }
    most = Math.max(most, working);
    await new Promise((r) => setTimeout(r, 10));
  }
  return { started, ended, most, busiest };
}

beforeAll(async () => {
  // the tests poll task states; the default request limit (600 a minute) is not what they exercise
  tg = await startTaskGateway({ A2A_MAX_PARALLEL_SUBTASKS: String(CAP), A2A_RATE_LIMIT_MAX_REQUESTS: "0" });
});

afterAll(async () => {
  await tg?.close();
});

describe("opencode.subtasks.run: one subtask", () => {
  it("runs its agent in a child session of the context's session, created as OpenCode's task tool does; the task is listed under the context", async () => {
    const first = await ok("message/send", { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hello" }] } });
    const contextId: string = first.contextId;
    const parentSession: string = first.metadata.shared.session.id;
    const since = tg.stub.requests.length;
    const result = await run({ ...item({ agent: "explore", client_id: "look" }), context_id: contextId });
    expect(result).toMatchObject({ context_id: contextId, parallel: false, items: [{ client_id: "look", status: "accepted" }] });
    const taskId: string = result.items[0].task_id;
    expect(["submitted", "working", "completed"]).toContain(result.items[0].state);

    const [create] = sessionCreates(since);
    expect(create?.body).toEqual({
      title: "a look (@explore subagent)",
      agent: "explore",
      parentID: parentSession,
      permission: [
        { permission: "todowrite", pattern: "*", action: "deny" },
        { permission: "task", pattern: "*", action: "deny" },
      ],
    });
    await until("the subtask to complete", async () => (await task(taskId)).status.state === "completed");
    const done = await task(taskId);
    const child: string = done.metadata.shared.session.id;
    expect(child).not.toBe(parentSession);
    const [prompt] = prompts(since, child);
    expect(prompt?.body).toMatchObject({ agent: "explore", parts: [{ type: "text", text: "look around" }] });
    expect(done.contextId).toBe(contextId);
    expect(done.metadata.opencode.subtask).toEqual({ agent: "explore", description: "a look", client_id: "look", call_id: result.call_id, parent: { session_id: parentSession } });
    // OpenCode's own record: the child session's parent and the agent of its messages
    const session = (await (await fetch(`${tg.stub.url}/session/${child}`)).json()) as Obj;
    expect(session.parentID).toBe(parentSession);
    const messages = (await (await fetch(`${tg.stub.url}/session/${child}/message`)).json()) as Obj[];
    expect(messages.map((m) => m.info.agent)).toEqual(["explore", "explore"]);

    const listed = await ok("tasks/list", { contextId });
    expect(listed.tasks.map((t: Obj) => t.id)).toContain(taskId);
    expect(await ok("opencode.subtasks.get", { call_id: result.call_id })).toMatchObject({ call_id: result.call_id, items: [{ task_id: taskId, state: "completed" }] });
  });

  it("parent_task_id: the parent task's context and session; a context_id of another context is refused", async () => {
    const parent = await ok("message/send", { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "parent" }] } });
    const since = tg.stub.requests.length;
    const result = await run({ ...item(), parent_task_id: parent.id, wait: true });
    expect(result.context_id).toBe(parent.contextId);
    expect(result.items[0].state).toBe("completed");
    expect(sessionCreates(since)[0]?.body).toMatchObject({ parentID: parent.metadata.shared.session.id });
    const child = await task(result.items[0].task_id);
    expect(child.metadata.opencode.subtask.parent).toEqual({ task_id: parent.id, session_id: parent.metadata.shared.session.id });
    const refused = await call("opencode.subtasks.run", { ...item(), parent_task_id: parent.id, context_id: randomUUID() });
    const error = await expectRpcError(refused, "0.3", "INVALID_PARAMS");
    expect(error.data.field).toBe("context_id");
  });

  it("without a context: a new context, a session without parent", async () => {
    const since = tg.stub.requests.length;
    const result = await run(item());
    expect(result.context_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(sessionCreates(since)[0]?.body).not.toHaveProperty("parentID");
  });
});

describe("opencode.subtasks.run: items", () => {
  it(`groups in order, a group's items together, never more than A2A_MAX_PARALLEL_SUBTASKS (${CAP}) of one caller at once`, async () => {
    tg.stub.script(...Array.from({ length: 4 }, () => text(["slow ", "answer"], { delayMs: 150 })));
    const result = await run({
      items: [item({ client_id: "a1", parallel_group: "A" }), item({ client_id: "a2", parallel_group: "A" }), item({ client_id: "a3", parallel_group: "A" }), item({ client_id: "b1", parallel_group: "B" })],
    });
    expect(result.parallel).toBe(true);
    expect(result.items.map((i: Obj) => [i.client_id, i.status, i.parallel_group])).toEqual([
      ["a1", "accepted", "A"],
      ["a2", "accepted", "A"],
      ["a3", "accepted", "A"],
      ["b1", "accepted", "B"],
    ]);
    // the third item of A and the item of B wait: submitted
    expect(result.items.filter((i: Obj) => i.state === "submitted").length).toBeGreaterThanOrEqual(2);
    const ids: string[] = result.items.map((i: Obj) => i.task_id);
    const seen = await watch(ids);
    expect(seen.most, "working at once").toBe(CAP);
    expect(seen.busiest, "OpenCode sessions busy at once").toBeLessThanOrEqual(CAP);
    const [a1, a2, a3, b1] = ids as [string, string, string, string];
    expect(seen.started.get(a3)!).toBeGreaterThanOrEqual(Math.min(seen.ended.get(a1)!, seen.ended.get(a2)!));
    expect(seen.started.get(b1)!).toBeGreaterThanOrEqual(Math.max(seen.ended.get(a1)!, seen.ended.get(a2)!, seen.ended.get(a3)!));
    for (const id of ids) expect((await task(id)).status.state).toBe("completed");
  });

  it("items without a group run one after the other", async () => {
    tg.stub.script(text(["one"], { delayMs: 100 }), text(["two"], { delayMs: 100 }));
    const result = await run({ items: [item({ client_id: "x" }), item({ client_id: "y" })] });
    expect(result.parallel).toBe(false);
    const [x, y] = result.items.map((i: Obj) => i.task_id) as [string, string];
    const seen = await watch([x, y]);
    expect(seen.most).toBe(1);
    expect(seen.started.get(y)!).toBeGreaterThanOrEqual(seen.ended.get(x)!);
  });

  it("a bad item is rejected naming its field (unknown agent, command or model; a directory outside the root); the others run", async () => {
    const result = await run({
      wait: true,
      items: [
        item({ client_id: "good" }),
        item({ client_id: "agent", agent: "nobody" }),
        item({ client_id: "command", command: "nosuch" }),
        item({ client_id: "model", model: { providerID: "fake", modelID: "no-model" } }),
        item({ client_id: "dir", metadata: { opencode: { directory: "/" } } }),
      ],
    });
    const byId = Object.fromEntries(result.items.map((i: Obj) => [i.client_id, i]));
    expect(byId.good).toMatchObject({ status: "accepted", state: "completed" });
    for (const [id, field] of [
      ["agent", "items.1.agent"],
      ["command", "items.2.command"],
      ["model", "items.3.model"],
      ["dir", "items.4.metadata.opencode.directory"],
    ]) {
      expect(byId[id!], id).toMatchObject({ status: "rejected", error: { reason: "INVALID_PARAMS", code: -32602, field } });
      expect(byId[id!].task_id, id).toBeUndefined();
    }
    const metrics = await (await fetch(`${tg.url}/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).text();
    expect(Number(/^a2a_subtask_items_total\{status="rejected"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(4);
  });

  it("OpenCode failing to create an item's session → that item failed with the upstream reason; the others accepted", async () => {
    let failed = false;
    tg.stub.failNext((r) => {
      if (failed || r.method !== "POST" || r.path !== "/session") return false;
      return (failed = true);
    }, { status: 500, body: { name: "UnknownError", data: { message: "boom" } } });
    const result = await run({ items: [item({ client_id: "p", parallel_group: "g" }), item({ client_id: "q", parallel_group: "g" })], wait: true });
    const statuses = result.items.map((i: Obj) => i.status).sort();
    expect(statuses).toEqual(["accepted", "failed"]);
    const bad = result.items.find((i: Obj) => i.status === "failed");
    expect(bad.error).toMatchObject({ reason: "UPSTREAM_HTTP_ERROR", code: -32054 });
    expect(result.items.find((i: Obj) => i.status === "accepted").state).toBe("completed");
  });

  it("a command item runs the command with the prompt as its arguments and the item's agent", async () => {
    const since = tg.stub.requests.length;
    const result = await run({ ...item({ command: "/init", prompt: "focus on tests" }), wait: true });
    expect(result.items[0]).toMatchObject({ status: "accepted", state: "completed" });
    const commands = tg.stub.requests.slice(since).filter((r) => r.method === "POST" && /\/command$/.test(r.path));
    expect(commands.map((r) => r.body)).toEqual([{ command: "init", arguments: "focus on tests", agent: "general" }]);
    expect((await task(result.items[0].task_id)).metadata.opencode.subtask.command).toBe("init");
  });
});

describe("opencode.subtasks.run: whole-call errors", () => {
  it.each([
    ["items and a top-level subtask together", { items: [item()], agent: "general" }, "agent"],
    ["neither items nor a subtask", { context_id: "c" }, "agent"],
    ["a subtask without its description", { agent: "general", prompt: "p" }, "description"],
    ["a repeated client_id", { items: [item({ client_id: "same" }), item({ client_id: "same" })] }, "items.1.client_id"],
    ["more items than a call may carry", { items: Array.from({ length: 33 }, () => item()) }, "items"],
    ["an empty item list", { items: [] }, "items"],
  ])("%s → INVALID_PARAMS naming %s, nothing created", async (_what, params, field) => {
    const since = tg.stub.requests.length;
    const body = await call("opencode.subtasks.run", params);
    const error = await expectRpcError(body, "0.3", "INVALID_PARAMS");
    expect(error.data.field, JSON.stringify(error)).toBe(field);
    expect(sessionCreates(since)).toEqual([]);
  });

  it("an unknown parent task → TASK_NOT_FOUND", async () => {
    const body = await call("opencode.subtasks.run", { ...item(), parent_task_id: randomUUID() });
    await expectRpcError(body, "0.3", "TASK_NOT_FOUND");
  });
});

describe("opencode.subtasks.cancel and wait", () => {
  it("cancel of one group: its waiting items never start, its running ones end canceled; the other group still runs", async () => {
    tg.stub.script(...Array.from({ length: 2 }, () => text(["long"], { delayMs: 3_000 })));
    const result = await run({
      items: [item({ client_id: "r1", parallel_group: "run" }), item({ client_id: "r2", parallel_group: "run" }), item({ client_id: "r3", parallel_group: "run" }), item({ client_id: "k", parallel_group: "keep" })],
    });
    const ids: string[] = result.items.map((i: Obj) => i.task_id);
    await until("two items to work", async () => (await Promise.all(ids.slice(0, 3).map((id) => task(id)))).filter((t) => t.status.state === "working").length === CAP);
    expect((await Promise.all(ids.slice(0, 3).map((id) => task(id)))).filter((t) => t.status.state === "submitted")).toHaveLength(1);
    const since = tg.stub.requests.length;
    const canceled = await ok("opencode.subtasks.cancel", { call_id: result.call_id, parallel_group: "run" });
    await expectValid("extensions/SubtasksCallResult", canceled);
    expect(canceled.items.slice(0, 3).map((i: Obj) => i.state)).toEqual(["canceled", "canceled", "canceled"]);
    // the group after still runs; the waiting item never reached OpenCode: the only prompt since is the other group's
    await until("the other group to complete", async () => (await task(ids[3]!)).status.state === "completed");
    const keep: string = (await task(ids[3]!)).metadata.shared.session.id;
    expect(prompts(since).map((r) => r.path)).toEqual([`/session/${keep}/prompt_async`]);
    const got = await ok("opencode.subtasks.get", { call_id: result.call_id });
    expect(got.items.map((i: Obj) => i.state)).toEqual(["canceled", "canceled", "canceled", "completed"]);
  });

  it("wait: a group whose item asks a question ends the wait; that item is input-required, the later group submitted", async () => {
    tg.stub.script(tool("question", { questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }] }] }), text(["done"]));
    const result = await run({ wait: true, items: [item({ client_id: "asks", parallel_group: "first" }), item({ client_id: "later", parallel_group: "second" })] });
    expect(result.items.map((i: Obj) => i.state)).toEqual(["input-required", "submitted"]);
    const asking = await task(result.items[0].task_id);
    const request: string = asking.metadata.shared.interrupt.request_id;
    await ok("a2a.interrupt.question.reply", { request_id: request, answers: [["blue"]] });
    await until("both to complete", async () => (await Promise.all(result.items.map((i: Obj) => task(i.task_id)))).every((t) => t.status.state === "completed"));
  });

  it("another principal's call → SUBTASK_CALL_NOT_FOUND", async () => {
    const body = await call("opencode.subtasks.get", { call_id: randomUUID() });
    await expectRpcError(body, "0.3", "SUBTASK_CALL_NOT_FOUND");
  });
});

describe("a store that refuses writes", () => {
  it("→ TASK_STORE_UNAVAILABLE for the call, nothing reaches OpenCode's sessions; once it takes writes again, calls work and are kept", async () => {
    const fault = storeFault(await openStorage({ backend: "memory" }), "read-only");
    const storage = fault.storage;
    const faulty = await startTaskGateway({}, {}, { storage });
    try {
      fault.fill();
      const since = faulty.stub.requests.length;
      const refused = await call("opencode.subtasks.run", { items: [item(), item()] }, faulty.url);
      await expectRpcError(refused, "0.3", "TASK_STORE_UNAVAILABLE");
      const prompted = faulty.stub.requests.slice(since).filter((r) => /\/(prompt_async|command)$/.test(r.path));
      expect(prompted).toEqual([]);
      fault.free();
      const result = await run({ ...item(), wait: true }, faulty.url);
      expect(result.items[0].state).toBe("completed");
      expect((await storage.subtaskCalls.get(result.call_id))?.items.map((i) => i.task_id)).toEqual([result.items[0].task_id]);
    } finally {
      await faulty.close();
      storage.close();
    }
  });
});

describe("limits", () => {
  let limited: TaskGateway;
  beforeAll(async () => {
    limited = await startTaskGateway({ A2A_RATE_LIMIT_MAX_REQUESTS: "3", A2A_ENABLE_SUBTASKS: "true" });
  });
  afterAll(async () => {
    await limited?.close();
  });

  it("the rate limit counts every item: of five items in one request, the first three fit a limit of 3", async () => {
    const result = await run({ items: Array.from({ length: 5 }, (_, i) => item({ client_id: `i${i}`, parallel_group: "all" })) }, limited.url);
    expect(result.items.map((i: Obj) => i.status)).toEqual(["accepted", "accepted", "accepted", "rejected", "rejected"]);
    expect(result.items[4].error).toMatchObject({ reason: "RATE_LIMITED" });
  });

  it("A2A_ENABLE_SUBTASKS=false → METHOD_NOT_SUPPORTED", async () => {
    const off = await startTaskGateway({ A2A_ENABLE_SUBTASKS: "false" });
    try {
      const body = await call("opencode.subtasks.run", item(), off.url);
      await expectRpcError(body, "0.3", "METHOD_NOT_SUPPORTED");
    } finally {
      await off.close();
    }
  });

  it("the extended card declares the extension with its limits", async () => {
    const res = await fetch(`${tg.url}/agent/authenticatedExtendedCard`, { headers: { authorization: `Bearer ${TEST_TOKEN}`, "A2A-Version": "0.3" } });
    expect(res.status).toBe(200);
    const card = (await res.json()) as Obj;
    const ext = card.capabilities.extensions.find((e: Obj) => e.params?.name === "opencode-subtasks");
    expect(ext.params.limits).toEqual({ max_parallel_subtasks: CAP, max_items_per_call: 32, excess_items: "queue", ungrouped_items: "sequential", group_order: "after_previous_group_ended" });
    expect(ext.params.limits_schema).toBe("/schemas/extensions/SubtaskLimits.json");
    await expectValid("extensions/SubtaskLimits", ext.params.limits);
    expect(Object.keys(ext.params.methods).sort()).toEqual(["opencode.subtasks.cancel", "opencode.subtasks.get", "opencode.subtasks.run"]);
  });
});
