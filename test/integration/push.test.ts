// Push notifications (webhooks) end to end: the real gateway in-process, the stub OpenCode, and a webhook receiver
// (test/support/push-wire.ts, node:http on 127.0.0.1). Covered on 0.3/1.0 × JSON-RPC/REST: the config methods (set / get / list /
// delete, in the line's wire shape and valid against the generated schemas), a config given with message/send and
// message/stream, late registration on a finished (or input-waiting) task, the notifications of an interrupted task
// in order, retries (5xx with Retry-After, 4xx not retried, A2A_PUSH_MAX_ATTEMPTS), the error answers (unknown and
// foreign tasks, invalid URLs and header values, the per-task limit, the SSRF guard, the capability switched off, the
// cards), delivery across a restart on the SQLite store, and a deleted config dropping what waits for it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { catalog, expectValid, wireContractOf } from "../support/contract.js";
import { call } from "../support/gateway.js";
import {
  ADMIN,
  as,
  attempts,
  completedTask,
  configOf,
  configsOf,
  configsPath,
  expectDeleted,
  expectNotification,
  finished,
  jsonrpc,
  metrics,
  ok,
  pending,
  PUSH_METHODS,
  pushDelete,
  pushGet,
  pushList,
  pushSet,
  QUICK,
  QUIET_MS,
  Receiver,
  rest,
  askColor,
  scriptedSession,
  sendFieldName,
  sendMsg,
  sendTask,
  setFieldName,
  sleep,
  wireState,
  withPush,
  type Cfg,
} from "../support/push-wire.js";
import { errorFields, expectError, expectOk, invoke, MODES, openStream, schemasOf, sendParams, stateOf, until, userMessage, type Line, type Reply } from "../support/task-wire.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { failure, hang, text } from "../../tools/upstream/script.js";

const LINES: Line[] = ["0.3", "1.0"];

// ---- resources ------------------------------------------------------------------------------------------------

const perTest: (() => Promise<unknown>)[] = [];
const perFile: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const done of perTest.splice(0).reverse()) await done();
});
afterAll(async () => {
  for (const done of perFile.splice(0).reverse()) await done();
});

async function gateway(env: Record<string, string>, scope: "test" | "file" = "test"): Promise<TaskGateway> {
  const g = await startTaskGateway(env);
  (scope === "test" ? perTest : perFile).push(() => g.close());
  return g;
}
async function receiver(scope: "test" | "file" = "test", port = 0): Promise<Receiver> {
  const rx = await Receiver.start(port);
  (scope === "test" ? perTest : perFile).push(() => rx.close());
  return rx;
}


// ---- principals ---------------------------------------------------------------------------------------------------

const ALL_BUT_AUDIT = catalog.scopes.filter((s) => s !== "audit.read");
const cred = (name: string) => ({ id: `${name}-key`, principal: name, scheme: "bearer", secret: `${name}-push-secret-0123456789abcdef`, trust_level: "autonomous", scopes: ALL_BUT_AUDIT });
const ALICE = cred("alice");
const BOB = cred("bob");
/** A principal without the result scopes (results.read, results.files). */
const CAROL = { ...cred("carol"), scopes: ALL_BUT_AUDIT.filter((s) => !s.startsWith("results.")) };

// =====================================================================================================================

let g: TaskGateway;
let rx: Receiver;
beforeAll(async () => {
  g = await gateway({ ...QUICK, A2A_CREDENTIALS: JSON.stringify([ALICE, BOB, CAROL]), A2A_PUSH_MAX_CONFIGS_PER_TASK: "3" }, "file");
  rx = await receiver("file");
});

