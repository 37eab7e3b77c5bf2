// Issue 16, W3C trace context: a request's `traceparent` reaches every OpenCode call made for it — including the
// turn that runs in the background after message/send returned — and its push deliveries, and its trace id is in the
// request's log line, in the task's log lines and in the audit entry (GET /admin/audit?trace_id=). On the lean
// JSON-RPC edge and on a REST route alike; an invalid traceparent starts a new trace.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logging/index.js";
import { call, rpc, startGateway } from "../support/gateway.js";
import { Capture } from "../support/logs.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { until } from "../support/task-wire.js";
import { text, tool } from "../../tools/upstream/script.js";
import type { RecordedRequest } from "../../tools/upstream/stub.js";

type Obj = Record<string, any>;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

const hex = (bytes: number): string => randomBytes(bytes).toString("hex");
function incoming(): { traceId: string; spanId: string; header: string } {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

const hits: { path: string; headers: http.IncomingHttpHeaders }[] = [];
let hook: http.Server;
let hookUrl: string;
let out: Capture;
let g: TaskGateway;

beforeAll(async () => {
  hook = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      hits.push({ path: req.url ?? "", headers: req.headers });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", () => resolve()));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}`;
  out = new Capture();
  g = await startTaskGateway({ A2A_PUSH_ALLOW_PRIVATE_NETWORKS: "true", A2A_PUSH_RETRY_INITIAL_SECONDS: "0.05" }, {}, { logger: createLogger("info", out) });
});
afterAll(async () => {
  await g?.close();
  hook?.closeAllConnections();
  await new Promise<void>((resolve) => hook?.close(() => resolve()));
});

const message = (words: string): Obj => ({ kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: words }] });

