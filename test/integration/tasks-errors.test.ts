import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectRestError, expectRpcError, expectValid } from "../support/contract.js";
import { bearer, call, rpc, type HttpResult } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { failure, hang, text, tool } from "../../tools/upstream/script.js";

// ---- helpers (kept inside each tasks-*.test.ts file on purpose: these files are self-contained) ------------------
type Line = "0.3" | "1.0";
interface Mode {
  name: string;
  line: Line;
  transport: "jsonrpc" | "rest";
}
const MODES: Mode[] = [
  { name: "0.3 JSON-RPC", line: "0.3", transport: "jsonrpc" },
  { name: "0.3 REST", line: "0.3", transport: "rest" },
  { name: "1.0 JSON-RPC", line: "1.0", transport: "jsonrpc" },
  { name: "1.0 REST", line: "1.0", transport: "rest" },
];
const RPC_MODES = MODES.filter((m) => m.transport === "jsonrpc");
const REST_MODES = MODES.filter((m) => m.transport === "rest");

/** Generated schema ids of what each wire dialect answers. */
const SCHEMAS = {
  "0.3": { send: "v0_3/SendMessageResult", task: "v0_3/Task", event: "v0_3/StreamEvent", list: "v0_3/ListTasksResult" },
  "0.3-rest": { send: "v0_3_rest/SendMessageResponse", task: "v0_3_rest/Task", event: "v0_3_rest/StreamResponse", list: "v0_3_rest/ListTasksResponse" },
  "1.0": { send: "v1_0/SendMessageResponse", task: "v1_0/Task", event: "v1_0/StreamResponse", list: "v1_0/ListTasksResponse" },
} as const;
type SchemaKind = keyof (typeof SCHEMAS)["1.0"];
const schemasOf = (m: Mode) => SCHEMAS[m.line === "1.0" ? "1.0" : m.transport === "rest" ? "0.3-rest" : "0.3"];