describe.each(MODES)("push config methods on $name", (m) => {
  it("set → get → list → delete → get (TASK_NOT_FOUND), in the line's wire shape; deleting an unknown config succeeds", async () => {
    const task = await completedTask(g, m);
    const hookA = rx.path("crud-a");
    const hookB = rx.path("crud-b");

    // A config without id: 0.3 names it after its task, 1.0 gives it a fresh id.
    const a = await configOf(m, await ok(m, await pushSet(g.url, m, task.id, { url: rx.url(hookA), token: "tok-a", auth: { scheme: "Bearer", credentials: "cred-a" } })));
    expect(a).toMatchObject({ taskId: task.id, url: rx.url(hookA), token: "tok-a", scheme: "Bearer", credentials: "cred-a" });
    expect(typeof a.id).toBe("string");
    expect(a.id.length).toBeGreaterThan(0);
    if (m.line === "0.3") expect(a.id).toBe(task.id);

    // One with an id of the caller's choosing.
    const b = await configOf(m, await ok(m, await pushSet(g.url, m, task.id, { id: "cfg-b", url: rx.url(hookB) })));
    expect(b).toMatchObject({ taskId: task.id, id: "cfg-b", url: rx.url(hookB) });
    expect(b.token).toBeUndefined();
    expect(b.credentials).toBeUndefined();

    expect(await configOf(m, await ok(m, await pushGet(g.url, m, task.id, a.id)))).toEqual(a);
    expect(await configOf(m, await ok(m, await pushGet(g.url, m, task.id, "cfg-b")))).toEqual(b);
    expect(await configsOf(m, await ok(m, await pushList(g.url, m, task.id)))).toEqual([a, b]);

    // Replacing a config keeps its place and id.
    const b2 = await configOf(m, await ok(m, await pushSet(g.url, m, task.id, { id: "cfg-b", url: rx.url(hookB), token: "tok-b2" })));
    expect(b2).toMatchObject({ id: "cfg-b", token: "tok-b2" });
    expect((await configsOf(m, await ok(m, await pushList(g.url, m, task.id)))).map((c) => c.id)).toEqual([a.id, "cfg-b"]);

    await expectDeleted(m, await pushDelete(g.url, m, task.id, a.id));
    await expectError(m, await pushGet(g.url, m, task.id, a.id), "TASK_NOT_FOUND");
    expect(await configsOf(m, await ok(m, await pushList(g.url, m, task.id)))).toEqual([b2]);
    await expectDeleted(m, await pushDelete(g.url, m, task.id, "cfg-b"));
    await expectError(m, await pushGet(g.url, m, task.id, "cfg-b"), "TASK_NOT_FOUND");
    expect(await configsOf(m, await ok(m, await pushList(g.url, m, task.id)))).toEqual([]);

    // Idempotent: a config that is (no longer) there.
    await expectDeleted(m, await pushDelete(g.url, m, task.id, "cfg-b"));
    await expectDeleted(m, await pushDelete(g.url, m, task.id, "never-existed"));
  });

  it("a config given with a blocking message/send gets exactly one notification, the terminal one, with token and Authorization", async () => {
    const hook = rx.path("send");
    g.stub.script(text(["pushed ", "answer"]));
    const cfg: Cfg = { url: rx.url(hook), token: `tok-${m.line}`, auth: { scheme: m.line === "0.3" ? "Bearer" : "Basic", credentials: "c3VwZXI6c2VjcmV0" } };
    const task = await sendTask(g.url, m, withPush(m, sendParams(m, userMessage(m, `push me (${m.name})`)), cfg));
    expect(stateOf(task)).toBe("completed");

    const [hit] = await rx.waitFor(hook, 1);
    await sleep(QUIET_MS);
    expect(rx.on(hook), "only the terminal state is pushed").toHaveLength(1);
    const pushed = await expectNotification(m.line, hit!, task.id, "completed");
    expect(hit!.headers["x-a2a-notification-token"]).toBe(cfg.token);
    expect(hit!.headers.authorization).toBe(`${cfg.auth!.scheme} ${cfg.auth!.credentials}`);
    expect(pushed.contextId).toBe(task.contextId);
    const answer = pushed.artifacts?.find((a: any) => a.artifactId === `${task.id}:text`);
    expect(answer, JSON.stringify(pushed.artifacts)).toBeDefined();
    expect(answer.parts.map((p: any) => p.text ?? "").join("")).toBe("pushed answer");
    expect((pushed.history ?? []).length).toBeGreaterThanOrEqual(2);

    // The config is visible through the config methods of the caller's mode.
    const listed = await configsOf(m, await ok(m, await pushList(g.url, m, task.id)));
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ taskId: task.id, url: rx.url(hook), token: cfg.token });
  });

  it("webhooks carry no more than the config's principal may read: no artifacts without results.read", async () => {
    const task = await completedTask(g, m, as(CAROL));
    const carolHook = rx.path("carol");
    const adminHook = rx.path("admin");
    await ok(m, await pushSet(g.url, m, task.id, { id: "carol-cfg", url: rx.url(carolHook) }, as(CAROL)));
    await ok(m, await pushSet(g.url, m, task.id, { id: "admin-cfg", url: rx.url(adminHook) }));
    const [carolHit] = await rx.waitFor(carolHook, 1);
    const [adminHit] = await rx.waitFor(adminHook, 1);
    const carols = await expectNotification(m.line, carolHit!, task.id, "completed");
    const admins = await expectNotification(m.line, adminHit!, task.id, "completed");
    expect(carols.artifacts).toBeUndefined();
    expect(admins.artifacts?.length, JSON.stringify(admins)).toBeGreaterThan(0);
  });

  it("a config without token or authentication sends neither header", async () => {
    const hook = rx.path("bare");
    g.stub.script(text("bare answer"));
    const task = await sendTask(g.url, m, withPush(m, sendParams(m, userMessage(m, "no headers")), { url: rx.url(hook) }));
    const [hit] = await rx.waitFor(hook, 1);
    await expectNotification(m.line, hit!, task.id, "completed");
    expect(hit!.headers["x-a2a-notification-token"]).toBeUndefined();
    expect(hit!.headers.authorization).toBeUndefined();
  });

  it("a config given with message/stream gets the terminal notification", async () => {
    const hook = rx.path("stream");
    g.stub.script(text(["streamed ", "answer"]));
    const sse = await openStream(g.url, m, withPush(m, sendParams(m, userMessage(m, `stream me (${m.name})`)), { url: rx.url(hook), token: "stream-token" }));
    let taskId: string | undefined;
    try {
      expect(sse.status, JSON.stringify(sse.body)).toBe(200);
      const frames = await sse.rest();
      const first = m.transport === "jsonrpc" ? frames[0]?.result : frames[0];
      taskId = m.line === "0.3" && m.transport === "jsonrpc" ? first?.id : first?.task?.id;
      expect(typeof taskId, JSON.stringify(first)).toBe("string");
    } finally {
      sse.close();
    }
    const [hit] = await rx.waitFor(hook, 1);
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toHaveLength(1);
    await expectNotification(m.line, hit!, taskId!, "completed");
    expect(hit!.headers["x-a2a-notification-token"]).toBe("stream-token");
  });

  it("a config set on an already completed task gets the terminal state at once (late registration)", async () => {
    const task = await completedTask(g, m);
    const hook = rx.path("late");
    await ok(m, await pushSet(g.url, m, task.id, { url: rx.url(hook), token: "late-token" }));
    const [hit] = await rx.waitFor(hook, 1);
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toHaveLength(1);
    const pushed = await expectNotification(m.line, hit!, task.id, "completed");
    expect(pushed.contextId).toBe(task.contextId);
    expect(hit!.headers["x-a2a-notification-token"]).toBe("late-token");
  });

  it("an input-required task: the input-required notification, then (answered) working and the terminal one, in order", async () => {
    const hook = rx.path("interrupt");
    const metadata = await scriptedSession(g.stub, askColor(), text("blue it is"));
    const task = await sendTask(g.url, m, withPush(m, sendParams(m, userMessage(m, "ask me a colour"), {}, metadata), { url: rx.url(hook), token: "ir-token" }));
    expect(stateOf(task), JSON.stringify(task.status)).toBe("input-required");

    const [asked] = await rx.waitFor(hook, 1);
    const waiting = await expectNotification(m.line, asked!, task.id, "input-required");
    expect(waiting.contextId).toBe(task.contextId);
    expect(waiting.status?.message?.metadata?.shared?.interrupt ?? waiting.metadata?.shared?.interrupt, JSON.stringify(waiting)).toMatchObject({ type: "question", phase: "asked" });
    expect(asked!.headers["x-a2a-notification-token"]).toBe("ir-token");

    // The A2A way of answering OpenCode's question: a follow-up message to the task.
    const done = await sendTask(g.url, m, { message: userMessage(m, "blue", { taskId: task.id, contextId: task.contextId }) });
    expect(done.id).toBe(task.id);
    expect(stateOf(done)).toBe("completed");

    const hits = await rx.waitFor(hook, 3);
    await sleep(QUIET_MS);
    expect(rx.on(hook).map((h) => (m.line === "0.3" ? h.body?.status?.state : (h.body?.statusUpdate ?? h.body?.task)?.status?.state))).toEqual(
      ["input-required", "working", "completed"].map((s) => wireState(m.line, s)),
    );
    await expectNotification(m.line, hits[1]!, task.id, "working");
    await expectNotification(m.line, hits[2]!, task.id, "completed");
  });

  it("a config set while the task waits for input gets the input-required state at once", async () => {
    const metadata = await scriptedSession(g.stub, askColor(), text("red it is"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "ask me again"), {}, metadata));
    expect(stateOf(task)).toBe("input-required");
    const hook = rx.path("late-ir");
    await ok(m, await pushSet(g.url, m, task.id, { url: rx.url(hook) }));
    const [hit] = await rx.waitFor(hook, 1);
    await expectNotification(m.line, hit!, task.id, "input-required");

    const done = await sendTask(g.url, m, { message: userMessage(m, "red", { taskId: task.id }) });
    expect(stateOf(done)).toBe("completed");
    await rx.waitFor(hook, 3);
    await sleep(QUIET_MS);
    const states = rx.on(hook).map((h) => (m.line === "0.3" ? h.body?.status?.state : (h.body?.statusUpdate ?? h.body?.task)?.status?.state));
    expect(states).toEqual(["input-required", "working", "completed"].map((s) => wireState(m.line, s)));
  });

  it("a canceled task: exactly one notification, the canceled state", async () => {
    const hook = rx.path("cancel");
    const metadata = await scriptedSession(g.stub, hang({ chunks: ["partial"] }));
    const task = await sendTask(g.url, m, withPush(m, sendParams(m, userMessage(m, "work forever"), { blocking: false }, metadata), { url: rx.url(hook) }));
    expect(["submitted", "working"]).toContain(stateOf(task));
    await until("the turn to reach OpenCode", () => g.stub.requests.some((r) => r.method === "POST" && r.path === `/session/${metadata.shared.session.id}/prompt_async`));
    const canceled = await expectOk(m, await invoke(g.url, m, "cancel", { id: task.id }), "task");
    expect(stateOf(canceled)).toBe("canceled");
    const [hit] = await rx.waitFor(hook, 1);
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toHaveLength(1);
    await expectNotification(m.line, hit!, task.id, "canceled");
  });

  it("a failed task: exactly one notification, the failed state with its status message", async () => {
    const hook = rx.path("failed");
    const metadata = await scriptedSession(g.stub, failure(400, "the model refused the request"));
    const task = await sendTask(g.url, m, withPush(m, sendParams(m, userMessage(m, "provoke a model error"), {}, metadata), { url: rx.url(hook) }));
    expect(stateOf(task)).toBe("failed");
    const [hit] = await rx.waitFor(hook, 1);
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toHaveLength(1);
    const pushed = await expectNotification(m.line, hit!, task.id, "failed");
    expect(JSON.stringify(pushed.status.message)).toMatch(/the model refused the request/);
  });

  it("replacing a config (same id, new URL) drops what waited for the old URL; the new one gets the current state", async () => {
    const task = await completedTask(g, m);
    const old = rx.path("replaced-old");
    const fresh = rx.path("replaced-new");
    rx.answer(old, [], 503);
    const first = await configOf(m, await ok(m, await pushSet(g.url, m, task.id, { id: "swap", url: rx.url(old) })));
    await rx.waitFor(old, 2);
    await ok(m, await pushSet(g.url, m, task.id, { id: first.id, url: rx.url(fresh) }));
    const [hit] = await rx.waitFor(fresh, 1);
    await expectNotification(m.line, hit!, task.id, "completed");
    await sleep(100); // a POST already on its way to the old URL may still land
    const seen = rx.on(old).length;
    await sleep(QUIET_MS);
    expect(rx.on(old)).toHaveLength(seen);
    expect(rx.on(fresh)).toHaveLength(1);
  });
});

