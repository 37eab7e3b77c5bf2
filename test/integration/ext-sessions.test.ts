// opencode.sessions.* against the stub OpenCode: projections in both protocol lines (sessions → A2A Task, messages →
// A2A Message, provider-private summaries), message paging with opaque cursors, directory routing through the
// workspace boundary, prompt/command/shell pass-through, lifecycle control, the owner guard, typed errors, and
// that no session body reaches the logs.
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProtocolLine } from "../../src/contract/catalog.js";
import { loadConfig } from "../../src/config/index.js";
import { createLogger } from "../../src/logging/index.js";
import { createGateway } from "../../src/server/app.js";
import { openStorage, type Storage } from "../../src/storage/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { hang, text, tool } from "../../tools/upstream/script.js";
import { startStubUpstream, type StubUpstream } from "../../tools/upstream/stub.js";
import { errorInfoOf, expectRpcError, expectValid } from "../support/contract.js";
import { ONE_ADDRESS_ENV, rpc, TEST_TOKEN, type HttpResult } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

const LINES: ProtocolLine[] = ["0.3", "1.0"];
const CONTROL = [
  ["opencode.sessions.prompt_async", { request: { parts: [{ type: "text", text: "x" }] } }],
  ["opencode.sessions.command", { request: { command: "init", arguments: "" } }],
  ["opencode.sessions.shell", { request: { agent: "build", command: "echo x" } }],
  ["opencode.sessions.fork", {}],
  ["opencode.sessions.share", {}],
  ["opencode.sessions.unshare", {}],
  ["opencode.sessions.summarize", { request: { providerID: "fake", modelID: "fake-model" } }],
  ["opencode.sessions.revert", { request: { messageID: "msg_x1" } }],
  ["opencode.sessions.unrevert", {}],
] as const;

let workspace: string;
let outside: string;
let tg: TaskGateway;

beforeAll(async () => {
  workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ext-sessions-")));
  outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ext-sessions-outside-")));
  fs.mkdirSync(path.join(workspace, "sub"));
  fs.symlinkSync(outside, path.join(workspace, "escape"));
  tg = await startTaskGateway({ A2A_ENABLE_SESSION_SHELL: "true", OPENCODE_WORKSPACE_ROOT: workspace }, { directory: workspace });
});

