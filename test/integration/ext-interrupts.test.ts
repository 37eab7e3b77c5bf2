// Interactive interrupts over the stub OpenCode, on both protocol lines (JSON-RPC; the extension methods have no REST
// routes): the stream's input-required status with metadata.shared.interrupt, the a2a.interrupt.* callbacks (reply →
// resolved → completed, wrong type, unknown / another principal's / answered / expired requests), the A2A ways of
// answering (a follow-up message to the task, tasks/provideInputAndContinue), the recovery lists, and the registry
// surviving a gateway restart on SQLite.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Principal } from "../../src/auth/index.js";
import { A2AError } from "../../src/contract/errors.js";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream } from "../../src/upstream/index.js";
import { catalog, errorInfoOf, expectRpcError, expectValid } from "../support/contract.js";
import { bearer, rpc, startGateway, type HttpResult } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { startStubUpstream, type StubUpstream } from "../../tools/upstream/stub.js";
import { text, tool } from "../../tools/upstream/script.js";

type Line = "0.3" | "1.0";
const LINES: Line[] = ["0.3", "1.0"];
const METHODS = {
  "0.3": { send: "message/send", stream: "message/stream", get: "tasks/get", cancel: "tasks/cancel" },
  "1.0": { send: "SendMessage", stream: "SendStreamingMessage", get: "GetTask", cancel: "CancelTask" },
} as const;
const TASK_SCHEMA = { "0.3": "v0_3/Task", "1.0": "v1_0/Task" } as const;
const EVENT_SCHEMA = { "0.3": "v0_3/StreamEvent", "1.0": "v1_0/StreamResponse" } as const;

const OUTSIDE_FILE = "/etc/hostname"; // outside the stub's directory → external_directory permission
const readOutside = () => tool("read", { filePath: OUTSIDE_FILE });
const askColor = (questions = [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }]) =>
  tool("question", { questions });

let rpcId = 0;
async function call(url: string, line: Line, method: string, params: unknown): Promise<HttpResult & { rpcId: number }> {
  const id = ++rpcId;
  return { ...(await rpc(url, { jsonrpc: "2.0", id, method, params }, { "A2A-Version": line })), rpcId: id };
}

async function result(res: HttpResult & { rpcId: number }): Promise<any> {
  expect(res.status, res.text).toBe(200);
  expect(res.body?.error, res.text).toBeUndefined();
  expect(res.body.id).toBe(res.rpcId);
  return res.body.result;
}

/** The error's data fields on either line (1.0: the ErrorInfo metadata, camelCase keys, string values). */
async function errorData(line: Line, error: Record<string, any>): Promise<Record<string, any>> {
  if (line === "0.3") return error.data;
  return (await errorInfoOf(error.data)).metadata ?? {};
}

function userMessage(line: Line, texts: string | string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  const list = typeof texts === "string" ? [texts] : texts;
  if (line === "1.0") return { messageId: randomUUID(), role: "ROLE_USER", parts: list.map((t) => ({ text: t })), ...extra };
  return { kind: "message", messageId: randomUUID(), role: "user", parts: list.map((t) => ({ kind: "text", text: t })), ...extra };
}

function stateName(state: string): string {
  if (!state.startsWith("TASK_STATE_")) return state;
  const s = state.slice("TASK_STATE_".length).toLowerCase().replace(/_/g, "-");
  return s === "cancelled" ? "canceled" : s;
}
const stateOf = (task: any): string => stateName(task.status.state);
const taskOfSend = (line: Line, r: any): any => (line === "0.3" ? r : r.task);
const interruptOf = (task: any): any => task.metadata?.shared?.interrupt;
const textOf = (message: any): string => (message?.parts ?? []).map((p: any) => (typeof p.text === "string" ? p.text : "")).join("");

async function send(url: string, line: Line, params: Record<string, unknown>): Promise<any> {
  const r = await result(await call(url, line, METHODS[line].send, params));
  const task = taskOfSend(line, r);
  await expectValid(TASK_SCHEMA[line], task);
  return task;
}