describe("root REST paths without A2A-Version (the default line, 0.3)", () => {
  it("set, get, list and delete read the task and config ids from /tasks/{taskId}/pushNotificationConfigs/{id}", async () => {
    const m03 = MODES[1]!; // 0.3 REST: the body and answer shapes the default line speaks
    const task = await completedTask(g, m03);
    const hook = rx.path("root-03");
    const root = `/tasks/${task.id}/pushNotificationConfigs`;
    const bare = (method: string, p: string, body?: unknown) => call(g.url, p, { method, headers: ADMIN, ...(body === undefined ? {} : { body }) });
    const set = await bare("POST", root, { pushNotificationConfig: { id: "root-cfg", url: rx.url(hook) } });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ name: `tasks/${task.id}/pushNotificationConfigs/root-cfg`, pushNotificationConfig: { id: "root-cfg", url: rx.url(hook) } });
    await expectNotification("0.3", (await rx.waitFor(hook, 1))[0]!, task.id, "completed");
    const got = await bare("GET", `${root}/root-cfg`);
    expect(got.status, got.text).toBe(200);
    expect(got.body.pushNotificationConfig.id).toBe("root-cfg");
    const listed = await bare("GET", root);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.configs.map((c: any) => c.pushNotificationConfig.id)).toEqual(["root-cfg"]);
    const deleted = await bare("DELETE", `${root}/root-cfg`);
    expect(deleted.status, deleted.text).toBe(200);
    expect((await bare("GET", `${root}/root-cfg`)).status).toBe(404);
  });
});

