// e2e: opencode.messages.* and the messaging MCP tools against the real `opencode serve` (hermetic, scripted model;
// one server for the file). OpenCode's config names the gateway's MCP endpoint as the server `a2a` with the OpenCode
// credential. Sessions, their messages and their activity are read from OpenCode itself. Checked:
//   - a send to `new` with await_reply: the new session's answer comes back as a reply threaded to the request;
//   - a message to an existing session waits in its buffer (not prompted) until accepted by position, id, newest,
//     oldest; each accept delivers exactly that message (the listing is oldest first, with the instruction);
//   - a fork 2 messages back holds the session's history without its last 2 messages, then the delivered message;
//   - a draft iterated twice is never delivered until sent; the session receives the last text, `initial` the first;
//   - an agent's `a2a_send-message` (await_reply) asks a new session and reads its answer (audited for the task's
//     owner and session); an agent's `a2a_buffer` accepts another session's message (accepted_by = its session);
//   - a unique id prefix addresses its session; an ambiguous one is SESSION_AMBIGUOUS (-32080) with the matches.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelServer } from "../../tools/upstream/model-server.js";
import { text, tool } from "../../tools/upstream/script.js";
import { expectValid } from "../support/contract.js";
import { call as httpCall, rpc, type HttpResult, type StartedGateway } from "../support/gateway.js";
import { streamText } from "../support/mcp.js";
import { startRealStack, type RealStack } from "../support/stack.js";

type Obj = Record<string, any>;
let stack: RealStack;
let model: ModelServer;
let gw: StartedGateway;

beforeAll(async () => {
  stack = await startRealStack({ mcpToken: `e2e-mcp-${randomUUID()}`, env: { A2A_RATE_LIMIT_MAX_STREAMS: "0" } });
  ({ model, gw } = stack);
}, 120_000);

afterAll(async () => {
  await stack?.close();
}, 30_000);

let rpcId = 0;
const call = (method: string, params: Obj): Promise<HttpResult> => rpc(gw.url, { jsonrpc: "2.0", id: ++rpcId, method, params }, { "A2A-Version": "0.3" });
async function ok(method: string, params: Obj, schema: string): Promise<Obj> {
  const res = await call(method, params);
  expect(res.status, res.text).toBe(200);
  expect(res.body?.error, res.text).toBeUndefined();
  await expectValid(`extensions/${schema}`, res.body.result);
  return res.body.result;
}
const send = (params: Obj) => ok("opencode.messages.send", params, "MessagesSendResult");
const buffer = (params: Obj) => ok("opencode.messages.buffer", params, "MessagesBufferResult");
const get = (id: string) => ok("opencode.messages.get", { id }, "MessagesGetResult");

/** GET on the real OpenCode, in the workspace the gateway routes to. */
const upstream = async (path: string): Promise<any> => (await fetch(`${stack.oc.url}${path}?directory=${encodeURIComponent(stack.oc.workspace)}`)).json();
const messagesOf = (session: string): Promise<Obj[]> => upstream(`/session/${session}/message`);
const textOf = (messages: Obj[]): string => messages.flatMap((m) => (m.parts as Obj[]).filter((p) => p.type === "text").map((p) => p.text as string)).join("\n");

/** Waits until the session holds at least `count` messages, the last an answered assistant one, and is not busy. */
async function settled(session: string, count: number): Promise<Obj[]> {
  await expect
    .poll(
      async () => {
        const [status, messages] = await Promise.all([upstream("/session/status"), messagesOf(session)]);
        const last = messages.at(-1)?.info;
        return status[session] === undefined && messages.length >= count && last?.role === "assistant" && last.time?.completed !== undefined;
      },
      { timeout: 30_000, interval: 100 },
    )
    .toBe(true);
  return messagesOf(session);
}

/** A new session that has answered one delivered message (2 messages upstream). */
async function newSession(tag: string): Promise<string> {
  model.script(text(`${tag} is ready`));
  const { reply } = await send({ session: "new", message: `You are ${tag}.`, await_reply: true, await_timeout_seconds: 60 });
  expect(reply?.message).toBe(`${tag} is ready`);
  await settled(reply.from, 2);
  return reply.from as string;
}

const finalState = (events: any[]): string | undefined => events.filter((e) => e?.kind === "status-update").at(-1)?.status?.state;

let C: string;

