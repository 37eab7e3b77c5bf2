// Result scopes (issue 6, spec/security.tsp): without results.read a caller receives no artifacts — not in the task
// of send, get, list, cancel, provideInputAndContinue, nor as artifact-update events of streams and subscriptions;
// without results.files it receives no file parts, in artifacts or in messages (history). Every mode.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalog } from "../support/contract.js";
import { rpc } from "../support/gateway.js";
import {
  eventsOf,
  expectOk,
  MODES,
  openSse,
  qs,
  restPrefix,
  stateOf,
  taskOfSend,
  until,
  versionHeader,
  type Ev,
  type Mode,
  type Reply as WireReply,
} from "../support/task-wire.js";
import { call } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { hang, text, tool, type Reply } from "../../tools/upstream/script.js";

type Obj = Record<string, any>;
const WITHOUT: Record<string, string[]> = {
  full: [],
  nofiles: ["results.files"],
  noresults: ["results.read", "results.files"],
  noread: ["results.read"],
};
const secret = (name: string) => `results-${name}-secret-0123456789`;
const CREDS = Object.entries(WITHOUT).map(([name, without]) => ({
  id: `results-${name}`,
  principal: `results-${name}`,
  scheme: "bearer",
  secret: secret(name),
  trust_level: "autonomous",
  scopes: catalog.scopes.filter((s) => s !== "audit.read" && !without.includes(s)),
}));
const as = (name: string) => ({ authorization: `Bearer ${secret(name)}` });
type Who = keyof typeof WITHOUT;

/** A user message with a text part and a file part, in the mode's wire shape. */
function messageWithFile(m: Mode, extra: Obj = {}): Obj {
  const messageId = randomUUID();
  const bytes = Buffer.from("file body").toString("base64");
  if (m.line === "1.0") return { messageId, role: "ROLE_USER", parts: [{ text: "read this" }, { raw: bytes, mediaType: "text/plain", filename: "note.txt" }], ...extra };
  if (m.transport === "rest") return { messageId, role: "ROLE_USER", content: [{ text: "read this" }, { file: { fileWithBytes: bytes, mimeType: "text/plain", name: "note.txt" } }], ...extra };
  return { kind: "message", messageId, role: "user", parts: [{ kind: "text", text: "read this" }, { kind: "file", file: { bytes, mimeType: "text/plain", name: "note.txt" } }], ...extra };
}
const partsOf = (message: Obj): Obj[] => message.parts ?? message.content ?? [];
function isFilePart(m: Mode, p: Obj): boolean {
  if (m.line === "1.0") return p.raw !== undefined || p.url !== undefined;
  if (m.transport === "rest") return p.file !== undefined;
  return p.kind === "file";
}
const filesIn = (m: Mode, messages: Obj[] | undefined) => (messages ?? []).flatMap((x) => partsOf(x)).filter((p) => isFilePart(m, p)).length;

/** What a task may carry for `who`. */
function expectTaskFor(m: Mode, who: Who, task: Obj, what: string): void {
  const without = WITHOUT[who]!;
  const artifacts: Obj[] = task.artifacts ?? [];
  if (without.includes("results.read")) expect(task.artifacts, `${what}: no artifacts for ${who}`).toBeUndefined();
  else expect(artifacts.length, `${what}: artifacts for ${who}`).toBeGreaterThan(0);
  for (const a of artifacts) expect(partsOf(a).filter((p) => isFilePart(m, p)), `${what}: artifact parts`).toHaveLength(without.includes("results.files") ? 0 : partsOf(a).filter((p) => isFilePart(m, p)).length);
  const history: Obj[] = task.history ?? [];
  expect(history.length, `${what}: history kept`).toBeGreaterThan(0);
  const user = history.find((x) => (x.role === "user" || x.role === "ROLE_USER") && partsOf(x).some((p) => p.text === "read this"));
  expect(user, `${what}: the user message is still there`).toBeDefined();
  expect(filesIn(m, [user!]), `${what}: file parts in history for ${who}`).toBe(without.includes("results.files") ? 0 : 1);
  if (task.status?.message) expect(filesIn(m, [task.status.message])).toBe(without.includes("results.files") ? 0 : filesIn(m, [task.status.message]));
}