describe("configs of both lines on one task", () => {
  it("each config gets the notification in the shape of the line it was set on", async () => {
    const m03 = MODES[1]!; // 0.3 REST
    const m10 = MODES[2]!; // 1.0 JSON-RPC
    const metadata = await scriptedSession(g.stub, askColor(), text("green it is"));
    const task = await sendTask(g.url, m03, sendParams(m03, userMessage(m03, "ask me"), {}, metadata));
    expect(stateOf(task)).toBe("input-required");
    const h03 = rx.path("both-03");
    const h10 = rx.path("both-10");
    await ok(m03, await pushSet(g.url, m03, task.id, { id: "old-line", url: rx.url(h03) }));
    await ok(m10, await pushSet(g.url, m10, task.id, { id: "new-line", url: rx.url(h10) }));
    await expectNotification("0.3", (await rx.waitFor(h03, 1))[0]!, task.id, "input-required");
    await expectNotification("1.0", (await rx.waitFor(h10, 1))[0]!, task.id, "input-required");

    // Both lines list both configs, each in its own shape.
    expect((await configsOf(m03, await ok(m03, await pushList(g.url, m03, task.id)))).map((c) => c.id)).toEqual(["old-line", "new-line"]);
    expect((await configsOf(m10, await ok(m10, await pushList(g.url, m10, task.id)))).map((c) => c.id)).toEqual(["old-line", "new-line"]);

    const done = await sendTask(g.url, m10, { message: userMessage(m10, "red", { taskId: task.id }) });
    expect(stateOf(done)).toBe("completed");
    const a = await rx.waitFor(h03, 3);
    const b = await rx.waitFor(h10, 3);
    await expectNotification("0.3", a[1]!, task.id, "working");
    await expectNotification("0.3", a[2]!, task.id, "completed");
    await expectNotification("1.0", b[1]!, task.id, "working");
    await expectNotification("1.0", b[2]!, task.id, "completed");
  });

  it("0.3 tasks/pushNotificationConfig/get with the task id alone answers the config named after the task", async () => {
    const m = MODES[0]!;
    const task = await completedTask(g, m);
    await ok(m, await pushSet(g.url, m, task.id, { id: "named", url: rx.url(rx.path("default")) }));
    const unnamed = await configOf(m, await ok(m, await pushSet(g.url, m, task.id, { url: rx.url(rx.path("default")) })));
    expect(unnamed.id).toBe(task.id);
    const got = await configOf(m, await ok(m, await jsonrpc(g.url, m, PUSH_METHODS["0.3"].get, { id: task.id })));
    expect(got).toEqual(unnamed);
    const missing = await jsonrpc(g.url, m, PUSH_METHODS["0.3"].delete, { id: task.id });
    const err = await expectError(m, missing, "INVALID_PARAMS");
    expect(errorFields(m, err).fields).toContain("pushNotificationConfigId");
  });
});

// ---- retries ------------------------------------------------------------------------------------------------------

describe.each(MODES)("delivery retries on $name", (m) => {
  it("503, 503 (Retry-After beyond the cap), then 200: three POSTs with the same body; 2 retries and 1 delivery counted", async () => {
    const r = await gateway(QUICK);
    const hooks = await receiver();
    const hook = hooks.path("retry");
    hooks.answer(hook, [{ status: 503, retryAfter: "120" }, 503], 200);
    const task = await completedTask(r, m);
    await ok(m, await pushSet(r.url, m, task.id, { url: hooks.url(hook), token: "retry-token" }));

    const hits = await hooks.waitFor(hook, 3);
    await until("the delivery to be counted", async () => ((await finished(r.url, "delivered")) === 1 ? true : undefined));
    await sleep(QUIET_MS);
    expect(hooks.on(hook)).toHaveLength(3);
    for (const hit of hits) {
      expect(hit.text).toBe(hits[0]!.text);
      expect(hit.headers["x-a2a-notification-token"]).toBe("retry-token");
    }
    await expectNotification(m.line, hits[2]!, task.id, "completed");
    const value = await metrics(r.url);
    expect(value("a2a_push_delivery_attempts_total", 'outcome="retry"')).toBe(2);
    expect(value("a2a_push_delivery_attempts_total", 'outcome="delivered"')).toBe(1);
    expect(value("a2a_push_notifications_finished_total", 'outcome="delivered"')).toBe(1);
    expect(value("a2a_push_notifications_queued_total")).toBe(1);
    expect(value("a2a_push_outbox_pending")).toBe(0);
  });
});