afterAll(async () => {
  await tg?.close();
  for (const dir of [workspace, outside]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// ---- helpers ------------------------------------------------------------------------------------------------------

let counter = 0;
async function call(line: ProtocolLine, method: string, params: Record<string, unknown> = {}, url = tg.url): Promise<HttpResult> {
  return rpc(url, { jsonrpc: "2.0", id: ++counter, method, params }, { "A2A-Version": line });
}

/** The result of a successful call (fails the test with the error otherwise). */
async function ok(line: ProtocolLine, method: string, params: Record<string, unknown> = {}, url = tg.url): Promise<any> {
  const res = await call(line, method, params, url);
  expect(res.status).toBe(200);
  expect(res.body.error, JSON.stringify(res.body.error)).toBeUndefined();
  return res.body.result;
}

/** An error of `reason`, in the line's shape; returns the error's data as a flat object (1.0: ErrorInfo metadata). */
async function fails(line: ProtocolLine, reason: string, method: string, params: Record<string, unknown> = {}, url = tg.url): Promise<Record<string, any>> {
  const error = await expectRpcError(await call(line, method, params, url), line, reason);
  return line === "0.3" ? error.data : ((await errorInfoOf(error.data)).metadata ?? {});
}

/** A session created on the stub directly: the gateway has never seen it. */
async function stubSession(stub: StubUpstream, title = "stub session", directory = workspace): Promise<string> {
  const res = await fetch(`${stub.url}/session?directory=${encodeURIComponent(directory)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ title }),
  });
  return ((await res.json()) as { id: string }).id;
}

/** A turn through the gateway (0.3 message/send): the session it ran in is owned by the test principal. */
async function turn(textIn: string, sessionId?: string, url = tg.url): Promise<string> {
  const metadata = sessionId === undefined ? undefined : { shared: { session: { id: sessionId } } };
  const res = await rpc(
    url,
    {
      jsonrpc: "2.0",
      id: ++counter,
      method: "message/send",
      params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: textIn }], ...(metadata ? { metadata } : {}) } },
    },
    { "A2A-Version": "0.3" },
  );
  expect(res.body.result?.status?.state, JSON.stringify(res.body)).toBe("completed");
  return res.body.result.metadata.shared.session.id;
}

const stateOf = (line: ProtocolLine) => (line === "0.3" ? "completed" : "TASK_STATE_COMPLETED");
const roleOf = (line: ProtocolLine, role: "user" | "agent") => (line === "0.3" ? role : role === "user" ? "ROLE_USER" : "ROLE_AGENT");
const textOf = (_line: ProtocolLine, m: any): string => m.parts[0].text;
/** A member of flat error data: 0.3 keeps snake_case and raw values, 1.0 ErrorInfo metadata camelCases and stringifies. */
const field = (data: Record<string, any>, snake: string): string =>
  String(data[snake] ?? data[snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())]);
const lastRequest = (stub: StubUpstream, method: string, re: RegExp) => [...stub.requests].reverse().find((r) => r.method === method && re.test(r.path));

async function expectTask(line: ProtocolLine, task: any, sessionId: string, title?: string): Promise<void> {
  await expectValid(line === "0.3" ? "v0_3/Task" : "v1_0/Task", task);
  expect(task.id).toBe(sessionId);
  expect(task.contextId).toBe(`ctx:opencode-session:${sessionId}`);
  expect(task.status.state).toBe(stateOf(line));
  expect(task.metadata.shared.session.id).toBe(sessionId);
  if (title !== undefined) expect(task.metadata.shared.session.title).toBe(title);
  if (line === "0.3") expect(task.kind).toBe("task");
  else expect(task.kind).toBeUndefined();
}

async function expectMessage(line: ProtocolLine, m: any, sessionId: string): Promise<void> {
  await expectValid(line === "0.3" ? "v0_3/Message" : "v1_0/Message", m);
  expect(m.contextId).toBe(`ctx:opencode-session:${sessionId}`);
  expect(m.metadata.shared.session.id).toBe(sessionId);
  expect(m.parts).toHaveLength(1);
  if (line === "0.3") {
    expect(m.kind).toBe("message");
    expect(m.parts[0].kind).toBe("text");
  } else expect(m.kind).toBeUndefined();
}

/** No absolute local path of the test's directories anywhere in a result. */
function expectNoPaths(result: unknown): void {
  const json = JSON.stringify(result);
  expect(json).not.toContain(workspace);
  expect(json).not.toContain(outside);
}

// ---- reads --------------------------------------------------------------------------------------------------------

describe("opencode.sessions.list / get / children", () => {
  it.each(LINES)("line %s: sessions project to completed tasks with ctx:opencode-session contexts and no paths", async (line) => {
    const ids = [await stubSession(tg.stub, `alpha ${line}`), await stubSession(tg.stub, `beta ${line}`), await stubSession(tg.stub, `gamma ${line}`)];
    const result = await ok(line, "opencode.sessions.list", { search: ` ${line}`, limit: 2 });
    await expectValid("extensions/SessionTaskListResult", result);
    expect(result.items).toHaveLength(2); // newest first, limited
    expect(result.items.map((t: any) => t.id)).toEqual([ids[2], ids[1]]);
    await expectTask(line, result.items[0], ids[2]!, `gamma ${line}`);
    expect(result.items[0].metadata.opencode.session).toMatchObject({ directory: "." });
    expectNoPaths(result);

    const got = await ok(line, "opencode.sessions.get", { session_id: ids[0] });
    await expectValid("extensions/SessionTaskResult", got);
    await expectTask(line, got.item, ids[0]!, `alpha ${line}`);
    expectNoPaths(got);
  });

  it("forwards the filters and the default limit upstream", async () => {
    await ok("1.0", "opencode.sessions.list", { roots: true, start: 1234, search: "zzz" });
    expect(lastRequest(tg.stub, "GET", /^\/session$/)?.query).toMatchObject({ roots: "true", start: "1234", search: "zzz", limit: "20", directory: workspace });
  });

  it.each(LINES)("line %s: limit above 100, cursor paging and bad filters → -32602 naming the field", async (line) => {
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.list", { limit: 101 })).field).toBe("limit");
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.list", { limit: 0 })).field).toBe("limit");
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.list", { cursor: "abc" })).field).toBe("cursor");
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.list", { page: 2 })).field).toBe("page");
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.list", { roots: "yes" })).field).toBe("roots");
  });

  it("routes `directory` through the workspace boundary; the workspace id wins", async () => {
    const sub = path.join(workspace, "sub");
    const id = await stubSession(tg.stub, "in sub", sub);
    const listed = await ok("0.3", "opencode.sessions.list", { directory: "sub" });
    expect(lastRequest(tg.stub, "GET", /^\/session$/)?.query.directory).toBe(sub);
    expect(listed.items.map((t: any) => t.id)).toEqual([id]);
    expect(listed.items[0].metadata.opencode.session.directory).toBe("sub"); // relative, never absolute
    expectNoPaths(listed);

    for (const directory of ["escape", "../", "/etc", "missing"]) {
      expect((await fails("0.3", "INVALID_PARAMS", "opencode.sessions.list", { directory })).field).toBe("directory");
    }
    expect((await fails("1.0", "INVALID_PARAMS", "opencode.sessions.status", { metadata: { opencode: { directory: "escape" } } })).field).toBe(
      "metadata.opencode.directory",
    );

    await ok("0.3", "opencode.sessions.list", { directory: "escape", metadata: { opencode: { workspace: { id: "wrk_1" } } } });
    const routed = lastRequest(tg.stub, "GET", /^\/session$/)?.query;
    expect(routed?.workspace).toBe("wrk_1");
    expect(routed?.directory).toBeUndefined();
  });

  it.each(LINES)("line %s: unknown session → SESSION_NOT_FOUND; malformed id → -32602 session_id", async (line) => {
    for (const method of ["opencode.sessions.get", "opencode.sessions.children", "opencode.sessions.todo", "opencode.sessions.diff", "opencode.sessions.messages.list"]) {
      expect(field(await fails(line, "SESSION_NOT_FOUND", method, { session_id: "ses_doesnotexist" }), "session_id")).toBe("ses_doesnotexist");
    }
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.get", { session_id: "not-a-session" })).field).toBe("session_id");
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.get", {})).field).toBe("session_id");
  });
});

describe("opencode.sessions.status / todo / diff", () => {
  it.each(LINES)("line %s: status lists busy sessions only", async (line) => {
    const id = await turn("make me busy later");
    tg.stub.script(hang());
    await ok(line, "opencode.sessions.prompt_async", { session_id: id, request: { parts: [{ type: "text", text: "hang" }] } });
    await expect.poll(async () => (await ok(line, "opencode.sessions.status")).items.map((i: any) => i.session_id), { timeout: 5000 }).toContain(id);
    const result = await ok(line, "opencode.sessions.status");
    await expectValid("extensions/SessionStatusResult", result);
    expect(result.items.find((i: any) => i.session_id === id)).toEqual({ session_id: id, type: "busy" });
    await fetch(`${tg.stub.url}/session/${id}/abort`, { method: "POST" });
    await expect.poll(async () => (await ok(line, "opencode.sessions.status")).items.map((i: any) => i.session_id), { timeout: 5000 }).not.toContain(id);
  });

  it.each(LINES)("line %s: todo and diff are provider-private summaries", async (line) => {
    const todos = [
      { content: "first", status: "pending", priority: "high" },
      { content: "second", status: "completed", priority: "low" },
    ];
    tg.stub.script(tool("todowrite", { todos }), text("noted"), tool("write", { filePath: "new.txt", content: "hello\n" }), text("wrote"));
    const id = await turn("plan");
    await turn("write", id);
    const todo = await ok(line, "opencode.sessions.todo", { session_id: id });
    await expectValid("extensions/SessionTodoResult", todo);
    expect(todo.items).toEqual(todos);

    const history = await ok(line, "opencode.sessions.messages.list", { session_id: id });
    const users = history.items.filter((m: any) => m.role === roleOf(line, "user"));
    const writeTurn = users[users.length - 1].messageId;
    const diff = await ok(line, "opencode.sessions.diff", { session_id: id, message_id: writeTurn });
    await expectValid("extensions/SessionDiffResult", diff);
    expect(diff.items).toEqual([expect.objectContaining({ file: "new.txt", status: "added", additions: 1, deletions: 0 })]);
    expect(diff.items[0].patch).toContain("+hello");
    expect(lastRequest(tg.stub, "GET", /\/diff$/)?.query.messageID).toBe(writeTurn);
    expect((await ok(line, "opencode.sessions.diff", { session_id: id })).items).toEqual([]);
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.diff", { session_id: id, message_id: "nope" })).field).toBe("message_id");
  });
});

describe("opencode.sessions.messages.*", () => {
  let sessionId: string;
  beforeAll(async () => {
    tg.stub.script(text("answer one"), text("answer two"), text("answer three"));
    sessionId = await turn("question one");
    await turn("question two", sessionId);
    await turn("question three", sessionId);
  });

  it.each(LINES)("line %s: pages newest first through an opaque cursor, chronological within a page", async (line) => {
    const first = await ok(line, "opencode.sessions.messages.list", { session_id: sessionId, limit: 4 });
    await expectValid("extensions/SessionMessageListResult", first);
    expect(first.items).toHaveLength(4);
    expect(first.items.map((m: any) => textOf(line, m))).toEqual(["question two", "answer two", "question three", "answer three"]);
    expect(first.items.map((m: any) => m.role)).toEqual([roleOf(line, "user"), roleOf(line, "agent"), roleOf(line, "user"), roleOf(line, "agent")]);
    for (const m of first.items) await expectMessage(line, m, sessionId);
    expect(first.items[1].metadata.opencode.message).toMatchObject({ role: "assistant", agent: "build", model: { providerID: "fake", modelID: "fake-model" } });
    expectNoPaths(first);
    expect(typeof first.next_cursor).toBe("string");

    const second = await ok(line, "opencode.sessions.messages.list", { session_id: sessionId, limit: 4, before: first.next_cursor });
    expect(second.items.map((m: any) => textOf(line, m))).toEqual(["question one", "answer one"]);
    expect(second.next_cursor).toBeNull();
    const all = await ok(line, "opencode.sessions.messages.list", { session_id: sessionId });
    expect(all.items.map((m: any) => m.messageId)).toEqual([...second.items, ...first.items].map((m: any) => m.messageId));
    expect(all.next_cursor).toBeNull();
  });

  it.each(LINES)("line %s: a tampered cursor, another session's cursor or cursor paging → -32602", async (line) => {
    const first = await ok(line, "opencode.sessions.messages.list", { session_id: sessionId, limit: 1 });
    const other = await turn("other");
    for (const before of ["garbage!", Buffer.from('{"v":1}').toString("base64url"), first.next_cursor.slice(0, -2)]) {
      expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.messages.list", { session_id: sessionId, before })).field).toBe("before");
    }
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.messages.list", { session_id: other, before: first.next_cursor })).field).toBe("before");
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.messages.list", { session_id: sessionId, limit: 500 })).field).toBe("limit");
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.messages.list", { session_id: sessionId, page: 1 })).field).toBe("page");
  });

  it.each(LINES)("line %s: messages.get projects one message; unknown ids are typed", async (line) => {
    const all = await ok(line, "opencode.sessions.messages.list", { session_id: sessionId });
    const target = all.items[1];
    const got = await ok(line, "opencode.sessions.messages.get", { session_id: sessionId, message_id: target.messageId });
    await expectValid("extensions/SessionMessageResult", got);
    await expectMessage(line, got.item, sessionId);
    expect(got.item).toEqual(target);
    const missing = await fails(line, "UPSTREAM_HTTP_ERROR", "opencode.sessions.messages.get", { session_id: sessionId, message_id: "msg_doesnotexist" });
    expect(field(missing, "upstream_status")).toBe("404");
    await fails(line, "SESSION_NOT_FOUND", "opencode.sessions.messages.get", { session_id: "ses_doesnotexist", message_id: "msg_doesnotexist" });
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.messages.get", { session_id: sessionId })).field).toBe("message_id");
  });
});

// ---- control ------------------------------------------------------------------------------------------------------

describe("opencode.sessions.prompt_async / command / shell", () => {
  it.each(LINES)("line %s: prompt_async passes OpenCode's parts through and acknowledges", async (line) => {
    const id = await turn("hello");
    const request = {
      parts: [
        { type: "text", text: "look" },
        { type: "file", mime: "text/plain", url: "data:text/plain;base64,aGk=", filename: "hi.txt" },
        { type: "agent", name: "explore" },
        { type: "subtask", prompt: "inspect", description: "a pass", agent: "explore", command: "review", model: { providerID: "fake", modelID: "fake-model" } },
      ],
      messageID: `msg_${randomUUID().replace(/-/g, "")}`,
      model: { providerID: "fake", modelID: "fake-model" },
      agent: "build",
      noReply: true,
      tools: { bash: false },
      format: { type: "json_schema", schema: { type: "object" }, retryCount: 1 },
      system: "be brief",
      variant: "high",
    };
    const result = await ok(line, "opencode.sessions.prompt_async", { session_id: id, request });
    await expectValid("extensions/SessionAckResult", result);
    expect(result).toEqual({ ok: true, session_id: id });
    expect(lastRequest(tg.stub, "POST", /\/prompt_async$/)?.body).toEqual(request);
  });

  it("prompt_async as a notification → HTTP 204, the prompt is still queued", async () => {
    const id = await turn("hello");
    const before = tg.stub.requests.length;
    const res = await rpc(tg.url, { jsonrpc: "2.0", method: "opencode.sessions.prompt_async", params: { session_id: id, request: { parts: [{ type: "text", text: "n" }], noReply: true } } });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(tg.stub.requests.slice(before).some((r) => r.path === `/session/${id}/prompt_async`)).toBe(true);
    const read = await rpc(tg.url, { jsonrpc: "2.0", method: "opencode.sessions.list", params: {} });
    expect(read.status).toBe(204);
  });

  it.each(LINES)("line %s: invalid prompt parts → -32602 naming the field", async (line) => {
    const id = await turn("hello");
    const bad = async (request: unknown) => (await fails(line, "INVALID_PARAMS", "opencode.sessions.prompt_async", { session_id: id, request })).field;
    expect(await bad({ parts: [] })).toBe("request.parts");
    expect(await bad({ parts: [{ type: "text", text: "x" }], messageID: "nope" })).toBe("request.messageID");
    expect(await bad({ parts: [{ type: "subtask", prompt: "p", description: "d" }] })).toMatch(/^request\.parts\.0/);
    expect(await bad({ parts: [{ type: "image", url: "x" }] })).toMatch(/^request\.parts\.0/);
    expect(await bad({ parts: [{ type: "text", text: "x" }], model: { providerID: "fake" } })).toMatch(/^request\.model/);
  });

  it.each(LINES)("line %s: command returns the resulting message; the model is sent as provider/model", async (line) => {
    const id = await turn("hello");
    tg.stub.script(text("init done"));
    const result = await ok(line, "opencode.sessions.command", {
      session_id: id,
      request: { command: "/init", arguments: "focus", model: { providerID: "fake", modelID: "fake-model" } },
    });
    await expectValid("extensions/SessionMessageResult", result);
    await expectMessage(line, result.item, id);
    expect(result.item.role).toBe(roleOf(line, "agent"));
    expect(textOf(line, result.item)).toBe("init done");
    expect(lastRequest(tg.stub, "POST", /\/command$/)?.body).toEqual({ command: "init", arguments: "focus", model: "fake/fake-model" });
    expectNoPaths(result);
  });

  it.each(LINES)("line %s: a sub-agent command creates a child session listed by children", async (line) => {
    const id = await turn("hello");
    tg.stub.script(text("sub-agent result"), text("parent final"));
    const result = await ok(line, "opencode.sessions.command", { session_id: id, request: { command: "review", arguments: "" } });
    expect(textOf(line, result.item)).toBe("parent final");
    const children = await ok(line, "opencode.sessions.children", { session_id: id });
    expect(children.items).toHaveLength(1);
    await expectTask(line, children.items[0], children.items[0].id);
    expect(children.items[0].metadata.opencode.session.parent_id).toBe(id);
    expect(children.items[0].metadata.shared.session.title).toMatch(/subagent/);
  });

  it.each(LINES)("line %s: an unknown command → -32602 request.command; a missing one → -32602", async (line) => {
    const id = await turn("hello");
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.command", { session_id: id, request: { command: "nosuch", arguments: "" } })).field).toBe(
      "request.command",
    );
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.command", { session_id: id, request: { arguments: "" } })).field).toBe("request.command");
  });

  it.each(LINES)("line %s: shell (enabled) returns the command output as the message text", async (line) => {
    const id = await turn("hello");
    const result = await ok(line, "opencode.sessions.shell", { session_id: id, request: { agent: "build", command: "echo shell-out" } });
    await expectMessage(line, result.item, id);
    expect(result.item.role).toBe(roleOf(line, "agent"));
    expect(textOf(line, result.item)).toBe("shell-out\n");
    expect(lastRequest(tg.stub, "POST", /\/shell$/)?.body).toEqual({ agent: "build", command: "echo shell-out" });
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.shell", { session_id: id, request: { agent: "nosuch", command: "ls" } })).field).toBe(
      "request.agent",
    );
  });

  it.each(LINES)("line %s: shell on a busy session → UPSTREAM_HTTP_ERROR with upstream_status 409", async (line) => {
    const id = await turn("hello");
    tg.stub.script(hang());
    await ok(line, "opencode.sessions.prompt_async", { session_id: id, request: { parts: [{ type: "text", text: "hang" }] } });
    await expect.poll(async () => (await ok(line, "opencode.sessions.status")).items.map((i: any) => i.session_id)).toContain(id);
    const data = await fails(line, "UPSTREAM_HTTP_ERROR", "opencode.sessions.shell", { session_id: id, request: { agent: "build", command: "ls" } });
    expect(field(data, "upstream_status")).toBe("409");
    await fails(line, "UPSTREAM_HTTP_ERROR", "opencode.sessions.revert", { session_id: id, request: { messageID: "msg_x1" } });
    await fetch(`${tg.stub.url}/session/${id}/abort`, { method: "POST" });
  });
});

describe("opencode.sessions lifecycle", () => {
  it.each(LINES)("line %s: fork, summarize, revert and unrevert return provider-private summaries", async (line) => {
    tg.stub.script(text("first"), tool("write", { filePath: "f.txt", content: "x\n" }), text("second"));
    const id = await turn("one");
    await turn("two", id);
    const history = await ok(line, "opencode.sessions.messages.list", { session_id: id });
    const secondUser = history.items.filter((m: any) => m.role === roleOf(line, "user"))[1].messageId;

    const fork = await ok(line, "opencode.sessions.fork", { session_id: id, request: { messageID: secondUser } });
    await expectValid("extensions/SessionSummaryResult", fork);
    expect(fork.item.id).not.toBe(id);
    expect(fork.item.title).toMatch(/\(fork #1\)$/);
    expectNoPaths(fork);
    expect((await ok(line, "opencode.sessions.messages.list", { session_id: fork.item.id })).items).toHaveLength(2);
    // The fork belongs to the caller: control methods work on it without a claim.
    await ok(line, "opencode.sessions.unshare", { session_id: fork.item.id });

    tg.stub.script(text("the summary"));
    const summarized = await ok(line, "opencode.sessions.summarize", { session_id: id });
    expect(summarized).toEqual({ ok: true, session_id: id });
    expect(lastRequest(tg.stub, "POST", /\/summarize$/)?.body).toEqual({ providerID: "fake", modelID: "fake-model" }); // the session's model
    tg.stub.script(text("another summary"));
    await ok(line, "opencode.sessions.summarize", { session_id: id, request: { providerID: "other", modelID: "m", auto: true } });
    expect(lastRequest(tg.stub, "POST", /\/summarize$/)?.body).toEqual({ providerID: "other", modelID: "m", auto: true });
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.summarize", { session_id: id, request: { providerID: "p" } })).field).toBe("request.modelID");

    const reverted = await ok(line, "opencode.sessions.revert", { session_id: id, request: { messageID: secondUser } });
    await expectValid("extensions/SessionSummaryResult", reverted);
    expect(reverted.item.revert).toMatchObject({ message_id: secondUser });
    expect(reverted.item.revert.diff).toContain("f.txt");
    expectNoPaths(reverted);
    const restored = await ok(line, "opencode.sessions.unrevert", { session_id: id });
    expect(restored.item.id).toBe(id);
    expect(restored.item.revert).toBeUndefined();
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.revert", { session_id: id, request: {} })).field).toBe("request.messageID");
  });

  it.each(LINES)("line %s: share with sharing disabled upstream → UPSTREAM_HTTP_ERROR (500)", async (line) => {
    const id = await turn("hello");
    const data = await fails(line, "UPSTREAM_HTTP_ERROR", "opencode.sessions.share", { session_id: id });
    expect(field(data, "upstream_status")).toBe("500");
  });

  it.each(LINES)("line %s: control methods on an unknown session → SESSION_NOT_FOUND", async (line) => {
    for (const [method, extra] of CONTROL) await fails(line, "SESSION_NOT_FOUND", method, { session_id: "ses_doesnotexist", ...extra });
  });
});

describe("typed upstream failures", () => {
  it.each(LINES)("line %s: unreachable, HTTP errors and bad payloads", async (line) => {
    tg.stub.failNext("GET /session", { destroy: true });
    await fails(line, "UPSTREAM_UNREACHABLE", "opencode.sessions.list");
    tg.stub.failNext("GET /session", { status: 502, body: { name: "UnknownError", data: { message: "boom" } } });
    const data = await fails(line, "UPSTREAM_HTTP_ERROR", "opencode.sessions.list");
    expect(field(data, "upstream_status")).toBe("502");
    tg.stub.failNext("GET /session/status", { status: 200, body: "not json" });
    await fails(line, "UPSTREAM_PAYLOAD_ERROR", "opencode.sessions.status");
    tg.stub.failNext("GET /session/*/message", { status: 200, body: { not: "a list" } });
    const id = await turn("hello");
    await fails(line, "UPSTREAM_PAYLOAD_ERROR", "opencode.sessions.messages.list", { session_id: id });
  });
});

// ---- owner guard, shell toggle, logging: a gateway whose store and log the test can see -----------------------------

class Capture extends Writable {
  lines: string[] = [];
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    done();
  }
}

describe("owner guard, shell toggle and payload privacy", () => {
  let stub: StubUpstream;
  let upstream: Upstream;
  let storage: Storage;
  let server: http.Server;
  let close: () => Promise<void>;
  let url: string;
  const log = new Capture();

  beforeAll(async () => {
    stub = await startStubUpstream({ directory: workspace, sharing: true });
    storage = await openStorage({ backend: "memory" });
    server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const env = {
      A2A_BEARER_TOKEN: TEST_TOKEN,
      A2A_PUBLIC_URL: url,
      OPENCODE_BASE_URL: stub.url,
      OPENCODE_WORKSPACE_ROOT: workspace,
      A2A_LOG_PAYLOADS: "true",
      A2A_LOG_LEVEL: "trace",
      A2A_ENABLE_SESSION_SHELL: "true",
      ...ONE_ADDRESS_ENV,
    };
    const config = loadConfig(env);
    upstream = await startUpstream(config, pino({ level: "silent" }));
    const gateway = await createGateway(config, createLogger("trace", log), { upstream, storage });
    server.on("request", gateway.handler);
    close = () => gateway.close();
  });

  afterAll(async () => {
    await close?.();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await upstream?.stop();
    await stub?.close();
    storage?.close();
  });

  it.each(LINES)("line %s: another principal's session → SESSION_FORBIDDEN on every control method; reads still work", async (line) => {
    const id = await stubSession(stub, "theirs");
    await storage.sessions.setOwner(id, "someone-else");
    for (const [method, extra] of CONTROL) {
      const data = await fails(line, "SESSION_FORBIDDEN", method, { session_id: id, ...extra }, url);
      expect(field(data, "session_id")).toBe(id);
    }
    expect(stub.requests.filter((r) => r.path.startsWith(`/session/${id}/`) && r.method !== "GET")).toEqual([]);
    await ok(line, "opencode.sessions.get", { session_id: id }, url);
    await ok(line, "opencode.sessions.messages.list", { session_id: id }, url);
    expect(await storage.sessions.getOwner(id)).toBe("someone-else");
  });

  it("a session held by another principal's pending claim → SESSION_FORBIDDEN", async () => {
    const id = await stubSession(stub, "claimed");
    await storage.sessions.claim(id, "someone-else", 60);
    await fails("1.0", "SESSION_FORBIDDEN", "opencode.sessions.unshare", { session_id: id }, url);
  });

  it("a session the gateway never saw becomes the caller's after a successful control call, not after a failed one", async () => {
    const id = await stubSession(stub, "fresh");
    expect(await storage.sessions.getOwner(id)).toBeUndefined();
    await fails("0.3", "INVALID_PARAMS", "opencode.sessions.command", { session_id: id, request: { command: "nosuch", arguments: "" } }, url);
    expect(await storage.sessions.getOwner(id)).toBeUndefined();
    expect(await storage.sessions.getClaim(id)).toBeUndefined();
    const shared = await ok("0.3", "opencode.sessions.share", { session_id: id }, url);
    expect(shared.item.share_url).toMatch(/\/share\//);
    expect(await storage.sessions.getOwner(id)).toBe("admin");
    const unshared = await ok("0.3", "opencode.sessions.unshare", { session_id: id }, url);
    expect(unshared.item.share_url).toBeUndefined();

    const fork = await ok("1.0", "opencode.sessions.fork", { session_id: id }, url);
    expect(await storage.sessions.getOwner(fork.item.id)).toBe("admin");
  });

  it("shell is off without A2A_ENABLE_SESSION_SHELL → -32601 on both lines, nothing reaches OpenCode", async () => {
    const off = await startTaskGateway({ OPENCODE_WORKSPACE_ROOT: workspace }, { directory: workspace });
    try {
      const id = await stubSession(off.stub, "no shell");
      for (const line of LINES) {
        const data = await fails(line, "METHOD_NOT_SUPPORTED", "opencode.sessions.shell", { session_id: id, request: { agent: "build", command: "ls" } }, off.url);
        expect(data.toggle).toBe("A2A_ENABLE_SESSION_SHELL");
      }
      expect(off.stub.requests.some((r) => r.path.endsWith("/shell"))).toBe(false);
    } finally {
      await off.close();
    }
  });

  it("never logs request or response bodies of opencode.sessions.*, even with A2A_LOG_PAYLOADS=true", async () => {
    const marker = `secret-marker-${randomUUID()}`;
    const id = await stubSession(stub, `title ${marker}`);
    const before = log.lines.length;
    await ok("0.3", "opencode.sessions.prompt_async", { session_id: id, request: { parts: [{ type: "text", text: marker }], noReply: true } }, url);
    await ok("0.3", "opencode.sessions.list", { search: marker }, url);
    await ok("1.0", "opencode.sessions.messages.list", { session_id: id }, url);
    await ok("1.0", "opencode.sessions.get", { session_id: id }, url);
    await fails("0.3", "INVALID_PARAMS", "opencode.sessions.prompt_async", { session_id: id, request: { parts: [{ type: "bogus", text: marker }] } }, url);
    const logged = log.lines.slice(before);
    expect(logged.filter((l) => JSON.parse(l).msg === "request").length).toBeGreaterThanOrEqual(5); // the capture works
    expect(logged.join("\n")).not.toContain(marker);
  });
});
