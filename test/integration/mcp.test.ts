// The MCP endpoint `POST /mcp` (spec/mcp.tsp) through the official MCP client (Client + StreamableHTTPClientTransport):
// a caller gateway (stub OpenCode) calls a peer gateway (another stub) with a2a_call / a2a_discover. Checked: the
// answer with its progress notifications and the contract shape; a peer's question comes back as input-required and
// is answered with task_id; the network policy refuses a private address without the allowance; a credential
// without peers.call is refused; the OpenCode credential (A2A_MCP_TOKEN) acts for the owner of the running task
// whose tool call it matches, and is refused when no task made the call or the owner lacks peers.call; the audit
// entries (principal, tool, peer host, outcome; no message text).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hang, text, tool } from "../../tools/upstream/script.js";
import { expectValid } from "../support/contract.js";
import { call, rpc, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { emitToolPart, mcpClient, runningTask } from "../support/mcp.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

const ALICE = { id: "alice-key", principal: "alice", scheme: "bearer", secret: "alice-secret-0123456789", trust_level: "autonomous" };
const BOB = { id: "bob-key", principal: "bob", scheme: "bearer", secret: "bob-secret-0123456789ab", trust_level: "execute" };
const MCP_TOKEN = "mcp-token-for-the-tests-0123456789";

let peer: TaskGateway;
let caller: TaskGateway;
let strict: StartedGateway;
const clients: Client[] = [];

async function auditOf(url: string, query: string, count: number): Promise<Record<string, unknown>[]> {
  // The recorder writes every 100 ms: bounded wait for the entries.
  for (let i = 0; i < 40; i++) {
    const res = await call(url, `/admin/audit?${query}`);
    expect(res.status, res.text).toBe(200);
    const entries = res.body.entries as Record<string, unknown>[];
    if (entries.length >= count) return entries;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`fewer than ${count} audit entries for ${query}`);
}

const peerErrorOf = (result: CallToolResult): { code: string; message: string } => (result._meta as Record<string, { code: string; message: string }>)["opencode-a2a/peer_error"]!;

beforeAll(async () => {
  peer = await startTaskGateway();
  caller = await startTaskGateway({
    A2A_CREDENTIALS: JSON.stringify([ALICE, BOB]),
    A2A_MCP_TOKEN: MCP_TOKEN,
    A2A_CLIENT_ALLOW_PRIVATE_HOSTS: "true",
    A2A_CLIENT_ALLOWED_HOSTS: "127.0.0.1",
    A2A_CLIENT_BEARER_TOKEN: TEST_TOKEN,
  });
  // No allowance for private addresses (the default policy).
  strict = await startGateway({ A2A_CREDENTIALS: JSON.stringify([ALICE]) });
}, 30_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await caller?.close();
  await peer?.close();
  await strict?.close();
});

