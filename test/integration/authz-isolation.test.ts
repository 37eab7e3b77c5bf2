// Isolation by principal (issue 6), over real HTTP with the credential registry and the stub OpenCode:
// principal A's tasks (blocking, non-blocking and still running, waiting on a permission, waiting on a question)
// and OpenCode sessions are invisible to principal B of the same trust level — every answer is the one an unknown
// id gets (TaskNotFound, INTERRUPT_REQUEST_NOT_FOUND, SESSION_NOT_FOUND; never "forbidden") on both lines and both
// transports where the operation exists — while an admin credential sees (and answers) all of them.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MethodEntry, ProtocolLine } from "../../src/contract/catalog.js";
import { catalog, errorInfoOf, expectValid } from "../support/contract.js";
import { call, rpc, TEST_TOKEN, type HttpResult } from "../support/gateway.js";
import { sample } from "../support/samples.js";
import {
  expectError,
  expectOk,
  MODES,
  openSse,
  qs,
  restPrefix,
  RPC_MODES,
  stateOf,
  taskOfSend,
  until,
  userMessage,
  versionHeader,
  type Mode,
  type Reply,
} from "../support/task-wire.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { hang, text, tool } from "../../tools/upstream/script.js";

type Obj = Record<string, any>;
const LINES: ProtocolLine[] = ["0.3", "1.0"];
const ALL_BUT_AUDIT = catalog.scopes.filter((s) => s !== "audit.read");
const cred = (name: string) => ({ id: `${name}-key`, principal: name, scheme: "bearer", secret: `${name}-isolation-secret-0123456789`, trust_level: "autonomous", scopes: ALL_BUT_AUDIT });
const ALICE = cred("alice");
const BOB = cred("bob");
const auth = (c: { secret: string }) => ({ authorization: `Bearer ${c.secret}` });
const ADMIN = { authorization: `Bearer ${TEST_TOKEN}` };
type Who = Record<string, string>;

const METHOD = {
  "0.3": { send: "message/send", get: "tasks/get", list: "tasks/list", cancel: "tasks/cancel", subscribe: "tasks/resubscribe", pushGet: "tasks/pushNotificationConfig/get", pushList: "tasks/pushNotificationConfig/list" },
  "1.0": { send: "SendMessage", get: "GetTask", list: "ListTasks", cancel: "CancelTask", subscribe: "SubscribeToTask", pushGet: "GetTaskPushNotificationConfig", pushList: "ListTaskPushNotificationConfigs" },
} as const;

let rpcId = 0;
async function jsonrpc(url: string, who: Who, line: ProtocolLine, method: string, params: Obj): Promise<Reply> {
  const id = ++rpcId;
  return { ...(await rpc(url, { jsonrpc: "2.0", id, method, params }, { ...who, "A2A-Version": line })), rpcId: id };
}
async function rest(url: string, who: Who, m: Mode, method: string, path: string, body?: unknown): Promise<Reply> {
  return { ...(await call(url, path, { method, headers: { ...who, ...versionHeader(m) }, ...(body === undefined ? {} : { body }) })), rpcId: 0 };
}

