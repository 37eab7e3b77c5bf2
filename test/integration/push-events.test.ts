// Seed 004's push config fields end to end (the real gateway in-process, the stub OpenCode, a webhook receiver):
// event filters (`enabledEvents`) on every line and transport, the typed events payload (`payloadFormat: "events"`),
// quiet hours with an injected push clock (held, then delivered coalesced at the window's end; input_required sent at
// once; a window crossing midnight; a time zone; nothing lost across a restart inside the window, SQLite), seed 004's
// 0.3 JSON-RPC request and answer shapes, and the refusals (unknown fields, bad values) on every line.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { expectValid } from "../support/contract.js";
import {
  askColor,
  completedTask,
  configOf,
  configsPath,
  configsOf,
  expectNotification,
  finished,
  jsonrpc,
  ok,
  pending,
  pushGet,
  pushList,
  pushSet,
  QUICK,
  QUIET_MS,
  Receiver,
  rest,
  scriptedSession,
  sendFieldName,
  sendMsg,
  sendTask,
  setFieldName,
  sleep,
  wireState,
  withPush,
  type Cfg,
  type Hit,
  type Obj,
} from "../support/push-wire.js";
import { errorFields, expectError, MODES, sendParams, stateOf, until, userMessage, type Line, type Mode } from "../support/task-wire.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text } from "../../tools/upstream/script.js";

const done: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of done.splice(0).reverse()) await close();
});

/** A movable push clock: real time plus an offset, so timers and retries keep running while tests jump it. */
class Clock {
  #offset = 0;
  readonly now = (): number => Date.now() + this.#offset;
  /** From now on the clock reads `iso` (and runs on from there). */
  set(iso: string): void {
    this.#offset = Date.parse(iso) - Date.now();
  }
}

async function gateway(env: Record<string, string> = {}, clock?: Clock): Promise<TaskGateway> {
  const g = await startTaskGateway({ ...QUICK, ...env }, {}, clock === undefined ? {} : { pushClock: clock.now });
  done.push(() => g.close());
  return g;
}

/** The state an A2A notification carries, in the wire spelling of its line. */
const stateIn = (line: Line, hit: Hit): string => (line === "0.3" ? hit.body?.status?.state : (hit.body?.statusUpdate ?? hit.body?.task)?.status?.state);
const statesAt = (rx: Receiver, line: Line, hook: string): string[] => rx.on(hook).map((h) => stateIn(line, h));
const wire = (line: Line, states: string[]) => states.map((s) => wireState(line, s));

/** A task that asks a question (input-required), then completes with `reply` once answered. */
async function askingTask(g: TaskGateway, m: Mode, reply: string, push?: Cfg): Promise<Obj> {
  const metadata = await scriptedSession(g.stub, askColor(), text(reply));
  const params = sendParams(m, userMessage(m, "ask me a colour"), {}, metadata);
  const task = await sendTask(g.url, m, push === undefined ? params : withPush(m, params, push));
  expect(stateOf(task), JSON.stringify(task.status)).toBe("input-required");
  return task;
}
async function answer(g: TaskGateway, m: Mode, task: Obj): Promise<void> {
  const finished = await sendTask(g.url, m, { message: userMessage(m, "blue", { taskId: task.id }) });
  expect(stateOf(finished)).toBe("completed");
}

/** The typed events a hook received, each checked against the declared PushEvent schema and Content-Type. */
async function typedEvents(rx: Receiver, hook: string): Promise<Obj[]> {
  const out: Obj[] = [];
  for (const hit of rx.on(hook)) {
    expect(hit.headers["content-type"]).toBe("application/json");
    await expectValid("v0_3/PushEvent", hit.body);
    out.push(hit.body);
  }
  return out;
}
/** The fields an INVALID_PARAMS answer names, each once. */
const named = (m: Mode, err: Obj): string[] => [...new Set(errorFields(m, err).fields)];
const changes = (events: Obj[]): string[] => events.filter((e) => e.event === "status_change").map((e) => `${e.data.old_state}>${e.data.new_state}`);

let g: TaskGateway;
let rx: Receiver;
beforeAll(async () => {
  g = await gateway();
  rx = await Receiver.start();
  done.push(() => rx.close());
});

