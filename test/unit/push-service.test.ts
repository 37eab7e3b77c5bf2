// PushService (src/push/service.ts) over a memory storage, with a scripted fake sender, a fake clock and random, and
// fake timers for the retry wake-ups: the config methods (set / get / list / delete, ids per line, the per-task
// limit, TASK_NOT_FOUND / INVALID_PARAMS), what changed() queues and sends (bodies and headers per line), the
// announcement on set(), retries with backoff and Retry-After, giving up, rejects, in-order delivery per
// (task, config), dropping on delete, concurrency and stop().
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Principal } from "../../src/auth/index.js";
import { A2AError } from "../../src/contract/errors.js";
import { rejectsA2AError } from "../support/errors.js";
import { RESULTS_FILES, RESULTS_READ } from "../../src/runtime/result-scope.js";
import type { PushConfigInput } from "../../src/protocol/codec/index.js";
import type { StatusUpdateEvent, Task, TaskState } from "../../src/protocol/model.js";
import type { SendVerdict, WebhookRequest } from "../../src/push/sender.js";
import { PushService, type PushOptions } from "../../src/push/service.js";
import { Metrics } from "../../src/observability/metrics.js";
import { openStorage, type Storage } from "../../src/storage/index.js";
import type { BusyQueues, NewDelivery, PushDelivery, PushOutboxStore } from "../../src/storage/push-outbox.js";

const T0 = Date.UTC(2025, 0, 1);
const URL_A = "https://hooks.example.com/a";
const URL_B = "https://hooks.example.com/b";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// alice may read results and files; bob may not (webhook bodies carry no more than the config's principal may read).
const alice: Principal = { id: "alice", credentialId: "cred-a", trustLevel: "user", scopes: new Set([RESULTS_READ, RESULTS_FILES]), admin: false };
const bob: Principal = { id: "bob", credentialId: "cred-b", trustLevel: "user", scopes: new Set(), admin: false };

function makeTask(id: string, state: TaskState = "working"): Task {
  return {
    id,
    contextId: `ctx-${id}`,
    status: { state, timestamp: new Date(T0).toISOString() },
    history: [{ messageId: `m-${id}`, role: "user", parts: [{ kind: "text", text: `hello ${id}` }] }],
    ...(state === "completed" ? { artifacts: [{ artifactId: `a-${id}`, parts: [{ kind: "text" as const, text: "result" }] }] } : {}),
  };
}

interface Sent {
  request: WebhookRequest;
  signal: AbortSignal | undefined;
}

type Reply = SendVerdict | ((request: WebhookRequest, signal: AbortSignal | undefined) => Promise<SendVerdict>);

/** A sender that records every request and answers from a script (then `fallback`). */
class FakeSender {
  readonly sent: Sent[] = [];
  readonly script: Reply[] = [];
  fallback: Reply = { kind: "delivered", status: 200 };
  closed = 0;

  send(request: WebhookRequest, signal?: AbortSignal): Promise<SendVerdict> {
    this.sent.push({ request, signal });
    const reply = this.script.length > 0 ? this.script.shift()! : this.fallback;
    return typeof reply === "function" ? reply(request, signal) : Promise.resolve(reply);
  }

  close(): void {
    this.closed++;
  }

  bodies(): unknown[] {
    return this.sent.map((s) => JSON.parse(s.request.body));
  }
}

const DELIVERED: SendVerdict = { kind: "delivered", status: 200 };
const retry = (extra: Partial<Extract<SendVerdict, { kind: "retry" }>> = {}): SendVerdict => ({ kind: "retry", reason: "the receiver answered HTTP 503", status: 503, ...extra });
const REJECT: SendVerdict = { kind: "reject", reason: "the receiver answered HTTP 404", status: 404 };

/** A reply that never settles until the signal aborts (then "retry", as the real sender answers a shutdown). */
const hangUntilAborted: Reply = (_req, signal) =>
  new Promise((resolve) => {
    signal?.addEventListener("abort", () => resolve({ kind: "retry", reason: "the gateway is shutting down" }), { once: true });
  });

/** A reply that settles when the test says so. */
function deferred(): { reply: Reply; resolve: (v: SendVerdict) => void } {
  let resolve!: (v: SendVerdict) => void;
  const promise = new Promise<SendVerdict>((r) => (resolve = r));
  return { reply: () => promise, resolve };
}

interface Harness {
  service: PushService;
  storage: Storage;
  sender: FakeSender;
  metrics: Metrics;
  tasks: Map<string, Task>;
  warnings: unknown[];
  /** Let queued microtasks, kicks and in-flight fake sends run to completion. */
  flush(): Promise<void>;
  /** Move the fake clock and the fake timers forward together. */
  advance(ms: number): Promise<void>;
  now(): number;
  /** The head of every queue in the outbox, due or not (entries behind a head are counted by size()). */
  heads(): Promise<PushDelivery[]>;
  /** A state change of `task`, told to the service in the transaction that saves it (as the runtime does). */
  change(task: Task, event?: StatusUpdateEvent): Promise<void>;
}

const harnesses: Harness[] = [];

async function harness(opts: Partial<PushOptions> = {}, randomValue = 0.5): Promise<Harness> {
  let clock = T0;
  const storage = await openStorage({ backend: "memory", now: () => clock });
  const sender = new FakeSender();
  const metrics = new Metrics({ defaultMetrics: false });
  const tasks = new Map<string, Task>();
  const warnings: unknown[] = [];
  const service = new PushService({
    configs: storage.pushConfigs,
    outbox: storage.pushOutbox,
    atomically: storage.atomically,
    visibleTask: async (_principal, taskId) => {
      const task = tasks.get(taskId);
      if (task === undefined) throw new A2AError("TASK_NOT_FOUND", `Task ${taskId} not found`, { task_id: taskId });
      return task;
    },
    metrics,
    log: { info: () => {}, debug: () => {}, warn: (...args: unknown[]) => void warnings.push(args) } as unknown as PushOptions["log"],
    timeoutMs: 1000,
    maxAttempts: 5,
    retryInitialMs: 1000,
    retryMaxMs: 60_000,
    maxConcurrency: 4,
    maxConcurrencyPerHost: 4,
    maxConfigsPerTask: 3,
    maxAgeMs: 86_400_000,
    allowPrivateNetworks: false,
    userAgent: "opencode-a2a-test",
    now: () => clock,
    random: () => randomValue,
    sender,
    ...opts,
  });
  const flush = async () => {
    // Bounded: each round lets microtasks (the kick after changed()) run, then waits for what is in flight.
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((r) => setImmediate(r));
      await service.idle();
    }
  };
  const h: Harness = {
    service,
    storage,
    sender,
    metrics,
    tasks,
    warnings,
    flush,
    advance: async (ms) => {
      clock += ms;
      await vi.advanceTimersByTimeAsync(ms);
      await flush();
    },
    now: () => clock,
    heads: () => storage.pushOutbox.due(Number.MAX_SAFE_INTEGER, 1000, new Set()),
    change: (task, event) => service.atomically((tx) => service.changed(tx, task, event)),
  };
  harnesses.push(h);
  return h;
}