type TaskOp = "get" | "cancel" | "subscribe" | "followup" | "pushGet" | "pushList";
/** One task-addressed operation as `who` on mode `m` (subscribe on REST: both verbs, the first answer returned). */
async function taskOp(url: string, who: Who, m: Mode, op: TaskOp, taskId: string): Promise<Reply> {
  const enc = encodeURIComponent(taskId);
  if (m.transport === "jsonrpc") {
    const names = METHOD[m.line];
    switch (op) {
      case "get":
        return jsonrpc(url, who, m.line, names.get, { id: taskId });
      case "cancel":
        return jsonrpc(url, who, m.line, names.cancel, { id: taskId });
      case "subscribe": {
        const id = ++rpcId;
        const sse = await openSse(url, "/", { headers: { ...who, ...versionHeader(m) }, body: { jsonrpc: "2.0", id, method: names.subscribe, params: { id: taskId } }, rpcId: id });
        sse.close();
        return { status: sse.status, headers: sse.headers, text: JSON.stringify(sse.body), body: sse.body, rpcId: id };
      }
      case "followup":
        return jsonrpc(url, who, m.line, names.send, { message: userMessage(m, "blue", { taskId }) });
      case "pushGet":
        return jsonrpc(url, who, m.line, names.pushGet, m.line === "0.3" ? { id: taskId, pushNotificationConfigId: "cfg-1" } : { taskId, id: "cfg-1" });
      case "pushList":
        return jsonrpc(url, who, m.line, names.pushList, m.line === "0.3" ? { id: taskId } : { taskId });
    }
  }
  const p = restPrefix(m);
  switch (op) {
    case "get":
      return rest(url, who, m, "GET", `${p}/tasks/${enc}`);
    case "cancel":
      return rest(url, who, m, "POST", `${p}/tasks/${enc}:cancel`);
    case "subscribe": {
      const answers = [];
      for (const verb of ["GET", "POST"]) {
        const sse = await openSse(url, `${p}/tasks/${enc}:subscribe`, { method: verb, headers: { ...who, ...versionHeader(m) } });
        sse.close();
        answers.push({ status: sse.status, headers: sse.headers, text: JSON.stringify(sse.body), body: sse.body, rpcId: 0 });
      }
      expect(answers[1]!.status).toBe(answers[0]!.status);
      expect(answers[1]!.body).toEqual(answers[0]!.body);
      return answers[0]!;
    }
    case "followup":
      return rest(url, who, m, "POST", `${p}/message:send`, { message: userMessage(m, "blue", { taskId }) });
    case "pushGet":
      return rest(url, who, m, "GET", `${p}/tasks/${enc}/pushNotificationConfigs/cfg-1`);
    case "pushList":
      return rest(url, who, m, "GET", `${p}/tasks/${enc}/pushNotificationConfigs`);
  }
}

/** The reason of an error answer of any mode (undefined for a success). */
async function reasonOf(m: Mode, res: HttpResult): Promise<string | undefined> {
  const b = res.body as Obj | undefined;
  if (m.transport === "jsonrpc") {
    if (b?.error === undefined) return undefined;
    return m.line === "0.3" ? b.error.data?.type : (await errorInfoOf(b.error.data)).reason;
  }
  if (res.status < 400) return undefined;
  return m.line === "0.3" ? b?.data?.type : (await errorInfoOf(b?.error?.details)).reason;
}
/** An error answer without its ids, to compare answers about two different ids. */
function shape(res: HttpResult, ids: string[]): string {
  let t = JSON.stringify({ status: res.status, body: res.body });
  for (const id of ids) t = t.split(id).join("<id>");
  return t.replace(/"id":\d+/g, '"id":0');
}

async function listIds(url: string, who: Who, m: Mode): Promise<string[]> {
  const res =
    m.transport === "jsonrpc"
      ? await jsonrpc(url, who, m.line, METHOD[m.line].list, m.line === "0.3" ? { limit: 100 } : { pageSize: 100 })
      : await rest(url, who, m, "GET", `${restPrefix(m)}/tasks${qs(m.line === "0.3" ? { limit: 100 } : { pageSize: 100 })}`);
  const result = await expectOk(m, res, "list");
  return (result.tasks as Obj[]).map((t) => t.id);
}

// ---- extension calls --------------------------------------------------------------------------------------------------

const byName = (name: string): MethodEntry => catalog.methods.find((m) => m.name === name)!;
async function ext(url: string, who: Who, line: ProtocolLine, name: string, params: Obj): Promise<{ ok: boolean; result?: any; reason?: string; data?: Obj; res: Reply }> {
  const res = await jsonrpc(url, who, line, name, params);
  expect(res.status, res.text).toBe(200);
  if (res.body.error === undefined) return { ok: true, result: res.body.result, res };
  if (line === "0.3") return { ok: false, reason: res.body.error.data.type, data: res.body.error.data, res };
  const info = await errorInfoOf(res.body.error.data);
  return { ok: false, reason: info.reason, data: info.metadata ?? {}, res };
}
const SESSION_METHODS = catalog.methods.filter((m) => (sample(m.params_schema) as Obj).session_id !== undefined);
const SESSION_READS = SESSION_METHODS.filter((m) => m.scope === "sessions.read");
const SESSION_CONTROL = SESSION_METHODS.filter((m) => m.scope !== "sessions.read");