describe.each(MODES)("event filters on $name", (m) => {
  it("each config gets only the state changes whose events it enabled; get and list answer the fields", async () => {
    const task = await askingTask(g, m, "blue it is");
    const hooks: Record<string, string> = {};
    for (const event of ["status_change", "input_required", "message", "artifact"]) {
      hooks[event] = rx.path(event);
      const set = await configOf(m, await ok(m, await pushSet(g.url, m, task.id, { id: `only-${event}`, url: rx.url(hooks[event]!), seed: { enabledEvents: [event] } })));
      expect(set.seed).toEqual({ enabledEvents: [event] });
    }
    const listed = await configsOf(m, await ok(m, await pushList(g.url, m, task.id)));
    expect(listed.map((c) => c.seed.enabledEvents)).toEqual([["status_change"], ["input_required"], ["message"], ["artifact"]]);
    expect((await configOf(m, await ok(m, await pushGet(g.url, m, task.id, "only-message")))).seed).toEqual({ enabledEvents: ["message"] });
    // Set while the task waits: the ones whose events the task's state so far yields are told at once.
    await rx.waitFor(hooks.input_required!, 1);
    await answer(g, m, task);
    await rx.waitFor(hooks.status_change!, 3);
    await sleep(QUIET_MS);
    expect(statesAt(rx, m.line, hooks.status_change!)).toEqual(wire(m.line, ["input-required", "working", "completed"]));
    expect(statesAt(rx, m.line, hooks.input_required!)).toEqual(wire(m.line, ["input-required"]));
    // The question (the input-required status message) and the reply are the task's agent messages.
    expect(statesAt(rx, m.line, hooks.message!)).toEqual(wire(m.line, ["input-required", "completed"]));
    // The reply's text artifact arrives with the completion; resuming (working) brings no artifact.
    const artifactStates = statesAt(rx, m.line, hooks.artifact!);
    expect(artifactStates.at(-1)).toBe(wireState(m.line, "completed"));
    expect(artifactStates).not.toContain(wireState(m.line, "working"));
    for (const hit of rx.on(hooks.message!)) await expectNotification(m.line, hit, task.id, stateIn(m.line, hit) === wireState(m.line, "completed") ? "completed" : "input-required");
  });

  it("the events payload format: seed 004's typed events, one POST each, for a config given with the message", async () => {
    const hook = rx.path("events");
    const task = await askingTask(g, m, "blue it is", { url: rx.url(hook), token: "ev-token", seed: { payloadFormat: "events" } });
    await answer(g, m, task);
    await until("the completion's status_change", () => (rx.on(hook).some((h) => h.body?.data?.new_state === "completed") ? true : undefined));
    await sleep(QUIET_MS);
    const events = await typedEvents(rx, hook);
    for (const [i, e] of events.entries()) {
      expect(e.task_id).toBe(task.id);
      expect(rx.on(hook)[i]!.headers["x-a2a-notification-token"]).toBe("ev-token");
    }
    // A task is created working (its config with it): the changes after that.
    expect(changes(events)).toEqual(["working>input-required", "input-required>working", "working>completed"]);
    const asked = events.filter((e) => e.event === "input_required");
    expect(asked).toHaveLength(1);
    expect(asked[0]!.data.prompt).toMatch(/Pick a color\?/);
    expect(asked[0]!.data.input_types).toEqual(["text/plain"]);
    const messages = events.filter((e) => e.event === "message").map((e) => e.data);
    expect(messages.at(-1)).toEqual({ message_role: "assistant", message_content: "blue it is" });
    expect(messages.some((d) => /Pick a color\?/.test(d.message_content))).toBe(true);
    const response = events.filter((e) => e.event === "artifact" && e.data.artifact_name === "response");
    expect(response.map((e) => e.data)).toEqual([{ artifact_type: "text", artifact_name: "response", artifact_size: Buffer.byteLength("blue it is") }]);
    // Each artifact once; the events of one state change in the declared order.
    const names = events.filter((e) => e.event === "artifact").map((e) => e.data.artifact_name);
    expect(new Set(names).size).toBe(names.length);
    const completion = events.slice(events.findIndex((e) => e.data.new_state === "completed"));
    expect(completion.map((e) => e.event)).toEqual(["status_change", "message", ...completion.slice(2).map(() => "artifact")]);
  });
});

