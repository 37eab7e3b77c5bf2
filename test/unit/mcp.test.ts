// Unit checks of src/mcp: the tool schemas taken from the contract, the OpenCode credential (resolver wrapper,
// loopback-only, its config block), the input matching of the attribution, the managed config merge, and the
// endpoint's refusal of the OpenCode credential from a non-loopback address.
import { describe, expect, it } from "vitest";
import type { Context } from "koa";
import type { CredentialResolver, Principal } from "../../src/auth/index.js";
import { A2AError } from "../../src/contract/errors.js";
import { CallAttribution, canonical, sameTool } from "../../src/mcp/attribution.js";
import { generateMcpToken, isLoopback, isOpencodeCaller, OPENCODE_CALLER, opencodeMcpConfig, withOpencodeCredential } from "../../src/mcp/credential.js";
import { McpEndpoint, toolList } from "../../src/mcp/endpoint.js";
import { toolSchema } from "../../src/mcp/schemas.js";
import { peerHost } from "../../src/mcp/tools.js";
import { MessagingTools, sendParams } from "../../src/mcp/messages-tools.js";
import { loadClientSettings } from "../../src/config/client-settings.js";
import { mergedConfigContent } from "../../src/upstream/index.js";

const TOKEN = "mcp-unit-token-0123456789abcdef";
const someone: Principal = { id: "alice", credentialId: "a", trustLevel: "autonomous", scopes: new Set(["peers.call"]), admin: false };
const registry: CredentialResolver = {
  schemes: [{ name: "bearerAuth", kind: "bearer" }],
  resolve: (headers) => (headers.authorization === "Bearer alice-secret" ? someone : null),
};

describe("tool schemas", () => {
  it("come from the generated contract, self-contained and closed", () => {
    const input = toolSchema("A2aCallInput");
    expect(input).toMatchObject({ type: "object", required: ["url", "message"], additionalProperties: false });
    expect(input).not.toHaveProperty("$schema");
    expect(input).not.toHaveProperty("unevaluatedProperties");
    const result = toolSchema("A2aCallResult");
    expect(JSON.stringify(result)).not.toContain("$ref");
    expect((result.properties as Record<string, { anyOf?: unknown[] }>).state!.anyOf!.length).toBeGreaterThan(3);
    const discover = toolSchema("A2aDiscoverResult");
    expect(JSON.stringify(discover)).not.toContain("$ref");
    expect(toolList().map((t) => t.name)).toEqual(["a2a_call", "a2a_discover"]);
  });
});

describe("the OpenCode credential", () => {
  it("resolves to the OpenCode principal (peers.call only); other credentials pass through", () => {
    const auth = withOpencodeCredential(registry, TOKEN);
    expect(auth.resolve({ authorization: `Bearer ${TOKEN}` })).toBe(OPENCODE_CALLER);
    expect(isOpencodeCaller(OPENCODE_CALLER)).toBe(true);
    expect([...OPENCODE_CALLER.scopes]).toEqual(["peers.call"]);
    expect(auth.resolve({ authorization: "Bearer alice-secret" })).toBe(someone);
    expect(isOpencodeCaller(someone)).toBe(false);
    expect(auth.resolve({ authorization: `Bearer ${TOKEN}x` })).toBeNull();
    expect(auth.resolve({})).toBeNull();
    expect(auth.schemes).toEqual(registry.schemes);
  });

  it("a principal named `opencode` is not the OpenCode credential", () => {
    expect(isOpencodeCaller({ ...OPENCODE_CALLER })).toBe(false);
  });

  it("loopback addresses only", () => {
    for (const a of ["127.0.0.1", "127.3.2.1", "::1", "::ffff:127.0.0.1"]) expect(isLoopback(a), a).toBe(true);
    for (const a of ["10.0.0.1", "192.168.1.2", "::ffff:10.0.0.1", "fe80::1", "", undefined]) expect(isLoopback(a), String(a)).toBe(false);
  });

  it("a generated token is long and random", () => {
    const a = generateMcpToken();
    expect(a.length).toBeGreaterThan(40);
    expect(a).not.toBe(generateMcpToken());
  });

  it("OpenCode's config block names the gateway's /mcp with the token, without OAuth", () => {
    expect(opencodeMcpConfig("http://127.0.0.1:8000/", TOKEN)).toEqual({
      mcp: { a2a: { type: "remote", url: "http://127.0.0.1:8000/mcp", oauth: false, enabled: true, timeout: 600_000, headers: { Authorization: `Bearer ${TOKEN}` } } },
    });
  });

  it("is merged into the environment's OPENCODE_CONFIG_CONTENT", () => {
    const block = opencodeMcpConfig("http://127.0.0.1:1", TOKEN);
    const merged = JSON.parse(mergedConfigContent(JSON.stringify({ model: "x/y", mcp: { other: { type: "local" } } }), block)) as Record<string, any>;
    expect(merged.model).toBe("x/y");
    expect(Object.keys(merged.mcp).sort()).toEqual(["a2a", "other"]);
    expect(JSON.parse(mergedConfigContent(undefined, block))).toEqual(block);
    expect(JSON.parse(mergedConfigContent("not json", block))).toEqual(block);
  });

  it("from a non-loopback address the endpoint refuses it (UNAUTHENTICATED) before any MCP", async () => {
    const endpoint = new McpEndpoint({ settings: loadClientSettings({}), log: { warn: () => undefined, debug: () => undefined } });
    const ctx = { state: { principal: OPENCODE_CALLER, line: "1.0", rawBody: Buffer.from("{}") }, req: { socket: { remoteAddress: "10.1.2.3" } } } as unknown as Context;
    const refused = await endpoint.handle(ctx).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(A2AError);
    expect((refused as A2AError).reason).toBe("UNAUTHENTICATED");
    await endpoint.close();
  });
});

