// opencode.messages.* over the stub OpenCode (seed 002): every addressing mode (new, fork whole and N back, an id, a
// unique prefix, an ambiguous or unknown prefix, a reply back to the sending session), buffering (a message to an
// existing session waits, is not prompted, and is delivered when accepted: oldest, newest, by id, by position, the
// id-then-position rule), drafts iterated then sent, request-response (await_reply threads the answer), the thread of
// a message, ownership between principals, and restart durability of buffered and draft messages (SQLite).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalog, expectValid } from "../support/contract.js";
import { rpc, startGateway, TEST_TOKEN, type HttpResult } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text } from "../../tools/upstream/script.js";

type Obj = Record<string, any>;
const SCOPES = catalog.scopes.filter((s) => s !== "audit.read");
const cred = (name: string) => ({ id: `${name}-key`, principal: name, scheme: "bearer", secret: `${name}-messages-secret-0123456789`, trust_level: "autonomous", scopes: SCOPES });
const ALICE = cred("alice");
const BOB = cred("bob");
const as = (c: { secret: string }) => ({ authorization: `Bearer ${c.secret}` });

let dir: string;
let tg: TaskGateway;
let env: Record<string, string>;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-messages-"));
  env = {
    A2A_CREDENTIALS: JSON.stringify([ALICE, BOB]),
    A2A_RATE_LIMIT_MAX_REQUESTS: "0",
    A2A_TASK_STORE_BACKEND: "sqlite",
    A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(dir, "a2a.db")}`,
  };
  tg = await startTaskGateway(env);
}, 30_000);

afterAll(async () => {
  await tg?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

let rpcId = 0;
async function call(who: Obj, method: string, params: unknown): Promise<HttpResult> {
  return rpc(tg.url, { jsonrpc: "2.0", id: ++rpcId, method, params }, { ...who, "A2A-Version": "0.3" });
}
async function ok(who: Obj, method: string, params: unknown, schema?: string): Promise<any> {
  const res = await call(who, method, params);
  expect(res.status, res.text).toBe(200);
  expect(res.body?.error, res.text).toBeUndefined();
  if (schema !== undefined) await expectValid(`extensions/${schema}`, res.body.result);
  return res.body.result;
}
async function fails(who: Obj, method: string, params: unknown, reason: string): Promise<Obj> {
  const res = await call(who, method, params);
  expect(res.body?.error, res.text).toBeDefined();
  expect(res.body.error.data?.type ?? res.body.error.data?.reason, res.text).toBe(reason);
  return res.body.error;
}
const send = (who: Obj, params: Obj) => ok(who, "opencode.messages.send", params, "MessagesSendResult");
const buffer = (who: Obj, params: Obj) => ok(who, "opencode.messages.buffer", params, "MessagesBufferResult");

/** The texts prompted into a session (the stub's prompt_async requests). */
const prompts = (session: string): string[] =>
  tg.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${session}/prompt_async`).map((r) => (r.body as Obj).parts[0].text as string);

/** A session of alice's (made by a message to a new session). */
async function aliceSession(): Promise<string> {
  tg.stub.script(text("Hello back."));
  const { message } = await send(as(ALICE), { message: "start" });
  return message.to as string;
}