it("events format with enabledEvents: only the enabled types arrive", async () => {
  const m = MODES[3]!;
  const hook = rx.path("events-filtered");
  const task = await askingTask(g, m, "red it is", { url: rx.url(hook), seed: { payloadFormat: "events", enabledEvents: ["input_required", "artifact"] } });
  await answer(g, m, task);
  await until("the response artifact", () => (rx.on(hook).some((h) => h.body?.data?.artifact_name === "response") ? true : undefined));
  await sleep(QUIET_MS);
  const events = await typedEvents(rx, hook);
  expect(new Set(events.map((e) => e.event))).toEqual(new Set(["input_required", "artifact"]));
  expect(events.filter((e) => e.event === "input_required")).toHaveLength(1);
});

// ---- quiet hours ----------------------------------------------------------------------------------------------------

describe("quiet hours (an injected push clock)", () => {
  const clock = new Clock();
  let q: TaskGateway;
  beforeAll(async () => {
    q = await gateway({}, clock);
  });
  afterEach(() => clock.set(new Date().toISOString()));

  /** Past the window's end, and the worker told (its timer was armed for the real time of the end). */
  const windowEnds = (iso: string) => {
    clock.set(iso);
    q.gw.gateway.push!.kick();
  };

  it.each(MODES)("a2a on $name, 22:00–08:00 UTC: input-required at once, the rest held and delivered coalesced (the latest state) at 08:00", async (m) => {
    clock.set("2030-01-15T23:00:00Z");
    const hook = rx.path("quiet-a2a");
    const before = await finished(q.url, "coalesced");
    const task = await askingTask(q, m, "night answer", { url: rx.url(hook), seed: { quietHoursStart: "22:00", quietHoursEnd: "08:00" } });
    // input_required bypasses the window: sent at once.
    const [asked] = await rx.waitFor(hook, 1);
    await expectNotification(m.line, asked!, task.id, "input-required");
    await answer(q, m, task);
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toHaveLength(1);
    expect(await pending(q.url)).toBe(1);
    clock.set("2030-01-16T07:59:00Z");
    q.gw.gateway.push!.kick();
    await sleep(QUIET_MS);
    expect(rx.on(hook), "still inside the window at 07:59").toHaveLength(1);
    windowEnds("2030-01-16T08:00:01Z");
    const hits = await rx.waitFor(hook, 2);
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toHaveLength(2);
    await expectNotification(m.line, hits[1]!, task.id, "completed");
    // The held working was replaced by completed.
    expect((await finished(q.url, "coalesced")) - before).toBe(1);
    expect(await pending(q.url)).toBe(0);
  });

  it("events in America/New_York, 23:30–06:15 (across midnight): one status_change, the message, each artifact, held until 06:15 there", async () => {
    clock.set("2030-01-15T09:00:00Z"); // 04:00 in New York
    const m = MODES[2]!;
    const hook = rx.path("quiet-events");
    q.stub.script(text("quiet reply"));
    const cfg: Cfg = { url: rx.url(hook), seed: { payloadFormat: "events", quietHoursStart: "23:30", quietHoursEnd: "06:15", quietHoursTimeZone: "America/New_York" } };
    const task = await sendTask(q.url, m, withPush(m, sendParams(m, userMessage(m, "finish at night")), cfg));
    expect(stateOf(task)).toBe("completed");
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toEqual([]);
    windowEnds("2030-01-15T11:14:00Z"); // 06:14 in New York: still quiet
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toEqual([]);
    windowEnds("2030-01-15T11:15:01Z"); // 06:15:01
    await until("the held events", () => (rx.on(hook).some((h) => h.body?.data?.artifact_name === "response") ? true : undefined));
    await sleep(QUIET_MS);
    const events = await typedEvents(rx, hook);
    expect(events[0]!.event).toBe("status_change");
    expect(changes(events)).toEqual(["working>completed"]);
    expect(events.filter((e) => e.event === "message").map((e) => e.data.message_content)).toEqual(["quiet reply"]);
    expect(events.filter((e) => e.event === "artifact" && e.data.artifact_name === "response")).toHaveLength(1);
  });

  it("events: input_required is sent at once inside the window; the status changes wait for its end", async () => {
    clock.set("2030-01-15T23:30:00Z");
    const m = MODES[0]!;
    const hook = rx.path("quiet-bypass");
    const task = await askingTask(q, m, "bypass reply", { url: rx.url(hook), seed: { payloadFormat: "events", quietHoursStart: "22:00", quietHoursEnd: "08:00" } });
    const [first] = await rx.waitFor(hook, 1);
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toHaveLength(1);
    expect(first!.body).toMatchObject({ event: "input_required", task_id: task.id });
    await answer(q, m, task);
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toHaveLength(1);
    windowEnds("2030-01-16T08:00:00Z");
    await until("the held status change", () => (rx.on(hook).some((h) => h.body?.event === "status_change") ? true : undefined));
    await sleep(QUIET_MS);
    const events = await typedEvents(rx, hook);
    // working → input-required → working → completed, held and coalesced into one.
    expect(changes(events)).toEqual(["working>completed"]);
    expect(events.filter((e) => e.event === "input_required")).toHaveLength(1);
    expect(events.filter((e) => e.event === "message").map((e) => e.data.message_content)).toEqual(["bypass reply"]);
  });

  it("outside the window nothing is held", async () => {
    clock.set("2030-01-15T12:00:00Z");
    const m = MODES[1]!;
    const hook = rx.path("quiet-daytime");
    q.stub.script(text("day reply"));
    const task = await sendTask(q.url, m, withPush(m, sendParams(m, userMessage(m, "daytime")), { url: rx.url(hook), seed: { quietHoursStart: "22:00", quietHoursEnd: "08:00" } }));
    await expectNotification(m.line, (await rx.waitFor(hook, 1))[0]!, task.id, "completed");
  });
});