describe("POST /mcp with a credential of the gateway", () => {
  it("lists the tools with the contract's schemas", async () => {
    const client = await mcpClient(caller.url, ALICE.secret, clients);
    const { tools } = await client.listTools();
    // with the messaging tools (A2A_MESSAGES_TOOLS: all by default; test/integration/mcp-messages.test.ts)
    expect(tools.map((t) => t.name).sort()).toEqual(["a2a_call", "a2a_discover", "buffer", "list-session", "send-message"]);
    const callTool = tools.find((t) => t.name === "a2a_call")!;
    expect(callTool.inputSchema.required).toEqual(["url", "message"]);
    expect(Object.keys(callTool.inputSchema.properties ?? {}).sort()).toEqual(["context_id", "message", "task_id", "url"]);
    expect(callTool.outputSchema?.required).toContain("state");
  });

  it("a2a_call reaches the peer, streams progress and returns the answer as text and as A2aCallResult", async () => {
    peer.stub.script(text(["The peer ", "says ", "hello."], { delayMs: 300 }));
    const client = await mcpClient(caller.url, ALICE.secret, clients);
    const progress: string[] = [];
    const result = (await client.callTool({ name: "a2a_call", arguments: { url: peer.url, message: "say hello" } }, undefined, {
      onprogress: (p) => progress.push(String(p.message ?? "")),
      timeout: 20_000,
    })) as CallToolResult;
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    await expectValid("extensions/A2aCallResult", result.structuredContent);
    expect(result.structuredContent).toMatchObject({ state: "completed", text: "The peer says hello." });
    expect(result.content).toEqual([{ type: "text", text: "The peer says hello." }]);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.join("")).toContain("The peer");

    const entries = await auditOf(caller.url, "method=mcp/a2a_call&principal=alice", 1);
    expect(entries[0]).toMatchObject({ principal: "alice", credential_id: "alice-key", method: "mcp/a2a_call", peer: new URL(peer.url).host, outcome: "ok" });
    expect(JSON.stringify(entries)).not.toContain("say hello");
  });

  it("a peer's question comes back as input-required, and task_id answers it", async () => {
    peer.stub.script(
      tool("question", { questions: [{ question: "Which color?", header: "Color", options: [{ label: "red", description: "red" }] }] }),
      text("You chose red."),
    );
    const client = await mcpClient(caller.url, ALICE.secret, clients);
    const asked = (await client.callTool({ name: "a2a_call", arguments: { url: peer.url, message: "pick a color" } }, undefined, { timeout: 20_000 })) as CallToolResult;
    expect(asked.isError, JSON.stringify(asked)).toBeFalsy();
    await expectValid("extensions/A2aCallResult", asked.structuredContent);
    const first = asked.structuredContent as { state: string; question?: string; task_id?: string; context_id?: string };
    expect(first.state).toBe("input-required");
    expect(first.question).toContain("Which color?");
    expect(first.task_id).toBeTruthy();
    expect((asked.content as { text: string }[])[0]!.text).toContain(first.task_id!);

    const answered = (await client.callTool(
      { name: "a2a_call", arguments: { url: peer.url, message: "red", task_id: first.task_id, ...(first.context_id ? { context_id: first.context_id } : {}) } },
      undefined,
      { timeout: 20_000 },
    )) as CallToolResult;
    expect(answered.isError, JSON.stringify(answered)).toBeFalsy();
    expect(answered.structuredContent).toMatchObject({ state: "completed", task_id: first.task_id });
  });

  it("aborting the MCP request cancels the outbound call", async () => {
    peer.stub.script(hang({ chunks: ["still working"], holdMs: 20_000 }));
    const client = await mcpClient(caller.url, ALICE.secret, clients);
    const abort = new AbortController();
    const started = Date.now();
    const pending = client.callTool({ name: "a2a_call", arguments: { url: peer.url, message: "take your time" } }, undefined, {
      signal: abort.signal,
      onprogress: () => abort.abort(),
      timeout: 20_000,
    });
    await expect(pending).rejects.toThrow();
    // The call ends long before the peer's 20 s turn would: its audit entry is written as a canceled call.
    const entries = await auditOf(caller.url, "method=mcp/a2a_call&principal=alice&outcome=error", 1);
    expect(entries[0]).toMatchObject({ error_reason: "a2a_call_failed" });
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);

  it("a2a_discover summarizes the peer's card", async () => {
    const client = await mcpClient(caller.url, ALICE.secret, clients);
    const result = (await client.callTool({ name: "a2a_discover", arguments: { url: peer.url } })) as CallToolResult;
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    await expectValid("extensions/A2aDiscoverResult", result.structuredContent);
    expect(result.structuredContent).toMatchObject({ url: `${peer.url}/.well-known/agent-card.json`, protocol_versions: expect.arrayContaining(["1.0"]) });
  });

  it("bad input is a2a_invalid_input, as a tool error result", async () => {
    const client = await mcpClient(caller.url, ALICE.secret, clients);
    const result = (await client.callTool({ name: "a2a_call", arguments: { url: peer.url, message: "" } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(peerErrorOf(result).code).toBe("a2a_invalid_input");
    expect(peerErrorOf(result).message).toContain("message");
  });

  it("a private address without A2A_CLIENT_ALLOW_PRIVATE_HOSTS is refused with a2a_target_refused", async () => {
    const client = await mcpClient(strict.url, ALICE.secret, clients);
    const result = (await client.callTool({ name: "a2a_call", arguments: { url: peer.url, message: "hello" } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(peerErrorOf(result).code).toBe("a2a_target_refused");
    expect((result.content as { text: string }[])[0]!.text).toMatch(/^a2a_target_refused: /);
  });

  it("a credential without peers.call is refused at the edge (403), and so is none (401)", async () => {
    await expect(mcpClient(caller.url, BOB.secret, clients)).rejects.toThrow(/403|peers\.call/);
    const anonymous = await fetch(`${caller.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(anonymous.status).toBe(401);
    await anonymous.body?.cancel();
  });

  it("an Accept without both MCP media types is NOT_ACCEPTABLE (406) in the line's REST error shape", async () => {
    for (const [accept, line] of [
      ["application/json", "0.3"],
      ["text/event-stream", "1.0"],
      ["", "1.0"],
    ] as const) {
      const res = await fetch(`${caller.url}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${ALICE.secret}`, "content-type": "application/json", "A2A-Version": line, ...(accept === "" ? {} : { accept }) },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(res.status).toBe(406);
      const body = (await res.json()) as { error?: { details?: { reason?: string }[] }; data?: { type?: string } };
      const reason = line === "0.3" ? body.data?.type : body.error?.details?.find((d) => d.reason !== undefined)?.reason;
      expect(reason, JSON.stringify(body)).toBe("NOT_ACCEPTABLE");
    }
  });

  it("GET and DELETE /mcp are 405", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await call(caller.url, "/mcp", { method, headers: { authorization: `Bearer ${ALICE.secret}` } });
      expect(res.status, `${method} ${res.text}`).toBe(405);
    }
  });
});

describe("POST /mcp with the OpenCode credential (A2A_MCP_TOKEN)", () => {
  it("a call matched with a running task's tool call acts for the task's owner", async () => {
    const { taskId, session } = await runningTask(caller, ALICE.secret);
    peer.stub.script(text("Peer answer for the task."));
    const client = await mcpClient(caller.url, MCP_TOKEN, clients);
    const input = { url: peer.url, message: "from inside OpenCode" };
    const pending = client.callTool({ name: "a2a_call", arguments: input }, undefined, { timeout: 20_000 }) as Promise<CallToolResult>;
    setTimeout(() => emitToolPart(caller, session, "a2a_call", input), 300);
    const result = await pending;
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ state: "completed", text: "Peer answer for the task." });
    const entries = await auditOf(caller.url, `method=mcp/a2a_call&task_id=${taskId}`, 1);
    expect(entries[0]).toMatchObject({ principal: "alice", credential_id: "opencode-mcp", session_id: session, outcome: "ok", peer: new URL(peer.url).host });
    await rpc(caller.url, { jsonrpc: "2.0", id: 2, method: "tasks/cancel", params: { id: taskId } }, { authorization: `Bearer ${ALICE.secret}`, "A2A-Version": "0.3" });
  }, 30_000);

  it("a call no running task made is refused (a2a_not_allowed) and audited", async () => {
    const client = await mcpClient(caller.url, MCP_TOKEN, clients);
    const result = (await client.callTool({ name: "a2a_discover", arguments: { url: `${peer.url}/nobody` } }, undefined, { timeout: 20_000 })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(peerErrorOf(result)).toMatchObject({ code: "a2a_not_allowed", message: "no running task of this gateway made this call" });
    const entries = await auditOf(caller.url, "method=mcp/a2a_discover&principal=opencode&outcome=error", 1);
    expect(entries[0]).toMatchObject({ credential_id: "opencode-mcp", error_reason: "a2a_not_allowed", peer: new URL(peer.url).host });
  }, 30_000);

  it("a task whose owner lacks peers.call cannot make calls", async () => {
    const { taskId, session } = await runningTask(caller, BOB.secret);
    const client = await mcpClient(caller.url, MCP_TOKEN, clients);
    const input = { url: peer.url };
    const pending = client.callTool({ name: "a2a_discover", arguments: input }, undefined, { timeout: 20_000 }) as Promise<CallToolResult>;
    setTimeout(() => emitToolPart(caller, session, "a2a_discover", input), 300);
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(peerErrorOf(result).code).toBe("a2a_not_allowed");
    expect(peerErrorOf(result).message).toContain("peers.call");
    const entries = await auditOf(caller.url, `method=mcp/a2a_discover&task_id=${taskId}`, 1);
    expect(entries[0]).toMatchObject({ principal: "bob", outcome: "error", error_reason: "a2a_not_allowed" });
    await rpc(caller.url, { jsonrpc: "2.0", id: 3, method: "tasks/cancel", params: { id: taskId } });
  }, 30_000);

  it("the OpenCode credential is good for /mcp only", async () => {
    const res = await rpc(caller.url, { jsonrpc: "2.0", id: 1, method: "tasks/list", params: {} }, { authorization: `Bearer ${MCP_TOKEN}` });
    expect(JSON.stringify(res.body.error ?? {})).toMatch(/SCOPE_INSUFFICIENT|scope/i);
  });
});