async function counter(metrics: Metrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  const data = await metric.get();
  const match = data.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
  return match?.value ?? 0;
}

const input = (taskId: string, extra: Partial<PushConfigInput> = {}): PushConfigInput => ({ taskId, url: URL_A, ...extra });

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
});

afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    await h.service.stop();
    h.storage.close();
  }
  vi.useRealTimers();
});

// ---- configs ---------------------------------------------------------------------------------------------------

describe("PushService configs", () => {
  it("0.3: a config without id is named after its task; get with the task id alone finds it", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    const set = (await h.service.set(alice, "0.3", input("t1", { url: "https://Hooks.Example.com/a", token: "tok" })));
    expect(set).toEqual({ id: "t1", taskId: "t1", url: "https://hooks.example.com/a", token: "tok", createdAt: new Date(T0).toISOString() });
    expect((await h.service.get(alice, { taskId: "t1" }))).toEqual(set);
    expect((await h.service.get(alice, { taskId: "t1", id: "t1" }))).toEqual(set);
    expect((await h.service.list(alice, "t1"))).toEqual([set]);
    // The line is kept internally (it decides the body shape) but never answered.
    expect((await h.storage.pushConfigs.get("t1", "t1"))?.line).toBe("0.3");
  });

  it("1.0: a config without id gets a fresh uuid each time", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    const a = (await h.service.set(alice, "1.0", input("t1")));
    const b = (await h.service.set(alice, "1.0", input("t1", { url: URL_B })));
    expect(a.id).toMatch(UUID);
    expect(b.id).toMatch(UUID);
    expect(a.id).not.toBe(b.id);
    expect((await h.service.list(alice, "t1")).map((c) => c.id)).toEqual([a.id, b.id]);
    expect((await h.storage.pushConfigs.get("t1", a.id))?.line).toBe("1.0");
  });

  it("keeps an explicit id on either line", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    expect((await h.service.set(alice, "0.3", input("t1", { id: "mine" }))).id).toBe("mine");
    expect((await h.service.set(alice, "1.0", input("t1", { id: "yours" }))).id).toBe("yours");
  });

  it("never shows the internal line and access tags in set, get or list results", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    const results = [
      (await h.service.set(alice, "0.3", input("t1", { authentication: { schemes: ["Bearer"], credentials: "c" } }))),
      (await h.service.set(alice, "1.0", input("t1", { id: "x" }))),
      (await h.service.get(alice, { taskId: "t1" })),
      (await h.service.get(alice, { taskId: "t1", id: "x" })),
      ...(await h.service.list(alice, "t1")),
    ];
    expect(results).toHaveLength(6);
    for (const r of results) {
      expect(r).not.toHaveProperty("line");
      expect(r).not.toHaveProperty("access");
    }
  });

  it("get without id: the config named after the task, else the first one", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "first", url: URL_A }));
    await h.service.set(alice, "1.0", input("t1", { id: "second", url: URL_B }));
    expect((await h.service.get(alice, { taskId: "t1" })).id).toBe("first");
    await h.service.set(alice, "0.3", input("t1", { url: URL_B }));
    expect((await h.service.get(alice, { taskId: "t1" }))).toMatchObject({ id: "t1", url: URL_B });
  });

  it("get of a missing config is TASK_NOT_FOUND naming it", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await rejectsA2AError(() => h.service.get(alice, { taskId: "t1" }), "TASK_NOT_FOUND", { task_id: "t1" });
    const e = await rejectsA2AError(() => h.service.get(alice, { taskId: "t1", id: "nope" }), "TASK_NOT_FOUND", { task_id: "t1", push_notification_config_id: "nope" });
    expect(e.message).toMatch(/nope/);
  });

  it("an unknown (or invisible) task is TASK_NOT_FOUND for every method, and nothing is stored", async () => {
    const h = (await harness());
    await rejectsA2AError(() => h.service.set(alice, "0.3", input("ghost")), "TASK_NOT_FOUND", { task_id: "ghost" });
    await rejectsA2AError(() => h.service.get(alice, { taskId: "ghost" }), "TASK_NOT_FOUND");
    await rejectsA2AError(() => h.service.list(alice, "ghost"), "TASK_NOT_FOUND");
    await rejectsA2AError(() => h.service.delete(alice, { taskId: "ghost", id: "x" }), "TASK_NOT_FOUND");
    expect((await h.storage.pushConfigs.has("ghost"))).toBe(false);
  });

  it("delete removes the config and is idempotent", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    const a = (await h.service.set(alice, "1.0", input("t1", { id: "a" })));
    await h.service.set(alice, "1.0", input("t1", { id: "b" }));
    await h.service.delete(alice, { taskId: "t1", id: a.id });
    expect((await h.service.list(alice, "t1")).map((c) => c.id)).toEqual(["b"]);
    await expect(h.service.delete(alice, { taskId: "t1", id: a.id })).resolves.toBeUndefined();
    await expect(h.service.delete(alice, { taskId: "t1", id: "never-existed" })).resolves.toBeUndefined();
    expect((await h.service.list(alice, "t1")).map((c) => c.id)).toEqual(["b"]);
    await rejectsA2AError(() => h.service.get(alice, { taskId: "t1", id: "a" }), "TASK_NOT_FOUND");
  });

  it("refuses an invalid config with INVALID_PARAMS naming the field for the line, storing nothing", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await rejectsA2AError(() => h.service.set(alice, "0.3", input("t1", { url: "ftp://example.com/" })), "INVALID_PARAMS", { field: "pushNotificationConfig.url" });
    await rejectsA2AError(() => h.service.set(alice, "0.3", input("t1", { url: "http://127.0.0.1:8080/" })), "INVALID_PARAMS", { field: "pushNotificationConfig.url" });
    // 1.0 configs sit at the root of the params: the field is the bare name.
    await rejectsA2AError(() => h.service.set(alice, "1.0", input("t1", { url: "ftp://example.com/" })), "INVALID_PARAMS", { field: "url" });
    await rejectsA2AError(() => h.service.set(alice, "1.0", input("t1", { token: "a\r\nb" })), "INVALID_PARAMS", { field: "token" });
    // A config given with message/send names its own place.
    await rejectsA2AError(() => h.service.set(alice, "1.0", input("t1", { url: "http://localhost/" }), false, { field: "configuration.taskPushNotificationConfig", scheme: () => "authentication.scheme" }), "INVALID_PARAMS", {
      field: "configuration.taskPushNotificationConfig.url",
    });
    expect((await h.service.list(alice, "t1"))).toEqual([]);
  });

  it("accepts private targets when allowPrivateNetworks is on", async () => {
    const h = (await harness({ allowPrivateNetworks: true }));
    h.tasks.set("t1", makeTask("t1"));
    expect((await h.service.set(alice, "1.0", input("t1", { url: "http://127.0.0.1:8080/hook" }))).url).toBe("http://127.0.0.1:8080/hook");
  });

  it("enforces the per-task config limit, but replacing an existing id at the limit is allowed", async () => {
    const h = (await harness({ maxConfigsPerTask: 2 }));
    h.tasks.set("t1", makeTask("t1"));
    h.tasks.set("t2", makeTask("t2"));
    await h.service.set(alice, "1.0", input("t1", { id: "a" }));
    await h.service.set(alice, "1.0", input("t1", { id: "b" }));
    const e = await rejectsA2AError(() => h.service.set(alice, "1.0", input("t1", { id: "c" })), "INVALID_PARAMS", { task_id: "t1", limit: 2 });
    expect(e.message).toMatch(/A2A_PUSH_MAX_CONFIGS_PER_TASK/);
    await rejectsA2AError(() => h.service.set(alice, "1.0", input("t1")), "INVALID_PARAMS");
    expect((await h.service.list(alice, "t1")).map((c) => c.id)).toEqual(["a", "b"]);
    // Replace b at the limit.
    expect((await h.service.set(alice, "1.0", input("t1", { id: "b", url: URL_B }))).url).toBe(URL_B);
    expect((await h.service.list(alice, "t1")).map((c) => [c.id, c.url])).toEqual([
      ["a", URL_A],
      ["b", URL_B],
    ]);
    // Another task has its own limit; a delete makes room.
    await expect(h.service.set(alice, "1.0", input("t2", { id: "c" }))).resolves.toMatchObject({ taskId: "t2", id: "c" });
    await h.service.delete(alice, { taskId: "t1", id: "a" });
    await expect(h.service.set(alice, "1.0", input("t1", { id: "c" }))).resolves.toMatchObject({ taskId: "t1", id: "c" });
  });
});