describe.sequential("quiet hours across a restart inside the window (SQLite)", () => {
  const clock = new Clock();
  let dir: string;
  let env: Record<string, string>;
  let task: Obj | undefined;
  const hook = `/restart-quiet/${Date.now()}`;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "push-quiet-"));
    env = { A2A_TASK_STORE_BACKEND: "database", A2A_TASK_STORE_DATABASE_URL: `sqlite:///${dir}/push.db` };
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("before: a task completes inside the window; its notifications are held", async () => {
    clock.set("2030-01-15T23:00:00Z");
    const first = await startTaskGateway({ ...QUICK, ...env }, {}, { pushClock: clock.now });
    try {
      const m = MODES[0]!;
      first.stub.script(text("held over a restart"));
      task = await sendTask(first.url, m, withPush(m, sendParams(m, userMessage(m, "finish at night")), { url: rx.url(hook), seed: { quietHoursStart: "22:00", quietHoursEnd: "08:00" } }));
      expect(stateOf(task)).toBe("completed");
      await sleep(QUIET_MS);
      expect(rx.on(hook)).toEqual([]);
      expect(await pending(first.url)).toBe(1);
    } finally {
      await first.close();
    }
  });

  it("after: a new gateway on the same store keeps them held until the window ends, then delivers the latest state once", async () => {
    expect(task).toBeDefined();
    clock.set("2030-01-16T03:00:00Z");
    const second = await startTaskGateway({ ...QUICK, ...env }, {}, { pushClock: clock.now });
    done.push(() => second.close());
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toEqual([]);
    expect(await pending(second.url)).toBe(1);
    clock.set("2030-01-16T08:00:05Z");
    second.gw.gateway.push!.kick();
    const [hit] = await rx.waitFor(hook, 1);
    await expectNotification("0.3", hit!, task!.id, "completed");
    await sleep(QUIET_MS);
    expect(rx.on(hook)).toHaveLength(1);
    expect(await pending(second.url)).toBe(0);
  });
});

// ---- seed 004's 0.3 JSON-RPC shapes ---------------------------------------------------------------------------------

