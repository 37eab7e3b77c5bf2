import { afterEach, describe, expect, it } from "vitest";
import { catalog } from "../../src/contract/catalog.js";
import { hang, text } from "../../tools/upstream/script.js";
import { call } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { eventsOf, getTask, MODES, openStream, sendParams, sendTask, stateOf, until, userMessage } from "../support/task-wire.js";

// ---- beyond the upstream budget, tasks wait in a bounded, fair queue instead of failing -----------------------------

const gateways: TaskGateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});
async function gateway(env: Record<string, string>): Promise<TaskGateway> {
  const g = await startTaskGateway(env);
  gateways.push(g);
  return g;
}
const m = MODES[0]!;
const prompts = (g: TaskGateway) => g.stub.requests.filter((r) => r.method === "POST" && r.path.endsWith("/prompt_async"));
const promptText = (body: any): string => (body?.parts ?? []).map((p: any) => p.text ?? "").join("");

describe("task admission", () => {
  it("100 concurrent sends with a budget of 8: every task completes, none fails for backpressure", async () => {
    const g = await gateway({ A2A_MAX_RUNNING_TASKS: "8", OPENCODE_MAX_CONCURRENT_REQUESTS: "8", A2A_RATE_LIMIT_MAX_REQUESTS: "0" });
    // Each turn lasts long enough (150 ms) that 100 sends arriving together outnumber the 8 slots on any machine: a
    // gateway that starts a turn faster than 20 ms / 8 apart would otherwise never queue one.
    g.stub.script(...Array.from({ length: 100 }, (_, i) => text([`answer ${i}`], { delayMs: 150 })));
    let peak = 0;
    const probe = setInterval(() => {
      peak = Math.max(peak, g.stub.stats().busySessions);
    }, 5);
    try {
      const tasks = await Promise.all(Array.from({ length: 100 }, (_, i) => sendTask(g.url, m, sendParams(m, userMessage(m, `task ${i}`)))));
      expect(tasks.map(stateOf).filter((s) => s !== "completed")).toEqual([]);
      expect(tasks.some((t) => JSON.stringify(t).includes("UPSTREAM_BACKPRESSURE"))).toBe(false);
    } finally {
      clearInterval(probe);
    }
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(8);
    const health = await call(g.url, "/health");
    expect(health.body.tasks).toEqual({ running: 0, queued: 0, max_running: 8, queue_limit: 1000 });
    const metrics = await call(g.url, "/metrics");
    expect(metrics.text).toMatch(/a2a_tasks_queued_total \d+/);
    expect(Number(/a2a_tasks_queued_total (\d+)/.exec(metrics.text)?.[1])).toBeGreaterThan(0);
  }, 60_000);

  it("a queued task is working with a queued progress note on its stream, and starts when a turn frees", async () => {
    const g = await gateway({ A2A_MAX_RUNNING_TASKS: "1" });
    g.stub.script(text(["first done"], { delayMs: 300 }), text("second done"));
    const first = await sendTask(g.url, m, sendParams(m, userMessage(m, "first"), { blocking: false }));
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "second")));
    const events = await eventsOf(m, sse, await sse.rest(10_000));
    expect(stateOf(events[0]!.body)).toBe("working");
    const queued = events.find((e) => e.kind === "status" && e.body.metadata?.shared?.progress?.type === "queued");
    expect(queued?.body.metadata.shared.progress.position).toBe(1);
    expect(stateOf(events.at(-1)!.body)).toBe("completed");
    expect(stateOf(await getTask(g.url, m, first.id))).toBe("completed");
    expect(prompts(g).map((r) => promptText(r.body))).toEqual(["first", "second"]);
  }, 20_000);

  it("a full queue refuses the send before any task is created: JSON-RPC -32076 with retry data, REST 503 + Retry-After", async () => {
    const g = await gateway({ A2A_MAX_RUNNING_TASKS: "1", A2A_TASK_QUEUE_LIMIT: "1" });
    g.stub.script(hang({ holdMs: 5_000 }), text("waited"));
    await sendTask(g.url, m, sendParams(m, userMessage(m, "running"), { blocking: false }));
    await until("running", () => (prompts(g).length === 1 ? true : undefined));
    const waiting = await sendTask(g.url, m, sendParams(m, userMessage(m, "waiting"), { blocking: false }));
    expect(stateOf(waiting)).toBe("working");
    const sessionsBefore = g.stub.requests.filter((r) => r.method === "POST" && r.path === "/session").length;
    const listBefore = (await call(g.url, "/tasks?pageSize=100", { headers: { "A2A-Version": "1.0" } })).body.tasks.length;

    const rpc = await call(g.url, "/", { method: "POST", body: { jsonrpc: "2.0", id: 1, method: "message/send", params: sendParams(m, userMessage(m, "refused")) } });
    const code = catalog.errors["0.3"].find((e) => e.reason === "TASK_QUEUE_FULL")!.code;
    expect(rpc.body.error.code).toBe(code);
    expect(rpc.body.error.data).toMatchObject({ type: "TASK_QUEUE_FULL", running: 1, queued: 1, limit: 1 });
    expect(rpc.body.error.data.retry_after_seconds).toBeGreaterThanOrEqual(1);

    const rest = await call(g.url, "/message:send", {
      method: "POST",
      headers: { "A2A-Version": "1.0" },
      body: { message: { role: "ROLE_USER", messageId: "m-refused", parts: [{ text: "refused too" }] } },
    });
    expect(rest.status).toBe(503);
    expect(Number(rest.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(rest.body.error.details[0].reason).toBe("TASK_QUEUE_FULL");

    expect((await call(g.url, "/tasks?pageSize=100", { headers: { "A2A-Version": "1.0" } })).body.tasks.length).toBe(listBefore);
    expect(g.stub.requests.filter((r) => r.method === "POST" && r.path === "/session").length).toBe(sessionsBefore);
  }, 20_000);

  it("waiting tasks are served fairly across principals; a canceled waiting task gives its place back", async () => {
    const scopes = catalog.scopes.filter((s) => s !== "audit.read");
    const cred = (name: string) => ({ id: `${name}-key`, principal: name, scheme: "bearer", secret: `${name}-admission-secret-0123456789`, trust_level: "autonomous", scopes });
    const alice = cred("alice");
    const bob = cred("bob");
    const g = await gateway({ A2A_MAX_RUNNING_TASKS: "1", A2A_CREDENTIALS: JSON.stringify([alice, bob]) });
    g.stub.script(text(["a1"], { delayMs: 300 }), ...Array.from({ length: 5 }, (_, i) => text(`r${i}`)));
    const as = (who: { secret: string }, body: string, id: number) =>
      call(g.url, "/", { method: "POST", headers: { authorization: `Bearer ${who.secret}` }, body: { jsonrpc: "2.0", id, method: "message/send", params: { message: { kind: "message", role: "user", messageId: `m${id}`, parts: [{ kind: "text", text: body }] }, configuration: { blocking: false } } } });
    await as(alice, "alice 1", 1);
    await until("alice 1 running", () => (prompts(g).length === 1 ? true : undefined));
    await as(alice, "alice 2", 2);
    const a3 = await as(alice, "alice 3", 3);
    await as(alice, "alice 4", 4);
    await as(bob, "bob 1", 5);
    // Alice's third task is canceled while it waits.
    const cancel = await call(g.url, "/", { method: "POST", headers: { authorization: `Bearer ${alice.secret}` }, body: { jsonrpc: "2.0", id: 6, method: "tasks/cancel", params: { id: a3.body.result.id } } });
    expect(cancel.body.result.status.state).toBe("canceled");
    await until("all prompted", () => (prompts(g).length === 4 ? true : undefined), 10_000);
    // Round robin: after alice's running task, alice's next, then bob's (ahead of alice's remaining one).
    expect(prompts(g).map((r) => promptText(r.body))).toEqual(["alice 1", "alice 2", "bob 1", "alice 4"]);

  }, 20_000);
});