// ---- notifications -----------------------------------------------------------------------------------------

describe("PushService quiet hours and event filters (the clock at 00:00 UTC, inside 22:00–08:00)", () => {
  const QUIET = { quietHoursStart: "22:00", quietHoursEnd: "08:00" };
  const WINDOW_END = Date.UTC(2025, 0, 1, 8);
  const asking = (): Task => ({ ...makeTask("t1", "input-required"), status: { state: "input-required", timestamp: new Date(T0).toISOString(), message: { messageId: "q", role: "agent", parts: [{ kind: "text", text: "Pick?" }] } } });
  const states = (h: Harness) => h.sender.bodies().map((b) => (b as { status?: { state: string } }).status?.state);

  it("a2a: held and coalesced to the latest state; an input-required change is sent at once and replaces what was held", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", "submitted"));
    await h.service.set(alice, "0.3", input("t1", QUIET));
    h.service.start();
    await h.change(makeTask("t1", "working"));
    await h.flush();
    expect(h.sender.sent).toEqual([]);
    expect((await h.storage.pushOutbox.held("t1", "t1", h.now()))).toHaveLength(1);
    await h.change(asking());
    await h.flush();
    expect(states(h)).toEqual(["input-required"]);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "coalesced" })).toBe(1);
    await h.change(makeTask("t1", "working"));
    await h.change(makeTask("t1", "completed"));
    await h.flush();
    expect(states(h)).toEqual(["input-required"]);
    expect((await h.storage.pushOutbox.size())).toBe(1);
    await h.advance(WINDOW_END - T0 - 1);
    expect(states(h)).toEqual(["input-required"]);
    await h.advance(1);
    expect(states(h)).toEqual(["input-required", "completed"]);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "coalesced" })).toBe(2);
  });

  it("events: one coalesced status_change from the first to the last state, the latest message, input_required at once", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", "working"));
    await h.service.set(alice, "0.3", input("t1", { ...QUIET, payloadFormat: "events" }));
    h.service.start();
    await h.change(asking());
    await h.flush();
    expect(h.sender.bodies()).toEqual([{ event: "input_required", task_id: "t1", timestamp: new Date(T0).toISOString(), data: { prompt: "Pick?", input_types: ["text/plain"] } }]);
    await h.change(makeTask("t1", "working"));
    const done = { ...makeTask("t1", "completed"), history: [{ messageId: "r", role: "agent" as const, parts: [{ kind: "text" as const, text: "result" }] }] };
    await h.change(done);
    await h.advance(WINDOW_END - T0);
    expect(h.sender.bodies().slice(1)).toEqual([
      expect.objectContaining({ event: "status_change", data: { old_state: "working", new_state: "completed" } }),
      expect.objectContaining({ event: "message", data: { message_role: "assistant", message_content: "result" } }),
      expect.objectContaining({ event: "artifact", data: { artifact_type: "text", artifact_name: "a-t1", artifact_size: 6 } }),
    ]);
    // The question's message (held) was replaced by the later reply: the latest message.
    expect(h.sender.sent.map((s) => s.request.headers["content-type"])).toEqual(Array(4).fill("application/json"));
  });

  it("enabledEvents: an a2a config is sent only the state changes whose events it enabled", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", "working"));
    await h.service.set(alice, "0.3", input("t1", { enabledEvents: ["input_required"] }));
    h.service.start();
    await h.change(asking());
    await h.change(makeTask("t1", "working"));
    await h.change(makeTask("t1", "completed"));
    await h.flush();
    expect(states(h)).toEqual(["input-required"]);
  });
});

