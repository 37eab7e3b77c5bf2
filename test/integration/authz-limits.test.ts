// Issue 6 abuse limits at the edge: the per-credential sliding-window request limit (X-RateLimit-* on every
// authenticated answer, 429 + Retry-After on REST, -32061 under the request's id on JSON-RPC, a batch of N counting
// N, recovery once the window has passed, independent windows per credential, per-credential overrides), the cap
// on concurrently open streams, and the SSE budgets (bytes, idle time, duration) that end a stream with one
// STREAM_BUDGET_EXCEEDED event in the line's shape while the task goes on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorEntry, type ProtocolLine } from "../../src/contract/catalog.js";
import { errorInfoOf, expectRestError, expectRpcError, expectValid } from "../support/contract.js";
import { call, rpc, startGateway, TEST_TOKEN, type HttpResult, type StartedGateway } from "../support/gateway.js";
import { MODES, openSse, restPrefix, userMessage, versionHeader, type Mode, type Sse, until } from "../support/task-wire.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { hang, text, type Reply } from "../../tools/upstream/script.js";

type Obj = Record<string, any>;
const secret = (id: string) => `limits-${id}-secret-0123456789`;
const cred = (id: string, rate_limit?: Obj) => ({ id, principal: `p-${id}`, scheme: "bearer", secret: secret(id), trust_level: "admin", ...(rate_limit ? { rate_limit } : {}) });
const as = (id: string) => ({ authorization: `Bearer ${secret(id)}` });


function rateHeaders(res: { headers: Headers }): { limit: number; remaining: number; reset: number } {
  const get = (name: string) => {
    const v = res.headers.get(name);
    expect(v, name).not.toBeNull();
    expect(v).toMatch(/^\d+$/);
    return Number(v);
  };
  return { limit: get("x-ratelimit-limit"), remaining: get("x-ratelimit-remaining"), reset: get("x-ratelimit-reset") };
}
function expectResetSane(reset: number, windowSeconds: number): void {
  const now = Date.now() / 1000;
  expect(reset).toBeGreaterThanOrEqual(Math.floor(now));
  expect(reset).toBeLessThanOrEqual(Math.ceil(now + windowSeconds) + 1);
}

// ---- request limits -------------------------------------------------------------------------------------------------