describe("seed 004's tasks/pushNotificationConfig/* shapes on 0.3 JSON-RPC", () => {
  const m = MODES[0]!;
  const call = (method: string, params: unknown) => jsonrpc(g.url, m, `tasks/pushNotificationConfig/${method}`, params);

  it("set {taskId, config} answers {id, status, createdAt}; get / list / delete take {taskId, configId}", async () => {
    const metadata = await scriptedSession(g.stub, askColor(), text("seed answer"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "seed shapes"), {}, metadata));
    const hook = rx.path("seed");
    const config = { id: "webhook_001", url: rx.url(hook), token: "your-bearer-token", enabledEvents: ["status_change", "message", "input_required"], quietHoursStart: "22:00", quietHoursEnd: "08:00" };
    const ack = await ok(m, await call("set", { taskId: task.id, config }));
    await expectValid("v0_3/PushNotificationConfigAck", ack);
    expect(ack).toEqual({ id: "webhook_001", status: "active", createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/) });
    // A2A answers to the A2A reads, seed 004's fields included.
    const got = await configOf(m, await ok(m, await call("get", { taskId: task.id, configId: "webhook_001" })));
    expect(got).toMatchObject({ id: "webhook_001", url: rx.url(hook), token: "your-bearer-token" });
    expect(got.seed).toEqual({ enabledEvents: config.enabledEvents, quietHoursStart: "22:00", quietHoursEnd: "08:00" });
    expect((await configsOf(m, await ok(m, await call("list", { taskId: task.id })))).map((c) => c.id)).toEqual(["webhook_001"]);
    // Replacing keeps the creation time; the A2A request shape keeps the A2A answer.
    const again = await ok(m, await call("set", { taskId: task.id, config: { ...config, token: "rotated" } }));
    expect(again.createdAt).toBe(ack.createdAt);
    const a2a = await configOf(m, await ok(m, await call("set", { taskId: task.id, pushNotificationConfig: { ...config, id: "a2a-shaped" } })));
    expect(a2a.id).toBe("a2a-shaped");
    expect(await ok(m, await call("delete", { taskId: task.id, configId: "webhook_001" }))).toBeNull();
    await expectError(m, await call("get", { taskId: task.id, configId: "webhook_001" }), "TASK_NOT_FOUND");
  });

  it.each([
    [{ pushNotificationConfig: { url: "http://127.0.0.1:9/x" }, config: { url: "http://127.0.0.1:9/x" } }, "config"],
    [{}, "pushNotificationConfig"],
    [{ config: { url: "http://127.0.0.1:9/x", bogus: true } }, "config.bogus"],
    [{ config: { url: "http://127.0.0.1:9/x", quietHoursStart: "22:00" } }, "config.quietHoursEnd"],
  ])("set %j → INVALID_PARAMS naming %s", async (params, field) => {
    const task = await completedTask(g, m);
    const err = await expectError(m, await call("set", { taskId: task.id, ...params }), "INVALID_PARAMS");
    expect(named(m, err), errorFields(m, err).text).toEqual([field]);
  });

  it.each([
    ["get", { id: "t", configId: "c" }, "configId"],
    ["get", { taskId: "t", id: "t" }, "taskId"],
    ["delete", { taskId: "t" }, "configId"],
    ["delete", { taskId: "t", pushNotificationConfigId: "c" }, "pushNotificationConfigId"],
  ])("%s %j → INVALID_PARAMS naming %s (the shapes are not mixed)", async (method, params, field) => {
    const err = await expectError(m, await call(method, params), "INVALID_PARAMS");
    expect(named(m, err), errorFields(m, err).text).toEqual([field]);
  });
});

// ---- refusals -------------------------------------------------------------------------------------------------------