describe("PushService notifications", () => {
  it("changed() queues one notification per config, shaped for its line, and sends them with their headers", async () => {
    const h = (await harness());
    const task = makeTask("t1", "working");
    h.tasks.set("t1", task);
    await h.service.set(alice, "0.3", input("t1", { url: URL_A, token: "tok-03", authentication: { schemes: ["Bearer", "Basic"], credentials: "cred-03" } }));
    await h.service.set(alice, "1.0", input("t1", { id: "v1", url: URL_B, token: "tok-10", authentication: { schemes: ["Basic"], credentials: "dXNlcjpwdw==" } }));
    expect((await h.storage.pushOutbox.size())).toBe(0); // working: nothing announced
    expect(await h.storage.pushConfigs.has("t1")).toBe(true);
    expect(await h.storage.pushConfigs.has("t2")).toBe(false);

    await h.change(task);
    expect((await h.storage.pushOutbox.size())).toBe(2);
    expect(await counter(h.metrics, "a2a_push_notifications_queued_total")).toBe(2);
    expect(await counter(h.metrics, "a2a_push_outbox_pending")).toBe(2);

    h.service.start();
    await h.flush();
    expect(h.sender.sent).toHaveLength(2);
    const byUrl = new Map(h.sender.sent.map((s) => [s.request.url, s.request]));

    const v03 = byUrl.get(URL_A)!;
    expect(v03.headers).toEqual({ "content-type": "application/json", "x-a2a-notification-token": "tok-03", authorization: "Bearer cred-03" });
    const body03 = JSON.parse(v03.body);
    expect(body03).toMatchObject({ kind: "task", id: "t1", contextId: "ctx-t1", status: { state: "working" } });
    expect(body03.history[0]).toMatchObject({ kind: "message", role: "user", messageId: "m-t1" });

    const v10 = byUrl.get(URL_B)!;
    expect(v10.headers).toEqual({ "content-type": "application/a2a+json", "x-a2a-notification-token": "tok-10", authorization: "Basic dXNlcjpwdw==" });
    const body10 = JSON.parse(v10.body);
    expect(Object.keys(body10)).toEqual(["statusUpdate"]);
    expect(body10.statusUpdate).toMatchObject({ taskId: "t1", contextId: "ctx-t1", status: { state: "TASK_STATE_WORKING" } });

    expect((await h.storage.pushOutbox.size())).toBe(0);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "delivered" })).toBe(2);
    expect(await counter(h.metrics, "a2a_push_delivery_attempts_total", { outcome: "delivered" })).toBe(2);
  });

  it("1.0: the terminal notification is the whole task; 0.3 is the task either way", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", "working"));
    await h.service.set(alice, "0.3", input("t1", { url: URL_A }));
    await h.service.set(alice, "1.0", input("t1", { id: "v1", url: URL_B }));
    h.service.start();
    const done = makeTask("t1", "completed");
    await h.change(done);
    await h.flush();
    const byUrl = new Map(h.sender.sent.map((s) => [s.request.url, s.request]));
    const body10 = JSON.parse(byUrl.get(URL_B)!.body);
    expect(Object.keys(body10)).toEqual(["task"]);
    expect(body10.task).toMatchObject({ id: "t1", status: { state: "TASK_STATE_COMPLETED" }, artifacts: [{ artifactId: "a-t1" }] });
    expect(byUrl.get(URL_B)!.headers["content-type"]).toBe("application/a2a+json");
    const body03 = JSON.parse(byUrl.get(URL_A)!.body);
    expect(body03).toMatchObject({ kind: "task", id: "t1", status: { state: "completed" }, artifacts: [{ artifactId: "a-t1" }] });
    expect(byUrl.get(URL_A)!.headers["content-type"]).toBe("application/json");
  });

  it("1.0: a non-terminal change sends the given status-update event", async () => {
    const h = (await harness());
    const task = makeTask("t1", "input-required");
    h.tasks.set("t1", makeTask("t1", "working"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.service.start();
    const event: StatusUpdateEvent = { kind: "status-update", taskId: "t1", contextId: "ctx-t1", status: task.status, final: false, metadata: { marker: 7 } };
    await h.change(task, event);
    await h.flush();
    expect(h.sender.bodies()).toEqual([
      { statusUpdate: expect.objectContaining({ taskId: "t1", status: expect.objectContaining({ state: "TASK_STATE_INPUT_REQUIRED" }), metadata: { marker: 7 } }) },
    ]);
  });

  it("sends no token or authorization header the config does not have", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "bare" }));
    await h.service.set(alice, "1.0", input("t1", { id: "scheme-only", url: URL_B, authentication: { schemes: ["Bearer"] } }));
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();
    expect(h.sender.sent).toHaveLength(2);
    for (const s of h.sender.sent) expect(s.request.headers).toEqual({ "content-type": "application/a2a+json" });
  });

  it("changed() for a task without configs queues nothing", async () => {
    const h = (await harness());
    h.service.start();
    await h.change(makeTask("t9"));
    await h.flush();
    expect((await h.storage.pushOutbox.size())).toBe(0);
    expect(h.sender.sent).toHaveLength(0);
  });

  it("nothing is sent before start(); start() delivers what waited (e.g. from before a restart)", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    await h.change(makeTask("t1"));
    await h.change(makeTask("t1", "completed"));
    await h.flush();
    expect(h.sender.sent).toHaveLength(0);
    expect((await h.storage.pushOutbox.size())).toBe(2);
    h.service.start();
    await h.flush();
    expect(h.sender.bodies().map((b) => Object.keys(b as object)[0])).toEqual(["statusUpdate", "task"]);
    expect((await h.storage.pushOutbox.size())).toBe(0);
  });

  it("with deferFirstPass, start() leaves what waited alone until firstPass(); a notification queued meanwhile goes at once", async () => {
    const h = await harness({ deferFirstPass: true });
    h.tasks.set("t1", makeTask("t1"));
    h.tasks.set("t2", makeTask("t2"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    await h.change(makeTask("t1"));
    h.service.start();
    await h.advance(5_000);
    expect(h.sender.sent).toHaveLength(0); // no first pass yet
    // A change after start() kicks a pass at once: it takes what is due, the older entry included.
    await h.service.set(alice, "1.0", input("t2", { id: "v2" }));
    await h.change(makeTask("t2"));
    await h.flush();
    expect(h.sender.bodies()).toHaveLength(2);
    expect((await h.storage.pushOutbox.size())).toBe(0);
  });

  it("with deferFirstPass, firstPass() delivers what waited, once; before start() it does nothing", async () => {
    const h = await harness({ deferFirstPass: true });
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    await h.change(makeTask("t1"));
    h.service.firstPass(); // not started: nothing
    await h.flush();
    expect(h.sender.sent).toHaveLength(0);
    h.service.start();
    await h.advance(1_000);
    expect(h.sender.sent).toHaveLength(0);
    h.service.firstPass();
    await h.flush();
    expect(h.sender.sent).toHaveLength(1);
    h.service.firstPass();
    await h.flush();
    expect(h.sender.sent).toHaveLength(1);
  });

  it("a queued entry whose config has disappeared is dropped without a POST", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    await h.change(makeTask("t1"));
    await h.storage.pushConfigs.delete("t1", "v1"); // behind the service's back
    h.service.start();
    await h.flush();
    expect(h.sender.sent).toHaveLength(0);
    expect((await h.storage.pushOutbox.size())).toBe(0);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "dropped" })).toBe(1);
  });
});

describe("PushService result access", () => {
  function taskWithFiles(state: TaskState): Task {
    const file = { kind: "file" as const, file: { uri: "https://files.example.com/x.png", mimeType: "image/png" } };
    return {
      ...makeTask("t1", state),
      artifacts: [
        { artifactId: "text", parts: [{ kind: "text", text: "result" }] },
        { artifactId: "pic", parts: [file] },
      ],
      history: [{ messageId: "m1", role: "agent", parts: [{ kind: "text", text: "see" }, file] }],
    };
  }

  it("records the setter's result access with the config", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "a" }));
    await h.service.set(bob, "1.0", input("t1", { id: "b" }));
    expect((await h.storage.pushConfigs.get("t1", "a"))?.access).toEqual({ artifacts: true, files: true });
    expect((await h.storage.pushConfigs.get("t1", "b"))?.access).toEqual({ artifacts: false, files: false });
  });

  it("a config set by a principal without results.read / results.files gets no artifacts and no file parts; one with them gets all", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "full", url: URL_A }));
    await h.service.set(bob, "1.0", input("t1", { id: "bare", url: URL_B }));
    h.service.start();
    await h.change(taskWithFiles("completed"));
    await h.flush();
    const byUrl = new Map(h.sender.sent.map((s) => [s.request.url, JSON.parse(s.request.body).task]));
    expect(byUrl.get(URL_A).artifacts.map((a: { artifactId: string }) => a.artifactId)).toEqual(["text", "pic"]);
    expect(byUrl.get(URL_A).history[0].parts).toHaveLength(2);
    expect(byUrl.get(URL_B)).not.toHaveProperty("artifacts");
    expect(byUrl.get(URL_B).history[0].parts).toEqual([{ text: "see" }]);
  });

  it("0.3 bodies are filtered the same way", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(bob, "0.3", input("t1"));
    h.service.start();
    await h.change(taskWithFiles("completed"));
    await h.flush();
    const body = h.sender.bodies()[0] as { kind: string; artifacts?: unknown; history: { parts: unknown[] }[] };
    expect(body.kind).toBe("task");
    expect(body).not.toHaveProperty("artifacts");
    expect(body.history[0]!.parts).toEqual([{ kind: "text", text: "see" }]);
  });
});