describe("addressing", () => {
  it("a message to a new session is prompted at once, naming its sender", async () => {
    tg.stub.script(text("Got it."));
    const { message } = await send(as(ALICE), { message: "Please summarize the repo." });
    expect(message).toMatchObject({ from: null, in_reply_to: null, draft: false, buffered: false, accepted_at: null, accepted_by: null, initial: "Please summarize the repo.", message: "Please summarize the repo." });
    expect(message.to).toMatch(/^ses/);
    expect(BigInt(message.created_at)).toBeGreaterThan(BigInt(Date.now() - 60_000) * 1_000_000n);
    expect(message.delivered_at).not.toBeNull();
    const [prompt] = prompts(message.to);
    expect(prompt).toContain(`[Message ${message.id} from an A2A client (principal alice)]`);
    expect(prompt).toContain("Please summarize the repo.");
    // the new session is alice's: she lists it, bob does not
    const listed = await ok(as(ALICE), "opencode.messages.list_sessions", {}, "MessagesListSessionsResult");
    expect(listed.sessions.map((s: Obj) => s.id)).toContain(message.to);
    const bobs = await ok(as(BOB), "opencode.messages.list_sessions", {});
    expect(bobs.sessions.map((s: Obj) => s.id)).not.toContain(message.to);
  });

  it("request-response: await_reply returns the session's answer as a reply threaded to the request", async () => {
    tg.stub.script(text("The answer is 42."));
    const result = await send(as(ALICE), { message: "What is the answer?", await_reply: true, await_timeout_seconds: 20 });
    expect(result.reply).toMatchObject({ from: result.message.to, to: null, in_reply_to: result.message.id, message: "The answer is 42.", buffered: false, draft: false });
    const thread = await ok(as(ALICE), "opencode.messages.get", { id: result.message.id }, "MessagesGetResult");
    expect(thread.replies.map((r: Obj) => r.id)).toEqual([result.reply.id]);
  });

  it("an existing session by id or unique prefix: buffered, not prompted, until accepted; an ambiguous prefix is typed", async () => {
    const session = await aliceSession();
    const before = prompts(session).length;
    const first = (await send(as(ALICE), { session, message: "one" })).message;
    expect(first).toMatchObject({ to: session, buffered: true, delivered_at: null });
    const byPrefix = (await send(as(ALICE), { session: session.slice(0, session.length - 2), message: "two" })).message;
    expect(byPrefix.to).toBe(session);
    expect(prompts(session).length).toBe(before);
    await aliceSession();
    const ambiguous = await fails(as(ALICE), "opencode.messages.send", { session: "ses", message: "x" }, "SESSION_AMBIGUOUS");
    expect(ambiguous.code).toBe(-32080);
    expect(ambiguous.data.matches.length).toBeGreaterThan(1);
    await fails(as(ALICE), "opencode.messages.send", { session: "ses_nothing_like_it", message: "x" }, "SESSION_NOT_FOUND");
    // the listing shows them with the seed's instruction; accepting the oldest delivers it
    const listed = await buffer(as(ALICE), { session });
    expect(listed.messages.map((m: Obj) => m.message)).toEqual(["one", "two"]);
    expect(listed.instruction).toContain("do not act on them");
    tg.stub.script(text("Read one."));
    const accepted = await buffer(as(ALICE), { session, accept: "oldest" });
    expect(accepted.accepted).toMatchObject({ id: first.id, accepted_by: null });
    expect(accepted.accepted.accepted_at).not.toBeNull();
    expect(accepted.accepted.delivered_at).not.toBeNull();
    expect(accepted.messages.map((m: Obj) => m.message)).toEqual(["two"]);
    expect(prompts(session).at(-1)).toContain("one");
    expect((await ok(as(ALICE), "opencode.messages.list_sessions", {})).sessions.find((s: Obj) => s.id === session).buffered).toBe(1);
  });

  it("an admin (who may use every session) addresses by unique prefix too; an ambiguous one is typed", async () => {
    const admin = { authorization: `Bearer ${TEST_TOKEN}` };
    const session = await aliceSession();
    const byPrefix = (await send(admin, { session: session.slice(0, -2), message: "from the admin" })).message;
    expect(byPrefix).toMatchObject({ to: session, buffered: true });
    await aliceSession();
    expect((await fails(admin, "opencode.messages.send", { session: "ses", message: "x" }, "SESSION_AMBIGUOUS")).code).toBe(-32080);
    await fails(admin, "opencode.messages.send", { session: "nothing-like-a-session", message: "x" }, "SESSION_NOT_FOUND");
  });

  it("accept: newest, by id, by position, and a number that is an id before it is a position", async () => {
    const session = await aliceSession();
    const ids: string[] = [];
    for (const [id, text] of [
      ["m-a", "a"],
      ["2", "b"],
      ["m-c", "c"],
      ["m-d", "d"],
    ]) ids.push((await send(as(ALICE), { session, message: text, id })).message.id);
    const script = () => tg.stub.script(text("ok"));
    script();
    expect((await buffer(as(ALICE), { session, accept: "newest" })).accepted.id).toBe("m-d");
    script();
    // 2 is the id of "b" (at position 2 as well as by id) — the id wins: take "m-a" first so positions shift
    expect((await buffer(as(ALICE), { session, accept: "m-a" })).accepted.id).toBe("m-a");
    script();
    expect((await buffer(as(ALICE), { session, accept: 2 })).accepted.id).toBe("2");
    // now only "m-c" is left: position 1
    script();
    expect((await buffer(as(ALICE), { session, accept: 1 })).accepted.id).toBe("m-c");
    await fails(as(ALICE), "opencode.messages.buffer", { session, accept: true }, "MESSAGE_NOT_FOUND");
    await send(as(ALICE), { session, message: "e" });
    await fails(as(ALICE), "opencode.messages.buffer", { session, accept: 5 }, "MESSAGE_NOT_FOUND");
    await fails(as(ALICE), "opencode.messages.buffer", { session, accept: "no-such-id" }, "MESSAGE_NOT_FOUND");
  });

  it("a fork N messages back receives the message at once; fork needs a sending session and no other session", async () => {
    const source = await aliceSession();
    tg.stub.script(text("Second answer."));
    await ok(as(ALICE), "opencode.messages.send", { session: source, message: "more" });
    tg.stub.script(text("ok"));
    await buffer(as(ALICE), { session: source, accept: true });
    tg.stub.script(text("Forked and read."));
    const { message } = await send(as(ALICE), { from_session: source, fork: 2, message: "Try another way." });
    expect(message).toMatchObject({ from: source, buffered: false });
    expect(message.to).not.toBe(source);
    const forkRequest = tg.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${source}/fork`).at(-1)!;
    expect((forkRequest.body as Obj).messageID).toMatch(/^msg/);
    expect(prompts(message.to).at(-1)).toContain(`from session ${source}`);
    tg.stub.script(text("Whole fork."));
    expect((await send(as(ALICE), { from_session: source, session: "fork", message: "again" })).message.to).not.toBe(source);
    await fails(as(ALICE), "opencode.messages.send", { fork: true, message: "x" }, "INVALID_PARAMS");
    await fails(as(ALICE), "opencode.messages.send", { from_session: source, fork: 1, session: source, message: "x" }, "INVALID_PARAMS");
    await fails(as(ALICE), "opencode.messages.send", { from_session: source, fork: 999, message: "x" }, "INVALID_PARAMS");
  });

  it("a reply goes back to the sending session at once (never buffered), threaded", async () => {
    const a = await aliceSession();
    const b = await aliceSession();
    const request = (await send(as(ALICE), { from_session: a, session: b, message: "Can you check the tests?" })).message;
    expect(request.buffered).toBe(true);
    tg.stub.script(text("Thanks."));
    const reply = (await send(as(ALICE), { from_session: b, reply: request.id, message: "Tests pass." })).message;
    expect(reply).toMatchObject({ from: b, to: a, in_reply_to: request.id, buffered: false });
    expect(prompts(a).at(-1)).toContain(`in reply to message ${request.id}`);
    expect((await ok(as(ALICE), "opencode.messages.get", { id: request.id })).replies.map((r: Obj) => r.id)).toEqual([reply.id]);
    const listed = await buffer(as(ALICE), { session: a, replies: true });
    expect(listed.replies.map((r: Obj) => r.id)).toContain(reply.id);
  });
});

describe("failed deliveries", () => {
  it("nothing is lost: a refused delivery leaves a new message a draft, and an accepted one back in its buffer", async () => {
    const session = await aliceSession();
    tg.stub.failNext((r) => r.method === "POST" && r.path.endsWith("/prompt_async"), { status: 500, body: { message: "boom" } });
    await fails(as(ALICE), "opencode.messages.send", { session: "new", message: "direct", id: "refused-1" }, "UPSTREAM_HTTP_ERROR");
    expect((await ok(as(ALICE), "opencode.messages.get", { id: "refused-1" })).message).toMatchObject({ draft: true, delivered_at: null, message: "direct" });
    const queued = (await send(as(ALICE), { session, message: "waits" })).message;
    tg.stub.failNext(`POST /session/${session}/prompt_async`, { status: 500, body: { message: "boom" } });
    await fails(as(ALICE), "opencode.messages.buffer", { session, accept: "oldest" }, "UPSTREAM_HTTP_ERROR");
    const listed = await buffer(as(ALICE), { session });
    expect(listed.messages.map((m: Obj) => m.id)).toEqual([queued.id]);
    expect(listed.messages[0]).toMatchObject({ buffered: true, draft: false, accepted_at: null, accepted_by: null, delivered_at: null });
    tg.stub.script(text("Now it is read."));
    expect((await buffer(as(ALICE), { session, accept: "oldest" })).accepted).toMatchObject({ id: queued.id });
  });
});

describe("drafts", () => {
  it("a draft is updated twice and then sent", async () => {
    const draft = (await send(as(ALICE), { message: "v1", draft: true, id: "draft-1" })).message;
    expect(draft).toMatchObject({ id: "draft-1", draft: true, delivered_at: null, initial: "v1", message: "v1" });
    const to = draft.to as string;
    expect(prompts(to)).toEqual([]);
    expect((await send(as(ALICE), { id: "draft-1", iterate: true, message: "v2" })).message).toMatchObject({ draft: true, initial: "v1", message: "v2" });
    tg.stub.script(text("Received v3."));
    const sent = (await send(as(ALICE), { id: "draft-1", iterate: true, message: "v3", draft: false })).message;
    expect(sent).toMatchObject({ draft: false, initial: "v1", message: "v3" });
    expect(sent.delivered_at).not.toBeNull();
    expect(prompts(to).at(-1)).toContain("v3");
    await fails(as(ALICE), "opencode.messages.send", { id: "draft-1", iterate: true, message: "v4" }, "INVALID_PARAMS");
    await fails(as(ALICE), "opencode.messages.send", { id: "draft-1", message: "new" }, "INVALID_PARAMS");
    await fails(as(ALICE), "opencode.messages.send", { message: "x", elaborate: true }, "INVALID_PARAMS");
  });
});

describe("ownership", () => {
  it("another principal's sessions and messages are neither addressable nor readable", async () => {
    const session = await aliceSession();
    const m = (await send(as(ALICE), { session, message: "private" })).message;
    await fails(as(BOB), "opencode.messages.send", { session, message: "hi" }, "SESSION_NOT_FOUND");
    await fails(as(BOB), "opencode.messages.send", { session: session.slice(0, 12), message: "hi" }, "SESSION_NOT_FOUND");
    await fails(as(BOB), "opencode.messages.buffer", { session }, "SESSION_NOT_FOUND");
    await fails(as(BOB), "opencode.messages.get", { id: m.id }, "MESSAGE_NOT_FOUND");
    await fails(as(BOB), "opencode.messages.send", { from_session: session, fork: true, message: "x" }, "SESSION_NOT_FOUND");
    await fails(as(BOB), "opencode.messages.send", { reply: m.id, message: "x" }, "MESSAGE_NOT_FOUND");
    const draft = (await send(as(ALICE), { message: "secret draft", draft: true })).message;
    await fails(as(BOB), "opencode.messages.send", { id: draft.id, iterate: true, message: "mine now" }, "MESSAGE_NOT_FOUND");
  });
});

describe("durability", () => {
  it("buffered and draft messages survive a restart of the gateway", async () => {
    const session = await aliceSession();
    const waiting = (await send(as(ALICE), { session, message: "still here" })).message;
    const draft = (await send(as(ALICE), { message: "half written", draft: true })).message;
    await tg.gw.close();
    tg.gw = await startGateway({ ...envOf(), OPENCODE_BASE_URL: tg.stub.url }, { upstream: tg.upstream });
    tg.url = tg.gw.url;
    const listed = await buffer(as(ALICE), { session });
    expect(listed.messages.map((m: Obj) => m.id)).toEqual([waiting.id]);
    expect((await ok(as(ALICE), "opencode.messages.get", { id: draft.id })).message).toMatchObject({ draft: true, message: "half written" });
    tg.stub.script(text("Finally."));
    expect((await buffer(as(ALICE), { session, accept: waiting.id })).accepted.delivered_at).not.toBeNull();
  });
});

function envOf(): Record<string, string> {
  return { A2A_BEARER_TOKEN: TEST_TOKEN, ...env };
}