const METHODS = {
  "0.3": { send: "message/send", stream: "message/stream", get: "tasks/get", list: "tasks/list", cancel: "tasks/cancel", subscribe: "tasks/resubscribe" },
  "1.0": { send: "SendMessage", stream: "SendStreamingMessage", get: "GetTask", list: "ListTasks", cancel: "CancelTask", subscribe: "SubscribeToTask" },
} as const;
const versionHeader = (m: Mode): Record<string, string> => ({ "A2A-Version": m.line });
const restPrefix = (m: Mode): string => (m.line === "0.3" ? "/v1" : "");
const qs = (o: Record<string, unknown>): string => {
  const entries = Object.entries(o).filter(([, v]) => v !== undefined);
  return entries.length === 0 ? "" : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}`;
};

let rpcCounter = 0;
type Reply = HttpResult & { rpcId: number };

/** A user message with text parts in the mode's wire shape. */
function userMessage(m: Mode, texts: string | string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  const list = typeof texts === "string" ? [texts] : texts;
  const messageId = randomUUID();
  if (m.line === "1.0") return { messageId, role: "ROLE_USER", parts: list.map((text) => ({ text })), ...extra };
  if (m.transport === "rest") return { messageId, role: "ROLE_USER", content: list.map((text) => ({ text })), ...extra };
  return { kind: "message", messageId, role: "user", parts: list.map((text) => ({ kind: "text", text })), ...extra };
}

/** A data part in the mode's wire shape. */
function dataPart(m: Mode, data: Record<string, unknown>): Record<string, unknown> {
  if (m.line === "1.0") return { data };
  if (m.transport === "rest") return { data: { data } };
  return { kind: "data", data };
}

interface SendConfig {
  blocking?: boolean;
  historyLength?: number;
  acceptedOutputModes?: string[];
}
function configuration(m: Mode, c: SendConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (c.acceptedOutputModes !== undefined) out.acceptedOutputModes = c.acceptedOutputModes;
  if (c.historyLength !== undefined) out.historyLength = c.historyLength;
  if (c.blocking !== undefined) {
    if (m.line === "1.0") out.returnImmediately = !c.blocking;
    else out.blocking = c.blocking;
  }
  return out;
}
function sendParams(m: Mode, message: Record<string, unknown>, c: SendConfig = {}, metadata?: Record<string, unknown>): Record<string, unknown> {
  const config = configuration(m, c);
  return { message, ...(Object.keys(config).length > 0 ? { configuration: config } : {}), ...(metadata === undefined ? {} : { metadata }) };
}

type Op = "send" | "get" | "list" | "cancel";
async function invoke(url: string, m: Mode, op: Op, params: Record<string, unknown>): Promise<Reply> {
  const rpcId = ++rpcCounter;
  if (m.transport === "jsonrpc") {
    return { ...(await rpc(url, { jsonrpc: "2.0", id: rpcId, method: METHODS[m.line][op], params }, versionHeader(m))), rpcId };
  }
  const headers = versionHeader(m);
  const p = restPrefix(m);
  switch (op) {
    case "send":
      return { ...(await call(url, `${p}/message:send`, { method: "POST", headers, body: params })), rpcId };
    case "get": {
      const { id, ...query } = params;
      return { ...(await call(url, `${p}/tasks/${encodeURIComponent(String(id))}${qs(query)}`, { headers })), rpcId };
    }
    case "list":
      return { ...(await call(url, `${p}/tasks${qs(params)}`, { headers })), rpcId };
    case "cancel":
      return { ...(await call(url, `${p}/tasks/${encodeURIComponent(String(params.id))}:cancel`, { method: "POST", headers })), rpcId };
  }
}

/** A successful answer: envelope (JSON-RPC) or 2xx (REST), the result validated against the line's schema. */
async function expectOk(m: Mode, res: Reply, schema: SchemaKind): Promise<any> {
  if (m.transport === "jsonrpc") {
    expect(res.status, res.text).toBe(200);
    expect(res.body?.error, res.text).toBeUndefined();
    expect(res.body.id).toBe(res.rpcId);
    await expectValid("common/JsonRpcSuccessResponse", res.body);
  } else {
    expect(res.status, res.text).toBeGreaterThanOrEqual(200);
    expect(res.status, res.text).toBeLessThan(300);
    expect(res.headers.get("content-type") ?? "").toMatch(/application\/json/);
  }
  const result = m.transport === "jsonrpc" ? res.body.result : res.body;
  await expectValid(schemasOf(m)[schema], result);
  return result;
}

/** An error answer of the mode's line and transport with `reason`; returns the error object / body. */
async function expectError(m: Mode, res: Reply, reason: string): Promise<Record<string, any>> {
  if (m.transport === "jsonrpc") return expectRpcError(res, m.line, reason, { id: res.rpcId });
  return expectRestError(res, m.line, reason);
}

/** The data fields of an error (0.3 `data`, 1.0 ErrorInfo metadata + BadRequest field violations). */
function errorFields(m: Mode, err: Record<string, any>): { fields: string[]; text: string } {
  const data = m.transport === "jsonrpc" ? err.data : m.line === "0.3" ? err.data : err.error?.details;
  const message = m.transport === "jsonrpc" ? err.message : m.line === "0.3" ? err.message : err.error?.message;
  const fields: string[] = [];
  if (m.line === "0.3") {
    if (typeof data?.field === "string") fields.push(data.field);
  } else {
    for (const d of (data ?? []) as Record<string, any>[]) {
      if (typeof d.metadata?.field === "string") fields.push(d.metadata.field);
      for (const v of d.fieldViolations ?? []) fields.push(v.field);
    }
  }
  return { fields, text: `${String(message)} ${JSON.stringify(data)}` };
}

const taskOfSend = (m: Mode, result: any): any => (m.line === "0.3" && m.transport === "jsonrpc" ? result : result.task);

async function sendTask(url: string, m: Mode, params: Record<string, unknown>): Promise<any> {
  const result = await expectOk(m, await invoke(url, m, "send", params), "send");
  const task = taskOfSend(m, result);
  expect(task, JSON.stringify(result)).toBeDefined();
  return task;
}

async function getTask(url: string, m: Mode, id: string, historyLength?: number): Promise<any> {
  return expectOk(m, await invoke(url, m, "get", { id, ...(historyLength === undefined ? {} : { historyLength }) }), "task");
}

/** Internal (0.3 JSON-RPC style) name of a wire task state. */
function stateName(state: string): string {
  if (!state.startsWith("TASK_STATE_")) return state;
  const s = state.slice("TASK_STATE_".length).toLowerCase().replace(/_/g, "-");
  return s === "cancelled" ? "canceled" : s;
}
const stateOf = (task: any): string => stateName(task.status.state);
const partsOf = (message: any): any[] => message?.parts ?? message?.content ?? [];
const textOf = (parts: any[]): string => parts.map((p) => (typeof p.text === "string" ? p.text : "")).join("");
const roleOf = (message: any): string => (message.role === "ROLE_USER" ? "user" : message.role === "ROLE_AGENT" ? "agent" : message.role);
function isDataPart(m: Mode, part: any): boolean {
  if (m.line === "0.3" && m.transport === "jsonrpc") return part.kind === "data";
  if (m.line === "0.3") return part.data !== undefined && typeof part.data.data === "object";
  return part.data !== undefined;
}
const dataOf = (m: Mode, part: any): any => (m.line === "0.3" && m.transport === "rest" ? part.data.data : part.data);
const TERMINAL = new Set(["completed", "canceled", "failed", "rejected"]);

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// ---- SSE --------------------------------------------------------------------------------------------------------
interface Sse {
  status: number;
  headers: Headers;
  /** Parsed body when the answer was not an event stream (an error). */
  body: any;
  rpcId: number;
  /** The next `data:` frame (parsed), or undefined once the stream has ended. Throws after `ms`. */
  next(ms?: number): Promise<any>;
  /** Every remaining frame until the server ends the stream. Throws after `ms`. */
  rest(ms?: number): Promise<any[]>;
  close(): void;
}

async function openSse(url: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown; rpcId?: number }): Promise<Sse> {
  const controller = new AbortController();
  const connectTimer = setTimeout(() => controller.abort(new Error(`no answer from ${path}`)), 5000);
  const res = await fetch(`${url}${path}`, {
    method: init.method ?? "POST",
    headers: { ...bearer(), ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...(init.headers ?? {}) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    signal: controller.signal,
  });
  clearTimeout(connectTimer);
  const rpcId = init.rpcId ?? 0;
  if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) {
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const none = async (): Promise<never> => {
      throw new Error(`not an event stream (HTTP ${res.status}): ${text.slice(0, 300)}`);
    };
    return { status: res.status, headers: res.headers, body, rpcId, next: none, rest: none, close: () => undefined };
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const frames: any[] = [];
  let buffer = "";
  let ended = false;
  let inflight: Promise<void> | undefined;
  const pump = (): Promise<void> =>
    (inflight ??= (async () => {
      const chunk = await reader.read();
      if (chunk.done) {
        ended = true;
        return;
      }
      buffer += decoder.decode(chunk.value, { stream: true });
      for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const data = block
          .split("\n")
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trimStart())
          .join("\n");
        if (data !== "") frames.push(JSON.parse(data));
      }
    })().finally(() => (inflight = undefined)));
  const next = async (ms = 5000): Promise<any> => {
    const deadline = Date.now() + ms;
    while (frames.length === 0) {
      if (ended) return undefined;
      const left = deadline - Date.now();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`SSE ${path}: no event within ${ms} ms (got ${frames.length})`)), Math.max(left, 0));
      });
      try {
        await Promise.race([pump(), timeout]);
      } finally {
        clearTimeout(timer);
      }
    }
    return frames.shift();
  };
  return {
    status: res.status,
    headers: res.headers,
    body: undefined,
    rpcId,
    next,
    async rest(ms = 5000) {
      const deadline = Date.now() + ms;
      const out: any[] = [];
      for (;;) {
        const frame = await next(Math.max(deadline - Date.now(), 1));
        if (frame === undefined) return out;
        out.push(frame);
      }
    },
    close: () => controller.abort(),
  };
}

async function openStream(url: string, m: Mode, params: Record<string, unknown>): Promise<Sse> {
  const rpcId = ++rpcCounter;
  if (m.transport === "jsonrpc") {
    return openSse(url, "/", { headers: versionHeader(m), body: { jsonrpc: "2.0", id: rpcId, method: METHODS[m.line].stream, params }, rpcId });
  }
  return openSse(url, `${restPrefix(m)}/message:stream`, { headers: versionHeader(m), body: params, rpcId });
}

async function openSubscribe(url: string, m: Mode, taskId: string, verb: "GET" | "POST" = "POST"): Promise<Sse> {
  const rpcId = ++rpcCounter;
  if (m.transport === "jsonrpc") {
    return openSse(url, "/", { headers: versionHeader(m), body: { jsonrpc: "2.0", id: rpcId, method: METHODS[m.line].subscribe, params: { id: taskId } }, rpcId });
  }
  return openSse(url, `${restPrefix(m)}/tasks/${encodeURIComponent(taskId)}:subscribe`, { method: verb, headers: versionHeader(m), rpcId });
}

interface Ev {
  kind: "task" | "message" | "status" | "artifact";
  body: any;
}

/** Checks one frame (JSON-RPC envelope + the line's StreamEvent/StreamResponse schema) and unwraps it. */
async function eventOf(m: Mode, sse: Sse, frame: any): Promise<Ev> {
  let payload = frame;
  if (m.transport === "jsonrpc") {
    expect(frame.jsonrpc).toBe("2.0");
    expect(frame.id).toBe(sse.rpcId);
    expect(frame.error, JSON.stringify(frame)).toBeUndefined();
    await expectValid("common/JsonRpcSuccessResponse", frame);
    payload = frame.result;
  }
  await expectValid(schemasOf(m).event, payload);
  if (m.line === "0.3" && m.transport === "jsonrpc") {
    const kinds: Record<string, Ev["kind"]> = { task: "task", message: "message", "status-update": "status", "artifact-update": "artifact" };
    return { kind: kinds[payload.kind]!, body: payload };
  }
  const keys: [string, Ev["kind"]][] = [["task", "task"], ["message", "message"], ["statusUpdate", "status"], ["artifactUpdate", "artifact"]];
  const present = keys.filter(([k]) => payload[k] !== undefined);
  expect(present, JSON.stringify(payload)).toHaveLength(1);
  const [key, kind] = present[0]!;
  return { kind, body: payload[key] };
}

async function eventsOf(m: Mode, sse: Sse, frames: any[]): Promise<Ev[]> {
  const out: Ev[] = [];
  for (const f of frames) out.push(await eventOf(m, sse, f));
  return out;
}

/** `shared.stream.sequence` of an artifact or status update, when it carries one. */
function sequenceOf(ev: Ev): number | undefined {
  const meta = ev.kind === "artifact" ? ev.body.artifact?.metadata : ev.kind === "status" ? ev.body.metadata : undefined;
  return meta?.shared?.stream?.sequence;
}

// ---- errors of the bridge: parts, directory boundary, explicit sessions, upstream failures during a turn ----------

let g: TaskGateway;
let root: string;
let outside: string;
beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "tasks-errors-root-"));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), "tasks-errors-outside-"));
  fs.mkdirSync(path.join(root, "inside"));
  fs.symlinkSync(outside, path.join(root, "escape"));
  fs.symlinkSync(path.join(root, "inside"), path.join(root, "alias"));
  fs.writeFileSync(path.join(root, "file.txt"), "not a directory");
  g = await startTaskGateway({ OPENCODE_WORKSPACE_ROOT: root });
});
afterAll(async () => {
  await g?.close();
  for (const dir of [root, outside]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const sessionCreates = (): number => g.stub.requests.filter((r) => r.method === "POST" && r.path === "/session").length;
const promptCount = (): number => g.stub.requests.filter((r) => r.method === "POST" && /^\/session\/[^/]+\/prompt_async$/.test(r.path)).length;
const directoryOf = (r: { query: Record<string, string>; headers: Record<string, unknown> }): unknown => r.query.directory ?? r.headers["x-opencode-directory"];

/** Refused before anything happens upstream: no session created, no prompt sent. */
async function expectRefused(m: Mode, res: Reply, reason: string, before: { creates: number; prompts: number }): Promise<{ fields: string[]; text: string }> {
  const err = await expectError(m, res, reason);
  expect(sessionCreates()).toBe(before.creates);
  expect(promptCount()).toBe(before.prompts);
  return errorFields(m, err);
}
const snapshot = () => ({ creates: sessionCreates(), prompts: promptCount() });

/**
 * Where a failed task says why: `metadata.opencode.error {type, upstream_status?}` (spec/extensions/opencode/metadata.tsp,
 * OpenCodeErrorMetadata: "`metadata.opencode.error` on a task that ended `failed` or `auth-required`").
 */
const failureOf = (task: any): any => task.metadata?.opencode?.error;
/** The recorded failure wherever the runtime put it (the contract location is checked by its own test below). */
const anyFailureOf = (task: any): any => task.metadata?.opencode?.error ?? task.metadata?.shared?.error ?? task.metadata?.error;

describe.each(MODES)("input errors on $name", (m) => {
  it("a data part is InvalidParams naming the part", async () => {
    const before = snapshot();
    const message = userMessage(m, "see the attached data");
    const parts = m.line === "0.3" && m.transport === "rest" ? "content" : "parts";
    (message[parts] as unknown[]).push(dataPart(m, { answer: 42 }));
    const { fields, text: detail } = await expectRefused(m, await invoke(g.url, m, "send", sendParams(m, message)), "INVALID_PARAMS", before);
    expect(fields.some((f) => /(parts|content)(\[1\]|\.1)/.test(f)), `${JSON.stringify(fields)} ${detail}`).toBe(true);
    expect(detail).toMatch(/data ?part/i);

    const only = userMessage(m, "x");
    (only[parts] as unknown[]).splice(0, 1, dataPart(m, { only: true }));
    const second = await expectRefused(m, await invoke(g.url, m, "send", sendParams(m, only)), "INVALID_PARAMS", before);
    expect(second.fields.some((f) => /(parts|content)(\[0\]|\.0)/.test(f)), JSON.stringify(second.fields)).toBe(true);
  });

  it("metadata.opencode.directory outside the root, through an escaping symlink, or not a directory is InvalidParams", async () => {
    const before = snapshot();
    for (const directory of [outside, "escape", path.join(root, "escape"), "../", path.join(root, "missing"), "file.txt", "/"]) {
      const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, `go to ${directory}`), {}, { opencode: { directory } }));
      const { fields, text: detail } = await expectRefused(m, res, "INVALID_PARAMS", before);
      expect(fields, `${directory}: ${detail}`).toContain("metadata.opencode.directory");
    }
    // The same on the message's own metadata.
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "escape via message", { metadata: { opencode: { directory: "escape" } } })));
    await expectRefused(m, res, "INVALID_PARAMS", before);
  });

  it("a directory inside the root (also through an inside symlink) routes the turn there", async () => {
    const inside = fs.realpathSync(path.join(root, "inside"));
    for (const directory of ["inside", path.join(root, "alias")]) {
      g.stub.script(text(`working in ${directory}`));
      const from = g.stub.requests.length;
      const task = await sendTask(g.url, m, sendParams(m, userMessage(m, `work in ${directory}`, { metadata: { opencode: { directory } } })));
      expect(stateOf(task)).toBe("completed");
      const calls = g.stub.requests.slice(from);
      const create = calls.find((r) => r.method === "POST" && r.path === "/session");
      const prompt = calls.find((r) => r.method === "POST" && r.path === `/session/${task.metadata.shared.session.id}/prompt_async`);
      expect(create, "a session for the directory").toBeDefined();
      expect(directoryOf(create!)).toBe(inside);
      expect(directoryOf(prompt!)).toBe(inside);
    }
  });

  it("an explicit metadata.shared.session.id unknown upstream is SESSION_NOT_FOUND", async () => {
    const before = snapshot();
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "use my session"), {}, { shared: { session: { id: "ses_doesnotexist0001" } } }));
    await expectRefused(m, res, "SESSION_NOT_FOUND", before);
  });

  it("a malformed metadata.shared.session.id is InvalidParams", async () => {
    const before = snapshot();
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "use my session"), {}, { shared: { session: { id: "not a session" } } }));
    const { fields } = await expectRefused(m, res, "INVALID_PARAMS", before);
    expect(fields).toContain("metadata.shared.session.id");
  });

  it("an explicit session that exists upstream is used as is", async () => {
    const created = await fetch(`${g.stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "mine" }) });
    const session = (await created.json()) as { id: string };
    const creates = sessionCreates();
    g.stub.script(text("in your session"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "use it"), {}, { shared: { session: { id: session.id } } }));
    expect(stateOf(task)).toBe("completed");
    expect(task.metadata.shared.session.id).toBe(session.id);
    expect(sessionCreates()).toBe(creates);
    expect(g.stub.requests.some((r) => r.method === "POST" && r.path === `/session/${session.id}/prompt_async`)).toBe(true);
  });
});