// ---- fixtures -----------------------------------------------------------------------------------------------------------

let tg: TaskGateway;
let stubCommand = "init";
let stubAgent = "build";
interface Fixture {
  blocking: { id: string; contextId: string; session: string; message: string };
  running: { id: string; session: string };
  permission: { id: string; request: string; session: string };
  question: { id: string; request: string; session: string };
}
let A: Fixture;
let bobTask: string;

async function stubSession(title: string): Promise<string> {
  const res = await fetch(`${tg.stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title }) });
  return ((await res.json()) as { id: string }).id;
}
async function firstMessage(session: string): Promise<string> {
  const messages = (await (await fetch(`${tg.stub.url}/session/${session}/message`)).json()) as { info: { id: string } }[];
  return messages[0]!.info.id;
}
const RPC03 = RPC_MODES.find((m) => m.line === "0.3")!;
async function aliceInterrupted(kind: "permission" | "question"): Promise<{ id: string; request: string; session: string }> {
  const session = await stubSession(`alice ${kind}`);
  const ask =
    kind === "permission"
      ? tool("read", { filePath: "/etc/hostname" })
      : tool("question", { questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }] });
  tg.stub.scriptFor(session, ask, text("done"));
  const res = await jsonrpc(tg.url, auth(ALICE), "0.3", "message/send", { message: userMessage(RPC03, "alice asks"), metadata: { shared: { session: { id: session } } } });
  const task = await expectOk(RPC03, res, "send");
  expect(task.status.state, res.text).toBe("input-required");
  expect(task.metadata.shared.interrupt.type).toBe(kind);
  return { id: task.id, request: task.metadata.shared.interrupt.request_id, session };
}

/** Realistic params of a session-scoped method on `session` (the handler's own checks pass). */
function sessionParams(m: MethodEntry, session: string, message: string): Obj {
  const p: Obj = structuredClone(sample(m.params_schema));
  p.session_id = session;
  if ("message_id" in p) p.message_id = message;
  const r = p.request;
  if (r !== null && typeof r === "object") {
    if ("messageID" in r) r.messageID = message;
    if ("agent" in r) r.agent = stubAgent;
    if ("command" in r) r.command = m.name.endsWith(".shell") ? "echo hi" : stubCommand;
    if (m.name.endsWith(".revert")) r.messageID = message;
  }
  return p;
}

beforeAll(async () => {
  tg = await startTaskGateway({
    A2A_CREDENTIALS: JSON.stringify([ALICE, BOB]),
    A2A_ENABLE_SESSION_SHELL: "true",
    A2A_RATE_LIMIT_MAX_REQUESTS: "0",
    A2A_RATE_LIMIT_MAX_STREAMS: "0",
  });
  const commands = (await (await fetch(`${tg.stub.url}/command`)).json()) as { name: string }[];
  const agents = (await (await fetch(`${tg.stub.url}/agent`)).json()) as { name: string; mode: string }[];
  stubCommand = commands[0]!.name;
  stubAgent = agents.find((a) => a.mode === "primary")!.name;

  // A, blocking (its context's session is created for and owned by alice)
  const blockingRes = await jsonrpc(tg.url, auth(ALICE), "0.3", "message/send", { message: userMessage(RPC03, "alice blocking") });
  const blocking = await expectOk(RPC03, blockingRes, "send");
  expect(blocking.status.state).toBe("completed");
  const blockingSession = blocking.metadata.shared.session.id as string;
  // A, non-blocking and still running (1.0 REST, returnImmediately), on a session held by a hanging model reply
  const runningSession = await stubSession("alice running");
  tg.stub.scriptFor(runningSession, hang({ holdMs: 60_000 }));
  const rest10 = MODES.find((m) => m.line === "1.0" && m.transport === "rest")!;
  const runningRes = await rest(tg.url, auth(ALICE), rest10, "POST", "/message:send", {
    message: userMessage(rest10, "alice running"),
    configuration: { returnImmediately: true },
    metadata: { shared: { session: { id: runningSession } } },
  });
  const running = taskOfSend(rest10, await expectOk(rest10, runningRes, "send"));
  expect(stateOf(running)).not.toBe("completed");
  A = {
    blocking: { id: blocking.id, contextId: blocking.contextId, session: blockingSession, message: await firstMessage(blockingSession) },
    running: { id: running.id, session: runningSession },
    permission: await aliceInterrupted("permission"),
    question: await aliceInterrupted("question"),
  };
  // B's own task (positive control)
  const bobRes = await jsonrpc(tg.url, auth(BOB), "0.3", "message/send", { message: userMessage(RPC03, "bob's own") });
  bobTask = (await expectOk(RPC03, bobRes, "send")).id;
});

afterAll(async () => {
  if (A?.running) await jsonrpc(tg.url, auth(ALICE), "0.3", "tasks/cancel", { id: A.running.id }).catch(() => undefined);
  await tg?.close();
});

const aliceTasks = () => [A.blocking.id, A.running.id, A.permission.id, A.question.id];

// ---- tasks ------------------------------------------------------------------------------------------------------------

describe.each(MODES.map((m) => [m.name, m] as const))("tasks on %s", (_name, m) => {
  it("B gets TaskNotFound — the answer an unknown id gets — for get, cancel, subscribe and a follow-up message", async () => {
    for (const op of ["get", "cancel", "subscribe", "followup"] as const) {
      for (const id of aliceTasks()) {
        const theirs = await taskOp(tg.url, auth(BOB), m, op, id);
        await expectError(m, theirs, "TASK_NOT_FOUND");
        const unknown = randomUUID();
        const nobody = await taskOp(tg.url, auth(BOB), m, op, unknown);
        expect(shape(theirs, [id]), `${op} ${id}`).toBe(shape(nobody, [unknown]));
        expect(theirs.text).not.toContain("alice");
      }
    }
  });

  it("B's push-config get/list on A's task answer exactly like on an unknown task", async () => {
    for (const op of ["pushGet", "pushList"] as const) {
      const theirs = await taskOp(tg.url, auth(BOB), m, op, A.blocking.id);
      const unknown = randomUUID();
      const nobody = await taskOp(tg.url, auth(BOB), m, op, unknown);
      expect(["TASK_NOT_FOUND", "PUSH_NOTIFICATION_NOT_SUPPORTED"]).toContain(await reasonOf(m, theirs));
      expect(shape(theirs, [A.blocking.id]), op).toBe(shape(nobody, [unknown]));
    }
  });

  it("B's list shows B's tasks only; A's list shows A's; the admin's shows both", async () => {
    const bob = await listIds(tg.url, auth(BOB), m);
    expect(bob).toContain(bobTask);
    for (const id of aliceTasks()) expect(bob).not.toContain(id);
    const alice = await listIds(tg.url, auth(ALICE), m);
    expect(alice).toEqual(expect.arrayContaining(aliceTasks()));
    expect(alice).not.toContain(bobTask);
    const admin = await listIds(tg.url, ADMIN, m);
    expect(admin).toEqual(expect.arrayContaining([...aliceTasks(), bobTask]));
  });

  it("the admin gets every one of A's tasks; A gets its own", async () => {
    for (const id of aliceTasks()) {
      for (const who of [ADMIN, auth(ALICE)]) {
        const task = await expectOk(m, await taskOp(tg.url, who, m, "get", id), "task");
        expect(task.id).toBe(id);
      }
    }
  });
});

// ---- interrupts -------------------------------------------------------------------------------------------------------

describe.each(LINES.map((l) => [l] as const))("interrupts on %s", (line) => {
  const mode = RPC_MODES.find((m) => m.line === line)!;

  it("B cannot answer A's requests: INTERRUPT_REQUEST_NOT_FOUND, like an unknown request; nothing reaches OpenCode", async () => {
    const since = tg.stub.requests.length;
    for (const [name, params] of [
      ["a2a.interrupt.permission.reply", { request_id: A.permission.request, reply: "once" }],
      ["a2a.interrupt.question.reply", { request_id: A.question.request, answers: [["blue"]] }],
      ["a2a.interrupt.question.reject", { request_id: A.question.request }],
    ] as const) {
      const theirs = await ext(tg.url, auth(BOB), line, name, params);
      expect(theirs.reason, name).toBe("INTERRUPT_REQUEST_NOT_FOUND");
      const unknown = await ext(tg.url, auth(BOB), line, name, { ...params, request_id: `${params.request_id.slice(0, 4)}nosuchrequest` });
      expect(unknown.reason).toBe("INTERRUPT_REQUEST_NOT_FOUND");
    }
    expect(tg.stub.requests.slice(since).filter((r) => /\/(permission|question)\//.test(r.path))).toEqual([]);
  });

  it("B's tasks/provideInputAndContinue and follow-up answers on A's tasks → TaskNotFound", async () => {
    const perm = await jsonrpc(tg.url, auth(BOB), line, "tasks/provideInputAndContinue", { taskId: A.permission.id, permissionOptionId: "once" });
    await expectError(mode, perm, "TASK_NOT_FOUND");
    const input = await jsonrpc(tg.url, auth(BOB), line, "tasks/provideInputAndContinue", { taskId: A.question.id, input: userMessage(mode, "blue") });
    await expectError(mode, input, "TASK_NOT_FOUND");
    await expectError(mode, await taskOp(tg.url, auth(BOB), mode, "followup", A.question.id), "TASK_NOT_FOUND");
  });

  it("B's permission/question lists do not show A's requests; A's and the admin's do", async () => {
    for (const [name, request] of [
      ["opencode.permissions.list", A.permission.request],
      ["opencode.questions.list", A.question.request],
    ] as const) {
      const ids = async (who: Who) => {
        const o = await ext(tg.url, who, line, name, {});
        expect(o.ok, JSON.stringify(o.data)).toBe(true);
        await expectValid(byName(name).result_schema!, o.result);
        return (o.result.items as Obj[]).map((i) => i.request_id);
      };
      expect(await ids(auth(BOB)), name).not.toContain(request);
      expect(await ids(auth(ALICE)), name).toContain(request);
      expect(await ids(ADMIN), `${name} as admin`).toContain(request);
    }
  });
});

// ---- sessions ---------------------------------------------------------------------------------------------------------

describe.each(LINES.map((l) => [l] as const))("OpenCode sessions on %s", (line) => {
  const nonGetCalls = (since: number, session: string) => tg.stub.requests.slice(since).filter((r) => r.path.startsWith(`/session/${session}`));

  it("premise: the catalog's session-scoped reads and controls", () => {
    expect(SESSION_READS.map((m) => m.name)).toEqual(expect.arrayContaining(["opencode.sessions.get", "opencode.sessions.messages.list", "opencode.sessions.messages.get"]));
    expect(SESSION_CONTROL.length).toBeGreaterThan(5);
  });

  it.each(SESSION_READS.map((m) => [m.name, m] as const))("B reading A's (owned or claimed) session with %s → SESSION_NOT_FOUND, like an unknown one; nothing reaches OpenCode", async (_n, m) => {
    const unknownSession = `ses_isolationnosuch${randomUUID().slice(0, 8)}`;
    const unowned = await stubSession("nobody's");
    for (const session of [A.blocking.session, A.permission.session, unowned]) {
      const since = tg.stub.requests.length;
      const theirs = await ext(tg.url, auth(BOB), line, m.name, sessionParams(m, session, A.blocking.message));
      expect(theirs.reason, `${m.name} on ${session}`).toBe("SESSION_NOT_FOUND");
      expect(String(theirs.data!.session_id ?? theirs.data!.sessionId)).toBe(session);
      expect(nonGetCalls(since, session), "no upstream call for a session B may not see").toEqual([]);
      const nobody = await ext(tg.url, auth(BOB), line, m.name, sessionParams(m, unknownSession, A.blocking.message));
      expect(shape(theirs.res, [session]), m.name).toBe(shape(nobody.res, [unknownSession]));
    }
  });

  it.each(SESSION_READS.map((m) => [m.name, m] as const))("A and the admin read A's session with %s", async (_n, m) => {
    for (const who of [auth(ALICE), ADMIN]) {
      const o = await ext(tg.url, who, line, m.name, sessionParams(m, A.blocking.session, A.blocking.message));
      expect(o.ok, `${m.name}: ${o.reason} ${JSON.stringify(o.data)}`).toBe(true);
      await expectValid(m.result_schema!, o.result);
    }
  });

  it.each(SESSION_CONTROL.map((m) => [m.name, m] as const))("B controlling A's session with %s → SESSION_NOT_FOUND; the admin → SESSION_FORBIDDEN; nothing reaches OpenCode", async (_n, m) => {
    for (const session of [A.blocking.session, A.permission.session]) {
      const since = tg.stub.requests.length;
      const bob = await ext(tg.url, auth(BOB), line, m.name, sessionParams(m, session, A.blocking.message));
      expect(bob.reason, `${m.name} as bob on ${session}`).toBe("SESSION_NOT_FOUND");
      const admin = await ext(tg.url, ADMIN, line, m.name, sessionParams(m, session, A.blocking.message));
      expect(admin.reason, `${m.name} as admin on ${session}`).toBe("SESSION_FORBIDDEN");
      expect(nonGetCalls(since, session)).toEqual([]);
    }
  });

  it("opencode.sessions.list: B sees only B's sessions, A only A's, the admin all", async () => {
    const ids = async (who: Who) => {
      const o = await ext(tg.url, who, line, "opencode.sessions.list", { limit: 100 });
      expect(o.ok, JSON.stringify(o.data)).toBe(true);
      await expectValid(byName("opencode.sessions.list").result_schema!, o.result);
      return (o.result.items as Obj[]).map((t) => t.metadata?.shared?.session?.id ?? t.id);
    };
    const bob = await ids(auth(BOB));
    const alice = await ids(auth(ALICE));
    const admin = await ids(ADMIN);
    const aliceSessions = [A.blocking.session, A.running.session, A.permission.session, A.question.session];
    for (const s of aliceSessions) expect(bob).not.toContain(s);
    expect(bob.length).toBeGreaterThan(0); // bob's own session
    expect(alice).toEqual(expect.arrayContaining(aliceSessions));
    for (const s of bob) expect(alice).not.toContain(s);
    expect(admin).toEqual(expect.arrayContaining([...aliceSessions, ...bob]));
    // a small limit counts the caller's own sessions, not everybody's
    const one = await ext(tg.url, auth(ALICE), line, "opencode.sessions.list", { limit: 1 });
    expect(one.result.items).toHaveLength(1);
  });

  it("opencode.sessions.status: B does not see A's busy session; A and the admin do", async () => {
    const ids = async (who: Who) => {
      const o = await ext(tg.url, who, line, "opencode.sessions.status", {});
      expect(o.ok, JSON.stringify(o.data)).toBe(true);
      return (o.result.items as Obj[]).map((i) => i.session_id);
    };
    const alice = await until("alice's running session to be busy", async () => {
      const seen = await ids(auth(ALICE));
      return seen.includes(A.running.session) ? seen : undefined;
    });
    expect(alice).toContain(A.running.session);
    expect(await ids(ADMIN)).toContain(A.running.session);
    expect(await ids(auth(BOB))).not.toContain(A.running.session);
  });

  it("B naming A's session in a message is refused without revealing more than a control call would", async () => {
    const mode = RPC_MODES.find((m) => m.line === line)!;
    const since = tg.stub.requests.length;
    const res = await jsonrpc(tg.url, auth(BOB), line, METHOD[line].send, { message: userMessage(mode, "mine now"), metadata: { shared: { session: { id: A.blocking.session } } } });
    expect(["SESSION_NOT_FOUND", "SESSION_FORBIDDEN"]).toContain(await reasonOf(mode, res));
    expect(tg.stub.requests.slice(since).filter((r) => r.method === "POST" && r.path.startsWith(`/session/${A.blocking.session}`))).toEqual([]);
  });
});

// ---- the admin answers A's interrupts (last: it completes A's tasks) ---------------------------------------------------

describe("the admin answers A's interrupts", () => {
  it("question.reply and permission.reply by the admin resume A's tasks", async () => {
    const q = await ext(tg.url, ADMIN, "1.0", "a2a.interrupt.question.reply", { request_id: A.question.request, answers: [["blue"]] });
    expect(q.ok, `${q.reason} ${JSON.stringify(q.data)}`).toBe(true);
    expect(q.result).toEqual({ ok: true, request_id: A.question.request });
    const p = await ext(tg.url, ADMIN, "0.3", "a2a.interrupt.permission.reply", { request_id: A.permission.request, reply: "once" });
    expect(p.ok, `${p.reason} ${JSON.stringify(p.data)}`).toBe(true);
    for (const id of [A.question.id, A.permission.id]) {
      await until(`alice's task ${id} completed`, async () => {
        const task = await expectOk(RPC03, await taskOp(tg.url, auth(ALICE), RPC03, "get", id), "task");
        return task.status.state === "completed" ? task : undefined;
      });
    }
    // answered: gone from every list
    const left = await ext(tg.url, ADMIN, "0.3", "opencode.questions.list", {});
    expect((left.result.items as Obj[]).map((i) => i.request_id)).not.toContain(A.question.request);
  });
});