describe("a message to a new session, awaiting its reply", () => {
  it("the new session answers the delivered prompt; the answer is a reply threaded to the request", async () => {
    model.script(text("The answer is 42."));
    const result = await send({ session: "new", message: "What is the answer?", await_reply: true, await_timeout_seconds: 60 });
    const { message, reply } = result;
    expect(result.awaiting).toBeUndefined();
    expect(message).toMatchObject({ from: null, draft: false, buffered: false, message: "What is the answer?" });
    expect(message.to).toMatch(/^ses/);
    expect(message.delivered_at).not.toBeNull();
    expect(reply).toMatchObject({ in_reply_to: message.id, from: message.to, to: null, message: "The answer is 42." });
    const thread = await get(message.id);
    expect(thread.message.id).toBe(message.id);
    expect(thread.replies.map((r: Obj) => r.id)).toEqual([reply.id]);
    // The new session's own messages: the delivered prompt naming the message, then the answer.
    const own = await settled(message.to, 2);
    expect(own.map((m) => m.info.role)).toEqual(["user", "assistant"]);
    expect(textOf([own[0]!])).toContain(`[Message ${message.id} from an A2A client`);
    expect(textOf([own[0]!])).toContain("What is the answer?");
    expect(textOf([own[1]!])).toContain("The answer is 42.");
    expect(model.chatRequests().at(-1)?.sessionID).toBe(message.to);
    expect(model.pending()).toBe(0);
  }, 120_000);
});

describe("the buffer of an existing session", () => {
  it("messages wait, unprompted, until accepted (position, id, newest, oldest); each accept delivers exactly that one", async () => {
    C = await newSession("session C");
    const before = (await messagesOf(C)).length;
    const texts = [1, 2, 3, 4].map((n) => `Buffered note ${n} ${randomUUID()}`);
    const sent: Obj[] = [];
    for (const t of texts) sent.push((await send({ session: C, message: t })).message);
    for (const [i, m] of sent.entries()) expect(m).toMatchObject({ to: C, buffered: true, delivered_at: null, accepted_at: null, message: texts[i] });
    await new Promise((r) => setTimeout(r, 500));
    expect((await upstream("/session/status"))[C]).toBeUndefined();
    const quiet = await messagesOf(C);
    expect(quiet.length).toBe(before);
    for (const t of texts) expect(textOf(quiet)).not.toContain(t);

    const listed = await buffer({ session: C });
    expect(listed.session).toBe(C);
    expect(listed.messages.map((m: Obj) => m.id)).toEqual(sent.map((m) => m.id));
    expect(listed.accepted).toBeUndefined();
    expect(listed.instruction).toMatch(/buffered messages/i);

    // [accept, index of the message it must take, ids left after]
    const steps: [unknown, number, number[]][] = [
      [3, 2, [0, 1, 3]], // a number: no such id, so position 3 of 4
      [sent[1]!.id, 1, [0, 3]], // an id
      ["newest", 3, [0]],
      ["oldest", 0, []],
    ];
    let count = before;
    for (const [accept, index, left] of steps) {
      model.scriptFor(C, text(`C read note ${index + 1}`));
      const result = await buffer({ session: C, accept });
      expect(result.accepted?.id, `accept ${String(accept)}`).toBe(sent[index]!.id);
      expect(result.accepted.accepted_at).not.toBeNull();
      expect(result.accepted.delivered_at).not.toBeNull();
      expect(result.accepted.accepted_by).toBeNull();
      expect(result.messages.map((m: Obj) => m.id)).toEqual(left.map((i) => sent[i]!.id));
      expect(result.instruction).toBeUndefined();
      count += 2;
      const own = await settled(C, count);
      expect(own.length).toBe(count);
      expect(textOf(own.slice(-2, -1))).toContain(`[Message ${sent[index]!.id} from an A2A client`);
      expect(textOf(own.slice(-2, -1))).toContain(texts[index]);
      expect(textOf(own.slice(-1))).toContain(`C read note ${index + 1}`);
      for (const i of left) expect(textOf(own)).not.toContain(texts[i]);
      const stored = (await get(sent[index]!.id)).message;
      expect(stored).toMatchObject({ buffered: true, accepted_at: result.accepted.accepted_at, delivered_at: result.accepted.delivered_at });
    }
    expect((await buffer({ session: C })).messages).toEqual([]);
    expect(model.pending()).toBe(0);
  }, 120_000);
});