// ---- announce on set ---------------------------------------------------------------------------------------

describe("PushService announcement on set()", () => {
  it.each([
    ["completed", "1.0", "task", "TASK_STATE_COMPLETED"],
    ["failed", "1.0", "task", "TASK_STATE_FAILED"],
    ["canceled", "1.0", "task", "TASK_STATE_CANCELED"],
    ["input-required", "1.0", "statusUpdate", "TASK_STATE_INPUT_REQUIRED"],
    ["auth-required", "1.0", "statusUpdate", "TASK_STATE_AUTH_REQUIRED"],
  ] as const)("a %s task gets its current state at once (%s: %s)", async (state, line, key, wireState) => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", state));
    h.service.start();
    await h.service.set(alice, line, input("t1"));
    await h.flush();
    expect(h.sender.sent).toHaveLength(1);
    const body = h.sender.bodies()[0] as Record<string, { status: { state: string } }>;
    expect(Object.keys(body)).toEqual([key]);
    expect(body[key]!.status.state).toBe(wireState);
  });

  it("0.3: a completed task's config gets the Task at once", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", "completed"));
    h.service.start();
    await h.service.set(alice, "0.3", input("t1"));
    await h.flush();
    expect(h.sender.bodies()).toEqual([expect.objectContaining({ kind: "task", id: "t1", status: expect.objectContaining({ state: "completed" }) })]);
  });

  it.each(["working", "submitted"] as const)("a %s task gets nothing on set()", async (state) => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", state));
    h.service.start();
    await h.service.set(alice, "1.0", input("t1"));
    await h.flush();
    expect(h.sender.sent).toHaveLength(0);
    expect((await h.storage.pushOutbox.size())).toBe(0);
  });

  it("announce=false announces nothing, even for a terminal task", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", "completed"));
    h.tasks.set("t2", makeTask("t2", "input-required"));
    h.service.start();
    await h.service.set(alice, "1.0", input("t1"), false);
    await h.service.set(alice, "0.3", input("t2"), false);
    await h.flush();
    expect(h.sender.sent).toHaveLength(0);
    expect((await h.storage.pushOutbox.size())).toBe(0);
  });

  it("replacing a config drops what waited for its old URL", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", "working"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1", url: URL_A }));
    await h.change(makeTask("t1"));
    await h.change(makeTask("t1"));
    expect((await h.storage.pushOutbox.size())).toBe(2);
    await h.service.set(alice, "1.0", input("t1", { id: "v1", url: URL_B }));
    expect((await h.storage.pushOutbox.size())).toBe(0);
    h.service.start();
    await h.change(makeTask("t1", "completed"));
    await h.flush();
    expect(h.sender.sent.map((s) => s.request.url)).toEqual([URL_B]);
  });
});

// ---- delivery outcomes -------------------------------------------------------------------------------------