// ---- a named session whose first turn outlives its pending claim ------------------------------------------------------

describe("a session A named explicitly stays A's while its first turn waits longer than the claim TTL", () => {
  let short: TaskGateway;
  beforeAll(async () => {
    short = await startTaskGateway({ A2A_CREDENTIALS: JSON.stringify([ALICE, BOB]), A2A_PENDING_SESSION_CLAIM_TTL_SECONDS: "1" });
  });
  afterAll(() => short?.close());

  it("B cannot take it over with a control call once the claim has expired; A keeps reading it", async () => {
    const res = await fetch(`${short.stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "alice long turn" }) });
    const session = ((await res.json()) as { id: string }).id;
    short.stub.scriptFor(session, tool("question", { questions: [{ question: "Pick?", header: "Pick", options: [{ label: "a", description: "A" }] }] }), text("done"));
    const sent = await jsonrpc(short.url, auth(ALICE), "0.3", "message/send", { message: userMessage(RPC03, "alice's secret plan"), metadata: { shared: { session: { id: session } } } });
    expect((await expectOk(RPC03, sent, "send")).status.state).toBe("input-required");
    await new Promise((r) => setTimeout(r, 1_500)); // past A2A_PENDING_SESSION_CLAIM_TTL_SECONDS
    const takeover = await ext(short.url, auth(BOB), "0.3", "opencode.sessions.unshare", { session_id: session });
    expect(takeover.reason, "B's control call on A's in-flight session").toBe("SESSION_NOT_FOUND");
    const read = await ext(short.url, auth(BOB), "0.3", "opencode.sessions.messages.list", { session_id: session });
    expect(read.reason).toBe("SESSION_NOT_FOUND");
    const mine = await ext(short.url, auth(ALICE), "0.3", "opencode.sessions.get", { session_id: session });
    expect(mine.ok, `A reads her own in-flight session: ${mine.reason}`).toBe(true);
  });
});
