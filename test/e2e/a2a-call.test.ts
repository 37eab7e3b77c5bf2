// e2e: the `a2a_call` tool from inside a real `opencode serve` (hermetic, scripted model). The caller gateway's port
// is bound before OpenCode starts, and OpenCode's config names its MCP endpoint as the server `a2a` with the
// OpenCode credential (A2A_MCP_TOKEN), as managed mode does. A second gateway on 127.0.0.1, in front of the same
// OpenCode, is the peer. The scripted model's replies are consumed in request order: the caller's turn (tool call),
// then the peer's turn (its answer or its question), then the caller's turn again (its final text).
//   - the caller task's model calls `a2a_a2a_call`; the call is attributed to the task's owner, reaches the peer,
//     and the peer's answer comes back as the tool's output (a tool_call block of the task's stream) and into the
//     final text;
//   - the peer asks a question: input-required, the question and the peer's task id come back to the agent;
//   - a call the network policy refuses comes back to the agent as a2a_target_refused.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelServer } from "../../tools/upstream/model-server.js";
import { text, tool } from "../../tools/upstream/script.js";
import { call as httpCall, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { streamText } from "../support/mcp.js";
import { startRealStack, type RealStack } from "../support/stack.js";

const MCP_TOKEN = `e2e-mcp-${randomUUID()}`;
let stack: RealStack;
let model: ModelServer;
let gw: StartedGateway;
let peer: StartedGateway;

beforeAll(async () => {
  stack = await startRealStack({
    mcpToken: MCP_TOKEN,
    env: {
      A2A_CLIENT_ALLOW_PRIVATE_HOSTS: "true",
      A2A_CLIENT_ALLOWED_HOSTS: "127.0.0.1",
      A2A_CLIENT_BEARER_TOKEN: TEST_TOKEN,
      A2A_RATE_LIMIT_MAX_STREAMS: "0",
    },
  });
  ({ model, gw } = stack);
  // The peer: another gateway on 127.0.0.1 in front of the same OpenCode (its own store).
  peer = await startGateway({ OPENCODE_BASE_URL: stack.oc.url, OPENCODE_WORKSPACE_ROOT: stack.oc.workspace, A2A_MCP_ENABLED: "false" }, { upstream: stack.upstream });
}, 120_000);

afterAll(async () => {
  await peer?.close();
  await stack?.close();
}, 30_000);


const toolBlocks = (events: any[]): string[] =>
  events.filter((e) => e?.kind === "artifact-update" && e.artifact?.metadata?.shared?.stream?.block_type === "tool_call").map((e) => JSON.stringify(e.artifact));
const answerText = (events: any[]): string =>
  events
    .filter((e) => e?.kind === "artifact-update" && e.artifact?.metadata?.shared?.stream?.block_type === "text")
    .map((e) => (e.artifact.parts as { kind: string; text?: string }[]).map((p) => p.text ?? "").join(""))
    .join("");
const finalState = (events: any[]): string | undefined => events.filter((e) => e?.kind === "status-update").at(-1)?.status?.state;

describe("a2a_call from inside OpenCode", () => {
  it("the task's model calls the peer; the answer comes back as the tool's output and into the final text", async () => {
    model.script(tool("a2a_a2a_call", { url: peer.url, message: "What is the secret word?" }), text("The secret word is pelican."), text("The peer says: pelican."));
    const events = await streamText(gw.url, "ask the peer for the secret word");
    expect(finalState(events), JSON.stringify(events.at(-1))).toBe("completed");
    expect(model.pending()).toBe(0);
    // OpenCode offered the gateway's tools to the model.
    const tools = (model.chatRequests()[0]!.body as { tools?: { function?: { name?: string } }[] }).tools?.map((t) => t.function?.name) ?? [];
    expect(tools).toEqual(expect.arrayContaining(["a2a_a2a_call", "a2a_a2a_discover"]));
    const blocks = toolBlocks(events);
    expect(blocks.some((b) => b.includes("a2a_a2a_call") && b.includes("The secret word is pelican."))).toBe(true);
    expect(answerText(events)).toContain("The peer says: pelican.");
    // The tool result the model read is the peer's answer.
    expect(JSON.stringify(model.toolResults(model.chatRequests().at(-1)!))).toContain("The secret word is pelican.");
    // Audited for the task's owner (admin: A2A_BEARER_TOKEN), with the peer's host.
    await expect
      .poll(async () => (await httpCall(gw.url, "/admin/audit?method=mcp/a2a_call")).body.entries?.[0], { timeout: 5_000 })
      .toMatchObject({ principal: "admin", credential_id: "opencode-mcp", outcome: "ok", peer: new URL(peer.url).host });
  }, 120_000);

  it("a peer's question comes back to the agent as input-required with the peer's task id", async () => {
    model.script(
      tool("a2a_a2a_call", { url: peer.url, message: "Plan a trip." }),
      tool("question", { questions: [{ question: "Which city?", header: "City", options: [{ label: "Paris", description: "Paris" }] }] }),
      text("The peer wants to know the city."),
    );
    const events = await streamText(gw.url, "plan a trip through the peer");
    expect(finalState(events)).toBe("completed");
    const blocks = toolBlocks(events).filter((b) => b.includes("a2a_a2a_call"));
    const output = blocks.find((b) => b.includes("input-required")) ?? "";
    expect(output).toContain("Which city?");
    expect(output).toMatch(/task_id/);
    expect(answerText(events)).toContain("The peer wants to know the city.");
  }, 120_000);

  it("a call the network policy refuses comes back to the agent as a2a_target_refused", async () => {
    model.script(tool("a2a_a2a_call", { url: "http://10.0.0.1:9/", message: "hello" }), text("The call was refused."));
    const events = await streamText(gw.url, "call a host that is not allowed");
    expect(finalState(events)).toBe("completed");
    expect(toolBlocks(events).some((b) => b.includes("a2a_target_refused"))).toBe(true);
    expect(JSON.stringify(model.toolResults(model.chatRequests().at(-1)!))).toContain("a2a_target_refused");
    await expect
      .poll(async () => (await httpCall(gw.url, "/admin/audit?method=mcp/a2a_call&outcome=error")).body.entries?.[0], { timeout: 5_000 })
      .toMatchObject({ error_reason: "a2a_target_refused", peer: "10.0.0.1:9" });
  }, 120_000);
});