describe.each(MODES)("push config refusals on $name", (m) => {
  const bad: [Obj, string][] = [
    [{ bogus: 1 }, "bogus"],
    [{ enabledEvents: ["status_change", "nope"] }, "enabledEvents.1"],
    [{ enabledEvents: ["message", "message"] }, "enabledEvents"],
    [{ quietHoursStart: "24:00", quietHoursEnd: "08:00" }, "quietHoursStart"],
    [{ quietHoursStart: "22:00", quietHoursEnd: "8:00" }, "quietHoursEnd"],
    [{ quietHoursEnd: "08:00" }, "quietHoursStart"],
    [{ quietHoursStart: "08:00", quietHoursEnd: "08:00" }, "quietHoursEnd"],
    [{ quietHoursStart: "22:00", quietHoursEnd: "08:00", quietHoursTimeZone: "Mars/Olympus_Mons" }, "quietHoursTimeZone"],
    [{ quietHoursTimeZone: "UTC" }, "quietHoursTimeZone"],
    [{ payloadFormat: "xml" }, "payloadFormat"],
  ];

  it("set: unknown fields and bad values → INVALID_PARAMS naming the field; nothing is stored", async () => {
    const task = await completedTask(g, m);
    for (const [seed, field] of bad) {
      const err = await expectError(m, await pushSet(g.url, m, task.id, { url: rx.url("/refused"), seed }), "INVALID_PARAMS");
      expect(named(m, err), `${JSON.stringify(seed)}: ${errorFields(m, err).text}`).toEqual([setFieldName(m, field)]);
    }
    expect(await configsOf(m, await ok(m, await pushList(g.url, m, task.id)))).toEqual([]);
  });

  it("an unknown field in the authentication object → INVALID_PARAMS naming it", async () => {
    const task = await completedTask(g, m);
    const authentication = m.line === "0.3" ? { schemes: ["Bearer"], realm: "x" } : { scheme: "Bearer", realm: "x" };
    const err = await expectError(m, await pushSet(g.url, m, task.id, { url: rx.url("/refused"), seed: { authentication } }), "INVALID_PARAMS");
    expect(named(m, err), errorFields(m, err).text).toEqual([setFieldName(m, "authentication.realm")]);
  });

  it("message/send: the same refusals name the send's field, before any task exists", async () => {
    for (const [seed, field] of bad.slice(0, 4)) {
      const err = await expectError(m, await sendMsg(g.url, m, withPush(m, sendParams(m, userMessage(m, "bad push")), { url: rx.url("/refused"), seed })), "INVALID_PARAMS");
      expect(named(m, err), `${JSON.stringify(seed)}: ${errorFields(m, err).text}`).toEqual([sendFieldName(m, field)]);
    }
    expect(rx.on("/refused")).toEqual([]);
  });
});

it.each([
  [MODES[0]!.name, MODES[0]!, "tasks/pushNotificationConfig/set", { pushNotificationConfig: { url: "http://127.0.0.1:9/x" }, bogus: 1 }],
  [MODES[1]!.name, MODES[1]!, "POST", { pushNotificationConfig: { url: "http://127.0.0.1:9/x" }, bogus: 1 }],
  [MODES[1]!.name, MODES[1]!, "POST", { config: { pushNotificationConfig: { url: "http://127.0.0.1:9/x" } }, bogus: 1 }],
  [MODES[2]!.name, MODES[2]!, "CreateTaskPushNotificationConfig", { url: "http://127.0.0.1:9/x", bogus: 1 }],
  [MODES[3]!.name, MODES[3]!, "POST", { url: "http://127.0.0.1:9/x", bogus: 1 }],
])("%s: an unknown field beside the config in a set request → INVALID_PARAMS naming it (%#)", async (_name, m, method, params) => {
  const task = await completedTask(g, m);
  const res = m.transport === "jsonrpc" ? await jsonrpc(g.url, m, method, { taskId: task.id, ...params }) : await rest(g.url, m, method, configsPath(m, task.id), params);
  const err = await expectError(m, res, "INVALID_PARAMS");
  expect(named(m, err)[0], errorFields(m, err).text).toBe("bogus");
});

it.each(MODES)("$name takes the snake_case spellings and answers camelCase", async (m) => {
  const task = await completedTask(g, m);
  const seed = { enabled_events: ["artifact"], quiet_hours_start: "01:00", quiet_hours_end: "02:00", quiet_hours_time_zone: "Europe/Berlin", payload_format: "events" };
  const set = await configOf(m, await ok(m, await pushSet(g.url, m, task.id, { id: "snake", url: rx.url(rx.path("snake")), seed })));
  expect(set.seed).toEqual({ enabledEvents: ["artifact"], quietHoursStart: "01:00", quietHoursEnd: "02:00", quietHoursTimeZone: "Europe/Berlin", payloadFormat: "events" });
});