describe.each(MODES)("upstream failures during a turn on $name", (m) => {
  it("a model error (4xx) fails the task, saying why", async () => {
    g.stub.script(failure(400, "the model refused the request"));
    const started = Date.now();
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "provoke a model error")));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(stateOf(task)).toBe("failed");
    expect(anyFailureOf(task), JSON.stringify(task.metadata)).toMatchObject({ type: "UPSTREAM_HTTP_ERROR", upstream_status: 400 });
    expect(textOf(partsOf(task.status.message))).toMatch(/the model refused the request/);
    expect(stateOf(await getTask(g.url, m, task.id))).toBe("failed");
  });

  it("a failed task carries its failure at metadata.opencode.error (OpenCodeErrorMetadata)", async () => {
    g.stub.script(failure(400, "classified failure"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "fail for the record")));
    expect(stateOf(task)).toBe("failed");
    expect(failureOf(task), `spec/extensions/opencode/metadata.tsp puts it at metadata.opencode.error; got ${JSON.stringify(task.metadata)}`).toMatchObject({
      type: "UPSTREAM_HTTP_ERROR",
      upstream_status: 400,
    });
    expect(failureOf(await getTask(g.url, m, task.id))).toMatchObject({ type: "UPSTREAM_HTTP_ERROR" });
  });

  it("prompt_async answered 500 fails the task with UPSTREAM_HTTP_ERROR, and the context keeps working", async () => {
    g.stub.failNext("POST /session/*/prompt_async", { status: 500, body: { name: "UnknownError", data: { message: "boom" } } });
    const started = Date.now();
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "prompt fails")));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(stateOf(task)).toBe("failed");
    expect(anyFailureOf(task), JSON.stringify(task.metadata)).toMatchObject({ type: "UPSTREAM_HTTP_ERROR", upstream_status: 500 });

    g.stub.script(text("recovered"));
    const next = await sendTask(g.url, m, sendParams(m, userMessage(m, "try again", { contextId: task.contextId })));
    expect(stateOf(next)).toBe("completed");
    expect(next.metadata.shared.session.id).toBe(task.metadata.shared.session.id);
  });

  it("session creation failing ends in a failed task or a typed error, never a hang", async () => {
    g.stub.failNext("POST /session", { status: 500, body: { name: "UnknownError", data: { message: "no sessions today" } } });
    const started = Date.now();
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "needs a session")));
    expect(Date.now() - started).toBeLessThan(3000);
    const failed = m.transport === "jsonrpc" ? res.body?.error === undefined : res.status < 300;
    if (failed) {
      const task = taskOfSend(m, await expectOk(m, res, "send"));
      expect(stateOf(task)).toBe("failed");
      expect(anyFailureOf(task), JSON.stringify(task.metadata)).toMatchObject({ type: "UPSTREAM_HTTP_ERROR", upstream_status: 500 });
    } else {
      await expectError(m, res, "UPSTREAM_HTTP_ERROR");
    }
  });
});