describe("a fork 2 messages back", () => {
  it("the fork holds the session's history without its last 2 messages, then the delivered message", async () => {
    const source = await settled(C, 2);
    model.script(text("The fork read it."));
    const { message } = await send({ fork: 2, from_session: C, message: "Hello, fork." });
    expect(message).toMatchObject({ from: C, buffered: false, draft: false });
    expect(message.to).not.toBe(C);
    expect(message.delivered_at).not.toBeNull();
    const fork = await settled(message.to, source.length);
    // Every message before the 2nd last of C, in order (same roles and texts), then the prompt and its answer.
    expect(fork.length).toBe(source.length);
    const kept = source.slice(0, -2);
    expect(fork.slice(0, -2).map((m) => [m.info.role, textOf([m])])).toEqual(kept.map((m) => [m.info.role, textOf([m])]));
    // Copies with ids of their own, in the fork.
    expect(fork.slice(0, -2).every((m) => m.info.sessionID === message.to)).toBe(true);
    expect(fork.filter((m) => source.some((s) => s.info.id === m.info.id))).toEqual([]);
    expect(textOf(fork.slice(-2, -1))).toContain(`[Message ${message.id} from session ${C}`);
    expect(textOf(fork.slice(-2, -1))).toContain("Hello, fork.");
    expect(textOf(fork.slice(-1))).toContain("The fork read it.");
    expect(textOf(fork)).not.toContain(textOf(source.slice(-2, -1)));
    // The source is untouched.
    expect((await messagesOf(C)).map((m) => m.info.id)).toEqual(source.map((m) => m.info.id));
    expect(model.pending()).toBe(0);
  }, 120_000);
});

