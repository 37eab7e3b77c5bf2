// Wire helpers of the task runtime's integration tests (test/integration/tasks-*.test.ts): the four protocol modes
// (0.3/1.0 × JSON-RPC/REST), request builders, per-mode invocation and unwrapping, schema checks, SSE reading.
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { SCHEMAS } from "./codec-client.js";
import { expectRestError, expectRpcError, expectValid } from "./contract.js";
import { bearer, call, rpc, type HttpResult } from "./gateway.js";
export type Line = "0.3" | "1.0";
export interface Mode {
  name: string;
  line: Line;
  transport: "jsonrpc" | "rest";
}
export const MODES: Mode[] = [
  { name: "0.3 JSON-RPC", line: "0.3", transport: "jsonrpc" },
  { name: "0.3 REST", line: "0.3", transport: "rest" },
  { name: "1.0 JSON-RPC", line: "1.0", transport: "jsonrpc" },
  { name: "1.0 REST", line: "1.0", transport: "rest" },
];
export const RPC_MODES = MODES.filter((m) => m.transport === "jsonrpc");
export const REST_MODES = MODES.filter((m) => m.transport === "rest");

export { SCHEMAS };
export type SchemaKind = keyof (typeof SCHEMAS)["1.0"];
export const schemasOf = (m: Mode) => SCHEMAS[m.line === "1.0" ? "1.0" : m.transport === "rest" ? "0.3-rest" : "0.3"];