describe("delivery verdicts", () => {
  let r: TaskGateway;
  beforeAll(async () => {
    r = await gateway(QUICK, "file");
  });

  it.each([400, 404, 302])("%s is not retried: exactly one POST, counted as rejected", async (status) => {
    const hooks = await receiver();
    const hook = hooks.path("reject");
    hooks.answer(hook, [], status);
    const m = MODES[2]!;
    const before = { rejected: await finished(r.url, "rejected"), attempts: await attempts(r.url, "rejected"), retry: await attempts(r.url, "retry") };
    const task = await completedTask(r, m);
    await ok(m, await pushSet(r.url, m, task.id, { url: hooks.url(hook) }));
    await hooks.waitFor(hook, 1);
    await until("the rejection to be counted", async () => ((await finished(r.url, "rejected")) === before.rejected + 1 ? true : undefined));
    await sleep(QUIET_MS);
    expect(hooks.on(hook)).toHaveLength(1);
    expect(await attempts(r.url, "rejected")).toBe(before.attempts + 1);
    expect(await attempts(r.url, "retry")).toBe(before.retry);
    expect(await pending(r.url)).toBe(0);
  });

  it("a receiver that does not answer within A2A_PUSH_TIMEOUT_SECONDS is tried again", async () => {
    const slow = await gateway({ ...QUICK, A2A_PUSH_TIMEOUT_SECONDS: "0.2" });
    const hooks = await receiver();
    const hook = hooks.path("slow");
    hooks.answer(hook, [{ status: 200, delayMs: 2000 }], 200);
    const m = MODES[1]!;
    const task = await completedTask(slow, m);
    await ok(m, await pushSet(slow.url, m, task.id, { url: hooks.url(hook) }));
    const hits = await hooks.waitFor(hook, 2);
    await until("the delivery to be counted", async () => ((await finished(slow.url, "delivered")) === 1 ? true : undefined));
    expect(hits[1]!.text).toBe(hits[0]!.text);
    await sleep(QUIET_MS);
    expect(hooks.on(hook)).toHaveLength(2);
    expect(await attempts(slow.url, "retry")).toBe(1);
    expect(await pending(slow.url)).toBe(0);
  });

  it.each([MODES[0]!, MODES[3]!])("on $name a notification being retried holds back the later ones of its config: order is kept", async (m) => {
    const hooks = await receiver();
    const hook = hooks.path("ordered");
    hooks.answer(hook, [503, { status: 429, retryAfter: "0" }], 200);
    const metadata = await scriptedSession(r.stub, askColor(), text("ordered"));
    const task = await sendTask(r.url, m, withPush(m, sendParams(m, userMessage(m, "ask me"), {}, metadata), { url: hooks.url(hook) }));
    expect(stateOf(task)).toBe("input-required");
    const done = await sendTask(r.url, m, { message: userMessage(m, "blue", { taskId: task.id }) });
    expect(stateOf(done)).toBe("completed");
    const hits = await hooks.waitFor(hook, 5);
    await sleep(QUIET_MS);
    expect(hooks.on(hook)).toHaveLength(5);
    const states = hits.map((h) => (m.line === "0.3" ? h.body?.status?.state : (h.body?.statusUpdate ?? h.body?.task)?.status?.state));
    expect(states).toEqual(["input-required", "input-required", "input-required", "working", "completed"].map((st) => wireState(m.line, st)));
    expect(hits[1]!.text).toBe(hits[0]!.text);
    expect(hits[2]!.text).toBe(hits[0]!.text);
    await expectNotification(m.line, hits[4]!, task.id, "completed");
  });

  it("A2A_PUSH_MAX_ATTEMPTS=2 with a receiver always answering 500: exactly two POSTs, then expired", async () => {
    const two = await gateway({ ...QUICK, A2A_PUSH_MAX_ATTEMPTS: "2" });
    const hooks = await receiver();
    const hook = hooks.path("expire");
    hooks.answer(hook, [], 500);
    const m = MODES[0]!;
    const task = await completedTask(two, m);
    await ok(m, await pushSet(two.url, m, task.id, { url: hooks.url(hook) }));
    await hooks.waitFor(hook, 2);
    await until("the notification to expire", async () => ((await finished(two.url, "expired")) === 1 ? true : undefined));
    await sleep(QUIET_MS);
    expect(hooks.on(hook)).toHaveLength(2);
    const value = await metrics(two.url);
    expect(value("a2a_push_delivery_attempts_total", 'outcome="retry"')).toBe(2);
    expect(value("a2a_push_notifications_finished_total", 'outcome="expired"')).toBe(1);
    expect(value("a2a_push_notifications_finished_total", 'outcome="delivered"')).toBe(0);
    expect(value("a2a_push_outbox_pending")).toBe(0);
  });

  it("deleting a config drops what waits for it: no more POSTs, nothing pending", async () => {
    const d = await gateway(QUICK);
    const hooks = await receiver();
    const hook = hooks.path("drop");
    hooks.answer(hook, [], 503);
    const m = MODES[3]!;
    const task = await completedTask(d, m);
    const cfg = await configOf(m, await ok(m, await pushSet(d.url, m, task.id, { url: hooks.url(hook) })));
    await hooks.waitFor(hook, 2);
    expect(await pending(d.url)).toBe(1);
    await expectDeleted(m, await pushDelete(d.url, m, task.id, cfg.id));
    // A POST already on its way when the delete came in may still land; after that, nothing.
    await sleep(100);
    const seen = hooks.on(hook).length;
    await sleep(QUIET_MS);
    expect(hooks.on(hook)).toHaveLength(seen);
    expect(await pending(d.url)).toBe(0);
    expect(await finished(d.url, "dropped")).toBeGreaterThanOrEqual(1);
    expect(await finished(d.url, "delivered")).toBe(0);
  });
});