describe("PushService delivery", () => {
  it("a retry reschedules with exponential backoff and equal jitter, then sends again when due", async () => {
    const h = (await harness({ retryInitialMs: 1000, retryMaxMs: 60_000, maxAttempts: 10 }, 0.25));
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.script.push(retry({ reason: "first" }), retry({ reason: "second" }), retry({ reason: "third" }));
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();

    // Attempt 1 failed: base 1000 → 500 + 0.25 · 500 = 625.
    expect(h.sender.sent).toHaveLength(1);
    expect((await h.heads())).toEqual([expect.objectContaining({ attempts: 1, nextAttemptAt: T0 + 625, lastError: "first" })]);

    await h.advance(624);
    expect(h.sender.sent).toHaveLength(1);
    await h.advance(1);
    expect(h.sender.sent).toHaveLength(2);
    // Attempt 2 failed at T0 + 625: base 2000 → 1000 + 0.25 · 1000 = 1250.
    expect((await h.heads())).toEqual([expect.objectContaining({ attempts: 2, nextAttemptAt: T0 + 625 + 1250, lastError: "second" })]);

    await h.advance(1250);
    expect(h.sender.sent).toHaveLength(3);
    // Attempt 3: base 4000 → 2000 + 0.25 · 2000 = 2500.
    expect((await h.heads())).toEqual([expect.objectContaining({ attempts: 3, nextAttemptAt: T0 + 625 + 1250 + 2500, lastError: "third" })]);

    await h.advance(2499);
    expect(h.sender.sent).toHaveLength(3);
    await h.advance(1);
    expect(h.sender.sent).toHaveLength(4);
    expect((await h.heads())).toEqual([]);
    expect(h.sender.sent.every((s) => s.request.body === h.sender.sent[0]!.request.body)).toBe(true);
    expect(await counter(h.metrics, "a2a_push_delivery_attempts_total", { outcome: "retry" })).toBe(3);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "delivered" })).toBe(1);
  });

  it.each([
    [0, 500],
    [1, 1000],
  ])("the jitter spans half to all of the base (random %d → %d ms)", async (random, delay) => {
    const h = (await harness({ retryInitialMs: 1000 }, random));
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.script.push(retry());
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();
    expect((await h.heads())[0]).toMatchObject({ attempts: 1, nextAttemptAt: T0 + delay });
  });

  it("the backoff is capped by retryMaxMs", async () => {
    const h = (await harness({ retryInitialMs: 1000, retryMaxMs: 3000, maxAttempts: 10 }, 1));
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.fallback = retry();
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [entry] = (await h.heads());
      delays.push(entry!.nextAttemptAt - h.now());
      await h.advance(entry!.nextAttemptAt - h.now());
    }
    // base 1000, 2000, 4000→3000, 8000→3000, …; random 1 → the whole base.
    expect(delays).toEqual([1000, 2000, 3000, 3000, 3000]);
    expect(h.sender.sent).toHaveLength(6);
  });

  it("honours Retry-After (retryAfterMs) instead of the backoff", async () => {
    const h = (await harness({ retryInitialMs: 1000, retryMaxMs: 60_000 }));
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.script.push(retry({ retryAfterMs: 7000 }));
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();
    expect((await h.heads())[0]).toMatchObject({ attempts: 1, nextAttemptAt: T0 + 7000 });
    await h.advance(6999);
    expect(h.sender.sent).toHaveLength(1);
    await h.advance(1);
    expect(h.sender.sent).toHaveLength(2);
    expect((await h.heads())).toEqual([]);
  });

  it("caps Retry-After by retryMaxMs", async () => {
    const h = (await harness({ retryMaxMs: 30_000 }));
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.script.push(retry({ retryAfterMs: 3_600_000 }));
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();
    expect((await h.heads())[0]).toMatchObject({ attempts: 1, nextAttemptAt: T0 + 30_000 });
  });

  it("gives up after maxAttempts: the entry is dropped and counted as expired", async () => {
    const h = (await harness({ maxAttempts: 3, retryInitialMs: 100, retryMaxMs: 1000 }));
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.fallback = retry();
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();
    for (let i = 0; i < 10 && (await h.heads()).length > 0; i++) await h.advance((await h.heads())[0]!.nextAttemptAt - h.now());
    expect(h.sender.sent).toHaveLength(3);
    expect((await h.heads())).toEqual([]);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "expired" })).toBe(1);
    expect(await counter(h.metrics, "a2a_push_delivery_attempts_total", { outcome: "retry" })).toBe(3);
    // Nothing more is sent later.
    await h.advance(60_000);
    expect(h.sender.sent).toHaveLength(3);
  });

  it("a reject drops the entry at once, without retries", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.script.push(REJECT);
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();
    await h.advance(120_000);
    expect(h.sender.sent).toHaveLength(1);
    expect((await h.heads())).toEqual([]);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "rejected" })).toBe(1);
    expect(await counter(h.metrics, "a2a_push_delivery_attempts_total", { outcome: "rejected" })).toBe(1);
    expect(h.warnings.length).toBeGreaterThan(0);
  });

  it("delivers one (task, config)'s notifications strictly in order, even when the first is retried", async () => {
    const h = (await harness({ retryInitialMs: 1000 }));
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "slow", url: URL_A }));
    await h.service.set(alice, "1.0", input("t1", { id: "fast", url: URL_B }));
    // The first POST to URL_A fails once; everything else is delivered.
    let failedOnce = false;
    h.sender.fallback = (req) => {
      if (req.url === URL_A && !failedOnce) {
        failedOnce = true;
        return Promise.resolve(retry());
      }
      return Promise.resolve(DELIVERED);
    };
    h.service.start();
    await h.change(makeTask("t1", "working"));
    await h.change(makeTask("t1", "input-required"));
    await h.change(makeTask("t1", "completed"));
    await h.flush();

    const stateOf = (s: Sent): string => {
      const b = JSON.parse(s.request.body);
      return (b.task ?? b.statusUpdate).status.state;
    };
    const to = (url: string) => h.sender.sent.filter((s) => s.request.url === url).map(stateOf);
    // The other config's queue is not held up.
    expect(to(URL_B)).toEqual(["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"]);
    // URL_A: only the failed head so far; the later ones wait behind it.
    expect(to(URL_A)).toEqual(["TASK_STATE_WORKING"]);
    expect((await h.heads())).toEqual([expect.objectContaining({ configId: "slow", attempts: 1 })]);
    expect((await h.storage.pushOutbox.size())).toBe(3);

    for (let i = 0; i < 10 && (await h.heads()).length > 0; i++) await h.advance(Math.max(1, (await h.heads())[0]!.nextAttemptAt - h.now()));
    expect(to(URL_A)).toEqual(["TASK_STATE_WORKING", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"]);
    expect((await h.heads())).toEqual([]);
  });

  it("never has two POSTs of one queue in flight at once", async () => {
    const h = (await harness({ maxConcurrency: 8 }));
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    const first = deferred();
    h.sender.script.push(first.reply);
    h.service.start();
    await h.change(makeTask("t1"));
    await h.change(makeTask("t1", "completed"));
    await new Promise<void>((r) => setImmediate(r));
    expect(h.sender.sent).toHaveLength(1);
    first.resolve(DELIVERED);
    await h.flush();
    expect(h.sender.sent).toHaveLength(2);
    expect((await h.heads())).toEqual([]);
  });

  it("deleting a config drops its pending notifications (counted as dropped); other configs keep theirs", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "gone" }));
    await h.service.set(alice, "1.0", input("t1", { id: "kept", url: URL_B }));
    await h.change(makeTask("t1"));
    await h.change(makeTask("t1", "completed"));
    expect((await h.storage.pushOutbox.size())).toBe(4);
    await h.service.delete(alice, { taskId: "t1", id: "gone" });
    expect((await h.heads()).map((d) => d.configId)).toEqual(["kept"]);
    expect((await h.storage.pushOutbox.size())).toBe(2);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "dropped" })).toBe(2);
    h.service.start();
    await h.flush();
    expect(h.sender.sent.map((s) => s.request.url)).toEqual([URL_B, URL_B]);
  });

  it("deleting a config while it waits for a retry drops the retry", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.script.push(retry());
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();
    expect((await h.heads())).toHaveLength(1);
    await h.service.delete(alice, { taskId: "t1", id: "v1" });
    expect((await h.heads())).toEqual([]);
    await h.advance(120_000);
    expect(h.sender.sent).toHaveLength(1);
  });

  it("runs at most maxConcurrency POSTs at once; a freed slot takes the next queue", async () => {
    const h = (await harness({ maxConcurrency: 2 }));
    const replies = [deferred(), deferred(), deferred()];
    for (const id of ["t1", "t2", "t3"]) {
      h.tasks.set(id, makeTask(id));
      await h.service.set(alice, "1.0", input(id, { id: "v1" }));
    }
    h.sender.script.push(...replies.map((d) => d.reply));
    h.service.start();
    for (const id of ["t1", "t2", "t3"]) await h.change(makeTask(id));
    await new Promise<void>((r) => setImmediate(r));
    expect(h.sender.sent).toHaveLength(2);
    replies[0]!.resolve(DELIVERED);
    await new Promise<void>((r) => setImmediate(r));
    expect(h.sender.sent).toHaveLength(3);
    replies[1]!.resolve(DELIVERED);
    replies[2]!.resolve(DELIVERED);
    await h.flush();
    expect((await h.heads())).toEqual([]);
  });

  it("stop() cuts an in-flight POST short and leaves its entry in the outbox as it was", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.fallback = hangUntilAborted;
    h.service.start();
    await h.change(makeTask("t1"));
    await new Promise<void>((r) => setImmediate(r));
    expect(h.sender.sent).toHaveLength(1);
    const signal = h.sender.sent[0]!.signal;
    expect(signal?.aborted).toBe(false);

    await h.service.stop();
    expect(signal?.aborted).toBe(true);
    expect(h.sender.closed).toBe(1);
    expect((await h.heads())).toEqual([expect.objectContaining({ taskId: "t1", configId: "v1", attempts: 0, nextAttemptAt: T0 })]);
    expect((await h.heads())[0]).not.toHaveProperty("lastError");
    // Stopped: nothing else is attempted.
    await h.change(makeTask("t1", "completed"));
    await h.advance(60_000);
    expect(h.sender.sent).toHaveLength(1);
    expect((await h.storage.pushOutbox.size())).toBe(2);
  });

  it("stop() even when the POST answers after the abort leaves the entry for the next start", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    const late = deferred();
    h.sender.script.push(late.reply);
    h.service.start();
    await h.change(makeTask("t1"));
    await new Promise<void>((r) => setImmediate(r));
    const stopping = h.service.stop();
    late.resolve(DELIVERED);
    await stopping;
    expect((await h.heads())).toHaveLength(1);
  });

  it("the outbox gauge reports what waits", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    await h.change(makeTask("t1"));
    await h.change(makeTask("t1"));
    await h.change(makeTask("t1"));
    expect(await counter(h.metrics, "a2a_push_outbox_pending")).toBe(3);
    h.service.start();
    await h.flush();
    expect(await counter(h.metrics, "a2a_push_outbox_pending")).toBe(0);
  });
});

