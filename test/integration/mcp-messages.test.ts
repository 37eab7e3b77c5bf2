// The messaging tools of `POST /mcp` (seed 002's list-session, send-message, buffer) over the stub OpenCode, through
// the official MCP client. Checked: the tool list with the contract's schemas and the deployment's defaults
// (A2A_MESSAGES_TOOLS, A2A_MESSAGES_TOOL_DEFAULTS, a bad value stops the start); a direct MCP client acts as itself
// from no session (buffer needs `session`; a principal without the scope gets SCOPE_INSUFFICIENT); the OpenCode
// credential's calls are sent from the session whose running tool part made them: a live task's (from = that
// session, a buffered message, accepted from another session with accepted_by) or a session a delivered message
// started (its reply goes back to the sender's session at once); a call nobody made is UNAUTHENTICATED; bad input
// is INVALID_PARAMS naming the field; every call is audited with the acting principal and session, never the text.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hang, text } from "../../tools/upstream/script.js";
import { catalog, expectValid } from "../support/contract.js";
import { call, rpc, TEST_TOKEN } from "../support/gateway.js";
import { emitToolPart, mcpClient, runningTask } from "../support/mcp.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

type Obj = Record<string, any>;
const SCOPES = catalog.scopes.filter((s) => s !== "audit.read");
const ALICE = { id: "alice-key", principal: "alice", scheme: "bearer", secret: "alice-mcp-messages-0123456789", trust_level: "autonomous", scopes: SCOPES };
// Reaches /mcp (peers.call) but may not send messages.
const CAROL = { id: "carol-key", principal: "carol", scheme: "bearer", secret: "carol-mcp-messages-0123456789", trust_level: "autonomous", scopes: ["peers.call", "sessions.read"] };
const MCP_TOKEN = "mcp-token-messages-0123456789abcdef";

let tg: TaskGateway;
const clients: Client[] = [];

const errorOf = (result: CallToolResult): Obj => (result._meta as Obj)["opencode-a2a/error"];
async function tool(client: Client, name: string, args: Obj): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, undefined, { timeout: 20_000 })) as CallToolResult;
}
async function ok(client: Client, name: string, args: Obj, schema: string): Promise<Obj> {
  const result = await tool(client, name, args);
  expect(result.isError, JSON.stringify(result)).toBeFalsy();
  await expectValid(`extensions/${schema}`, result.structuredContent);
  return result.structuredContent as Obj;
}