export const METHODS = {
  "0.3": { send: "message/send", stream: "message/stream", get: "tasks/get", list: "tasks/list", cancel: "tasks/cancel", subscribe: "tasks/resubscribe" },
  "1.0": { send: "SendMessage", stream: "SendStreamingMessage", get: "GetTask", list: "ListTasks", cancel: "CancelTask", subscribe: "SubscribeToTask" },
} as const;
export const versionHeader = (m: Mode): Record<string, string> => ({ "A2A-Version": m.line });
export const restPrefix = (m: Mode): string => (m.line === "0.3" ? "/v1" : "");
export const qs = (o: Record<string, unknown>): string => {
  const entries = Object.entries(o).filter(([, v]) => v !== undefined);
  return entries.length === 0 ? "" : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}`;
};

export let rpcCounter = 0;
export type Reply = HttpResult & { rpcId: number };

/** A user message with text parts in the mode's wire shape. */
export function userMessage(m: Mode, texts: string | string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  const list = typeof texts === "string" ? [texts] : texts;
  const messageId = randomUUID();
  if (m.line === "1.0") return { messageId, role: "ROLE_USER", parts: list.map((text) => ({ text })), ...extra };
  if (m.transport === "rest") return { messageId, role: "ROLE_USER", content: list.map((text) => ({ text })), ...extra };
  return { kind: "message", messageId, role: "user", parts: list.map((text) => ({ kind: "text", text })), ...extra };
}

/** A data part in the mode's wire shape. */
export function dataPart(m: Mode, data: Record<string, unknown>): Record<string, unknown> {
  if (m.line === "1.0") return { data };
  if (m.transport === "rest") return { data: { data } };
  return { kind: "data", data };
}

export interface SendConfig {
  blocking?: boolean;
  historyLength?: number;
  acceptedOutputModes?: string[];
}
export function configuration(m: Mode, c: SendConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (c.acceptedOutputModes !== undefined) out.acceptedOutputModes = c.acceptedOutputModes;
  if (c.historyLength !== undefined) out.historyLength = c.historyLength;
  if (c.blocking !== undefined) {
    if (m.line === "1.0") out.returnImmediately = !c.blocking;
    else out.blocking = c.blocking;
  } else if (m.line === "0.3" && m.transport === "rest" && Object.keys(out).length > 0) {
    // proto3: a 0.3 REST configuration without `blocking` is non-blocking; these tests mean the default (blocking).
    out.blocking = true;
  }
  return out;
}
export function sendParams(m: Mode, message: Record<string, unknown>, c: SendConfig = {}, metadata?: Record<string, unknown>): Record<string, unknown> {
  const config = configuration(m, c);
  return { message, ...(Object.keys(config).length > 0 ? { configuration: config } : {}), ...(metadata === undefined ? {} : { metadata }) };
}

export type Op = "send" | "get" | "list" | "cancel";
export async function invoke(url: string, m: Mode, op: Op, params: Record<string, unknown>): Promise<Reply> {
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
export async function expectOk(m: Mode, res: Reply, schema: SchemaKind): Promise<any> {
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
export async function expectError(m: Mode, res: Reply, reason: string): Promise<Record<string, any>> {
  if (m.transport === "jsonrpc") return expectRpcError(res, m.line, reason, { id: res.rpcId });
  return expectRestError(res, m.line, reason);
}

/** The data fields of an error (0.3 `data`, 1.0 ErrorInfo metadata + BadRequest field violations). */
export function errorFields(m: Mode, err: Record<string, any>): { fields: string[]; text: string } {
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

export const taskOfSend = (m: Mode, result: any): any => (m.line === "0.3" && m.transport === "jsonrpc" ? result : result.task);

export async function sendTask(url: string, m: Mode, params: Record<string, unknown>): Promise<any> {
  const result = await expectOk(m, await invoke(url, m, "send", params), "send");
  const task = taskOfSend(m, result);
  expect(task, JSON.stringify(result)).toBeDefined();
  return task;
}

export async function getTask(url: string, m: Mode, id: string, historyLength?: number): Promise<any> {
  return expectOk(m, await invoke(url, m, "get", { id, ...(historyLength === undefined ? {} : { historyLength }) }), "task");
}

/** Internal (0.3 JSON-RPC style) name of a wire task state. */
export function stateName(state: string): string {
  if (!state.startsWith("TASK_STATE_")) return state;
  const s = state.slice("TASK_STATE_".length).toLowerCase().replace(/_/g, "-");
  return s === "cancelled" ? "canceled" : s;
}
export const stateOf = (task: any): string => stateName(task.status.state);
export const partsOf = (message: any): any[] => message?.parts ?? message?.content ?? [];
export const textOf = (parts: any[]): string => parts.map((p) => (typeof p.text === "string" ? p.text : "")).join("");
export const roleOf = (message: any): string => (message.role === "ROLE_USER" ? "user" : message.role === "ROLE_AGENT" ? "agent" : message.role);
export function isDataPart(m: Mode, part: any): boolean {
  if (m.line === "0.3" && m.transport === "jsonrpc") return part.kind === "data";
  if (m.line === "0.3") return part.data !== undefined && typeof part.data.data === "object";
  return part.data !== undefined;
}
export const dataOf = (m: Mode, part: any): any => (m.line === "0.3" && m.transport === "rest" ? part.data.data : part.data);
export const TERMINAL = new Set(["completed", "canceled", "failed", "rejected"]);

export async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 5000, stepMs = 20): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

// ---- SSE --------------------------------------------------------------------------------------------------------
/** The joined `data:` lines of one SSE block ("" for a comment-only block). */
export function sseData(block: string): string {
  return block
    .split("\n")
    .filter((l) => l.startsWith("data:"))
    .map((l) => l.slice(5).trimStart())
    .join("\n");
}

export interface Sse {
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

export async function openSse(url: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown; rpcId?: number }): Promise<Sse> {
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
        const data = sseData(block);
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

export async function openStream(url: string, m: Mode, params: Record<string, unknown>): Promise<Sse> {
  const rpcId = ++rpcCounter;
  if (m.transport === "jsonrpc") {
    return openSse(url, "/", { headers: versionHeader(m), body: { jsonrpc: "2.0", id: rpcId, method: METHODS[m.line].stream, params }, rpcId });
  }
  return openSse(url, `${restPrefix(m)}/message:stream`, { headers: versionHeader(m), body: params, rpcId });
}

export async function openSubscribe(url: string, m: Mode, taskId: string, verb: "GET" | "POST" = "POST"): Promise<Sse> {
  const rpcId = ++rpcCounter;
  if (m.transport === "jsonrpc") {
    return openSse(url, "/", { headers: versionHeader(m), body: { jsonrpc: "2.0", id: rpcId, method: METHODS[m.line].subscribe, params: { id: taskId } }, rpcId });
  }
  return openSse(url, `${restPrefix(m)}/tasks/${encodeURIComponent(taskId)}:subscribe`, { method: verb, headers: versionHeader(m), rpcId });
}

export interface Ev {
  kind: "task" | "message" | "status" | "artifact";
  body: any;
}

/** Checks one frame (JSON-RPC envelope + the line's StreamEvent/StreamResponse schema) and unwraps it. */
export async function eventOf(m: Mode, sse: Sse, frame: any): Promise<Ev> {
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

export async function eventsOf(m: Mode, sse: Sse, frames: any[]): Promise<Ev[]> {
  const out: Ev[] = [];
  for (const f of frames) out.push(await eventOf(m, sse, f));
  return out;
}

/** `shared.stream.sequence` of an artifact or status update, when it carries one. */
export function sequenceOf(ev: Ev): number | undefined {
  const meta = ev.kind === "artifact" ? ev.body.artifact?.metadata : ev.kind === "status" ? ev.body.metadata : undefined;
  return meta?.shared?.stream?.sequence;
}