describe.each([MODES[0]!, MODES[3]!])("upstream failures while streaming on $name", (m) => {
  it("a model error ends the stream with a failed terminal status carrying the error", async () => {
    g.stub.script(failure(400, "streaming model failure"));
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "stream into an error")));
    const events = await eventsOf(m, sse, await sse.rest(3000));
    expect(events[0]!.kind).toBe("task");
    const last = events.at(-1)!;
    expect(last.kind).toBe("status");
    expect(stateOf(last.body)).toBe("failed");
    if (m.line === "0.3") expect(last.body.final).toBe(true);
    expect(JSON.stringify(last.body.metadata ?? {})).toMatch(/UPSTREAM_HTTP_ERROR/);
    expect(textOf(partsOf(last.body.status.message))).toMatch(/streaming model failure/);
    const stored = await getTask(g.url, m, events[0]!.body.id);
    expect(stateOf(stored)).toBe("failed");
    expect(anyFailureOf(stored), JSON.stringify(stored.metadata)).toMatchObject({ type: "UPSTREAM_HTTP_ERROR", upstream_status: 400 });
  });

  it("prompt_async failing ends the stream with a failed status, never a hang", async () => {
    g.stub.failNext("POST /session/*/prompt_async", { status: 500 });
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "stream, prompt fails")));
    const events = await eventsOf(m, sse, await sse.rest(3000));
    const last = events.at(-1)!;
    expect(stateOf(last.body)).toBe("failed");
  });
});