// ---- a store that fails under the worker ----------------------------------------------------------------------
//
// The worker's background wake-ups (#kick() after a delivery, from the retry timer, from the microtask queued by
// changed()) must survive a store error in (await outbox.due()) / nextDueAt() (SQLite busy past busy_timeout, a full disk:
// TASK_STORE_UNAVAILABLE): no unhandled rejection or uncaught exception, and the worker tries again later.

/** An outbox that delegates to `base` but whose claim() (what the worker reads) rejects once after `arm()`. */
class FlakyOutbox implements PushOutboxStore {
  #armed = false;
  failures = 0;
  constructor(private readonly base: PushOutboxStore) {}
  arm(): void {
    this.#armed = true;
  }
  enqueue(items: NewDelivery[], at?: number): Promise<void> {
    return this.base.enqueue(items, at);
  }
  due(now: number, limit: number, busy: BusyQueues): Promise<PushDelivery[]> {
    return this.base.due(now, limit, busy);
  }
  async claim(now: number, limit: number, busy: BusyQueues, leaseMs: number): Promise<PushDelivery[]> {
    if (this.#armed) {
      this.#armed = false;
      this.failures++;
      throw new A2AError("TASK_STORE_UNAVAILABLE", "Task store unavailable (pushOutbox.claim: SQLITE_BUSY)");
    }
    return this.base.claim(now, limit, busy, leaseMs);
  }
  nextDueAt(busy: BusyQueues, now: number): Promise<number | undefined> {
    return this.base.nextDueAt(busy, now);
  }
  held(taskId: string, configId: string, now: number): Promise<PushDelivery[]> {
    return this.base.held(taskId, configId, now);
  }
  rewrite(id: number, body: string): Promise<void> {
    return this.base.rewrite(id, body);
  }
  serialize(taskId: string): Promise<void> {
    return this.base.serialize(taskId);
  }
  remove(id: number, lease?: number): Promise<boolean> {
    return this.base.remove(id, lease);
  }
  reschedule(id: number, attempts: number, nextAttemptAt: number, lastError: string | undefined, lease?: number): Promise<void> {
    return this.base.reschedule(id, attempts, nextAttemptAt, lastError, lease);
  }
  drop(taskId: string, configId?: string): Promise<number> {
    return this.base.drop(taskId, configId);
  }
  size(): Promise<number> {
    return this.base.size();
  }
}

/** Runs `fn` with the process's unhandled-rejection listeners swapped for a recorder; returns what was recorded. */
async function recordUnhandledRejections(fn: () => Promise<void>): Promise<unknown[]> {
  const recorded: unknown[] = [];
  const saved = process.listeners("unhandledRejection");
  const recorder = (reason: unknown) => void recorded.push(reason);
  process.removeAllListeners("unhandledRejection");
  process.on("unhandledRejection", recorder);
  try {
    await fn();
    for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
  } finally {
    process.off("unhandledRejection", recorder);
    for (const l of saved) process.on("unhandledRejection", l as (...args: unknown[]) => void);
  }
  return recorded;
}

describe("PushService worker robustness (a store error under the worker)", () => {
  it("a store error in the kick after a delivery neither escapes as an unhandled rejection nor stalls the retry", async () => {
    const storage = await openStorage({ backend: "memory", now: () => T0 });
    const flaky = new FlakyOutbox(storage.pushOutbox);
    const h = await harness({ outbox: flaky, configs: storage.pushConfigs, atomically: storage.atomically });
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.script.push(() => {
      flaky.arm(); // the kick in #attempt's .finally() will hit the store error
      return Promise.resolve(retry());
    });
    const rejections = await recordUnhandledRejections(async () => {
      h.service.start();
      await h.change(makeTask("t1"));
      await h.flush();
    });
    expect(flaky.failures).toBe(1);
    expect(rejections).toEqual([]);
    // The rescheduled retry still goes out.
    for (let i = 0; i < 12 && h.sender.sent.length < 2; i++) await h.advance(5000);
    expect(h.sender.sent).toHaveLength(2);
    await storage.close();
  });

  it("a store error when the retry timer fires does not escape the timer, and the worker tries again", async () => {
    const storage = await openStorage({ backend: "memory", now: () => T0 });
    const flaky = new FlakyOutbox(storage.pushOutbox);
    const h = await harness({ outbox: flaky, configs: storage.pushConfigs, atomically: storage.atomically });
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1", { id: "v1" }));
    h.sender.script.push(retry());
    h.service.start();
    await h.change(makeTask("t1"));
    await h.flush();
    expect(h.sender.sent).toHaveLength(1);
    flaky.arm(); // the timer's kick will hit the store error
    let escaped: unknown;
    try {
      await h.advance(750); // the retry is due at T0 + 750 (random 0.5)
    } catch (err) {
      escaped = err;
    }
    expect(flaky.failures).toBe(1);
    expect(escaped).toBeUndefined();
    for (let i = 0; i < 12 && h.sender.sent.length < 2; i++) await h.advance(5000);
    expect(h.sender.sent).toHaveLength(2);
    await storage.close();
  });
});

// ---- set() edge cases, secrets on read, age limit, cut-short POSTs ----------------------------------------------