async function getTask(url: string, line: Line, id: string): Promise<any> {
  return result(await call(url, line, METHODS[line].get, { id }));
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function settledTask(url: string, line: Line, id: string, state = "completed"): Promise<any> {
  return until(`task ${id} ${state}`, async () => {
    const task = await getTask(url, line, id);
    return stateOf(task) === state ? task : undefined;
  });
}

/**
 * A fresh OpenCode session with its own scripted replies, named in the send's metadata: a failing test cannot leave
 * replies behind for the next one.
 */
async function scriptedSession(stub: StubUpstream, ...replies: Parameters<StubUpstream["script"]>): Promise<Record<string, unknown>> {
  const res = await fetch(`${stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "interrupts" }) });
  const session = (await res.json()) as { id: string };
  stub.scriptFor(session.id, ...replies);
  return { shared: { session: { id: session.id } } };
}

/** A blocking send that stops on an interrupt: the input-required task with its interrupt. */
async function interrupted(gw: TaskGateway, line: Line, ...replies: Parameters<StubUpstream["script"]>): Promise<{ task: any; interrupt: any }> {
  const metadata = await scriptedSession(gw.stub, ...replies);
  const task = await send(gw.url, line, { message: userMessage(line, "please do the thing"), metadata });
  expect(stateOf(task), JSON.stringify(task.status)).toBe("input-required");
  const interrupt = interruptOf(task);
  expect(interrupt).toMatchObject({ phase: "asked" });
  await expectValid("extensions/InterruptHint", interrupt);
  return { task, interrupt };
}

const upstreamCalls = (stub: StubUpstream, requestId: string) =>
  stub.requests.filter((r) => r.method === "POST" && r.path.includes(`/${requestId}/`)).map((r) => ({ path: r.path, body: r.body }));

/** A handler of the gateway's method registry called as another principal (the HTTP edge has one admin token). */
async function callAs(gw: TaskGateway, principal: Principal, method: string, params: Record<string, unknown>): Promise<unknown> {
  const entry = catalog.methods.find((m) => m.name === method)!;
  return gw.gw.gateway.registry.get(method)!(params, { line: "0.3", principal, transport: "jsonrpc", method: entry });
}
const MALLORY: Principal = { id: "mallory", trustLevel: "execute", credentialId: "test:mallory", scopes: new Set(["interrupts.reply", "interrupts.read"]), admin: false };

// ---- SSE (JSON-RPC streaming) -----------------------------------------------------------------------------------
interface Sse {
  next(ms?: number): Promise<any>;
  close(): void;
}
async function openStream(url: string, line: Line, params: Record<string, unknown>): Promise<Sse & { id: number }> {
  const id = ++rpcId;
  const controller = new AbortController();
  const res = await fetch(`${url}/`, {
    method: "POST",
    headers: { ...bearer(), "content-type": "application/json", "A2A-Version": line },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: METHODS[line].stream, params }),
    signal: controller.signal,
  });
  expect(res.headers.get("content-type") ?? "").toContain("text/event-stream");
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const frames: any[] = [];
  let buffer = "";
  let ended = false;
  const pump = async (): Promise<void> => {
    const chunk = await reader.read();
    if (chunk.done) {
      ended = true;
      return;
    }
    buffer += decoder.decode(chunk.value, { stream: true });
    for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
      const data = buffer
        .slice(0, i)
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart())
        .join("\n");
      buffer = buffer.slice(i + 2);
      if (data !== "") frames.push(JSON.parse(data));
    }
  };
  let pending: Promise<void> | undefined;
  return {
    id,
    async next(ms = 5000) {
      const deadline = Date.now() + ms;
      while (frames.length === 0) {
        if (ended) return undefined;
        pending ??= pump().finally(() => (pending = undefined));
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          pending,
          new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("no SSE frame in time")), Math.max(1, deadline - Date.now())))),
        ]).finally(() => clearTimeout(timer));
      }
      return frames.shift();
    },
    close: () => controller.abort(),
  };
}

/** The stream's events (validated), unwrapped to {kind, body}, until `stop` says so. */
async function readUntil(line: Line, sse: Sse & { id: number }, stop: (ev: { kind: string; body: any }) => boolean): Promise<{ kind: string; body: any }[]> {
  const out: { kind: string; body: any }[] = [];
  for (;;) {
    const frame = await sse.next();
    if (frame === undefined) throw new Error(`stream ended after ${out.length} events`);
    expect(frame.id).toBe(sse.id);
    expect(frame.error, JSON.stringify(frame)).toBeUndefined();
    await expectValid(EVENT_SCHEMA[line], frame.result);
    const ev =
      line === "0.3"
        ? { kind: frame.result.kind as string, body: frame.result }
        : (() => {
            const key = ["task", "message", "statusUpdate", "artifactUpdate"].find((k) => frame.result[k] !== undefined)!;
            return { kind: { task: "task", message: "message", statusUpdate: "status-update", artifactUpdate: "artifact-update" }[key]!, body: frame.result[key] };
          })();
    out.push(ev);
    if (stop(ev)) return out;
  }
}
const isStatus = (ev: { kind: string; body: any }, state: string) => ev.kind === "status-update" && stateName(ev.body.status.state) === state;

// ---------------------------------------------------------------------------------------------------------------

let gw: TaskGateway;
beforeAll(async () => {
  gw = await startTaskGateway();
});
afterAll(async () => {
  await gw?.close();
});

describe.each(LINES)("interrupts on %s", (line) => {
  it("stream: a permission turns the task input-required; permission.reply → resolved → completed", async () => {
    const metadata = await scriptedSession(gw.stub, readOutside(), text("read it"));
    const sse = await openStream(gw.url, line, { message: userMessage(line, "read the host name"), metadata });
    try {
      const before = await readUntil(line, sse, (ev) => isStatus(ev, "input-required"));
      const asked = before.at(-1)!.body;
      if (line === "0.3") expect(asked.final).toBe(false);
      const interrupt = asked.metadata.shared.interrupt;
      await expectValid("extensions/InterruptHint", interrupt);
      expect(interrupt).toMatchObject({
        type: "permission",
        phase: "asked",
        details: { permission: "external_directory", patterns: ["/etc/*"], reply_options: ["once", "always", "reject"] },
      });
      const requestId: string = interrupt.request_id;
      expect(requestId).toMatch(/^per_/);

      const res = await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: requestId, reply: "once", message: "go ahead" });
      const ok = await result(res);
      expect(ok).toEqual({ ok: true, request_id: requestId });
      await expectValid("extensions/InterruptReplyResult", ok);
      expect(upstreamCalls(gw.stub, requestId)).toEqual([{ path: `/permission/${requestId}/reply`, body: { reply: "once", message: "go ahead" } }]);

      const after = await readUntil(line, sse, (ev) => isStatus(ev, "completed"));
      const resolved = after.find((ev) => ev.kind === "status-update" && ev.body.metadata?.shared?.interrupt?.phase === "resolved");
      expect(resolved, JSON.stringify(after.map((e) => e.kind))).toBeDefined();
      expect(stateName(resolved!.body.status.state)).toBe("working");
      expect(resolved!.body.metadata.shared.interrupt).toMatchObject({ request_id: requestId, type: "permission", resolution: "replied" });
      // the task never went back to input-required for this request
      expect(after.filter((ev) => isStatus(ev, "input-required"))).toEqual([]);

      // the binding is gone: a second reply is not found
      const again = await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: requestId, reply: "once" });
      const error = await expectRpcError(again, line, "INTERRUPT_REQUEST_NOT_FOUND", { id: again.rpcId });
      expect(await errorData(line, error)).toMatchObject(line === "0.3" ? { request_id: requestId } : { requestId });
    } finally {
      sse.close();
    }
  });

  it("question.reply sends the answers upstream and the turn completes", async () => {
    const { task, interrupt } = await interrupted(gw, line, askColor(), text("blue it is"));
    expect(interrupt.type).toBe("question");
    expect(interrupt.details.questions).toEqual([{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }]);
    // an answer count that does not match the questions is refused before anything goes upstream
    const wrongCount = await call(gw.url, line, "a2a.interrupt.question.reply", { request_id: interrupt.request_id, answers: [["blue"], ["red"]] });
    await expectRpcError(wrongCount, line, "INVALID_PARAMS", { id: wrongCount.rpcId });
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([]);

    const ok = await result(await call(gw.url, line, "a2a.interrupt.question.reply", { request_id: interrupt.request_id, answers: [["blue"]] }));
    expect(ok).toEqual({ ok: true, request_id: interrupt.request_id });
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([{ path: `/question/${interrupt.request_id}/reply`, body: { answers: [["blue"]] } }]);
    const done = await settledTask(gw.url, line, task.id);
    expect(textOf(done.history?.at(-1))).toContain("blue it is");
  });

  it("question.reject dismisses the question and the turn ends", async () => {
    const { task, interrupt } = await interrupted(gw, line, askColor());
    const ok = await result(await call(gw.url, line, "a2a.interrupt.question.reject", { request_id: interrupt.request_id }));
    expect(ok).toEqual({ ok: true, request_id: interrupt.request_id });
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([{ path: `/question/${interrupt.request_id}/reject`, body: undefined }]);
    await settledTask(gw.url, line, task.id);
  });

  it("the wrong method for the request's type → INTERRUPT_TYPE_MISMATCH (nothing sent upstream)", async () => {
    const permission = await interrupted(gw, line, readOutside(), text("done"));
    const res1 = await call(gw.url, line, "a2a.interrupt.question.reply", { request_id: permission.interrupt.request_id, answers: [["x"]] });
    const e1 = await expectRpcError(res1, line, "INTERRUPT_TYPE_MISMATCH", { id: res1.rpcId });
    expect(await errorData(line, e1)).toMatchObject(
      line === "0.3"
        ? { request_id: permission.interrupt.request_id, expected_interrupt_type: "question", actual_interrupt_type: "permission" }
        : { requestId: permission.interrupt.request_id, expectedInterruptType: "question", actualInterruptType: "permission" },
    );
    const res2 = await call(gw.url, line, "a2a.interrupt.question.reject", { request_id: permission.interrupt.request_id });
    await expectRpcError(res2, line, "INTERRUPT_TYPE_MISMATCH", { id: res2.rpcId });
    expect(upstreamCalls(gw.stub, permission.interrupt.request_id)).toEqual([]);
    await result(await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: permission.interrupt.request_id, reply: "reject", message: "no" }));
    await settledTask(gw.url, line, permission.task.id);

    const question = await interrupted(gw, line, askColor(), text("done"));
    const res3 = await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: question.interrupt.request_id, reply: "once" });
    const e3 = await expectRpcError(res3, line, "INTERRUPT_TYPE_MISMATCH", { id: res3.rpcId });
    expect(await errorData(line, e3)).toMatchObject(
      line === "0.3" ? { expected_interrupt_type: "permission", actual_interrupt_type: "question" } : { expectedInterruptType: "permission", actualInterruptType: "question" },
    );
    await result(await call(gw.url, line, "a2a.interrupt.question.reply", { request_id: question.interrupt.request_id, answers: [["red"]] }));
    await settledTask(gw.url, line, question.task.id);
  });

  it("unknown ids and another principal's requests → INTERRUPT_REQUEST_NOT_FOUND; the lists are scoped to the caller", async () => {
    const unknown = await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: "per_doesnotexist", reply: "once" });
    await expectRpcError(unknown, line, "INTERRUPT_REQUEST_NOT_FOUND", { id: unknown.rpcId });
    const unknownQ = await call(gw.url, line, "a2a.interrupt.question.reject", { request_id: "que_doesnotexist" });
    await expectRpcError(unknownQ, line, "INTERRUPT_REQUEST_NOT_FOUND", { id: unknownQ.rpcId });

    const { task, interrupt } = await interrupted(gw, line, readOutside(), text("done"));
    await expect(callAs(gw, MALLORY, "a2a.interrupt.permission.reply", { request_id: interrupt.request_id, reply: "once" })).rejects.toMatchObject({
      reason: "INTERRUPT_REQUEST_NOT_FOUND",
    });
    // a type mismatch is not revealed to a stranger either
    await expect(callAs(gw, MALLORY, "a2a.interrupt.question.reject", { request_id: interrupt.request_id })).rejects.toBeInstanceOf(A2AError);
    await expect(callAs(gw, MALLORY, "a2a.interrupt.question.reject", { request_id: interrupt.request_id })).rejects.toMatchObject({
      reason: "INTERRUPT_REQUEST_NOT_FOUND",
    });
    expect(await callAs(gw, MALLORY, "opencode.permissions.list", {})).toEqual({ items: [] });
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([]);
    // the owner still can
    await result(await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: interrupt.request_id, reply: "always" }));
    await settledTask(gw.url, line, task.id);
  });

  it("opencode.permissions.list / opencode.questions.list show the caller's pending requests until answered", async () => {
    const permission = await interrupted(gw, line, readOutside(), text("done"));
    const question = await interrupted(gw, line, askColor(), text("done"));

    const perms = await result(await call(gw.url, line, "opencode.permissions.list", {}));
    await expectValid("extensions/InterruptRecoveryResult", perms);
    expect(perms.items).toHaveLength(1);
    const item = perms.items[0];
    expect(item).toMatchObject({
      request_id: permission.interrupt.request_id,
      interrupt_type: "permission",
      task_id: permission.task.id,
      context_id: permission.task.contextId,
      session_id: permission.task.metadata.shared.session.id,
      details: permission.interrupt.details,
    });
    const ttlLeft = Date.parse(item.expires_at) - Date.now();
    expect(ttlLeft).toBeGreaterThan(10_700_000); // default A2A_INTERRUPT_REQUEST_TTL_SECONDS = 10800
    expect(ttlLeft).toBeLessThanOrEqual(10_800_000);

    const questions = await result(await call(gw.url, line, "opencode.questions.list", { metadata: { opencode: {} } }));
    await expectValid("extensions/InterruptRecoveryResult", questions);
    expect(questions.items.map((i: any) => [i.request_id, i.interrupt_type, i.task_id])).toEqual([[question.interrupt.request_id, "question", question.task.id]]);
    expect(questions.items[0].details).toEqual(question.interrupt.details);

    // bad routing hints are invalid params
    const bad = await call(gw.url, line, "opencode.questions.list", { metadata: { opencode: { directory: "/definitely/not/inside" } } });
    await expectRpcError(bad, line, "INVALID_PARAMS", { id: bad.rpcId });

    await result(await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: permission.interrupt.request_id, reply: "once" }));
    await result(await call(gw.url, line, "a2a.interrupt.question.reply", { request_id: question.interrupt.request_id, answers: [["blue"]] }));
    expect((await result(await call(gw.url, line, "opencode.permissions.list", {}))).items).toEqual([]);
    expect((await result(await call(gw.url, line, "opencode.questions.list", {}))).items).toEqual([]);
    await settledTask(gw.url, line, permission.task.id);
    await settledTask(gw.url, line, question.task.id);
  });

  it("a follow-up message with the taskId answers the pending question and the same task continues", async () => {
    const { task, interrupt } = await interrupted(gw, line, askColor(), text("you picked it"));
    const answer = userMessage(line, "Blue", { taskId: task.id, contextId: task.contextId });
    const continued = await send(gw.url, line, { message: answer });
    expect(continued.id).toBe(task.id);
    expect(stateOf(continued)).toBe("completed");
    // "Blue" names the option "blue": the exact label goes upstream
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([{ path: `/question/${interrupt.request_id}/reply`, body: { answers: [["blue"]] } }]);
    const texts = (continued.history ?? []).map(textOf);
    expect(texts).toContain("Blue");
    expect(texts.at(-1)).toContain("you picked it");
    expect((await result(await call(gw.url, line, "opencode.questions.list", {}))).items).toEqual([]);
  });

  it("several questions are answered one text part per question", async () => {
    const two = [
      { question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "" }] },
      { question: "Pick a size?", header: "Size", options: [{ label: "large", description: "" }] },
    ];
    const { task, interrupt } = await interrupted(gw, line, askColor(two), text("noted"));
    const one = await call(gw.url, line, METHODS[line].send, { message: userMessage(line, "blue", { taskId: task.id }) });
    await expectRpcError(one, line, "INVALID_PARAMS", { id: one.rpcId });
    const continued = await send(gw.url, line, { message: userMessage(line, ["blue", "LARGE"], { taskId: task.id }) });
    expect(stateOf(continued)).toBe("completed");
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([{ path: `/question/${interrupt.request_id}/reply`, body: { answers: [["blue"], ["large"]] } }]);
  });

  it("a follow-up message to a task waiting on a permission must say once, always or reject", async () => {
    const { task, interrupt } = await interrupted(gw, line, readOutside(), text("done reading"));
    const bad = await call(gw.url, line, METHODS[line].send, { message: userMessage(line, "sure, why not", { taskId: task.id }) });
    const error = await expectRpcError(bad, line, "INVALID_PARAMS", { id: bad.rpcId });
    expect(error.message).toMatch(/"once", "always", "reject"/);
    expect(stateOf(await getTask(gw.url, line, task.id))).toBe("input-required");
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([]);
    const continued = await send(gw.url, line, { message: userMessage(line, " Once ", { taskId: task.id }) });
    expect(stateOf(continued)).toBe("completed");
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([{ path: `/permission/${interrupt.request_id}/reply`, body: { reply: "once" } }]);
  });

  it("tasks/provideInputAndContinue with input answers the question and returns the finished task", async () => {
    const { task, interrupt } = await interrupted(gw, line, askColor(), text("thanks"));
    const res = await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: task.id, input: userMessage(line, "red") });
    const continued = await result(res);
    await expectValid("extensions/A2ATaskProjection", continued);
    await expectValid(TASK_SCHEMA[line], continued);
    expect(continued.id).toBe(task.id);
    expect(stateOf(continued)).toBe("completed");
    if (line === "1.0") expect(continued.status.state).toBe("TASK_STATE_COMPLETED");
    else expect(continued.kind).toBe("task");
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([{ path: `/question/${interrupt.request_id}/reply`, body: { answers: [["red"]] } }]);
  });

  it("tasks/provideInputAndContinue with permissionOptionId settles the permission and returns the finished task", async () => {
    const { task, interrupt } = await interrupted(gw, line, readOutside(), text("read done"));
    const continued = await result(await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: task.id, permissionOptionId: "always" }));
    await expectValid(TASK_SCHEMA[line], continued);
    expect(continued.id).toBe(task.id);
    expect(stateOf(continued)).toBe("completed");
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([{ path: `/permission/${interrupt.request_id}/reply`, body: { reply: "always" } }]);
  });

  it("tasks/provideInputAndContinue refuses both, neither, unadvertised options and options without a pending permission", async () => {
    const permission = await interrupted(gw, line, readOutside(), text("done"));
    const id = permission.task.id;
    const both = await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: id, input: userMessage(line, "once"), permissionOptionId: "once" });
    await expectRpcError(both, line, "INVALID_PARAMS", { id: both.rpcId });
    const neither = await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: id });
    await expectRpcError(neither, line, "INVALID_PARAMS", { id: neither.rpcId });
    const unadvertised = await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: id, permissionOptionId: "approved" });
    await expectRpcError(unadvertised, line, "INVALID_PARAMS", { id: unadvertised.rpcId });
    const unknownTask = await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: randomUUID(), permissionOptionId: "once" });
    await expectRpcError(unknownTask, line, "TASK_NOT_FOUND", { id: unknownTask.rpcId });
    expect(upstreamCalls(gw.stub, permission.interrupt.request_id)).toEqual([]);
    expect(stateOf(await getTask(gw.url, line, id))).toBe("input-required");
    await result(await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: id, permissionOptionId: "reject" }));

    const question = await interrupted(gw, line, askColor(), text("done"));
    const noPermission = await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: question.task.id, permissionOptionId: "once" });
    const error = await expectRpcError(noPermission, line, "INVALID_PARAMS", { id: noPermission.rpcId });
    expect(error.message).toMatch(/no pending permission/);
    const done = await result(await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: question.task.id, input: userMessage(line, "blue") }));
    expect(stateOf(done)).toBe("completed");

    // a finished task has nothing to continue
    const finished = await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: question.task.id, input: userMessage(line, "again") });
    await expectRpcError(finished, line, "UNSUPPORTED_OPERATION", { id: finished.rpcId });
    const finishedOption = await call(gw.url, line, "tasks/provideInputAndContinue", { taskId: question.task.id, permissionOptionId: "once" });
    await expectRpcError(finishedOption, line, "INVALID_PARAMS", { id: finishedOption.rpcId });
  });

  it("an upstream failure of the reply is a typed error and the binding stays answerable", async () => {
    const { task, interrupt } = await interrupted(gw, line, readOutside(), text("done"));
    gw.stub.failNext(`POST /permission/${interrupt.request_id}/reply`, { status: 500, body: { message: "boom" } });
    const res = await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: interrupt.request_id, reply: "once" });
    await expectRpcError(res, line, "UPSTREAM_HTTP_ERROR", { id: res.rpcId });
    expect((await result(await call(gw.url, line, "opencode.permissions.list", {}))).items.map((i: any) => i.request_id)).toEqual([interrupt.request_id]);
    await result(await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: interrupt.request_id, reply: "once" }));
    await settledTask(gw.url, line, task.id);
  });

  it("a request OpenCode no longer knows is not found and leaves the registry", async () => {
    const { task, interrupt } = await interrupted(gw, line, readOutside(), text("done"));
    gw.stub.failNext(`POST /permission/${interrupt.request_id}/reply`, { status: 404, body: { _tag: "PermissionNotFoundError", message: "gone" } });
    const res = await call(gw.url, line, "a2a.interrupt.permission.reply", { request_id: interrupt.request_id, reply: "once" });
    await expectRpcError(res, line, "INTERRUPT_REQUEST_NOT_FOUND", { id: res.rpcId });
    expect((await result(await call(gw.url, line, "opencode.permissions.list", {}))).items).toEqual([]);
    await result(await call(gw.url, line, METHODS[line].cancel, { id: task.id }));
  });

  it("canceling the task drops its pending requests: not listed, not answerable", async () => {
    const { task, interrupt } = await interrupted(gw, line, askColor(), text("done"));
    expect((await result(await call(gw.url, line, "opencode.questions.list", {}))).items.map((i: any) => i.request_id)).toEqual([interrupt.request_id]);
    await result(await call(gw.url, line, METHODS[line].cancel, { id: task.id }));
    expect((await result(await call(gw.url, line, "opencode.questions.list", {}))).items).toEqual([]);
    const res = await call(gw.url, line, "a2a.interrupt.question.reply", { request_id: interrupt.request_id, answers: [["blue"]] });
    await expectRpcError(res, line, "INTERRUPT_REQUEST_NOT_FOUND", { id: res.rpcId });
    expect(upstreamCalls(gw.stub, interrupt.request_id)).toEqual([]);
  });
});

describe("expiry (A2A_INTERRUPT_REQUEST_TTL_SECONDS=1, A2A_INTERRUPT_REQUEST_TOMBSTONE_TTL_SECONDS=2)", () => {
  let short: TaskGateway;
  beforeAll(async () => {
    short = await startTaskGateway({ A2A_INTERRUPT_REQUEST_TTL_SECONDS: "1", A2A_INTERRUPT_REQUEST_TOMBSTONE_TTL_SECONDS: "2" });
  });
  afterAll(async () => {
    await short?.close();
  });

  it.each(LINES)("%s: a reply after the TTL is EXPIRED during the tombstone window, then NOT_FOUND", async (line) => {
    const permission = await interrupted(short, line, readOutside(), text("done"));
    const question = await interrupted(short, line, askColor(), text("done"));
    const askedAt = Date.now();
    expect((await result(await call(short.url, line, "opencode.permissions.list", {}))).items).toHaveLength(1);

    await new Promise((r) => setTimeout(r, Math.max(0, askedAt + 1_200 - Date.now())));
    const res = await call(short.url, line, "a2a.interrupt.permission.reply", { request_id: permission.interrupt.request_id, reply: "once" });
    const error = await expectRpcError(res, line, "INTERRUPT_REQUEST_EXPIRED", { id: res.rpcId });
    expect(await errorData(line, error)).toMatchObject(line === "0.3" ? { request_id: permission.interrupt.request_id } : { requestId: permission.interrupt.request_id });
    // still expired on a repeat, through every way of answering
    const again = await call(short.url, line, "a2a.interrupt.permission.reply", { request_id: permission.interrupt.request_id, reply: "once" });
    await expectRpcError(again, line, "INTERRUPT_REQUEST_EXPIRED", { id: again.rpcId });
    const viaTask = await call(short.url, line, "tasks/provideInputAndContinue", { taskId: permission.task.id, permissionOptionId: "once" });
    await expectRpcError(viaTask, line, "INTERRUPT_REQUEST_EXPIRED", { id: viaTask.rpcId });
    const viaMessage = await call(short.url, line, METHODS[line].send, { message: userMessage(line, "blue", { taskId: question.task.id }) });
    await expectRpcError(viaMessage, line, "INTERRUPT_REQUEST_EXPIRED", { id: viaMessage.rpcId });
    expect((await result(await call(short.url, line, "opencode.permissions.list", {}))).items).toEqual([]);
    expect((await result(await call(short.url, line, "opencode.questions.list", {}))).items).toEqual([]);
    expect(upstreamCalls(short.stub, permission.interrupt.request_id)).toEqual([]);

    await new Promise((r) => setTimeout(r, Math.max(0, askedAt + 3_300 - Date.now())));
    const gone = await call(short.url, line, "a2a.interrupt.permission.reply", { request_id: permission.interrupt.request_id, reply: "once" });
    await expectRpcError(gone, line, "INTERRUPT_REQUEST_NOT_FOUND", { id: gone.rpcId });
    const goneQ = await call(short.url, line, "a2a.interrupt.question.reject", { request_id: question.interrupt.request_id });
    await expectRpcError(goneQ, line, "INTERRUPT_REQUEST_NOT_FOUND", { id: goneQ.rpcId });

    await result(await call(short.url, line, METHODS[line].cancel, { id: permission.task.id }));
    await result(await call(short.url, line, METHODS[line].cancel, { id: question.task.id }));
  }, 15_000);
});

describe("durability (SQLite)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-ext-interrupts-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("a pending request survives a gateway restart: listed and answerable by the same caller", async () => {
    const stub = await startStubUpstream();
    const env = {
      A2A_BEARER_TOKEN: "test-token-5f1c2a9e7d3b4c6a",
      OPENCODE_BASE_URL: stub.url,
      A2A_TASK_STORE_BACKEND: "database",
      A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(dir, "a2a.db")}`,
    };
    const boot = async () => {
      const upstream = await startUpstream(loadConfig(env), pino({ level: "silent" }));
      const started = await startGateway(env, { upstream });
      return { url: started.url, close: async () => (await started.close(), await upstream.stop()) };
    };
    try {
      const first = await boot();
      const metadata = await scriptedSession(stub, readOutside(), text("finished after the restart"));
      const task = await send(first.url, "0.3", { message: userMessage("0.3", "read it"), metadata });
      expect(stateOf(task)).toBe("input-required");
      const requestId: string = interruptOf(task).request_id;
      await first.close();

      const second = await boot();
      try {
        const listed = await result(await call(second.url, "1.0", "opencode.permissions.list", {}));
        expect(listed.items.map((i: any) => [i.request_id, i.task_id])).toEqual([[requestId, task.id]]);
        expect(listed.items[0].details).toEqual(interruptOf(task).details);
        const ok = await result(await call(second.url, "1.0", "a2a.interrupt.permission.reply", { request_id: requestId, reply: "once" }));
        expect(ok).toEqual({ ok: true, request_id: requestId });
        expect(upstreamCalls(stub, requestId)).toEqual([{ path: `/permission/${requestId}/reply`, body: { reply: "once" } }]);
        expect((await result(await call(second.url, "1.0", "opencode.permissions.list", {}))).items).toEqual([]);
      } finally {
        await second.close();
      }
    } finally {
      await stub.close();
    }
  }, 20_000);
});