let rpcId = 0;
async function invokeAs(tg: TaskGateway, who: Who, m: Mode, op: "send" | "get" | "list" | "cancel", params: Obj): Promise<WireReply> {
  const headers = { ...as(who), ...versionHeader(m) };
  const names = m.line === "0.3" ? { send: "message/send", get: "tasks/get", list: "tasks/list", cancel: "tasks/cancel" } : { send: "SendMessage", get: "GetTask", list: "ListTasks", cancel: "CancelTask" };
  if (m.transport === "jsonrpc") {
    const id = ++rpcId;
    return { ...(await rpc(tg.url, { jsonrpc: "2.0", id, method: names[op], params }, headers)), rpcId: id };
  }
  const p = restPrefix(m);
  const res =
    op === "send"
      ? await call(tg.url, `${p}/message:send`, { method: "POST", auth: false, headers, body: params })
      : op === "get"
        ? await call(tg.url, `${p}/tasks/${params.id}`, { auth: false, headers })
        : op === "list"
          ? await call(tg.url, `${p}/tasks${qs(params)}`, { auth: false, headers })
          : await call(tg.url, `${p}/tasks/${params.id}:cancel`, { method: "POST", auth: false, headers });
  return { ...res, rpcId: 0 };
}
async function scripted(tg: TaskGateway, ...replies: Reply[]): Promise<Obj> {
  const res = await fetch(`${tg.stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "results" }) });
  const session = ((await res.json()) as { id: string }).id;
  tg.stub.scriptFor(session, ...replies);
  return { shared: { session: { id: session } } };
}
async function streamAs(tg: TaskGateway, who: Who, m: Mode, body: Obj): Promise<{ sse: Awaited<ReturnType<typeof openSse>>; events: Ev[] }> {
  const headers = { ...as(who), ...versionHeader(m) };
  let sse;
  if (m.transport === "jsonrpc") {
    const id = ++rpcId;
    sse = await openSse(tg.url, "/", { headers, body: { jsonrpc: "2.0", id, method: m.line === "0.3" ? "message/stream" : "SendStreamingMessage", params: body }, rpcId: id });
  } else sse = await openSse(tg.url, `${restPrefix(m)}/message:stream`, { headers, body });
  return { sse, events: await eventsOf(m, sse, await sse.rest(15_000)) };
}
async function subscribeAs(tg: TaskGateway, who: Who, m: Mode, taskId: string): Promise<Ev[]> {
  const headers = { ...as(who), ...versionHeader(m) };
  let sse;
  if (m.transport === "jsonrpc") {
    const id = ++rpcId;
    sse = await openSse(tg.url, "/", { headers, body: { jsonrpc: "2.0", id, method: m.line === "0.3" ? "tasks/resubscribe" : "SubscribeToTask", params: { id: taskId } }, rpcId: id });
  } else sse = await openSse(tg.url, `${restPrefix(m)}/tasks/${taskId}:subscribe`, { method: "POST", headers });
  expect((sse.headers.get("content-type") ?? "").includes("text/event-stream"), JSON.stringify(sse.body)).toBe(true);
  return eventsOf(m, sse, await sse.rest(15_000));
}
const taskOfEvent = (ev: Ev) => (ev.kind === "task" ? ev.body.task ?? ev.body : undefined);

let tg: TaskGateway;
beforeAll(async () => {
  tg = await startTaskGateway({ A2A_CREDENTIALS: JSON.stringify(CREDS), A2A_RATE_LIMIT_MAX_REQUESTS: "0" });
});
afterAll(() => tg?.close());

describe.each(MODES.map((m) => [m.name, m] as const))("%s", (_name, m) => {
  const sent: Partial<Record<Who, string>> = {};

  it.each(Object.keys(WITHOUT) as Who[])("send and get as %s", async (who) => {
    const task = taskOfSend(m, await expectOk(m, await invokeAs(tg, who, m, "send", { message: messageWithFile(m) }), "send"));
    expect(stateOf(task)).toBe("completed");
    expectTaskFor(m, who, task, "send");
    sent[who] = task.id;
    expectTaskFor(m, who, await expectOk(m, await invokeAs(tg, who, m, "get", { id: task.id }), "task"), "get");
  });

  it.each(Object.keys(WITHOUT) as Who[])("list with artifacts asked for, as %s", async (who) => {
    const params = m.line === "0.3" ? { includeArtifacts: true, limit: 100 } : { includeArtifacts: true, pageSize: 100 };
    const result = await expectOk(m, await invokeAs(tg, who, m, "list", params), "list");
    const mine = (result.tasks as Obj[]).find((t) => t.id === sent[who]);
    expect(mine, "the task sent above is listed").toBeDefined();
    const without = WITHOUT[who]!;
    if (without.includes("results.read")) for (const t of result.tasks as Obj[]) expect(t.artifacts).toBeUndefined();
    else expect((mine!.artifacts ?? []).length).toBeGreaterThan(0);
    if (without.includes("results.files")) for (const t of result.tasks as Obj[]) expect(filesIn(m, t.history)).toBe(0);
  });

  it.each(Object.keys(WITHOUT) as Who[])("stream as %s: artifact updates only with results.read; file parts only with results.files", async (who) => {
    const { events } = await streamAs(tg, who, m, { message: messageWithFile(m), metadata: await scripted(tg, text(["one ", "two ", "three"])) });
    const artifacts = events.filter((e) => e.kind === "artifact");
    if (WITHOUT[who]!.includes("results.read")) expect(artifacts, who).toEqual([]);
    else expect(artifacts.length, who).toBeGreaterThan(0);
    const first = taskOfEvent(events[0]!);
    expect(first, "the stream starts with the task").toBeDefined();
    expect(filesIn(m, first.history)).toBe(WITHOUT[who]!.includes("results.files") ? 0 : 1);
  });

  it.each(Object.keys(WITHOUT) as Who[])("subscribe to a running task as %s", async (who) => {
    const metadata = await scripted(tg, text(["slow ", "reply ", "done"], { delayMs: 150 }));
    const started = taskOfSend(m, await expectOk(m, await invokeAs(tg, who, m, "send", { message: messageWithFile(m), metadata, configuration: m.line === "0.3" ? { blocking: false } : { returnImmediately: true } }), "send"));
    const events = await subscribeAs(tg, who, m, started.id);
    const artifacts = events.filter((e) => e.kind === "artifact");
    if (WITHOUT[who]!.includes("results.read")) expect(artifacts).toEqual([]);
    else expect(artifacts.length).toBeGreaterThan(0);
    for (const e of events) {
      const t = taskOfEvent(e);
      if (t !== undefined) {
        if (WITHOUT[who]!.includes("results.read")) expect(t.artifacts).toBeUndefined();
        if (WITHOUT[who]!.includes("results.files")) expect(filesIn(m, t.history)).toBe(0);
      }
    }
    await until("the task to complete", async () => stateOf(await expectOk(m, await invokeAs(tg, who, m, "get", { id: started.id }), "task")) === "completed", 10_000);
  });

  it.each(Object.keys(WITHOUT) as Who[])("cancel of a task with a partial answer, as %s", async (who) => {
    const metadata = await scripted(tg, hang({ chunks: ["partial answer"], holdMs: 30_000 }));
    const started = taskOfSend(m, await expectOk(m, await invokeAs(tg, who, m, "send", { message: messageWithFile(m), metadata, configuration: m.line === "0.3" ? { blocking: false } : { returnImmediately: true } }), "send"));
    // wait until the partial answer is an artifact (seen through the runtime, whatever the caller may see)
    await until("a partial artifact", async () => ((await (tg.gw.gateway.runtime as any).get({ id: `results-${who}`, admin: true, scopes: new Set(), credentialId: "x", trustLevel: "admin" }, started.id)).artifacts?.length ? true : undefined), 5000);
    const canceled = await expectOk(m, await invokeAs(tg, who, m, "cancel", { id: started.id }), "task");
    expect(stateOf(canceled)).toBe("canceled");
    expectTaskFor(m, who, canceled, "cancel");
  });
});

describe("tasks/provideInputAndContinue returns the task through the same filter", () => {
  it.each(Object.keys(WITHOUT) as Who[])("as %s", async (who) => {
    const m = MODES[0]!;
    const metadata = await scripted(
      tg,
      tool("question", { questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }] }] }),
      text("chose blue"),
    );
    const task = taskOfSend(m, await expectOk(m, await invokeAs(tg, who, m, "send", { message: messageWithFile(m), metadata }), "send"));
    expect(stateOf(task)).toBe("input-required");
    const id = ++rpcId;
    const res = await rpc(tg.url, { jsonrpc: "2.0", id, method: "tasks/provideInputAndContinue", params: { taskId: task.id, input: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "blue" }] } } }, as(who));
    const done = await expectOk(m, { ...res, rpcId: id }, "task");
    expect(stateOf(done)).toBe("completed");
    expectTaskFor(m, who, done, "provideInputAndContinue");
  });
});