describe("request limit: A2A_RATE_LIMIT_MAX_REQUESTS=5, A2A_RATE_LIMIT_WINDOW_SECONDS=1", () => {
  let gw: StartedGateway;
  const LONG = { window_seconds: 60 }; // same limit (5), a window no test outlives: exact counting
  beforeAll(async () => {
    gw = await startGateway({
      A2A_RATE_LIMIT_MAX_REQUESTS: "5",
      A2A_RATE_LIMIT_WINDOW_SECONDS: "1",
      A2A_CREDENTIALS: JSON.stringify([
        cred("rest", LONG),
        cred("rpc", LONG),
        cred("mixed", LONG),
        cred("batch", LONG),
        cred("indep-a", LONG),
        cred("indep-b", LONG),
        cred("tiny", { max_requests: 2, window_seconds: 60 }),
        cred("quick"),
        cred("quick-rpc"),
      ]),
    });
  });
  afterAll(() => gw?.close());

  let rpcId = 0;
  const card = (who: Obj, line: ProtocolLine = "0.3") =>
    rpc(gw.url, { jsonrpc: "2.0", id: ++rpcId, method: line === "0.3" ? "agent/getAuthenticatedExtendedCard" : "GetExtendedAgentCard", params: {} }, { ...who, "A2A-Version": line });

  it("REST: the headers count down on every answer, the 6th request → 429 + Retry-After + RATE_LIMITED (both lines)", async () => {
    for (let i = 1; i <= 5; i++) {
      const res = await call(gw.url, "/health", { auth: false, headers: as("rest") });
      expect(res.status, res.text).toBe(200);
      const h = rateHeaders(res);
      expect(h).toMatchObject({ limit: 5, remaining: 5 - i });
      expectResetSane(h.reset, 60);
    }
    const refused = await call(gw.url, "/health", { auth: false, headers: as("rest") });
    const body = await expectRestError(refused, "0.3", "RATE_LIMITED", 429);
    const retry = Number(refused.headers.get("retry-after"));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(body.data).toMatchObject({ retry_after_seconds: retry, limit: 5, window_seconds: 60 });
    expect(rateHeaders(refused)).toMatchObject({ limit: 5, remaining: 0 });
    // the 1.0 REST shape, and /v1 (always 0.3) too
    await expectRestError(await call(gw.url, "/tasks", { auth: false, headers: { ...as("rest"), "A2A-Version": "1.0" } }), "1.0", "RATE_LIMITED", 429);
    await expectRestError(await call(gw.url, "/v1/card", { auth: false, headers: as("rest") }), "0.3", "RATE_LIMITED", 429);
  });

  it("JSON-RPC: the same headers; the 6th call → HTTP 200, -32061 under the request's id (both lines)", async () => {
    for (let i = 1; i <= 5; i++) {
      const res = await card(as("rpc"), i % 2 ? "0.3" : "1.0");
      expect(res.body?.result, res.text).toBeDefined();
      expect(rateHeaders(res)).toMatchObject({ limit: 5, remaining: 5 - i });
    }
    for (const line of ["0.3", "1.0"] as const) {
      const res = await card(as("rpc"), line);
      const error = await expectRpcError(res, line, "RATE_LIMITED", { id: rpcId });
      expect(error.code).toBe(-32061);
      expect(errorEntry(line, "RATE_LIMITED").code).toBe(-32061);
      expect(rateHeaders(res)).toMatchObject({ limit: 5, remaining: 0 });
    }
  });

  it("REST and JSON-RPC draw on one budget per credential", async () => {
    for (let i = 0; i < 3; i++) expect((await call(gw.url, "/health", { auth: false, headers: as("mixed") })).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await card(as("mixed"))).body.result).toBeDefined();
    await expectRpcError(await card(as("mixed")), "0.3", "RATE_LIMITED", { id: rpcId });
    await expectRestError(await call(gw.url, "/health", { auth: false, headers: as("mixed") }), "0.3", "RATE_LIMITED", 429);
  });

  it("a batch of N counts N; a batch that does not fit is refused call by call and counts nothing", async () => {
    const batch = (ids: string[]) =>
      rpc(gw.url, ids.map((id) => ({ jsonrpc: "2.0", id, method: "agent/getAuthenticatedExtendedCard" })), as("batch"));
    const first = await batch(["a", "b", "c"]);
    expect((first.body as Obj[]).map((r) => r.result === undefined)).toEqual([false, false, false]);
    expect(rateHeaders(first)).toMatchObject({ limit: 5, remaining: 2 });
    const tooBig = await batch(["d", "e", "f"]);
    expect(tooBig.status).toBe(200);
    const answers = tooBig.body as Obj[];
    expect(answers.map((r) => r.id).sort()).toEqual(["d", "e", "f"]);
    for (const r of answers) {
      expect(r.error.code).toBe(-32061);
      expect(r.error.data.type).toBe("RATE_LIMITED");
    }
    expect(rateHeaders(tooBig).remaining).toBe(2);
    const fits = await batch(["g", "h"]);
    expect((fits.body as Obj[]).every((r) => r.result !== undefined)).toBe(true);
    expect(rateHeaders(fits).remaining).toBe(0);
  });

  it("two credentials have independent windows", async () => {
    for (let i = 0; i < 5; i++) expect((await call(gw.url, "/health", { auth: false, headers: as("indep-a") })).status).toBe(200);
    expect((await call(gw.url, "/health", { auth: false, headers: as("indep-a") })).status).toBe(429);
    const b = await call(gw.url, "/health", { auth: false, headers: as("indep-b") });
    expect(b.status).toBe(200);
    expect(rateHeaders(b)).toMatchObject({ limit: 5, remaining: 4 });
    expect((await call(gw.url, "/health", { auth: false, headers: as("indep-a") })).status).toBe(429);
  });

  it("a per-credential rate_limit overrides the deployment's", async () => {
    const one = await call(gw.url, "/health", { auth: false, headers: as("tiny") });
    expect(rateHeaders(one)).toMatchObject({ limit: 2, remaining: 1 });
    expect((await call(gw.url, "/health", { auth: false, headers: as("tiny") })).status).toBe(200);
    const refused = await call(gw.url, "/health", { auth: false, headers: as("tiny") });
    const body = await expectRestError(refused, "0.3", "RATE_LIMITED", 429);
    expect(body.data).toMatchObject({ limit: 2, window_seconds: 60 });
  });

  it.each([
    ["REST", "quick"],
    ["JSON-RPC", "quick-rpc"],
  ])("%s: after the 1 s window has passed, requests succeed again (bounded poll)", async (transport, id) => {
    const once = () => (transport === "REST" ? call(gw.url, "/health", { auth: false, headers: as(id) }) : card(as(id)));
    const refused = (r: HttpResult) => r.status === 429 || r.body?.error?.code === -32061;
    let sent = 0;
    let last: HttpResult | undefined;
    // the window is 1 s: count until refused (at most a few rounds if the machine is slow)
    while (sent < 50) {
      last = await once();
      sent++;
      if (refused(last)) break;
    }
    expect(refused(last!), `refused within ${sent} requests`).toBe(true);
    const again = await until("a request to be accepted again", async () => {
      const r = await once();
      return refused(r) ? undefined : r;
    }, 5000, 100);
    expect(rateHeaders(again).limit).toBe(5);
    expect(rateHeaders(again).remaining).toBeLessThan(5);
  });

  it("unauthenticated requests and public routes carry no rate-limit headers and count nothing", async () => {
    const anon = await call(gw.url, "/health", { auth: false, headers: { authorization: "Bearer nope-nope-nope-nope" } });
    expect(anon.status).toBe(401);
    expect(anon.headers.get("x-ratelimit-limit")).toBeNull();
    const pub = await call(gw.url, "/.well-known/agent-card.json", { auth: false, headers: as("indep-b") });
    expect(pub.status).toBe(200);
    expect(pub.headers.get("x-ratelimit-limit")).toBeNull();
  });
});