describe("a draft updated twice, then sent", () => {
  it("is never delivered while a draft; sent, the session receives the last text and initial keeps the first", async () => {
    const id = `draft-${randomUUID()}`;
    const first = (await send({ session: "new", draft: true, id, message: "Draft one." })).message;
    expect(first).toMatchObject({ id, draft: true, delivered_at: null, initial: "Draft one.", message: "Draft one." });
    const target = first.to as string;
    for (const t of ["Draft two.", "Draft three."]) {
      const m = (await send({ iterate: true, id, message: t })).message;
      expect(m).toMatchObject({ id, to: target, draft: true, delivered_at: null, initial: "Draft one.", message: t });
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(await messagesOf(target)).toEqual([]);
    expect(model.chatRequests().some((r) => r.sessionID === target)).toBe(false);

    model.script(text("Read the final draft."));
    const sentMsg = (await send({ iterate: true, id, draft: false, message: "Draft three." })).message;
    expect(sentMsg).toMatchObject({ id, to: target, draft: false, buffered: false, initial: "Draft one.", message: "Draft three." });
    expect(sentMsg.delivered_at).not.toBeNull();
    const own = await settled(target, 2);
    expect(own.length).toBe(2);
    expect(textOf(own.slice(0, 1))).toContain(`[Message ${id} from an A2A client`);
    expect(textOf(own.slice(0, 1))).toContain("Draft three.");
    expect(textOf(own)).not.toMatch(/Draft one\.|Draft two\./);
    expect((await get(id)).message).toMatchObject({ draft: false, initial: "Draft one.", message: "Draft three." });
    expect(model.pending()).toBe(0);
  }, 120_000);
});

describe("an agent inside OpenCode uses the messaging tools", () => {
  it("send-message with await_reply asks a new session; the agent reads its answer; audited for the task", async () => {
    const ask = tool("a2a_send-message", { session: "new", message: "What colour is the sky?", await_reply: true });
    model.script(ask, text("The sky is blue."), text("The other session says blue."));
    const seen = model.chatRequests().length;
    const events = await streamText(gw.url, "ask another session about the sky");
    expect(finalState(events), JSON.stringify(events.at(-1))).toBe("completed");
    expect(model.pending()).toBe(0);
    const chats = model.chatRequests().slice(seen);
    expect(chats.length).toBe(3);
    const [asking, answering, closing] = chats as [any, any, any];
    expect(asking.reply).toBe(ask);
    const names = (asking.body.tools as Obj[]).map((t) => t.function?.name);
    expect(names).toEqual(expect.arrayContaining(["a2a_send-message", "a2a_buffer", "a2a_list-session"]));
    expect(closing.sessionID).toBe(asking.sessionID);
    expect(answering.sessionID).not.toBe(asking.sessionID);
    expect(model.lastUserText(answering)).toContain(`from session ${asking.sessionID}`);
    const result = JSON.stringify(model.toolResults(closing));
    expect(result).toContain("The sky is blue.");
    expect(result).toContain(`delivered to session ${answering.sessionID}`);
    await expect
      .poll(async () => (await httpCall(gw.url, "/admin/audit?method=mcp/send-message")).body?.entries?.[0], { timeout: 5_000 })
      .toMatchObject({ principal: "admin", credential_id: "opencode-mcp", outcome: "ok", session_id: asking.sessionID });
  }, 120_000);

  it("buffer accepts another session's message: accepted_by is the agent's session, and it is delivered", async () => {
    const D = await newSession("session D");
    const note = `A note for D ${randomUUID()}`;
    const waiting = (await send({ session: D, message: note })).message;
    expect(waiting).toMatchObject({ buffered: true, delivered_at: null });
    const take = tool("a2a_buffer", { session: D, accept: "oldest" });
    model.script(take, text("I accepted the note for D."));
    model.scriptFor(D, text("D read the note."));
    const seen = model.chatRequests().length;
    const events = await streamText(gw.url, "accept the note waiting for session D");
    expect(finalState(events), JSON.stringify(events.at(-1))).toBe("completed");
    const agent = model.chatRequests().slice(seen).find((r) => r.reply === take)?.sessionID;
    expect(agent).toBeDefined();
    expect(agent).not.toBe(D);
    const last = model.chatRequests().filter((r) => r.sessionID === agent).at(-1)!;
    expect(JSON.stringify(model.toolResults(last))).toContain(`Accepted message ${waiting.id}`);
    const stored = (await get(waiting.id)).message;
    expect(stored.accepted_by).toBe(agent);
    expect(stored.accepted_at).not.toBeNull();
    expect(stored.delivered_at).not.toBeNull();
    const own = await settled(D, 4);
    expect(textOf(own.slice(-2, -1))).toContain(`[Message ${waiting.id} from an A2A client`);
    expect(textOf(own.slice(-2, -1))).toContain(note);
    expect(textOf(own.slice(-1))).toContain("D read the note.");
    expect((await buffer({ session: D })).messages).toEqual([]);
    expect(model.pending()).toBe(0);
    await expect
      .poll(async () => (await httpCall(gw.url, "/admin/audit?method=mcp/buffer")).body?.entries?.[0], { timeout: 5_000 })
      .toMatchObject({ principal: "admin", credential_id: "opencode-mcp", outcome: "ok", session_id: agent });
  }, 120_000);
});

describe("addressing by id prefix", () => {
  const sessionIds = async (): Promise<string[]> => ((await ok("opencode.messages.list_sessions", {}, "MessagesListSessionsResult")).sessions as Obj[]).map((s) => s.id as string);

  it("a unique prefix of a session's id names that session", async () => {
    const ids = await sessionIds();
    expect(ids).toContain(C);
    let prefix = C.slice(0, 5);
    while (ids.filter((id) => id.startsWith(prefix)).length > 1) prefix = C.slice(0, prefix.length + 1);
    expect(prefix.length).toBeLessThan(C.length);
    const { message } = await send({ session: prefix, message: "Addressed by a prefix." });
    expect(message).toMatchObject({ to: C, buffered: true });
    expect((await buffer({ session: prefix })).messages.map((m: Obj) => m.id)).toEqual([message.id]);
  }, 120_000);

  it("a prefix several sessions share is SESSION_AMBIGUOUS (-32080) with the matches", async () => {
    const ids = await sessionIds();
    const matching = ids.filter((id) => id.startsWith("ses"));
    expect(matching.length).toBeGreaterThan(2);
    const res = await call("opencode.messages.send", { session: "ses", message: "To whom?" });
    expect(res.body?.result, res.text).toBeUndefined();
    expect(res.body.error.code, res.text).toBe(-32080);
    expect(res.body.error.data.type).toBe("SESSION_AMBIGUOUS");
    const matches = res.body.error.data.matches as string[];
    expect(matches.length).toBe(Math.min(20, matching.length));
    expect(matches.every((id) => matching.includes(id))).toBe(true);
    expect(matches).toContain(C);
  }, 120_000);
});