const promptsOf = (sessionId: string): RecordedRequest[] => g.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${sessionId}/prompt_async`);

/** The trace id the `traceparent` of an upstream request names (its header must be well formed). */
function traceOf(headers: http.IncomingHttpHeaders): { traceId: string; parent: string } {
  const value = headers.traceparent;
  expect(value, "traceparent header").toMatch(TRACEPARENT);
  const [, traceId, parent] = TRACEPARENT.exec(value as string)!;
  return { traceId: traceId!, parent: parent! };
}

const logLines = (): Obj[] => out.lines.map((l) => JSON.parse(l) as Obj);

async function auditByTrace(traceId: string): Promise<Obj[]> {
  const res = await call(g.url, `/admin/audit?trace_id=${traceId}`);
  expect(res.status, res.text).toBe(200);
  return res.body.entries;
}

const sessionOfTask = (task: Obj): string => task.metadata?.shared?.session?.id ?? task.metadata?.session?.id;

describe("W3C trace context", () => {
  it("JSON-RPC (lean edge): the traceparent's trace id is on the upstream calls of the task, in the request log line and in the audit entry", async () => {
    const t = incoming();
    g.stub.script(text("traced answer"));
    const res = await rpc(g.url, { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: message("trace me") } }, { traceparent: t.header, tracestate: "vendor=abc,other=1" });
    expect(res.body.error, res.text).toBeUndefined();
    const task = res.body.result;
    expect(task.status.state).toBe("completed");
    const sessionId = sessionOfTask(task);
    expect(sessionId, JSON.stringify(task.metadata)).toMatch(/^ses/);

    // Upstream: the prompt (and every call about the session) carries the caller's trace, as a child of a new span.
    const prompts = promptsOf(sessionId);
    expect(prompts).toHaveLength(1);
    for (const r of g.stub.requests.filter((r) => r.path.startsWith(`/session/${sessionId}`))) {
      const sent = traceOf(r.headers);
      expect(sent.traceId, `${r.method} ${r.path}`).toBe(t.traceId);
      expect(sent.parent, "the gateway's own span, not the caller's").not.toBe(t.spanId);
      expect(r.headers.tracestate).toBe("vendor=abc,other=1");
    }
    // The session was created for this task under the same trace.
    const creations = g.stub.requests.filter((r) => r.method === "POST" && r.path === "/session" && r.headers.traceparent?.includes(t.traceId));
    expect(creations).toHaveLength(1);

    // The request's log line.
    const line = logLines().find((l) => l.msg === "request" && l.trace_id === t.traceId);
    expect(line, "request log line with the trace id").toMatchObject({ method: "POST", path: "/", status: 200, span_id: traceOf(prompts[0]!.headers).parent });

    // The audit entry.
    const entries = await auditByTrace(t.traceId);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ method: "message/send", transport: "jsonrpc", task_id: task.id, trace_id: t.traceId });
  });

  it("REST: same on POST /v1/message:send", async () => {
    const t = incoming();
    g.stub.script(text("rest answer"));
    const res = await call(g.url, "/v1/message:send", {
      method: "POST",
      headers: { traceparent: t.header },
      body: { message: { messageId: randomUUID(), role: "ROLE_USER", content: [{ text: "trace me over REST" }] } },
    });
    expect(res.status, res.text).toBe(200);
    const task = res.body.task;
    const sessionId = sessionOfTask(task);
    const prompts = promptsOf(sessionId);
    expect(prompts).toHaveLength(1);
    expect(traceOf(prompts[0]!.headers).traceId).toBe(t.traceId);
    expect(prompts[0]!.headers.tracestate).toBeUndefined();

    const line = logLines().find((l) => l.msg === "request" && l.trace_id === t.traceId);
    expect(line).toMatchObject({ method: "POST", path: "/v1/message:send", status: 200 });
    const entries = await auditByTrace(t.traceId);
    expect(entries.map((e) => e.method)).toEqual(["POST /v1/message:send"]);
    expect(entries[0]).toMatchObject({ transport: "rest", task_id: task.id, trace_id: t.traceId });
  });

  it("a non-blocking message/send: the background turn's prompt_async, sent after the answer, carries the trace", async () => {
    const t = incoming();
    // The session is slow to create: the request is answered before the turn's prompt is sent.
    g.stub.failNext("POST /session", { delayMs: 300 });
    g.stub.script(text("later"));
    const allPrompts = () => g.stub.requests.filter((r) => r.path.endsWith("/prompt_async")).length;
    const before = allPrompts();
    const res = await rpc(g.url, {
      jsonrpc: "2.0",
      id: 2,
      method: "message/send",
      params: { message: message("in the background"), configuration: { blocking: false } },
    }, { traceparent: t.header });
    expect(res.body.error, res.text).toBeUndefined();
    expect(allPrompts(), "no prompt sent before the answer").toBe(before);
    const taskId = res.body.result.id;
    const done = await until("task completed", async () => {
      const got = await rpc(g.url, { jsonrpc: "2.0", id: 3, method: "tasks/get", params: { id: taskId } });
      return got.body.result?.status?.state === "completed" ? got.body.result : undefined;
    });
    const prompts = promptsOf(sessionOfTask(done));
    expect(prompts).toHaveLength(1);
    expect(traceOf(prompts[0]!.headers).traceId).toBe(t.traceId);
    // tasks/get is a request of its own: its own trace.
    const gets = (await call(g.url, `/admin/audit?task_id=${taskId}&method=tasks/get&limit=1`)).body.entries as Obj[];
    expect(gets[0]!.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(gets[0]!.trace_id).not.toBe(t.traceId);
  });

  it("extension methods send their request's trace on their OpenCode calls (sessions, providers, projects)", async () => {
    const t = incoming();
    const calls = [
      { method: "opencode.sessions.list", params: {}, path: (r: RecordedRequest) => r.method === "GET" && r.path === "/session" },
      { method: "opencode.providers.list", params: {}, path: (r: RecordedRequest) => r.path === "/provider" || r.path === "/config/providers" },
      { method: "opencode.projects.current", params: {}, path: (r: RecordedRequest) => r.path === "/project/current" },
    ];
    for (const c of calls) {
      const before = g.stub.requests.length;
      const res = await rpc(g.url, { jsonrpc: "2.0", id: 7, method: c.method, params: c.params }, { traceparent: t.header });
      const sent = g.stub.requests.slice(before).filter(c.path);
      expect(sent.length, `${c.method}: ${res.text.slice(0, 200)}`).toBeGreaterThan(0);
      for (const r of sent) expect(traceOf(r.headers).traceId, `${c.method} → ${r.method} ${r.path}`).toBe(t.traceId);
    }
  });

  it("an invalid traceparent starts a new trace (and its tracestate is dropped)", async () => {
    for (const bad of ["00-00000000000000000000000000000000-0123456789abcdef-01", "ff-" + hex(16) + "-" + hex(8) + "-01", "00-" + hex(16).toUpperCase() + "-" + hex(8) + "-01", "garbage"]) {
      g.stub.script(text("fresh"));
      const res = await rpc(g.url, { jsonrpc: "2.0", id: 4, method: "message/send", params: { message: message("bad parent") } }, { traceparent: bad, tracestate: "vendor=x" });
      const task = res.body.result;
      const [prompt] = promptsOf(sessionOfTask(task));
      const sent = traceOf(prompt!.headers);
      expect(bad).not.toContain(sent.traceId);
      expect(prompt!.headers.tracestate).toBeUndefined();
      const entries = await auditByTrace(sent.traceId);
      expect(entries.map((e) => e.task_id)).toEqual([task.id]);
    }
  });

  it("a push delivery carries the trace of the task (config given with the send) and of the request that set the config", async () => {
    const t = incoming();
    const path = `/hook/${randomUUID()}`;
    g.stub.script(text("pushed"));
    const res = await rpc(g.url, {
      jsonrpc: "2.0",
      id: 5,
      method: "message/send",
      params: { message: message("push me"), configuration: { pushNotificationConfig: { url: `${hookUrl}${path}`, token: "tok" } } },
    }, { traceparent: t.header });
    expect(res.body.error, res.text).toBeUndefined();
    const taskId = res.body.result.id;
    const [delivery] = await until("push delivery", () => (hits.some((h) => h.path === path) ? hits.filter((h) => h.path === path) : undefined));
    expect(traceOf(delivery!.headers).traceId).toBe(t.traceId);

    // Set later on the finished task by another request: its announcement is delivered in that request's trace.
    const setter = incoming();
    const second = `/hook/${randomUUID()}`;
    const set = await rpc(g.url, {
      jsonrpc: "2.0",
      id: 6,
      method: "tasks/pushNotificationConfig/set",
      params: { taskId, pushNotificationConfig: { id: "late", url: `${hookUrl}${second}` } },
    }, { traceparent: setter.header });
    expect(set.body.error, set.text).toBeUndefined();
    const [late] = await until("late delivery", () => (hits.some((h) => h.path === second) ? hits.filter((h) => h.path === second) : undefined));
    expect(traceOf(late!.headers).traceId).toBe(setter.traceId);
  });

  it("the task runtime's log lines about a task carry its trace", async () => {
    const t = incoming();
    // The turn's diff cannot be read from OpenCode: the runtime logs a warning about the task.
    g.stub.failNext("GET /session/*/diff", { status: 500, body: { name: "UnknownError", data: { message: "diff broke" } } });
    g.stub.script(tool("read", { filePath: "README.md" }), text("x"));
    const res = await rpc(g.url, { jsonrpc: "2.0", id: 7, method: "message/send", params: { message: message("logged") } }, { traceparent: t.header });
    const taskId = res.body.result.id;
    const warning = logLines().find((l) => l.component === "tasks" && l.taskId === taskId);
    expect(warning, out.text.slice(-2000)).toMatchObject({ msg: "could not read the turn's changes from OpenCode", trace_id: t.traceId });
    expect(warning!.span_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it("browsers may send the trace headers: the CORS preflight allows traceparent and tracestate", async () => {
    const app = "https://app.example.com";
    const gw = await startGateway({ A2A_ALLOWED_ORIGINS: app, A2A_TASK_STORE_BACKEND: "memory" });
    try {
      const res = await call(gw.url, "/", {
        method: "OPTIONS",
        auth: false,
        headers: { origin: app, "access-control-request-method": "POST", "access-control-request-headers": "authorization, traceparent, tracestate" },
      });
      expect(res.status).toBe(204);
      const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/,\s*/);
      expect(allowed).toEqual(expect.arrayContaining(["traceparent", "tracestate"]));
    } finally {
      await gw.close();
    }
  });
});