describe("attribution helpers", () => {
  it("inputs compare by value, whatever the key order", () => {
    expect(canonical({ url: "u", message: "m" })).toBe(canonical({ message: "m", url: "u" }));
    expect(canonical({ url: "u", message: "m" })).not.toBe(canonical({ url: "u", message: "m2" }));
    expect(canonical({ a: undefined, b: [1, { c: 2 }] })).toBe(canonical({ b: [1, { c: 2 }] }));
  });

  it("OpenCode's tool names are <server>_<tool>", () => {
    expect(sameTool("a2a_a2a_call", "a2a_call")).toBe(true);
    expect(sameTool("peers_a2a_call", "a2a_call")).toBe(true);
    expect(sameTool("a2a_call", "a2a_call")).toBe(true);
    expect(sameTool("a2a_a2a_discover", "a2a_call")).toBe(false);
    expect(sameTool("xa2a_call", "a2a_call")).toBe(false);
  });

  it("the audited peer is the URL's host only", () => {
    expect(peerHost({ url: "https://user:pw@agent.example:8443/a/b?q=1" })).toBe("agent.example:8443");
    expect(peerHost({ url: "not a url" })).toBeUndefined();
    expect(peerHost(undefined)).toBeUndefined();
  });
});

describe("send-message defaults (A2A_MESSAGES_TOOL_DEFAULTS)", () => {
  const defaults = { session: "ses_fixed", draft: true, await_reply: true, await_timeout_seconds: 30 };
  it("apply to a call that names no target", () => {
    expect(sendParams(defaults, { message: "hi" })).toEqual({ message: "hi", session: "ses_fixed", draft: true, await_reply: true, await_timeout_seconds: 30 });
  });
  it("the target defaults give way to any target of the call (session, fork, reply)", () => {
    expect(sendParams(defaults, { message: "hi", fork: 2 })).toEqual({ message: "hi", fork: 2, draft: true, await_reply: true, await_timeout_seconds: 30 });
    expect(sendParams(defaults, { message: "hi", reply: "m1" })).not.toHaveProperty("session");
    expect(sendParams({ fork: true }, { message: "hi", session: "new" })).toEqual({ message: "hi", session: "new" });
  });
  it("iterating a draft takes neither a target nor a draft default (absent keeps the draft)", () => {
    expect(sendParams(defaults, { message: "v2", iterate: true, id: "m1" })).toEqual({ message: "v2", iterate: true, id: "m1", await_reply: true, await_timeout_seconds: 30 });
  });
  it("what the call gives wins", () => {
    expect(sendParams(defaults, { message: "hi", draft: false, await_reply: false })).toMatchObject({ draft: false, await_reply: false });
    expect(sendParams(undefined, { message: "hi" })).toEqual({ message: "hi" });
  });
});