// ---- errors -------------------------------------------------------------------------------------------------------

describe.each(MODES)("push config errors on $name", (m) => {
  it("an unknown task → TASK_NOT_FOUND on set, get, list and delete", async () => {
    const unknown = randomUUID();
    await expectError(m, await pushSet(g.url, m, unknown, { url: rx.url("/never") }), "TASK_NOT_FOUND");
    await expectError(m, await pushGet(g.url, m, unknown, "cfg"), "TASK_NOT_FOUND");
    await expectError(m, await pushList(g.url, m, unknown), "TASK_NOT_FOUND");
    await expectError(m, await pushDelete(g.url, m, unknown, "cfg"), "TASK_NOT_FOUND");
    expect(rx.on("/never")).toEqual([]);
  });

  it("another principal's task → TASK_NOT_FOUND, and its configs stay untouched", async () => {
    const task = await completedTask(g, m, as(ALICE));
    const hook = rx.path("alice");
    const mine = await configOf(m, await ok(m, await pushSet(g.url, m, task.id, { id: "alice-cfg", url: rx.url(hook) }, as(ALICE))));
    await rx.waitFor(hook, 1); // late registration on the completed task

    const bob = as(BOB);
    await expectError(m, await pushSet(g.url, m, task.id, { id: "bob-cfg", url: rx.url(rx.path("bob")) }, bob), "TASK_NOT_FOUND");
    await expectError(m, await pushSet(g.url, m, task.id, { id: "alice-cfg", url: rx.url(rx.path("bob")) }, bob), "TASK_NOT_FOUND");
    await expectError(m, await pushGet(g.url, m, task.id, "alice-cfg", bob), "TASK_NOT_FOUND");
    await expectError(m, await pushList(g.url, m, task.id, bob), "TASK_NOT_FOUND");
    await expectError(m, await pushDelete(g.url, m, task.id, "alice-cfg", bob), "TASK_NOT_FOUND");

    expect(await configsOf(m, await ok(m, await pushList(g.url, m, task.id, as(ALICE))))).toEqual([mine]);
    // The admin credential sees it too.
    expect(await configOf(m, await ok(m, await pushGet(g.url, m, task.id, "alice-cfg")))).toEqual(mine);
  });

  it("an invalid URL (ftp://, user:password@, missing) → INVALID_PARAMS naming the url field", async () => {
    const task = await completedTask(g, m);
    for (const url of ["ftp://127.0.0.1/hook", `http://user:pass@127.0.0.1:${rx.port}/hook`, undefined, "not a url"]) {
      const err = await expectError(m, await pushSet(g.url, m, task.id, url === undefined ? { token: "t" } : { url }), "INVALID_PARAMS");
      const { fields, text: what } = errorFields(m, err);
      expect(fields.length, `${String(url)}: ${what}`).toBeGreaterThan(0);
      for (const f of fields) expect(f, `${String(url)}: ${what}`).toBe(setFieldName(m, "url"));
    }
    expect(await configsOf(m, await ok(m, await pushList(g.url, m, task.id)))).toEqual([]);
  });

  it("a token or credentials with CR LF → INVALID_PARAMS naming the field", async () => {
    const task = await completedTask(g, m);
    const hook = rx.url(rx.path("crlf"));
    const err = await expectError(m, await pushSet(g.url, m, task.id, { url: hook, token: "abc\r\nX-Injected: 1" }), "INVALID_PARAMS");
    const token = errorFields(m, err);
    expect(token.fields.length, token.text).toBeGreaterThan(0);
    for (const f of token.fields) expect(f, token.text).toBe(setFieldName(m, "token"));

    const err2 = await expectError(m, await pushSet(g.url, m, task.id, { url: hook, auth: { scheme: "Bearer", credentials: "x\r\nX-Injected: 1" } }), "INVALID_PARAMS");
    const creds = errorFields(m, err2);
    expect(creds.fields.length, creds.text).toBeGreaterThan(0);
    for (const f of creds.fields) expect(f, creds.text).toBe(setFieldName(m, "authentication.credentials"));
    expect(await configsOf(m, await ok(m, await pushList(g.url, m, task.id)))).toEqual([]);
  });

  it("more configs than A2A_PUSH_MAX_CONFIGS_PER_TASK (3) → INVALID_PARAMS; replacing one still works", async () => {
    const task = await completedTask(g, m);
    for (const id of ["c1", "c2", "c3"]) await ok(m, await pushSet(g.url, m, task.id, { id, url: rx.url(rx.path("limit")) }));
    await expectError(m, await pushSet(g.url, m, task.id, { id: "c4", url: rx.url(rx.path("limit")) }), "INVALID_PARAMS");
    await ok(m, await pushSet(g.url, m, task.id, { id: "c2", url: rx.url(rx.path("limit")), token: "replaced" }));
    const listed = await configsOf(m, await ok(m, await pushList(g.url, m, task.id)));
    expect(listed.map((c) => c.id)).toEqual(["c1", "c2", "c3"]);
    expect(listed[1]!.token).toBe("replaced");
    await expectDeleted(m, await pushDelete(g.url, m, task.id, "c3"));
    await ok(m, await pushSet(g.url, m, task.id, { id: "c4", url: rx.url(rx.path("limit")) }));
  });
});

