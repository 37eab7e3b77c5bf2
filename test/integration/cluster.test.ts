// Two gateway processes on one PostgreSQL database (issue 22), each in front of its own OpenCode stub: a task started
// on A is streamed, canceled and answered on B (what only A's OpenCode can do goes to A); A killed mid-turn leaves its task to B's sweep after the lease; push
// notifications are delivered once and in order by the two workers; a credential's limits hold across both.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectRestError } from "../support/contract.js";
import { call, rpc } from "../support/gateway.js";
import { startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";
import { askColor, pushSet, QUICK, Receiver, scriptedSession, sleep, wireState, ok, type Hit } from "../support/push-wire.js";
import { getTask, invoke, MODES, openSse, openStream, openSubscribe, sendParams, sendTask, stateOf, textOf, partsOf, until, userMessage } from "../support/task-wire.js";
import { hang, text, tool } from "../../tools/upstream/script.js";
import { startStubUpstream, type StubUpstream } from "../../tools/upstream/stub.js";

const M10 = MODES[2]!; // 1.0 JSON-RPC
const M03 = MODES[0]!; // 0.3 JSON-RPC
const LIMITED = { id: "limited", principal: "p-limited", scheme: "bearer", secret: "cluster-limited-secret-0123456789", trust_level: "admin", rate_limit: { max_requests: 6, window_seconds: 600 } };
const STREAMER = { id: "streamer", principal: "p-streamer", scheme: "bearer", secret: "cluster-streamer-secret-0123456789", trust_level: "admin", rate_limit: { max_streams: 1 } };
const LEASE_SECONDS = "1";

let stub: StubUpstream;
/** B's own OpenCode: what B does for a task A runs must reach A's (`stub`), never this one. */
let stubB: StubUpstream;
let database: Awaited<ReturnType<typeof freshDatabase>>;
let a: GatewayProcess;
let b: GatewayProcess;
let rx: Receiver;
const started: GatewayProcess[] = [];

async function gateway(instance: string, upstream: StubUpstream = stub): Promise<GatewayProcess> {
  const g = await startGatewayProcess({
    ...QUICK,
    OPENCODE_BASE_URL: upstream.url,
    A2A_TASK_STORE_DATABASE_URL: database.url,
    A2A_INSTANCE_ID: instance,
    A2A_INSTANCE_LEASE_SECONDS: LEASE_SECONDS,
    A2A_CREDENTIALS: JSON.stringify([LIMITED, STREAMER]),
  });
  started.push(g);
  return g;
}

/** The text of a 1.0 stream's frames as a client assembles it: the Task's text artifact, then every text update. */
function assembled(frames: any[]): string {
  let out = "";
  for (const frame of frames) {
    const r = frame.result;
    if (r?.task !== undefined) out = textOf((r.task.artifacts ?? []).find((x: any) => x.artifactId.endsWith(":text"))?.parts ?? []);
    const update = r?.artifactUpdate;
    if (update !== undefined && update.artifact.artifactId.endsWith(":text")) out = (update.append === true ? out : "") + textOf(update.artifact.parts);
  }
  return out;
}

/** a2a_stream_requests_total and a2a_stream_active, summed over both gateways. */
async function streamMetrics(): Promise<{ requests: number; active: number }> {
  const out = { requests: 0, active: 0 };
  for (const g of [a, b]) {
    const text = (await call(g.url, "/metrics")).text;
    out.requests += Number(/^a2a_stream_requests_total (\d+)/m.exec(text)?.[1] ?? NaN);
    out.active += Number(/^a2a_stream_active (\d+)/m.exec(text)?.[1] ?? NaN);
  }
  return out;
}

const promptsSent = (): number => stub.requests.filter((r) => r.method === "POST" && r.path.endsWith("/prompt_async")).length;

describe.skipIf(postgresUrl === undefined)("two gateways on one PostgreSQL database", () => {
  beforeAll(async () => {
    stub = await startStubUpstream({ heartbeatMs: 200 });
    stubB = await startStubUpstream({ heartbeatMs: 200 });
    database = await freshDatabase();
    [a, b] = [await gateway("gateway-a"), await gateway("gateway-b", stubB)];
    rx = await Receiver.start();
  }, 60_000);
  afterAll(async () => {
    for (const g of started) await g.stop().catch(() => undefined);
    await rx?.close();
    await stub?.close();
    await stubB?.close();
    await database?.drop();
  });

  it("a task sent on A is streamed on B: the stored Task first, then every live event in order, none missing", async () => {
    stub.script(text(["one ", "two ", "three ", "four"], { delayMs: 250 }));
    const before = promptsSent();
    const task = await sendTask(a.url, M10, sendParams(M10, userMessage(M10, "count slowly"), { blocking: false }));
    await until("the turn to reach OpenCode", () => promptsSent() > before);
    const streamsBefore = await streamMetrics();
    const stream = await openSubscribe(b.url, M10, task.id);
    expect(stream.status).toBe(200);
    const frames = await stream.rest(15_000);
    expect(frames[0].result.task.id).toBe(task.id);
    const last = frames[frames.length - 1].result;
    expect(last.statusUpdate?.status.state ?? last.task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(assembled(frames)).toBe("one two three four");
    const stored = await getTask(b.url, M10, task.id);
    expect(textOf(stored.artifacts.find((x: any) => x.artifactId.endsWith(":text")).parts)).toBe("one two three four");
    // The stream is counted once over both gateways (by A, which runs the task), and is no longer open anywhere.
    const opened = await streamMetrics();
    expect(opened.requests - streamsBefore.requests).toBe(1);
    await until("no stream to be open", async () => ((await streamMetrics()).active === 0 ? true : undefined));
  });

  it("message/stream on B continuing A's task (the answer to its question) streams the continued turn from A", async () => {
    const metadata = await scriptedSession(stub, askColor(), text(["blue ", "it is"], { delayMs: 50 }));
    const asked = await sendTask(a.url, M10, sendParams(M10, userMessage(M10, "ask me a colour"), {}, metadata));
    expect(stateOf(asked)).toBe("input-required");
    const stream = await openStream(b.url, M10, sendParams(M10, userMessage(M10, "blue", { taskId: asked.id, contextId: asked.contextId })));
    const frames = await stream.rest(15_000);
    expect(frames.length).toBeGreaterThan(1);
    const last = frames[frames.length - 1].result;
    expect(last.statusUpdate?.status.state ?? last.task?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(stateOf(await getTask(a.url, M10, asked.id))).toBe("completed");
  });

  it("tasks/cancel on B cancels the turn running on A, and A aborts it upstream", async () => {
    for (const m of [M03, M10]) {
      stub.script(hang({ chunks: ["working"] }));
      const before = promptsSent();
      const task = await sendTask(a.url, m, sendParams(m, userMessage(m, "never ends"), { blocking: false }));
      await until("the turn to reach OpenCode", () => promptsSent() > before);
      const session = (await getTask(a.url, m, task.id)).metadata?.shared?.session?.id;
      const res = await invoke(b.url, m, "cancel", { id: task.id });
      expect(res.status, res.text).toBe(200);
      expect(stateOf(m.line === "0.3" ? res.body.result : res.body.result)).toBe("canceled");
      await until("A to abort the session upstream", () => stub.requests.some((r) => r.method === "POST" && r.path === `/session/${session}/abort`));
      expect(stateOf(await getTask(a.url, m, task.id))).toBe("canceled");
    }
  });

  it("interrupts are answered on B: a question by a message to the task, a permission by a2a.interrupt.permission.reply", async () => {
    const question = await sendTask(a.url, M10, sendParams(M10, userMessage(M10, "ask"), {}, await scriptedSession(stub, askColor(), text("blue it is"))));
    expect(stateOf(question)).toBe("input-required");
    const answered = await sendTask(b.url, M10, { message: userMessage(M10, "blue", { taskId: question.id, contextId: question.contextId }) });
    expect(stateOf(answered)).toBe("completed");
    expect(textOf(answered.artifacts.find((x: any) => x.artifactId.endsWith(":text")).parts)).toBe("blue it is");

    const permission = await sendTask(a.url, M03, sendParams(M03, userMessage(M03, "read it"), {}, await scriptedSession(stub, tool("read", { filePath: "/etc/hostname" }), text("read it"))));
    expect(stateOf(permission)).toBe("input-required");
    const requestId = permission.status.message?.metadata?.shared?.interrupt?.request_id ?? permission.metadata?.shared?.interrupt?.request_id;
    expect(typeof requestId).toBe("string");
    const reply = await rpc(b.url, { jsonrpc: "2.0", id: 1, method: "a2a.interrupt.permission.reply", params: { request_id: requestId, reply: "once" } }, { "A2A-Version": "0.3" });
    expect(reply.body?.error, reply.text).toBeUndefined();
    await until("the task to complete on A", async () => ((await getTask(a.url, M03, permission.id)).status.state === "completed" ? true : undefined), 10_000);
    // The replies went to A's OpenCode (B's has its own): B forwarded them to A.
    expect(stub.requests.filter((r) => r.method === "POST" && r.path === `/permission/${requestId}/reply`)).toHaveLength(1);
    expect(stubB.requests.filter((r) => r.path.includes("/permission/") || r.path.includes("/question/"))).toEqual([]);
  });

  it("push notifications: two workers deliver each one once, in order per task and config, with retries", async () => {
    const tasks: { task: any; hook: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const task = await sendTask(a.url, M03, sendParams(M03, userMessage(M03, `ask ${i}`), {}, await scriptedSession(stub, askColor(), text(`answer ${i}`))));
      expect(stateOf(task)).toBe("input-required");
      const hook = rx.path(`cluster-${i}`);
      rx.answer(hook, [503, 200, 503], 200); // the first and third attempts fail: retries, possibly by the other worker
      await ok(M03, await pushSet(i % 2 === 0 ? b.url : a.url, M03, task.id, { id: "hook", url: rx.url(hook) }));
      tasks.push({ task, hook });
    }
    for (const { task } of tasks) expect(stateOf(await sendTask(b.url, M03, { message: userMessage(M03, "blue", { taskId: task.id }) }))).toBe("completed");
    const delivered = (hits: Hit[]) => hits.filter((_, i) => i !== 0 && i !== 2);
    for (const { hook } of tasks) await until(`every notification at ${hook}`, () => (delivered(rx.on(hook)).length >= 3 ? true : undefined), 20_000);
    await sleep(1_000);
    for (const { task, hook } of tasks) {
      const hits = rx.on(hook);
      // Attempts in order: [input-required (503), input-required, working (503), working, completed].
      expect(hits.map((h) => h.body?.status?.state)).toEqual(["input-required", "input-required", "working", "working", "completed"].map((s) => wireState("0.3", s)));
      for (const h of hits) expect(h.body.id).toBe(task.id);
    }
  });

  it("a credential's rate limit holds across both gateways: its window is shared", async () => {
    const list = (g: GatewayProcess) => call(g.url, "/v1/tasks", { auth: false, headers: { authorization: `Bearer ${LIMITED.secret}` } });
    const answers: number[] = [];
    for (let i = 0; i < 3; i++) answers.push((await list(a)).status, (await list(b)).status);
    expect(answers).toEqual([200, 200, 200, 200, 200, 200]);
    for (const g of [a, b]) await expectRestError(await list(g), "0.3", "RATE_LIMITED", 429);
    // A window this small is taken one request at a time: each of those 4 takes on A was a statement in PostgreSQL.
    const text = (await call(a.url, "/metrics")).text;
    expect(Number(/^a2a_rate_limit_database_takes_total (\d+)/m.exec(text)?.[1])).toBeGreaterThanOrEqual(4);
    expect(Number(/^a2a_rate_limit_allowance_takes_total (\d+)/m.exec(text)?.[1])).toBeGreaterThanOrEqual(0);
  });

  it("a credential's stream limit holds across both gateways: a stream open on A takes its only slot on B too", async () => {
    stub.script(hang({ chunks: ["streaming"] }));
    const before = promptsSent();
    const task = await sendTask(a.url, M10, sendParams(M10, userMessage(M10, "stream me"), { blocking: false }));
    await until("the turn to reach OpenCode", () => promptsSent() > before);
    const subscribe = (g: GatewayProcess) =>
      openSse(g.url, "/", {
        headers: { authorization: `Bearer ${STREAMER.secret}`, "A2A-Version": "1.0" },
        body: { jsonrpc: "2.0", id: 7, method: "SubscribeToTask", params: { id: task.id } },
      });
    const first = await subscribe(a);
    expect((await first.next()).result.task.id).toBe(task.id);
    const second = await subscribe(b);
    expect(JSON.stringify(second.body)).toMatch(/STREAM_LIMIT_EXCEEDED|-32062|max_streams|open_streams/);
    first.close();
    const third = await until("the slot to be free again", async () => {
      const s = await subscribe(b);
      if (s.body === undefined) return s;
      return undefined;
    }, 10_000, 200);
    expect((await third.next()).result.task.id).toBe(task.id);
    third.close();
    await invoke(a.url, M10, "cancel", { id: task.id });
  });

  it("A killed mid-turn: B fails the task after A's lease ran out, and B's stream of it ends", async () => {
    const c = await gateway("gateway-c");
    stub.script(hang({ chunks: ["half way"] }));
    const before = promptsSent();
    const task = await sendTask(c.url, M10, sendParams(M10, userMessage(M10, "never ends"), { blocking: false }));
    await until("the turn to reach OpenCode", () => promptsSent() > before);
    const stream = await openSubscribe(b.url, M10, task.id);
    expect((await stream.next(5_000)).result.task.id).toBe(task.id);
    const killedAt = Date.now();
    await c.stop("SIGKILL");
    const failed = await until(
      "B to fail the task",
      async () => {
        const t = await getTask(b.url, M10, task.id);
        return t.status.state === "TASK_STATE_FAILED" ? t : undefined;
      },
      15_000,
      100,
    );
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(Number(LEASE_SECONDS) * 1000 - 400);
    expect(JSON.stringify(failed.metadata)).toMatch(/GATEWAY_RESTARTED/);
    expect(textOf(partsOf(failed.status.message))).toMatch(/stopped or restarted/);
    // The stream B served from C ends (an error naming the lost instance), it does not hang.
    const rest = await stream.rest(10_000);
    expect(JSON.stringify(rest)).toMatch(/GATEWAY_PEER_UNREACHABLE|gateway-c|TASK_STATE_FAILED/);
  });
});
