// e2e: opencode.sessions.* through the gateway in front of the real `opencode serve` (hermetic, one server for the
// whole file) driven by the scripted model server. Sessions are made by real A2A turns; the extension methods then
// read, page, diff, revert (on disk), fork, summarize and drive commands, shell and async prompts in them.
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProtocolLine } from "../../src/contract/catalog.js";
import type { HermeticOpencode } from "../../tools/upstream/hermetic.js";
import type { ModelServer } from "../../tools/upstream/model-server.js";
import { hang, text, tool } from "../../tools/upstream/script.js";
import { errorInfoOf, expectRpcError, expectValid } from "../support/contract.js";
import { rpc, type HttpResult, type StartedGateway } from "../support/gateway.js";
import { startRealStack, type RealStack } from "../support/stack.js";

const PASSWORD = "e2e-sessions-opencode-password";
const LINES: ProtocolLine[] = ["0.3", "1.0"];
let stack: RealStack;
let model: ModelServer;
let oc: HermeticOpencode;
let gw: StartedGateway;

beforeAll(async () => {
  stack = await startRealStack({
    password: PASSWORD,
    env: { A2A_TASK_STORE_BACKEND: "memory", A2A_ENABLE_SESSION_SHELL: "true" },
  });
  ({ model, oc, gw } = stack);
}, 90_000);

afterAll(async () => {
  await stack?.close();
}, 30_000);

let counter = 0;
const call = (line: ProtocolLine, method: string, params: Record<string, unknown> = {}): Promise<HttpResult> =>
  rpc(gw.url, { jsonrpc: "2.0", id: ++counter, method, params }, { "A2A-Version": line });

async function ok(line: ProtocolLine, method: string, params: Record<string, unknown> = {}): Promise<any> {
  const res = await call(line, method, params);
  expect(res.status).toBe(200);
  expect(res.body.error, JSON.stringify(res.body.error)).toBeUndefined();
  return res.body.result;
}

async function fails(line: ProtocolLine, reason: string, method: string, params: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const error = await expectRpcError(await call(line, method, params), line, reason);
  return line === "0.3" ? error.data : ((await errorInfoOf(error.data)).metadata ?? {});
}

/** A blocking A2A turn (0.3 message/send); returns the OpenCode session it ran in. */
async function turn(textIn: string, sessionId?: string): Promise<string> {
  const res = await rpc(
    gw.url,
    {
      jsonrpc: "2.0",
      id: ++counter,
      method: "message/send",
      params: {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: textIn }],
          ...(sessionId === undefined ? {} : { metadata: { shared: { session: { id: sessionId } } } }),
        },
      },
    },
    { "A2A-Version": "0.3" },
  );
  expect(res.body.result?.status?.state, JSON.stringify(res.body).slice(0, 500)).toBe("completed");
  return res.body.result.metadata.shared.session.id;
}

const userRole = (line: ProtocolLine) => (line === "0.3" ? "user" : "ROLE_USER");
const agentRole = (line: ProtocolLine) => (line === "0.3" ? "agent" : "ROLE_AGENT");
const texts = (items: any[]): string[] => items.map((m) => m.parts[0].text);