describe.each(MODES.filter((m) => m.line === "1.0"))("1.0 config lists page on $name", (m) => {
  const page = (taskId: string, q: Record<string, string | number>): Promise<Reply> =>
    m.transport === "jsonrpc"
      ? jsonrpc(g.url, m, PUSH_METHODS["1.0"].list, { taskId, ...q })
      : rest(g.url, m, "GET", `${configsPath(m, taskId)}?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`);
  const ids = async (res: Reply): Promise<{ ids: string[]; next: string }> => {
    const result = await ok(m, res);
    await expectValid(schemasOf(m).pushConfigList, result);
    return { ids: result.configs.map((c: any) => c.id), next: result.nextPageToken };
  };

  it("pageSize 2 over three configs: two pages in the order they were set; pageSize 0 or unset answers all", async () => {
    const task = await completedTask(g, m);
    for (const id of ["p1", "p2", "p3"]) await ok(m, await pushSet(g.url, m, task.id, { id, url: rx.url(rx.path("pages")) }));
    const first = await ids(await page(task.id, { pageSize: 2 }));
    expect(first.ids).toEqual(["p1", "p2"]);
    expect(first.next).not.toBe("");
    expect(await ids(await page(task.id, { pageSize: 2, pageToken: first.next }))).toEqual({ ids: ["p3"], next: "" });
    expect(await ids(await page(task.id, { pageSize: 5, pageToken: first.next }))).toEqual({ ids: ["p3"], next: "" });
    expect(await ids(await page(task.id, { pageSize: 0 }))).toEqual({ ids: ["p1", "p2", "p3"], next: "" });
    expect(await ids(await page(task.id, {}))).toEqual({ ids: ["p1", "p2", "p3"], next: "" });
  });

  it("another task's token, a malformed token and a negative pageSize → INVALID_PARAMS naming the parameter", async () => {
    const task = await completedTask(g, m);
    const other = await completedTask(g, m);
    for (const id of ["q1", "q2"]) await ok(m, await pushSet(g.url, m, task.id, { id, url: rx.url(rx.path("pages")) }));
    const { next } = await ids(await page(task.id, { pageSize: 1 }));
    for (const [q, field] of [
      [{ pageToken: next }, "pageToken"],
      [{ pageToken: "not-a-token" }, "pageToken"],
      [{ pageSize: -1 }, "pageSize"],
    ] as const) {
      const err = await expectError(m, await page(other.id, q), "INVALID_PARAMS");
      const { fields, text } = errorFields(m, err);
      expect(fields, text).toContain(field);
    }
  });
});

describe("private network targets (A2A_PUSH_ALLOW_PRIVATE_NETWORKS off, the default)", () => {
  let p: TaskGateway;
  beforeAll(async () => {
    p = await gateway({ A2A_RATE_LIMIT_MAX_REQUESTS: "0" }, "file");
  });

  describe.each(MODES)("on $name", (m) => {
    it("a loopback or localhost webhook URL → INVALID_PARAMS naming the url field", async () => {
      const task = await completedTask(p, m);
      for (const url of [rx.url("/private"), `http://localhost:${rx.port}/private`, "http://10.1.2.3/hook", "http://169.254.169.254/latest", "http://[::1]:8080/x"]) {
        const err = await expectError(m, await pushSet(p.url, m, task.id, { url }), "INVALID_PARAMS");
        const { fields, text: what } = errorFields(m, err);
        expect(fields.length, `${url}: ${what}`).toBeGreaterThan(0);
        for (const f of fields) expect(f, `${url}: ${what}`).toBe(setFieldName(m, "url"));
      }
      expect(await configsOf(m, await ok(m, await pushList(p.url, m, task.id)))).toEqual([]);
      expect(rx.on("/private")).toEqual([]);
    });

    it("a loopback or otherwise invalid URL given with message/send → INVALID_PARAMS naming the send's field, before any task exists", async () => {
      const sessions = () => p.stub.requests.filter((r) => r.method === "POST" && r.path === "/session").length;
      const before = sessions();
      // ftp:// is refused by the codec, the others by the push checks: both name the field of the caller's wire.
      for (const url of ["ftp://example.com/hook", rx.url("/private"), "http://user:pass@example.com/hook"]) {
        const res = await sendMsg(p.url, m, withPush(m, sendParams(m, userMessage(m, "push to loopback")), { url }));
        const err = await expectError(m, res, "INVALID_PARAMS");
        const { fields, text: what } = errorFields(m, err);
        expect(fields.length, `${url}: ${what}`).toBeGreaterThan(0);
        for (const f of fields) expect(f, `${url}: ${what}`).toBe(sendFieldName(m, "url"));
      }
      expect(sessions()).toBe(before);
    });
  });
});