/** The texts prompted into a session (the stub's prompt_async requests). */
const prompts = (session: string): string[] =>
  tg.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${session}/prompt_async`).map((r) => (r.body as Obj).parts[0].text as string);

async function auditOf(query: string, count: number): Promise<Obj[]> {
  for (let i = 0; i < 40; i++) {
    const entries = (await call(tg.url, `/admin/audit?${query}`)).body.entries as Obj[];
    if (entries.length >= count) return entries;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`fewer than ${count} audit entries for ${query}`);
}

/** A session of alice's, made by an A2A message to a new session (its turn answered and over). */
async function aliceSession(): Promise<string> {
  tg.stub.script(text("Hello."));
  const res = await rpc(tg.url, { jsonrpc: "2.0", id: 1, method: "opencode.messages.send", params: { message: "start" } }, { authorization: `Bearer ${ALICE.secret}`, "A2A-Version": "0.3" });
  expect(res.body.error, res.text).toBeUndefined();
  return res.body.result.message.to as string;
}

/** A call with the OpenCode credential whose tool part appears in `session` while the call waits for it. */
async function fromSession(session: string, name: string, args: Obj): Promise<CallToolResult> {
  const client = await mcpClient(tg.url, MCP_TOKEN, clients);
  const pending = tool(client, name, args);
  setTimeout(() => emitToolPart(tg, session, name, args), 200);
  return pending;
}

beforeAll(async () => {
  tg = await startTaskGateway({
    A2A_CREDENTIALS: JSON.stringify([ALICE, CAROL]),
    A2A_MCP_TOKEN: MCP_TOKEN,
    A2A_RATE_LIMIT_MAX_REQUESTS: "0",
    A2A_MESSAGES_TOOL_DEFAULTS: JSON.stringify({ "list-session": { active: false }, buffer: { replies: true } }),
  });
}, 30_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await tg?.close();
});

describe("the tool list", () => {
  it("lists list-session, send-message and buffer with the contract's schemas and the deployment's defaults", async () => {
    const { tools } = await (await mcpClient(tg.url, ALICE.secret, clients)).listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    const send = byName.get("send-message")!;
    expect(send.inputSchema.required).toEqual(["message"]);
    expect(Object.keys(send.inputSchema.properties ?? {}).sort()).toEqual(["await_reply", "await_timeout_seconds", "draft", "elaborate", "fork", "id", "iterate", "message", "reply", "session"]);
    expect((send.inputSchema.properties as Obj).session.default).toBe("new");
    expect((byName.get("list-session")!.inputSchema.properties as Obj).active.default).toBe(false);
    expect((byName.get("buffer")!.inputSchema.properties as Obj).replies.default).toBe(true);
    expect(byName.get("buffer")!.outputSchema?.required).toEqual(expect.arrayContaining(["session", "messages"]));
  });

  it("A2A_MESSAGES_TOOLS picks the tools; none (or A2A_ENABLE_MESSAGES=false) leaves the a2a tools alone", async () => {
    const gateways = await Promise.all([
      startTaskGateway({ A2A_MESSAGES_TOOLS: "send-message,buffer" }),
      startTaskGateway({ A2A_MESSAGES_TOOLS: "none" }),
      startTaskGateway({ A2A_ENABLE_MESSAGES: "false" }),
    ]);
    try {
      const list = async (url: string) => (await (await mcpClient(url, TEST_TOKEN, clients)).listTools()).tools.map((t) => t.name).sort();
      expect(await list(gateways[0].url)).toEqual(["a2a_call", "a2a_discover", "buffer", "send-message"]);
      expect(await list(gateways[1].url)).toEqual(["a2a_call", "a2a_discover"]);
      expect(await list(gateways[2].url)).toEqual(["a2a_call", "a2a_discover"]);
      // a tool that is not offered is an unknown tool
      const refused = await (await mcpClient(gateways[0].url, TEST_TOKEN, clients)).callTool({ name: "list-session", arguments: {} }).catch((error: unknown) => error);
      expect(String(refused)).toMatch(/Unknown tool list-session/);
    } finally {
      for (const g of gateways) await g.close();
    }
  });

  it("a bad A2A_MESSAGES_TOOLS or A2A_MESSAGES_TOOL_DEFAULTS stops the start with the variable named", async () => {
    await expect(startTaskGateway({ A2A_MESSAGES_TOOLS: "send-message,shout" })).rejects.toThrow(/A2A_MESSAGES_TOOLS/);
    await expect(startTaskGateway({ A2A_MESSAGES_TOOL_DEFAULTS: "[1]" })).rejects.toThrow(/A2A_MESSAGES_TOOL_DEFAULTS.*JSON object/);
    await expect(startTaskGateway({ A2A_MESSAGES_TOOL_DEFAULTS: JSON.stringify({ "send-message": { draft: "yes" } }) })).rejects.toThrow(/A2A_MESSAGES_TOOL_DEFAULTS: send-message\.draft/);
    await expect(startTaskGateway({ A2A_MESSAGES_TOOL_DEFAULTS: JSON.stringify({ shout: {} }) })).rejects.toThrow(/A2A_MESSAGES_TOOL_DEFAULTS/);
  });
});

describe("a direct MCP client", () => {
  it("sends from no session, lists its sessions, and names the buffer it reads", async () => {
    const client = await mcpClient(tg.url, ALICE.secret, clients);
    tg.stub.script(text("On it."));
    const sent = await ok(client, "send-message", { message: "Please look at the logs." }, "MessagesSendResult");
    expect(sent.message).toMatchObject({ from: null, draft: false, buffered: false });
    const session = sent.message.to as string;
    expect(prompts(session).at(-1)).toContain("Please look at the logs.");
    const text0 = (await tool(client, "send-message", { session, message: "Later, please." })).content as { text: string }[];
    expect(text0[0]!.text).toContain(`buffered in session ${session}`);
    // the deployment's default active=false: the new session is idle again once its turn is over
    await expect.poll(async () => (await ok(client, "list-session", {}, "MessagesListSessionsResult")).sessions.map((s: Obj) => s.id), { timeout: 5_000 }).toContain(session);
    const missing = await tool(client, "buffer", {});
    expect(missing.isError).toBe(true);
    expect(errorOf(missing)).toMatchObject({ reason: "INVALID_PARAMS", code: -32602 });
    const listed = await ok(client, "buffer", { session }, "MessagesBufferResult");
    expect(listed.messages.map((m: Obj) => m.message)).toEqual(["Later, please."]);
    expect(listed.instruction).toContain("do not act on them");
    expect(listed.replies).toEqual([]);
    const shown = ((await tool(client, "buffer", { session })).content as { text: string }[])[0]!.text;
    expect(shown).toContain("1. [");
    expect(shown).toContain("Later, please.");
  });

  it("bad input is INVALID_PARAMS naming the field; elaborate is refused; a principal without the scope is refused", async () => {
    const client = await mcpClient(tg.url, ALICE.secret, clients);
    const bad = await tool(client, "send-message", { message: "" });
    expect(errorOf(bad)).toMatchObject({ reason: "INVALID_PARAMS" });
    expect(JSON.stringify(errorOf(bad).violations)).toContain("message");
    const extra = await tool(client, "buffer", { session: "x", shout: true });
    expect(errorOf(extra).reason).toBe("INVALID_PARAMS");
    const elaborate = await tool(client, "send-message", { message: "x", elaborate: true });
    expect(errorOf(elaborate)).toMatchObject({ reason: "INVALID_PARAMS" });
    const carol = await mcpClient(tg.url, CAROL.secret, clients);
    const refused = await tool(carol, "send-message", { message: "hi" });
    expect(errorOf(refused)).toMatchObject({ reason: "SCOPE_INSUFFICIENT" });
    expect((await tool(carol, "list-session", {})).isError).toBeFalsy();
    const entries = await auditOf("method=mcp/send-message&principal=carol", 1);
    expect(entries[0]).toMatchObject({ outcome: "error", error_reason: "SCOPE_INSUFFICIENT" });
  });
});

describe("the OpenCode credential", () => {
  it("a task's agent sends from its session: buffered in another session, then accepted from its session (accepted_by)", async () => {
    const target = await aliceSession();
    const { taskId, session } = await runningTask(tg, ALICE.secret);
    const sent = await fromSession(session, "send-message", { session: target.slice(0, -2), message: "Can you review my diff?" });
    expect(sent.isError, JSON.stringify(sent)).toBeFalsy();
    expect(sent.structuredContent).toMatchObject({ message: { from: session, to: target, buffered: true, delivered_at: null } });
    const id = (sent.structuredContent as Obj).message.id as string;
    expect(prompts(target).some((p) => p.includes("Can you review my diff?"))).toBe(false);
    const entries = await auditOf(`method=mcp/send-message&task_id=${taskId}`, 1);
    expect(entries[0]).toMatchObject({ principal: "alice", credential_id: "opencode-mcp", session_id: session, outcome: "ok" });
    expect(JSON.stringify(entries)).not.toContain("review my diff");

    tg.stub.script(text("Reviewed."));
    const accepted = await fromSession(session, "buffer", { session: target, accept: "oldest" });
    expect(accepted.isError, JSON.stringify(accepted)).toBeFalsy();
    expect((accepted.structuredContent as Obj).accepted).toMatchObject({ id, accepted_by: session });
    expect(prompts(target).at(-1)).toContain(`[Message ${id} from session ${session}]`);
    await rpc(tg.url, { jsonrpc: "2.0", id: 2, method: "tasks/cancel", params: { id: taskId } }, { authorization: `Bearer ${ALICE.secret}`, "A2A-Version": "0.3" });
  }, 30_000);

  it("a session a delivered message started answers with a reply that goes back to the sender's session at once", async () => {
    const { taskId, session } = await runningTask(tg, ALICE.secret);
    // The new session's turn is held, so it is still running when its agent calls the tool.
    tg.stub.script(hang({ holdMs: 10_000 }));
    const asked = await fromSession(session, "send-message", { session: "new", message: "What is the build command?" });
    expect(asked.isError, JSON.stringify(asked)).toBeFalsy();
    const request = (asked.structuredContent as Obj).message as Obj;
    expect(request).toMatchObject({ from: session, buffered: false });
    const answered = await fromSession(request.to, "send-message", { reply: request.id, message: "npm run build" });
    expect(answered.isError, JSON.stringify(answered)).toBeFalsy();
    expect((answered.structuredContent as Obj).message).toMatchObject({ from: request.to, to: session, in_reply_to: request.id, buffered: false });
    expect(prompts(session).at(-1)).toContain(`in reply to message ${request.id}`);
    const entries = await auditOf(`method=mcp/send-message&session_id=${request.to}`, 1);
    expect(entries[0]).toMatchObject({ principal: "alice", credential_id: "opencode-mcp", outcome: "ok" });
    expect(entries[0]!.task_id).toBeUndefined();
    // Once that turn ends, the session vouches for no call any more.
    tg.stub.emit({ type: "session.idle", properties: { sessionID: request.to } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const late = await fromSession(request.to, "send-message", { reply: request.id, message: "one more thing" });
    expect((late._meta as Obj)["opencode-a2a/error"]).toMatchObject({ reason: "UNAUTHENTICATED" });
    await rpc(tg.url, { jsonrpc: "2.0", id: 3, method: "tasks/cancel", params: { id: taskId } }, { authorization: `Bearer ${ALICE.secret}`, "A2A-Version": "0.3" });
  }, 30_000);

  it("a call no running turn made is UNAUTHENTICATED, and audited", async () => {
    const client = await mcpClient(tg.url, MCP_TOKEN, clients);
    const result = await tool(client, "list-session", { active: true });
    expect(result.isError).toBe(true);
    expect(errorOf(result)).toMatchObject({ reason: "UNAUTHENTICATED" });
    expect(errorOf(result).message).toContain("no running task");
    const entries = await auditOf("method=mcp/list-session&principal=opencode&outcome=error", 1);
    expect(entries[0]).toMatchObject({ credential_id: "opencode-mcp", error_reason: "UNAUTHENTICATED" });
  }, 30_000);
});

describe("the deployment's defaults", () => {
  it("send-message defaults apply unless the call names the parameter (a draft by default, iterated, then sent)", async () => {
    const drafts = await startTaskGateway({
      A2A_CREDENTIALS: JSON.stringify([ALICE]),
      A2A_MESSAGES_TOOL_DEFAULTS: JSON.stringify({ "send-message": { draft: true } }),
    });
    try {
      const client = await mcpClient(drafts.url, ALICE.secret, clients);
      const first = await ok(client, "send-message", { message: "first words" }, "MessagesSendResult");
      expect(first.message).toMatchObject({ draft: true, delivered_at: null });
      const to = first.message.to as string;
      const iterated = await ok(client, "send-message", { iterate: true, id: first.message.id, message: "better words" }, "MessagesSendResult");
      expect(iterated.message).toMatchObject({ draft: true, initial: "first words", message: "better words" });
      drafts.stub.script(text("Thanks."));
      const sent = await ok(client, "send-message", { iterate: true, id: first.message.id, message: "final words", draft: false }, "MessagesSendResult");
      expect(sent.message).toMatchObject({ draft: false, message: "final words" });
      const delivered = drafts.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${to}/prompt_async`).map((r) => JSON.stringify(r.body));
      expect(delivered).toHaveLength(1);
      expect(delivered[0]).toContain("final words");
      const now = await ok(client, "send-message", { message: "at once", draft: false }, "MessagesSendResult");
      expect(now.message.draft).toBe(false);
    } finally {
      await drafts.close();
    }
  }, 30_000);
});
