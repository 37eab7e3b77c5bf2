// Helpers of the MCP tests (test/integration/mcp*.test.ts, test/e2e/a2a-call and messages): an MCP client of a
// gateway, a running task on a session of its own over the stub (the stub holds its turn), the OpenCode tool part a
// call from inside OpenCode would publish, and a whole `message/stream` (0.3) read to its end.
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "vitest";
import { hang } from "../../tools/upstream/script.js";
import { rpc, TEST_TOKEN } from "./gateway.js";
import type { TaskGateway } from "./tasks.js";

/** An MCP client of `url`/mcp with `token`, kept in `clients` (close them after the file). */
export async function mcpClient(url: string, token: string, clients: Client[]): Promise<Client> {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  clients.push(client);
  return client;
}

/** A running (non-blocking) task of the credential `secret` on a session of its own; the stub holds its turn. */
export async function runningTask(tg: TaskGateway, secret: string): Promise<{ taskId: string; session: string }> {
  const created = await fetch(`${tg.stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "task" }) });
  const session = ((await created.json()) as { id: string }).id;
  tg.stub.scriptFor(session, hang({ holdMs: 30_000 }));
  const res = await rpc(
    tg.url,
    {
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: {
        message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "work" }] },
        configuration: { blocking: false },
        metadata: { shared: { session: { id: session } } },
      },
    },
    { authorization: `Bearer ${secret}`, "A2A-Version": "0.3" },
  );
  expect(res.body.error, res.text).toBeUndefined();
  // Bounded: the task's turn is sent upstream (a request on the session is recorded by the stub).
  for (let i = 0; i < 50 && !tg.stub.requests.some((r) => r.method === "POST" && r.path.startsWith(`/session/${session}/`)); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return { taskId: res.body.result.id as string, session };
}

/** OpenCode's running tool part of a call of the gateway's tool `tool` (named `a2a_<tool>` inside OpenCode). */
export function emitToolPart(tg: TaskGateway, session: string, tool: string, input: Record<string, unknown>): void {
  tg.stub.emit({
    type: "message.part.updated",
    properties: {
      part: {
        id: `prt_${randomUUID()}`,
        sessionID: session,
        messageID: `msg_${randomUUID()}`,
        type: "tool",
        callID: `call_${randomUUID()}`,
        tool: `a2a_${tool}`,
        state: { status: "running", input, time: { start: Date.now() } },
      },
    },
  });
}

/** message/stream (0.3) of `value` as the admin: every event's result, until the stream ends (bounded by the test's timeout). */
export async function streamText(url: string, value: string): Promise<any[]> {
  const res = await fetch(`${url}/`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", accept: "text/event-stream", "A2A-Version": "0.3" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "message/stream",
      params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: value }] } },
    }),
  });
  expect(res.status).toBe(200);
  return (await res.text())
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => (JSON.parse(line.slice(5)) as { result?: unknown }).result ?? { error: true });
}