describe("send-message awaiting a reply", () => {
  const alice: Principal = { id: "alice", credentialId: "a", trustLevel: "autonomous", scopes: new Set(["sessions.control"]), admin: false };
  /** A service whose send answers after `ms` (the wait of a reply); the real one is tested over the stub and OpenCode. */
  const slow = (ms: number) =>
    ({
      send: async (_sender: unknown, params: { message: string }) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { message: { id: "m1", created_at: "1", updated_at: "1", from: "ses_a", to: "ses_b", in_reply_to: null, draft: false, buffered: false, accepted_at: null, accepted_by: null, initial: params.message, message: params.message, delivered_at: "2" } };
      },
      buffer: async () => ({ session: "ses_a", messages: [] }),
      listSessions: async () => ({ sessions: [] }),
    }) as unknown as ConstructorParameters<typeof MessagingTools>[0]["service"];
  const tools = (ms: number) =>
    new MessagingTools({ service: slow(ms), enabled: ["send-message"], defaults: {}, defaultSession: "new", rootRouting: {}, reroute: () => ({}), heartbeatMs: 20 });

  it("reports progress while it waits, and stops when the answer is there", async () => {
    const lines: string[] = [];
    const result = await tools(150).call("send-message", { message: "hi", await_reply: true }, { principal: alice }, "1.0", new AbortController().signal, (l) => lines.push(l));
    expect(result.isError).toBeFalsy();
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.every((l) => l === "waiting for the reply…")).toBe(true);
    const after = lines.length;
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(lines.length).toBe(after);
  });

  it("says nothing for a send that does not wait", async () => {
    const lines: string[] = [];
    await tools(100).call("send-message", { message: "hi" }, { principal: alice }, "1.0", new AbortController().signal, (l) => lines.push(l));
    expect(lines).toEqual([]);
  });
});

describe("attribution of a call whose answer depends on the calling session", () => {
  const principal = (id: string): Principal => ({ id, credentialId: "opencode-mcp", trustLevel: "autonomous", scopes: new Set(["sessions.control"]), admin: false });
  const part = (session: string, callID: string, input: unknown) => ({ type: "tool", sessionID: session, callID, tool: "a2a_buffer", state: { status: "running", input } });
  /** OpenCode's latest messages per session (what the attribution reads first); the event stream stays silent. */
  function attribution(parts: Record<string, unknown[]>): CallAttribution {
    const upstream = { call: async (_op: string, _invoke: unknown, opts: { sessionId?: string }) => [{ parts: parts[opts.sessionId ?? ""] ?? [] }] };
    const hub = { subscribe: () => ({ ready: async () => undefined, next: () => new Promise(() => undefined), close: () => undefined }) };
    const callers = ["ses_alice", "ses_bob"].map((sessionId) => ({ sessionId, principal: principal(sessionId.slice(4)), routing: {} }));
    return new CallAttribution({ callers: () => callers, hub: hub as never, upstream: upstream as never, waitMs: 50 });
  }

  it("two sessions with the same running call at once: given up (rivals named), the claim released", async () => {
    const parts = { ses_alice: [part("ses_alice", "c1", {})], ses_bob: [part("ses_bob", "c2", {})] };
    const found = await attribution(parts).attribute("buffer", {}, undefined, true);
    expect(found?.sessionId).toBe("ses_alice");
    expect(found?.rivals).toEqual(["ses_bob"]);
    // without `exclusive` (a2a_call: the answer does not depend on the session) the first match stands
    expect((await attribution(parts).attribute("buffer", {}))?.rivals).toBeUndefined();
  });

  it("one session with the call: matched, and that part never vouches twice", async () => {
    const one = attribution({ ses_alice: [part("ses_alice", "c1", { accept: "oldest" })], ses_bob: [part("ses_bob", "c2", {})] });
    const found = await one.attribute("buffer", { accept: "oldest" }, undefined, true);
    expect(found).toMatchObject({ sessionId: "ses_alice", callId: "c1", caller: { principal: { id: "alice" } } });
    expect(found?.rivals).toBeUndefined();
    expect(await one.attribute("buffer", { accept: "oldest" }, undefined, true)).toBeUndefined();
  });
});