describe("push notifications switched off (A2A_PUSH_NOTIFICATIONS_ENABLED=false)", () => {
  let off: TaskGateway;
  beforeAll(async () => {
    off = await gateway({ ...QUICK, A2A_PUSH_NOTIFICATIONS_ENABLED: "false" }, "file");
  });

  describe.each(MODES)("on $name", (m) => {
    it("every push config method answers PUSH_NOTIFICATION_NOT_SUPPORTED", async () => {
      const task = await completedTask(off, m);
      for (const id of [task.id, randomUUID()]) {
        await expectError(m, await pushSet(off.url, m, id, { url: rx.url("/off") }), "PUSH_NOTIFICATION_NOT_SUPPORTED");
        await expectError(m, await pushGet(off.url, m, id, "cfg"), "PUSH_NOTIFICATION_NOT_SUPPORTED");
        await expectError(m, await pushList(off.url, m, id), "PUSH_NOTIFICATION_NOT_SUPPORTED");
        await expectError(m, await pushDelete(off.url, m, id, "cfg"), "PUSH_NOTIFICATION_NOT_SUPPORTED");
      }
    });

    it("a config given with message/send is ignored: the task completes, nothing is posted", async () => {
      const hook = rx.path("off-send");
      off.stub.script(text("no push"));
      const task = await sendTask(off.url, m, withPush(m, sendParams(m, userMessage(m, "push is off")), { url: rx.url(hook) }));
      expect(stateOf(task)).toBe("completed");
      await sleep(QUIET_MS);
      expect(rx.on(hook)).toEqual([]);
    });
  });

  it.each(LINES)("the %s cards say pushNotifications false (true where it is on)", async (line) => {
    for (const [gw, expected] of [
      [off, false],
      [g, true],
    ] as const) {
      const card = await call(gw.url, "/.well-known/agent-card.json", { auth: false, headers: { "A2A-Version": line } });
      expect(card.status).toBe(200);
      expect(card.body.capabilities.pushNotifications).toBe(expected);
      await expectValid(line === "0.3" ? "v0_3/AgentCard" : "v1_0/AgentCard", card.body);
      const extended = await call(gw.url, "/agent/authenticatedExtendedCard", { headers: { "A2A-Version": line } });
      expect(extended.status, extended.text).toBe(200);
      expect(extended.body.capabilities.pushNotifications).toBe(expected);
      expect(wireContractOf(extended.body).service_behaviors?.push_notifications?.supported).toBe(expected);
    }
  });
});

// ---- durability ---------------------------------------------------------------------------------------------------

describe.sequential("a notification queued while the receiver is down survives a restart (SQLite)", () => {
  let dir: string;
  let env: Record<string, string>;
  let first: TaskGateway | undefined;
  let second: TaskGateway | undefined;
  let later: Receiver | undefined;
  let port = 0;
  const hook03 = `/durable/${randomUUID()}`;
  const hook10 = `/durable/${randomUUID()}`;
  const hookOrphan = `/orphan/${randomUUID()}`;
  let orphan: string | undefined;
  const tasks: { line: Line; id: string; hook: string }[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "push-durability-"));
    env = {
      ...QUICK,
      A2A_TASK_STORE_BACKEND: "database",
      A2A_TASK_STORE_DATABASE_URL: `sqlite:///${dir}/push.db`,
      A2A_PUSH_MAX_ATTEMPTS: "1000",
    };
    // A port that was just free: nobody listens there until the receiver comes up after the restart.
    const probe = await Receiver.start();
    port = probe.port;
    await probe.close();
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await later?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("before: the tasks complete while the receiver is down; the notifications stay queued", async () => {
    first = await startTaskGateway(env);
    const g1 = first;
    const m03 = MODES[0]!;
    g1.stub.script(text("durable 0.3"));
    const t03 = await sendTask(g1.url, m03, withPush(m03, sendParams(m03, userMessage(m03, "remember to tell me")), { url: `http://127.0.0.1:${port}${hook03}`, token: "durable-token" }));
    expect(stateOf(t03)).toBe("completed");
    tasks.push({ line: "0.3", id: t03.id, hook: hook03 });
    const m10 = MODES[3]!;
    const t10 = await completedTask(g1, m10);
    await ok(m10, await pushSet(g1.url, m10, t10.id, { url: `http://127.0.0.1:${port}${hook10}` }));
    tasks.push({ line: "1.0", id: t10.id, hook: hook10 });

    await until("both notifications to have failed at least once", async () => ((await attempts(g1.url, "retry")) >= 2 ? true : undefined));
    expect(await pending(g1.url)).toBe(2);
    expect(await finished(g1.url, "delivered")).toBe(0);

    // A task still running when the gateway stops: nothing to tell yet (it started working and stays so).
    const metadata = await scriptedSession(g1.stub, hang({ chunks: ["half way"] }));
    const running = await sendTask(g1.url, m03, withPush(m03, sendParams(m03, userMessage(m03, "never finishes"), { blocking: false }, metadata), { url: `http://127.0.0.1:${port}${hookOrphan}` }));
    await until("the running turn to reach OpenCode", () => g1.stub.requests.some((r) => r.method === "POST" && r.path === `/session/${metadata.shared.session.id}/prompt_async`));
    orphan = running.id;
    await sleep(200);
    expect(await pending(g1.url)).toBe(2);
    await g1.close();
    await g1.gw.gateway.push?.idle();
    first = undefined;
  });

  it("after: a new gateway on the same store delivers them once the receiver is up on that port", async () => {
    expect(tasks).toHaveLength(2);
    later = await Receiver.start(port);
    second = await startTaskGateway(env);
    for (const { line, id, hook } of tasks) {
      const [hit] = await later.waitFor(hook, 1);
      await expectNotification(line, hit!, id, "completed");
      if (line === "0.3") expect(hit!.headers["x-a2a-notification-token"]).toBe("durable-token");
    }
    // The task the first gateway left running is failed by the second one, and its config is told.
    expect(orphan).toBeDefined();
    const [failedHit] = await later.waitFor(hookOrphan, 1);
    const failedTask = await expectNotification("0.3", failedHit!, orphan!, "failed");
    expect(JSON.stringify(failedTask.metadata)).toMatch(/GATEWAY_RESTARTED/);

    await until("the outbox to empty", async () => ((await pending(second!.url)) === 0 ? true : undefined));
    await sleep(QUIET_MS);
    for (const { hook } of tasks) expect(later.on(hook)).toHaveLength(1);
    expect(later.on(hookOrphan)).toHaveLength(1);
    expect(await finished(second.url, "delivered")).toBe(3);
  });
});