describe("opencode.sessions.* against the real OpenCode", () => {
  let sessionId: string;
  let writeTurn: string; // the user message whose turn wrote new.txt
  const newFile = () => path.join(oc.workspace, "new.txt");

  beforeAll(async () => {
    model.script(text("Hi there."));
    sessionId = await turn("hello");
    model.script(
      tool("todowrite", { todos: [{ content: "write the file", status: "in_progress", priority: "high" }] }),
      text("Planned."),
    );
    await turn("plan it", sessionId);
    model.script(tool("write", { filePath: "new.txt", content: "hello\n" }), text("Wrote it."));
    await turn("write it", sessionId);
    expect(fs.readFileSync(newFile(), "utf8")).toBe("hello\n");
  }, 60_000);

  it.each(LINES)("line %s: list and get project the session to a completed task without local paths", async (line) => {
    const list = await ok(line, "opencode.sessions.list", { limit: 5 });
    await expectValid("extensions/SessionTaskListResult", list);
    const item = list.items.find((t: any) => t.id === sessionId);
    expect(item).toBeDefined();
    await expectValid(line === "0.3" ? "v0_3/Task" : "v1_0/Task", item);
    expect(item.contextId).toBe(`ctx:opencode-session:${sessionId}`);
    expect(item.status.state).toBe(line === "0.3" ? "completed" : "TASK_STATE_COMPLETED");
    expect(item.metadata.shared.session).toEqual({ id: sessionId, title: "hello" });
    expect(item.metadata.opencode.session.directory).toBe(".");
    expect(JSON.stringify(list)).not.toContain(oc.workspace);

    const got = await ok(line, "opencode.sessions.get", { session_id: sessionId });
    expect(got.item).toEqual(item);
    await fails(line, "SESSION_NOT_FOUND", "opencode.sessions.get", { session_id: "ses_doesnotexist" });
  });

  it.each(LINES)("line %s: messages.list pages back through next_cursor and matches the full history", async (line) => {
    const full = await ok(line, "opencode.sessions.messages.list", { session_id: sessionId, limit: 100 });
    expect(full.next_cursor).toBeNull();
    // 3 user turns; the tool turns have a tool-call step and a text step.
    expect(full.items.filter((m: any) => m.role === userRole(line))).toHaveLength(3);
    expect(texts(full.items.filter((m: any) => m.role === userRole(line)))).toEqual(["hello", "plan it", "write it"]);
    expect(texts(full.items).at(-1)).toBe("Wrote it.");
    expect(JSON.stringify(full)).not.toContain(oc.workspace);
    for (const m of full.items) await expectValid(line === "0.3" ? "v0_3/Message" : "v1_0/Message", m);

    const pages: any[][] = [];
    let before: string | undefined;
    for (let guard = 0; guard < 20; guard++) {
      const page = await ok(line, "opencode.sessions.messages.list", { session_id: sessionId, limit: 2, ...(before ? { before } : {}) });
      await expectValid("extensions/SessionMessageListResult", page);
      expect(page.items.length).toBeLessThanOrEqual(2);
      pages.unshift(page.items);
      if (page.next_cursor === null) break;
      before = page.next_cursor;
    }
    expect(pages.length).toBeGreaterThan(2);
    expect(pages.flat().map((m) => m.messageId)).toEqual(full.items.map((m: any) => m.messageId));

    const one = await ok(line, "opencode.sessions.messages.get", { session_id: sessionId, message_id: full.items[1].messageId });
    expect(one.item).toEqual(full.items[1]);
    expect(one.item.role).toBe(agentRole(line));
    writeTurn = full.items.filter((m: any) => m.role === userRole(line))[2].messageId;
  });

  it.each(LINES)("line %s: todo and diff read what the tools did", async (line) => {
    const todo = await ok(line, "opencode.sessions.todo", { session_id: sessionId });
    expect(todo.items).toEqual([{ content: "write the file", status: "in_progress", priority: "high" }]);
    const diff = await ok(line, "opencode.sessions.diff", { session_id: sessionId, message_id: writeTurn });
    await expectValid("extensions/SessionDiffResult", diff);
    expect(diff.items).toEqual([expect.objectContaining({ file: "new.txt", status: "added", additions: 1, deletions: 0 })]);
    expect(diff.items[0].patch).toContain("+hello");
    expect((await ok(line, "opencode.sessions.diff", { session_id: sessionId })).items).toEqual([]);
    await fails(line, "SESSION_NOT_FOUND", "opencode.sessions.diff", { session_id: "ses_doesnotexist" });
  });

  it("revert deletes the file on disk and unrevert restores it", async () => {
    const reverted = await ok("1.0", "opencode.sessions.revert", { session_id: sessionId, request: { messageID: writeTurn } });
    await expectValid("extensions/SessionSummaryResult", reverted);
    expect(reverted.item).toMatchObject({ id: sessionId, title: "hello", revert: { message_id: writeTurn } });
    expect(reverted.item.revert.diff).toContain("new.txt");
    expect(fs.existsSync(newFile())).toBe(false);
    expect(JSON.stringify(reverted)).not.toContain(oc.workspace);

    const restored = await ok("0.3", "opencode.sessions.unrevert", { session_id: sessionId });
    expect(restored.item.id).toBe(sessionId);
    expect(restored.item.revert).toBeUndefined();
    expect(fs.readFileSync(newFile(), "utf8")).toBe("hello\n");
  }, 30_000);

  it("fork copies the messages before the given one into a new session the caller owns", async () => {
    const history = await ok("0.3", "opencode.sessions.messages.list", { session_id: sessionId, limit: 100 });
    const secondUser = history.items.filter((m: any) => m.role === "user")[1].messageId;
    const fork = await ok("0.3", "opencode.sessions.fork", { session_id: sessionId, request: { messageID: secondUser } });
    await expectValid("extensions/SessionSummaryResult", fork);
    expect(fork.item.id).not.toBe(sessionId);
    expect(fork.item.title).toBe("hello (fork #1)");
    const copied = await ok("1.0", "opencode.sessions.messages.list", { session_id: fork.item.id });
    expect(texts(copied.items)).toEqual(["hello", "Hi there."]);
    // owned by the caller: a control call goes straight through
    const unshared = await ok("1.0", "opencode.sessions.unshare", { session_id: fork.item.id });
    expect(unshared.item.id).toBe(fork.item.id);
  }, 30_000);

  it("share is refused by OpenCode with sharing disabled → UPSTREAM_HTTP_ERROR 500", async () => {
    const data = await fails("0.3", "UPSTREAM_HTTP_ERROR", "opencode.sessions.share", { session_id: sessionId });
    expect(data.upstream_status).toBe(500);
  });

  it.each(LINES)("line %s: command runs an OpenCode command and returns its message", async (line) => {
    model.script(text(`Initialized ${line}.`));
    const result = await ok(line, "opencode.sessions.command", {
      session_id: sessionId,
      request: { command: "/init", arguments: "keep it short", model: { providerID: "fake", modelID: "fake-model" } },
    });
    await expectValid("extensions/SessionMessageResult", result);
    expect(result.item.role).toBe(agentRole(line));
    expect(result.item.parts[0].text).toBe(`Initialized ${line}.`);
    expect(result.item.contextId).toBe(`ctx:opencode-session:${sessionId}`);
    expect(JSON.stringify(result)).not.toContain(oc.workspace);
    expect((await fails(line, "INVALID_PARAMS", "opencode.sessions.command", { session_id: sessionId, request: { command: "nosuch", arguments: "" } })).field).toBe(
      "request.command",
    );
  }, 30_000);

  it("the review command runs a sub-agent in a child session", async () => {
    model.script(text("Fresh."));
    const target = await turn("fresh session");
    model.script(text("Sub-agent review."), text("Review summarized."));
    const result = await ok("1.0", "opencode.sessions.command", { session_id: target, request: { command: "review", arguments: "" } });
    expect(result.item.parts[0].text).toBe("Review summarized.");
    const children = await ok("1.0", "opencode.sessions.children", { session_id: target });
    expect(children.items).toHaveLength(1);
    expect(children.items[0].metadata.opencode.session.parent_id).toBe(target);
    expect(children.items[0].status.state).toBe("TASK_STATE_COMPLETED");
  }, 60_000);

  it.each(LINES)("line %s: shell runs in the workspace and returns its output", async (line) => {
    const result = await ok(line, "opencode.sessions.shell", { session_id: sessionId, request: { agent: "build", command: "cat new.txt" } });
    await expectValid("extensions/SessionMessageResult", result);
    expect(result.item.role).toBe(agentRole(line));
    expect(result.item.parts[0].text).toBe("hello\n");
  }, 30_000);

  it("prompt_async queues a turn whose answer shows up in the history; status reports the busy session", async () => {
    model.script(text(["Async ", "answer."], { delayMs: 300 }));
    const ack = await ok("0.3", "opencode.sessions.prompt_async", {
      session_id: sessionId,
      request: { parts: [{ type: "text", text: "async question" }], model: { providerID: "fake", modelID: "fake-model" } },
    });
    expect(ack).toEqual({ ok: true, session_id: sessionId });
    await expect
      .poll(async () => (await ok("1.0", "opencode.sessions.status")).items.map((i: any) => i.session_id), { timeout: 10_000, interval: 50 })
      .toContain(sessionId);
    await expect
      .poll(async () => texts((await ok("1.0", "opencode.sessions.messages.list", { session_id: sessionId, limit: 2 })).items), { timeout: 15_000 })
      .toEqual(["async question", "Async answer."]);
    await expect.poll(async () => (await ok("1.0", "opencode.sessions.status")).items, { timeout: 10_000 }).toEqual([]);
  }, 40_000);

  it("prompt_async passes a subtask part through: OpenCode runs the sub-agent in a child session", async () => {
    model.script(text("Fresh."));
    const target = await turn("delegate later");
    model.script(text("Sub-agent findings."), text("Parent wrap-up."));
    const ack = await ok("1.0", "opencode.sessions.prompt_async", {
      session_id: target,
      request: { parts: [{ type: "subtask", prompt: "Inspect README.md", description: "inspect the readme", agent: "general" }] },
    });
    expect(ack).toEqual({ ok: true, session_id: target });
    await expect.poll(async () => (await ok("0.3", "opencode.sessions.children", { session_id: target })).items.length, { timeout: 20_000 }).toBe(1);
    await expect
      .poll(async () => texts((await ok("0.3", "opencode.sessions.messages.list", { session_id: target, limit: 1 })).items), { timeout: 20_000 })
      .toEqual(["Parent wrap-up."]);
    const history = await ok("0.3", "opencode.sessions.messages.list", { session_id: target });
    expect(texts(history.items)).toContain("Inspect README.md"); // the subtask part's prompt is the user message text
    await expect.poll(async () => (await ok("1.0", "opencode.sessions.status")).items, { timeout: 10_000 }).toEqual([]);
  }, 60_000);

  it("shell while the session is busy → UPSTREAM_HTTP_ERROR 409", async () => {
    model.script(text("Ready."));
    const target = await turn("busy soon");
    model.scriptFor(target, hang({ holdMs: 20_000 }));
    const chats = model.chatRequests().length;
    await ok("1.0", "opencode.sessions.prompt_async", { session_id: target, request: { parts: [{ type: "text", text: "hang" }] } });
    await model.waitForRequests(chats + 1, { timeoutMs: 10_000 }); // the hang reply is taken: the turn is really running
    await expect.poll(async () => (await ok("1.0", "opencode.sessions.status")).items.map((i: any) => i.session_id), { timeout: 10_000 }).toContain(target);
    const data = await fails("1.0", "UPSTREAM_HTTP_ERROR", "opencode.sessions.shell", { session_id: target, request: { agent: "build", command: "ls" } });
    expect(data.upstreamStatus).toBe("409");
    await fetch(`${oc.url}/session/${target}/abort?directory=${encodeURIComponent(oc.workspace)}`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`opencode:${PASSWORD}`).toString("base64")}` },
    });
    await expect.poll(async () => (await ok("1.0", "opencode.sessions.status")).items, { timeout: 10_000 }).toEqual([]);
  }, 40_000);

  it("summarize compacts the session with the session's own model", async () => {
    expect(model.pending()).toBe(0); // no reply left over from earlier tests
    model.script(text("Summary: a file was written."));
    const before = model.chatRequests().length;
    const result = await ok("1.0", "opencode.sessions.summarize", { session_id: sessionId });
    expect(result).toEqual({ ok: true, session_id: sessionId });
    expect(model.chatRequests().length).toBeGreaterThan(before);
    const latest = await ok("0.3", "opencode.sessions.messages.list", { session_id: sessionId, limit: 1 });
    expect(texts(latest.items)).toEqual(["Summary: a file was written."]);
    expect(latest.items[0].metadata.opencode.message).toMatchObject({ role: "assistant", agent: "compaction" });
  }, 40_000);
});