// ---- stream cap ----------------------------------------------------------------------------------------------------------

/** A fresh stub session with its own replies, as send metadata (no reply can leak into another test). */
async function scripted(tg: TaskGateway, ...replies: Reply[]): Promise<Obj> {
  const res = await fetch(`${tg.stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "limits" }) });
  const session = ((await res.json()) as { id: string }).id;
  tg.stub.scriptFor(session, ...replies);
  return { shared: { session: { id: session } } };
}

let streamRpcId = 1000;
async function openStreamAs(url: string, m: Mode, who: Obj, metadata: Obj): Promise<Sse> {
  const params = { message: userMessage(m, "stream please"), metadata };
  if (m.transport === "jsonrpc") {
    const id = ++streamRpcId;
    const method = m.line === "0.3" ? "message/stream" : "SendStreamingMessage";
    return openSse(url, "/", { headers: { ...who, ...versionHeader(m) }, body: { jsonrpc: "2.0", id, method, params }, rpcId: id });
  }
  return openSse(url, `${restPrefix(m)}/message:stream`, { headers: { ...who, ...versionHeader(m) }, body: params });
}
const asResult = (sse: Sse): HttpResult => ({ status: sse.status, headers: sse.headers, text: JSON.stringify(sse.body), body: sse.body });
const isStream = (sse: Sse) => (sse.headers.get("content-type") ?? "").includes("text/event-stream");
/** The task id of a stream's first frame, in any mode. */
function taskIdOf(m: Mode, frame: Obj): string {
  const payload = m.transport === "jsonrpc" ? frame.result : frame;
  return payload.kind === "task" ? payload.id : payload.task.id;
}

describe("concurrent streams: A2A_RATE_LIMIT_MAX_STREAMS=1", () => {
  let tg: TaskGateway;
  beforeAll(async () => {
    tg = await startTaskGateway({ A2A_RATE_LIMIT_MAX_STREAMS: "1", A2A_CREDENTIALS: JSON.stringify([cred("streamer"), cred("neighbour")]) });
  });
  afterAll(() => tg?.close());

  it("a second open stream of the same credential → STREAM_LIMIT_EXCEEDED (every mode); another credential is not affected; once the first closes a new one opens", async () => {
    const first = await openStreamAs(tg.url, MODES[3]!, as("streamer"), await scripted(tg, hang({ holdMs: 20_000 })));
    expect(isStream(first)).toBe(true);
    const firstTask = taskIdOf(MODES[3]!, await first.next());
    // The Task frame can leave before the first turn's prompt reaches OpenCode: count from after that prompt.
    const prompts = () => tg.stub.requests.filter((r) => /\/prompt/.test(r.path)).length;
    await until("the first turn's prompt to reach the stub", async () => (prompts() > 0 ? true : undefined), 5000, 20);
    const promptsBefore = prompts();
    for (const m of MODES) {
      const second = await openStreamAs(tg.url, m, as("streamer"), await scripted(tg, text("never")));
      expect(isStream(second), `${m.name}: ${JSON.stringify(second.body)}`).toBe(false);
      if (m.transport === "jsonrpc") {
        const error = await expectRpcError(asResult(second), m.line, "STREAM_LIMIT_EXCEEDED", { id: second.rpcId });
        const data = m.line === "0.3" ? error.data : (await errorInfoOf(error.data)).metadata;
        expect(String(data.limit)).toBe("1");
      } else await expectRestError(asResult(second), m.line, "STREAM_LIMIT_EXCEEDED", 429);
    }
    // a resubscription is a stream too
    const resub = await openSse(tg.url, "/", { headers: as("streamer"), body: { jsonrpc: "2.0", id: 7, method: "tasks/resubscribe", params: { id: firstTask } }, rpcId: 7 });
    await expectRpcError(asResult(resub), "0.3", "STREAM_LIMIT_EXCEEDED", { id: 7 });
    // nothing was started for the refused streams
    expect(prompts()).toBe(promptsBefore);
    // another credential has its own slot
    const neighbour = await openStreamAs(tg.url, MODES[0]!, as("neighbour"), await scripted(tg, text("hi")));
    expect(isStream(neighbour)).toBe(true);
    await neighbour.rest(10_000);
    // the first stream closes; its slot frees (bounded poll)
    first.close();
    const reopened = await until("a new stream to open", async () => {
      const sse = await openStreamAs(tg.url, MODES[0]!, as("streamer"), await scripted(tg, text("again")));
      if (isStream(sse)) return sse;
      return undefined;
    }, 5000, 100);
    const frames = await reopened.rest(10_000);
    expect(frames.length).toBeGreaterThan(1);
    await tg.gw.gateway.runtime!.cancel({ id: "admin", credentialId: "x", trustLevel: "admin", scopes: new Set(), admin: true }, firstTask).catch(() => undefined);
  });
});

// ---- SSE budgets ---------------------------------------------------------------------------------------------------------

/** Checks the one budget error frame of a stream in the mode's shape; returns its data (0.3 data / 1.0 metadata). */
async function expectBudgetFrame(m: Mode, sse: Sse, frame: Obj): Promise<Obj> {
  if (m.transport === "jsonrpc") {
    expect(frame.id).toBe(sse.rpcId);
    await expectValid(m.line === "0.3" ? "v0_3/JSONRPCErrorResponse" : "v1_0/JsonRpcErrorResponse", frame);
    expect(frame.error.code).toBe(errorEntry(m.line, "STREAM_BUDGET_EXCEEDED").code);
    if (m.line === "0.3") {
      expect(frame.error.data.type).toBe("STREAM_BUDGET_EXCEEDED");
      return frame.error.data;
    }
    const info = await errorInfoOf(frame.error.data);
    expect(info.reason).toBe("STREAM_BUDGET_EXCEEDED");
    return info.metadata;
  }
  await expectValid(m.line === "0.3" ? "v0_3_rest/RestError" : "v1_0/RestError", frame);
  if (m.line === "0.3") {
    expect(frame.data.type).toBe("STREAM_BUDGET_EXCEEDED");
    return frame.data;
  }
  expect(frame.error.status).toBe(errorEntry("1.0", "STREAM_BUDGET_EXCEEDED").grpc);
  const info = await errorInfoOf(frame.error.details);
  expect(info.reason).toBe("STREAM_BUDGET_EXCEEDED");
  return info.metadata;
}
const isErrorFrame = (m: Mode, f: Obj) => (m.transport === "jsonrpc" ? f.error !== undefined : f.error !== undefined || f.data?.type !== undefined);

async function taskState(url: string, id: string): Promise<string> {
  const res = await rpc(url, { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id } }, { authorization: `Bearer ${TEST_TOKEN}` });
  return res.body.result.status.state;
}

describe.each([
  ["bytes", { A2A_STREAM_MAX_BYTES: "2500" }, () => [text(Array.from({ length: 40 }, (_, i) => `chunk ${i} `.padEnd(120, "x")))]],
  ["idle", { A2A_STREAM_IDLE_TIMEOUT_SECONDS: "1" }, () => [text(["before the pause", "after the pause"], { delayMs: 1_800 })]],
  ["duration", { A2A_STREAM_MAX_DURATION_SECONDS: "1" }, () => [text(Array.from({ length: 8 }, (_, i) => `tick ${i} `), { delayMs: 300 })]],
] as const)("SSE budget %s", (budget, env, replies) => {
  let tg: TaskGateway;
  beforeAll(async () => {
    tg = await startTaskGateway({ ...env });
  });
  afterAll(() => tg?.close());

  it("every mode: the stream ends with exactly one STREAM_BUDGET_EXCEEDED event in the line's shape; the task completes", async () => {
    await Promise.all(
      MODES.map(async (m) => {
        const sse = await openStreamAs(tg.url, m, { authorization: `Bearer ${TEST_TOKEN}` }, await scripted(tg, ...replies()));
        expect(isStream(sse), JSON.stringify(sse.body)).toBe(true);
        const frames = await sse.rest(15_000);
        expect(frames.length).toBeGreaterThan(1);
        const errors = frames.filter((f) => isErrorFrame(m, f));
        expect(errors, `${m.name}: ${JSON.stringify(frames.map((f) => Object.keys(f.result ?? f)))}`).toHaveLength(1);
        expect(frames.at(-1)).toBe(errors[0]);
        const data = await expectBudgetFrame(m, sse, errors[0]!);
        expect(data.budget).toBe(budget);
        const taskId = taskIdOf(m, frames[0]!);
        // the stream's end is not the task's: it finishes on its own
        await until(`task ${taskId} completed`, async () => ((await taskState(tg.url, taskId)) === "completed" ? true : undefined), 15_000, 100);
      }),
    );
  }, 40_000);
});