describe("PushService: re-registration, ids, secrets, age, cut-short POSTs", () => {
  const admin: Principal = { id: "admin", credentialId: "cred-admin", trustLevel: "admin", scopes: new Set([RESULTS_READ, RESULTS_FILES]), admin: true };

  it("setting the same config again on a finished task sends nothing new; a changed one is announced again", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1", "completed"));
    h.service.start();
    const cfg = input("t1", { id: "c", token: "tok" });
    await h.service.set(alice, "1.0", cfg);
    await h.flush();
    expect(h.sender.sent).toHaveLength(1);
    await h.service.set(alice, "1.0", { ...cfg });
    await h.flush();
    expect(h.sender.sent, "identical re-registration").toHaveLength(1);
    await h.service.set(alice, "1.0", { ...cfg, token: "tok-2" });
    await h.flush();
    expect(h.sender.sent.map((s) => s.request.headers["x-a2a-notification-token"])).toEqual(["tok", "tok-2"]);
  });

  it("an empty id is unset (0.3: the task's id, 1.0: a fresh one); an id with / or over 256 characters is refused", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    expect((await h.service.set(alice, "0.3", input("t1", { id: "" }))).id).toBe("t1");
    const fresh = (await h.service.set(alice, "1.0", input("t1", { id: "" }))).id;
    expect(fresh).toMatch(/^[0-9a-f-]{36}$/);
    await rejectsA2AError(() => h.service.set(alice, "1.0", input("t1", { id: "a/b" })), "INVALID_PARAMS", { field: "id" });
    await rejectsA2AError(() => h.service.set(alice, "0.3", input("t1", { id: "x".repeat(257) })), "INVALID_PARAMS", { field: "pushNotificationConfig.id" });
    expect((await h.service.set(alice, "1.0", input("t1", { id: "x".repeat(256) }))).id).toHaveLength(256);
  });

  it("a config's token and credentials are shown to the principal who set it and to admins, not to others", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    const secretCfg = input("t1", { id: "by-admin", token: "admin-token", authentication: { schemes: ["Bearer"], credentials: "admin-cred" } });
    const setter = (await h.service.set(admin, "1.0", secretCfg));
    expect(setter).toMatchObject({ token: "admin-token", authentication: { credentials: "admin-cred" } });
    const seen = (await h.service.get(alice, { taskId: "t1", id: "by-admin" }));
    expect(seen.token).toBeUndefined();
    expect(seen.authentication).toEqual({ schemes: ["Bearer"] });
    expect(seen.url).toBe(URL_A);
    expect((await h.service.list(alice, "t1"))[0]!.token).toBeUndefined();
    expect((await h.service.get(admin, { taskId: "t1", id: "by-admin" })).token).toBe("admin-token");
    // Alice's own config keeps its secrets for her.
    await h.service.set(alice, "1.0", input("t1", { id: "by-alice", token: "alice-token" }));
    expect((await h.service.get(alice, { taskId: "t1", id: "by-alice" })).token).toBe("alice-token");
  });

  it("a notification older than maxAgeMs is given up without a POST (expired)", async () => {
    const h = (await harness({ maxAgeMs: 10_000 }));
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1"));
    await h.change(makeTask("t1", "completed"));
    await h.advance(10_001);
    h.service.start();
    await h.flush();
    expect(h.sender.sent).toHaveLength(0);
    expect((await h.storage.pushOutbox.size())).toBe(0);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "expired" })).toBe(1);
  });

  it("deleting a config cuts its POST in flight short; it is counted once, as dropped, and not sent again", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    h.sender.script.push(hangUntilAborted);
    h.service.start();
    await h.service.set(alice, "1.0", input("t1", { id: "c" }));
    await h.change(makeTask("t1", "completed"));
    // Not flush(): it waits for the POST in flight, which hangs until aborted.
    for (let i = 0; i < 5 && h.sender.sent.length === 0; i++) await new Promise<void>((r) => setImmediate(r));
    expect(h.sender.sent).toHaveLength(1);
    expect(h.sender.sent[0]!.signal?.aborted).toBe(false);
    await h.service.delete(alice, { taskId: "t1", id: "c" });
    expect(h.sender.sent[0]!.signal?.aborted).toBe(true);
    await h.flush();
    await h.advance(120_000);
    expect(h.sender.sent).toHaveLength(1);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "dropped" })).toBe(1);
    expect(await counter(h.metrics, "a2a_push_delivery_attempts_total", { outcome: "retry" })).toBe(0);
  });

  it("store failures under the worker back off: the retries come further apart", async () => {
    const h = (await harness());
    h.tasks.set("t1", makeTask("t1"));
    await h.service.set(alice, "1.0", input("t1"));
    await h.change(makeTask("t1", "completed"));
    await h.flush(); // the kick changed() queued runs before start(): nothing
    const outbox = h.storage.pushOutbox;
    let calls = 0;
    const claim = outbox.claim.bind(outbox);
    outbox.claim = () => {
      calls++;
      return Promise.reject(new Error("SQLITE_BUSY"));
    };
    h.service.start();
    await h.flush();
    expect(calls).toBe(1);
    // randomValue 0.5: backoff(n) = 0.75 · initial · 2^(n−1): 750 ms, then 1500 ms, then 3000 ms.
    await h.advance(749);
    expect(calls).toBe(1);
    await h.advance(1);
    expect(calls).toBe(2);
    await h.advance(1499);
    expect(calls).toBe(2);
    await h.advance(1);
    expect(calls).toBe(3);
    outbox.claim = claim;
    await h.advance(3000);
    expect(h.sender.sent).toHaveLength(1);
  });
});

describe("PushService: per-host concurrency", () => {
  it("a host never has more than maxConcurrencyPerHost POSTs in flight; other hosts still get slots; the rest follow as POSTs end", async () => {
    const h = (await harness({ maxConcurrency: 4, maxConcurrencyPerHost: 2 }));
    const slowHost = "https://slow.example.com";
    const held: { host: string; release: () => void }[] = [];
    h.sender.fallback = (request) =>
      new Promise<SendVerdict>((resolve) => {
        const host = new URL(request.url).origin;
        if (host !== slowHost) return resolve(DELIVERED);
        held.push({ host, release: () => resolve(DELIVERED) });
      });
    for (const id of ["a1", "a2", "a3"]) {
      h.tasks.set(id, makeTask(id));
      await h.service.set(alice, "1.0", input(id, { url: `${slowHost}/${id}` }));
      await h.change(makeTask(id, "completed"));
    }
    h.tasks.set("b1", makeTask("b1"));
    await h.service.set(alice, "1.0", input("b1", { url: URL_B }));
    await h.change(makeTask("b1", "completed"));
    h.service.start();
    const settle = async () => {
      for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
    };
    await settle();
    // Two POSTs held at the slow host, the other host delivered although a slot of the four was free for a3.
    expect(held).toHaveLength(2);
    expect(h.sender.sent.map((s) => new URL(s.request.url).origin).filter((o) => o !== slowHost)).toEqual([new URL(URL_B).origin]);
    expect((await h.storage.pushOutbox.size())).toBe(3);
    held.shift()!.release();
    await settle();
    expect(held, "a3 starts when one of the slow host's POSTs ends").toHaveLength(2);
    expect(h.sender.sent).toHaveLength(4);
    for (const x of held.splice(0)) x.release();
    await h.flush();
    expect((await h.storage.pushOutbox.size())).toBe(0);
    expect(await counter(h.metrics, "a2a_push_notifications_finished_total", { outcome: "delivered" })).toBe(4);
  });
});
