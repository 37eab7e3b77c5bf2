// e2e: the interrupt matrix against the real `opencode serve` (hermetic, scripted model server), with an OpenCode
// config that makes bash ask (`permission: { bash: "ask" }`, reference opencode-upstream.md §7.3; schema
// `Config.permission` in spec/upstream/opencode.openapi.json).
//
//   1. A bash call under the ask rule, and a `question` tool call, each turn a STREAMING task (message/stream,
//      SendStreamingMessage; SSE read frame by frame) to a non-final `input-required` carrying
//      `metadata.shared.interrupt {request_id, type, phase: "asked", details}`.
//   2. Every way of answering, after which the same stream ends with the terminal status:
//      a2a.interrupt.permission.reply once / always (a second bash call then runs without asking) / reject + message
//      (one more model reply, then completed); a2a.interrupt.question.reply / .reject (the turn ends); a follow-up
//      message/send with the task's id (question: its text; permission: "once"); tasks/provideInputAndContinue with
//      `input` (question) and with an advertised `permissionOptionId` (permission).
//   3. A gateway restart on the same SQLite file while OpenCode keeps waiting: the requests are still listed and still
//      answerable through a2a.interrupt.*, and OpenCode continues (the model server gets the next request). The tasks
//      themselves were failed by the restart.
//   4. Expiry: with a 1 s TTL and a 2 s tombstone (a second gateway on the same OpenCode), a reply after expiry is
//      INTERRUPT_REQUEST_EXPIRED, after the tombstone INTERRUPT_REQUEST_NOT_FOUND.
// Everything on both protocol lines (0.3 and 1.0), one OpenCode server for the file, 127.0.0.1 only.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { EMPTY_OUTPUT_TEXT } from "../../src/bridge/stream-mapper.js";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { startHermeticOpencode, type HermeticOpencode } from "../../tools/upstream/hermetic.js";
import { startModelServer, type ModelServer, type RecordedRequest } from "../../tools/upstream/model-server.js";
import { text, tool } from "../../tools/upstream/script.js";
import { expectRpcError, expectValid } from "../support/contract.js";
import { rpc, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";

let model: ModelServer;
let oc: HermeticOpencode;
let upstream: Upstream;
let gw: StartedGateway;
let scratch: string;
let env: Record<string, string>;

beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-interrupts-matrix-"));
  model = await startModelServer();
  oc = await startHermeticOpencode({ modelBaseUrl: model.baseUrl, config: { permission: { bash: "ask" } } });
  env = {
    A2A_BEARER_TOKEN: TEST_TOKEN,
    OPENCODE_BASE_URL: oc.url,
    OPENCODE_WORKSPACE_ROOT: oc.workspace,
    A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(scratch, "tasks.db")}`,
  };
  upstream = await startUpstream(loadConfig(env), pino({ level: "silent" }));
  gw = await startGateway(env, { upstream });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await upstream?.stop();
  await oc?.stop();
  await model?.close();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
}, 30_000);

// Every test scripts its own replies: nothing left over from a failed test answers the next one.
beforeEach(() => model.reset());

// ---- helpers -----------------------------------------------------------------------------------------------------

type Line = "0.3" | "1.0";
const LINES: Line[] = ["0.3", "1.0"];
const SEND = { "0.3": "message/send", "1.0": "SendMessage" } as const;
const STREAM = { "0.3": "message/stream", "1.0": "SendStreamingMessage" } as const;
const GET = { "0.3": "tasks/get", "1.0": "GetTask" } as const;
const CANCEL = { "0.3": "tasks/cancel", "1.0": "CancelTask" } as const;
const TERMINAL = new Set(["completed", "failed", "canceled", "rejected"]);
const WAIT_MS = 15_000;

let rpcId = 0;

/** A successful JSON-RPC call on `gateway` (default: the current main gateway); returns `result`. */
async function call(line: Line, method: string, params: unknown, gateway: StartedGateway = gw): Promise<any> {
  const res = await rpc(gateway.url, { jsonrpc: "2.0", id: ++rpcId, method, params }, { "A2A-Version": line });
  expect(res.status, res.text).toBe(200);
  expect(res.body?.error, res.text).toBeUndefined();
  return res.body.result;
}

/** The raw answer of a call that is expected to fail (checked with expectRpcError). */
function attempt(line: Line, method: string, params: unknown, gateway: StartedGateway = gw) {
  return rpc(gateway.url, { jsonrpc: "2.0", id: ++rpcId, method, params }, { "A2A-Version": line });
}

function userMessage(line: Line, value: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  if (line === "1.0") return { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text: value }], ...extra };
  return { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: value }], ...extra };
}

const stateOf = (task: any): string => String(task.status.state).replace(/^TASK_STATE_/, "").toLowerCase().replace(/_/g, "-");
const taskOf = (line: Line, result: any): any => (line === "0.3" ? result : result.task);
const textOf = (message: any): string => (message?.parts ?? []).map((p: any) => p.text ?? "").join("");
const getTask = async (line: Line, id: string, gateway: StartedGateway = gw): Promise<any> => call(line, GET[line], { id }, gateway);

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = WAIT_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const sleepUntil = (at: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));

/** The chat requests OpenCode sent for one session. */
const chatsOf = (sessionId: string): RecordedRequest[] => model.chatRequests().filter((r) => r.sessionID === sessionId);
/** The tool results OpenCode sent back to the model in the session's last chat request. */
const lastToolResults = (sessionId: string): string => JSON.stringify(model.toolResults(chatsOf(sessionId).at(-1)!));

/** One stream event, the same on both lines. */
interface StreamEv {
  kind: "task" | "status-update" | "artifact-update" | "message";
  value: any;
  /** task / status-update: the normalized state (`input-required`, `completed`, …) */
  state?: string;
  /** the JSON-RPC `result` as sent */
  raw: any;
}

function normalize(line: Line, result: any): StreamEv {
  if (line === "0.3") {
    const kind = result.kind as StreamEv["kind"];
    return { kind, value: result, raw: result, ...(kind === "task" || kind === "status-update" ? { state: stateOf(result) } : {}) };
  }
  const key = Object.keys(result)[0] as string;
  const kind = ({ task: "task", statusUpdate: "status-update", artifactUpdate: "artifact-update", message: "message" } as const)[key as "task"];
  if (kind === undefined) throw new Error(`unknown 1.0 stream response: ${JSON.stringify(result).slice(0, 200)}`);
  const value = result[key];
  return { kind, value, raw: result, ...(kind === "task" || kind === "status-update" ? { state: stateOf(value) } : {}) };
}

/** An SSE response read frame by frame as it arrives; waits are bounded. */
class SseReader {
  readonly events: StreamEv[] = [];
  readonly errors: unknown[] = [];
  closed = false;
  #cursor = 0;
  #wake: (() => void) | undefined;

  constructor(
    private readonly line: Line,
    private readonly controller: AbortController,
    body: ReadableStream<Uint8Array>,
  ) {
    void this.#pump(body);
  }

  async #pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).replace(/^ /, ""))
            .join("\n");
          if (data === "") continue; // heartbeat comment
          const envelope = JSON.parse(data);
          if (envelope.error !== undefined) this.errors.push(envelope.error);
          else this.events.push(normalize(this.line, envelope.result));
          this.#notify();
        }
      }
    } catch (error) {
      if (!this.controller.signal.aborted) this.errors.push(error);
    } finally {
      this.closed = true;
      this.#notify();
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #summary(): string {
    return JSON.stringify(this.events.map((e) => [e.kind, e.state])) + (this.errors.length > 0 ? ` errors: ${JSON.stringify(this.errors)}` : "");
  }

  /** The next event (after the previous `next`) that satisfies `match`; the ones skipped stay in `events`. */
  async next(what: string, match: (e: StreamEv) => boolean, ms = WAIT_MS): Promise<StreamEv> {
    const deadline = Date.now() + ms;
    for (;;) {
      while (this.#cursor < this.events.length) {
        const e = this.events[this.#cursor++]!;
        if (match(e)) return e;
      }
      if (this.closed) throw new Error(`stream closed before ${what}; events: ${this.#summary()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${ms} ms waiting for ${what}; events: ${this.#summary()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** Resolves once the server ended the response; fails after `ms`. */
  async ended(ms = 5_000): Promise<void> {
    await until("the stream to end", () => (this.closed ? true : undefined), ms);
  }

  close(): void {
    this.controller.abort();
  }
}

const open: SseReader[] = [];

/** message/stream (0.3) or SendStreamingMessage (1.0); the first event is the Task. */
async function stream(line: Line, message: Record<string, unknown>): Promise<{ sse: SseReader; taskId: string; contextId: string }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 30_000);
  const res = await fetch(`${gw.url}/`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", accept: "text/event-stream", "a2a-version": line },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method: STREAM[line], params: { message } }),
    signal: controller.signal,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type") ?? "").toMatch(/^text\/event-stream/);
  const sse = new SseReader(line, controller, res.body!);
  controller.signal.addEventListener("abort", () => clearTimeout(timer));
  open.push(sse);
  const first = await sse.next("the task", () => true);
  expect(first.kind).toBe("task");
  await expectValid(line === "0.3" ? "v0_3/Task" : "v1_0/Task", first.value);
  return { sse, taskId: first.value.id, contextId: first.value.contextId };
}

afterAll(() => {
  for (const s of open) s.close();
});

interface Asked {
  sse: SseReader;
  taskId: string;
  contextId: string;
  sessionId: string;
  interrupt: any;
}

/**
 * Waits for the stream's input-required status: non-final (0.3 `final: false`; 1.0 has no `final`, the stream simply
 * stays open), carrying a valid `metadata.shared.interrupt` in the asked phase. The task (tasks/get) agrees, and the
 * request is listed for recovery.
 */
async function awaitAsked(line: Line, started: { sse: SseReader; taskId: string; contextId: string }, type: "permission" | "question"): Promise<Asked> {
  const { sse, taskId } = started;
  const ev = await sse.next("input-required", (e) => e.kind === "status-update" && e.state !== "working");
  expect(ev.state, JSON.stringify(ev.value)).toBe("input-required");
  if (line === "0.3") expect(ev.value.final).toBe(false);
  else expect(ev.value.final).toBeUndefined();
  expect(ev.value.taskId).toBe(taskId);
  const interrupt = ev.value.metadata?.shared?.interrupt;
  await expectValid("extensions/InterruptHint", interrupt);
  expect(interrupt).toMatchObject({ type, phase: "asked" });
  expect(interrupt.request_id).toMatch(type === "permission" ? /^per/ : /^que/);
  expect(sse.closed).toBe(false);

  const task = await getTask(line, taskId);
  expect(stateOf(task)).toBe("input-required");
  expect(task.metadata.shared.interrupt).toEqual(interrupt);
  const sessionId: string = task.metadata.shared.session.id;
  expect(sessionId).toMatch(/^ses/);

  const listed = await call(line, type === "permission" ? "opencode.permissions.list" : "opencode.questions.list", {});
  await expectValid("extensions/InterruptRecoveryResult", listed);
  expect(listed.items).toContainEqual(
    expect.objectContaining({ request_id: interrupt.request_id, interrupt_type: type, task_id: taskId, session_id: sessionId, details: interrupt.details }),
  );
  return { ...started, sessionId, interrupt };
}

/** The stream's terminal status, then the end of the response; nothing follows the terminal event. */
async function awaitTerminal(line: Line, sse: SseReader): Promise<StreamEv> {
  const ev = await sse.next("the terminal status", (e) => e.kind === "status-update" && TERMINAL.has(e.state ?? ""));
  if (line === "0.3") expect(ev.value.final).toBe(true);
  await sse.ended();
  expect(sse.events.at(-1)).toBe(ev);
  expect(sse.errors).toEqual([]);
  // every frame is a valid stream event of the line
  for (const e of sse.events) await expectValid(line === "0.3" ? "v0_3/StreamEvent" : "v1_0/StreamResponse", e.raw);
  return ev;
}

/** A streaming task whose bash call (`command`) asks for permission. */
async function bashAsks(line: Line, command: string, extra: Record<string, unknown> = {}): Promise<Asked> {
  model.script(tool("bash", { command, description: "scripted command" }));
  const asked = await awaitAsked(line, await stream(line, userMessage(line, `please run: ${command}`, extra)), "permission");
  const d = asked.interrupt.details;
  expect(d.permission).toBe("bash");
  expect(d.patterns).toEqual([command]);
  expect(d.permission_options.map((o: any) => o.id)).toEqual(["once", "always", "reject"]);
  expect(d.reply_options).toEqual(["once", "always", "reject"]);
  return asked;
}

const QUESTIONS = [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }];

/** A streaming task whose question tool call asks the user. */
async function questionAsks(line: Line): Promise<Asked> {
  model.script(tool("question", { questions: QUESTIONS }));
  const asked = await awaitAsked(line, await stream(line, userMessage(line, "ask me for a color")), "question");
  expect(asked.interrupt.details.questions).toHaveLength(1);
  expect(asked.interrupt.details.questions[0]).toMatchObject({ question: "Pick a color?", options: [{ label: "blue" }, { label: "red" }] });
  return asked;
}

/** After an answer: the stream completes with `finalText`, the request is gone from the recovery list. */
async function expectCompleted(line: Line, asked: Asked, finalText: string, type: "permission" | "question"): Promise<any> {
  const terminal = await awaitTerminal(line, asked.sse);
  expect(terminal.state, JSON.stringify(terminal.value.status)).toBe("completed");
  // between the question and the end, the stream said the task was working again (and the request resolved)
  const resolved = asked.sse.events.find((e) => e.kind === "status-update" && e.value.metadata?.shared?.interrupt?.phase === "resolved");
  expect(resolved?.value.metadata.shared.interrupt).toMatchObject({ request_id: asked.interrupt.request_id, type, phase: "resolved", resolution: "replied" });
  expect(resolved?.state).toBe("working");
  const task = await getTask(line, asked.taskId);
  expect(stateOf(task)).toBe("completed");
  expect(textOf(task.history.at(-1))).toContain(finalText);
  const listed = await call(line, type === "permission" ? "opencode.permissions.list" : "opencode.questions.list", {});
  expect(listed.items.map((i: any) => i.request_id)).not.toContain(asked.interrupt.request_id);
  return task;
}

/** A second answer to a request that is already answered: not found. */
async function expectGone(line: Line, requestId: string, method = "a2a.interrupt.permission.reply", params: Record<string, unknown> = { reply: "once" }): Promise<void> {
  await expectRpcError(await attempt(line, method, { request_id: requestId, ...params }), line, "INTERRUPT_REQUEST_NOT_FOUND");
}

// ---- 1 + 2: streaming tasks, every way of answering ------------------------------------------------------------------

describe.each(LINES)("streaming interrupts against the real OpenCode (%s)", (line) => {
  const tag = line.replace(".", "");

  it("bash under the ask rule → a2a.interrupt.permission.reply once: the command runs and the task completes", async () => {
    const asked = await bashAsks(line, `echo once-${tag}`);
    model.scriptFor(asked.sessionId, text(["Ran it ", "once."]));
    expect(await call(line, "a2a.interrupt.permission.reply", { request_id: asked.interrupt.request_id, reply: "once" })).toEqual({
      ok: true,
      request_id: asked.interrupt.request_id,
    });
    await expectCompleted(line, asked, "Ran it once.", "permission");
    expect(lastToolResults(asked.sessionId)).toContain(`once-${tag}`);
    await expectGone(line, asked.interrupt.request_id);
  });

  it("reply always: the turn completes and a second bash call in the same session runs without asking", async () => {
    // A command of its own per line: "always" approves the prefix (`printf *` / `basename *`) and must not leak.
    const [first, second] = line === "0.3" ? ["printf always-a-03", "printf always-b-03"] : ["basename /x/always-a-10", "basename /x/always-b-10"];
    const asked = await bashAsks(line, first);
    expect(asked.interrupt.details.always).toEqual([`${first.split(" ")[0]} *`]);
    model.scriptFor(asked.sessionId, text("First done."));
    expect(await call(line, "a2a.interrupt.permission.reply", { request_id: asked.interrupt.request_id, reply: "always" })).toMatchObject({ ok: true });
    await expectCompleted(line, asked, "First done.", "permission");
    expect(lastToolResults(asked.sessionId)).toContain(`always-a-${tag}`);

    // same context → same session; no input-required this time
    model.scriptFor(asked.sessionId, tool("bash", { command: second, description: "again" }), text("Second done."));
    const again = await stream(line, userMessage(line, "run it again", { contextId: asked.contextId }));
    const terminal = await awaitTerminal(line, again.sse);
    expect(terminal.state).toBe("completed");
    expect(again.sse.events.filter((e) => e.state === "input-required")).toEqual([]);
    expect(JSON.stringify(again.sse.events)).not.toContain('"phase":"asked"');
    const task = await getTask(line, again.taskId);
    expect(task.metadata.shared.session.id).toBe(asked.sessionId);
    expect(textOf(task.history.at(-1))).toContain("Second done.");
    expect(lastToolResults(asked.sessionId)).toContain(`always-b-${tag}`);
    expect((await call(line, "opencode.permissions.list", {})).items).toEqual([]);
  });

  it("reply reject with a message: the command does not run, the model gets one more request, the task completes", async () => {
    const marker = path.join(oc.workspace, `rejected-${tag}`);
    const asked = await bashAsks(line, `touch ${marker}`);
    model.scriptFor(asked.sessionId, text("Fine, I will not touch it."));
    const before = chatsOf(asked.sessionId).length;
    expect(await call(line, "a2a.interrupt.permission.reply", { request_id: asked.interrupt.request_id, reply: "reject", message: "no thanks" })).toMatchObject({
      ok: true,
    });
    await expectCompleted(line, asked, "Fine, I will not touch it.", "permission");
    expect(chatsOf(asked.sessionId).length).toBe(before + 1);
    const results = lastToolResults(asked.sessionId);
    expect(results).toContain("rejected permission");
    expect(results).toContain("no thanks");
    expect(fs.existsSync(marker)).toBe(false);
  });

  it("a question → a2a.interrupt.question.reply: OpenCode gets the answer and the task completes", async () => {
    const asked = await questionAsks(line);
    model.scriptFor(asked.sessionId, text("Blue it is."));
    expect(await call(line, "a2a.interrupt.question.reply", { request_id: asked.interrupt.request_id, answers: [["blue"]] })).toEqual({
      ok: true,
      request_id: asked.interrupt.request_id,
    });
    await expectCompleted(line, asked, "Blue it is.", "question");
    expect(lastToolResults(asked.sessionId)).toContain('\\"Pick a color?\\"=\\"blue\\"');
    await expectGone(line, asked.interrupt.request_id, "a2a.interrupt.question.reply", { answers: [["blue"]] });
  });

  it("a question → a2a.interrupt.question.reject: the turn ends without another model request", async () => {
    const asked = await questionAsks(line);
    const before = chatsOf(asked.sessionId).length;
    expect(await call(line, "a2a.interrupt.question.reject", { request_id: asked.interrupt.request_id })).toEqual({
      ok: true,
      request_id: asked.interrupt.request_id,
    });
    const terminal = await awaitTerminal(line, asked.sse);
    expect(terminal.state, JSON.stringify(terminal.value.status)).toBe("completed");
    const resolved = asked.sse.events.find((e) => e.value.metadata?.shared?.interrupt?.phase === "resolved");
    expect(resolved?.value.metadata.shared.interrupt).toMatchObject({ request_id: asked.interrupt.request_id, type: "question", phase: "resolved", resolution: "rejected" });
    expect(resolved?.state).toBe("working");
    // the dismissed question ends the turn with no text of its own
    const task = await getTask(line, asked.taskId);
    expect(stateOf(task)).toBe("completed");
    expect(textOf(task.history.at(-1))).toBe(EMPTY_OUTPUT_TEXT);
    expect(chatsOf(asked.sessionId).length).toBe(before);
    expect((await call(line, "opencode.questions.list", {})).items).toEqual([]);
    await expectGone(line, asked.interrupt.request_id, "a2a.interrupt.question.reject", {});
  });

  it("a question answered by a follow-up message/send with the task's id (its text is the answer)", async () => {
    const asked = await questionAsks(line);
    model.scriptFor(asked.sessionId, text("Red it is."));
    const reply = taskOf(line, await call(line, SEND[line], { message: userMessage(line, "Red", { taskId: asked.taskId, contextId: asked.contextId }) }));
    expect(reply.id).toBe(asked.taskId);
    expect(stateOf(reply)).toBe("completed");
    const task = await expectCompleted(line, asked, "Red it is.", "question");
    // the answer is part of the task's history, between the question and the reply
    expect(task.history.map((m: any) => textOf(m))).toContain("Red");
    // "Red" names an option: OpenCode got its exact label
    expect(lastToolResults(asked.sessionId)).toContain('\\"Pick a color?\\"=\\"red\\"');
  });

  it("a permission answered by a follow-up message/send with the text \"once\"", async () => {
    const asked = await bashAsks(line, `echo followup-${tag}`);
    model.scriptFor(asked.sessionId, text("Followed up."));
    const reply = taskOf(line, await call(line, SEND[line], { message: userMessage(line, "once", { taskId: asked.taskId }) }));
    expect(reply.id).toBe(asked.taskId);
    expect(stateOf(reply)).toBe("completed");
    const task = await expectCompleted(line, asked, "Followed up.", "permission");
    expect(task.history.map((m: any) => textOf(m))).toContain("once");
    expect(lastToolResults(asked.sessionId)).toContain(`followup-${tag}`);
  });

  it("a question answered by tasks/provideInputAndContinue with input", async () => {
    const asked = await questionAsks(line);
    model.scriptFor(asked.sessionId, text("Provided."));
    const result = await call(line, "tasks/provideInputAndContinue", { taskId: asked.taskId, input: userMessage(line, "blue") });
    await expectValid("extensions/A2ATaskProjection", result);
    expect(result.id).toBe(asked.taskId);
    expect(stateOf(result)).toBe("completed");
    await expectCompleted(line, asked, "Provided.", "question");
    expect(lastToolResults(asked.sessionId)).toContain('\\"Pick a color?\\"=\\"blue\\"');
  });

  it("a permission answered by tasks/provideInputAndContinue with an advertised permissionOptionId", async () => {
    const asked = await bashAsks(line, `echo option-${tag}`);
    const option = asked.interrupt.details.permission_options.find((o: any) => o.id === "once");
    expect(option).toMatchObject({ id: "once", label: expect.any(String) });
    // both at once is refused, and nothing was answered
    await expectRpcError(
      await attempt(line, "tasks/provideInputAndContinue", { taskId: asked.taskId, permissionOptionId: "once", input: userMessage(line, "once") }),
      line,
      "INVALID_PARAMS",
    );
    expect(stateOf(await getTask(line, asked.taskId))).toBe("input-required");
    model.scriptFor(asked.sessionId, text("Option taken."));
    const result = await call(line, "tasks/provideInputAndContinue", { taskId: asked.taskId, permissionOptionId: option.id });
    expect(result.id).toBe(asked.taskId);
    expect(stateOf(result)).toBe("completed");
    await expectCompleted(line, asked, "Option taken.", "permission");
    expect(lastToolResults(asked.sessionId)).toContain(`option-${tag}`);
  });
});

// ---- 4: expiry and tombstone ---------------------------------------------------------------------------------------

describe("interrupt expiry and tombstone (TTL 1 s, tombstone 2 s)", () => {
  it("a reply after the TTL is INTERRUPT_REQUEST_EXPIRED, after the tombstone INTERRUPT_REQUEST_NOT_FOUND (both lines)", async () => {
    const short = await startGateway(
      { ...env, A2A_TASK_STORE_DATABASE_URL: "sqlite:///:memory:", A2A_INTERRUPT_REQUEST_TTL_SECONDS: "1", A2A_INTERRUPT_REQUEST_TOMBSTONE_TTL_SECONDS: "2" },
      { upstream },
    );
    try {
      model.script(tool("bash", { command: "echo expiring", description: "expiring" }));
      const sentAt = Date.now();
      const task = taskOf("1.0", await call("1.0", SEND["1.0"], { message: userMessage("1.0", "run expiring") }, short));
      const askedBy = Date.now(); // the binding was created between sentAt and askedBy
      expect(stateOf(task)).toBe("input-required");
      const requestId: string = task.metadata.shared.interrupt.request_id;
      const listed = await call("0.3", "opencode.permissions.list", {}, short);
      expect(listed.items.map((i: any) => i.request_id)).toEqual([requestId]);
      // answerable for 1 s from when it was asked
      const expiresAt = Date.parse(listed.items[0].expires_at);
      expect(expiresAt).toBeGreaterThanOrEqual(sentAt + 1_000);
      expect(expiresAt).toBeLessThanOrEqual(askedBy + 1_000);

      // expired: past the TTL, inside the 2 s tombstone window
      await sleepUntil(expiresAt + 150);
      for (const l of LINES) {
        const err = await expectRpcError(await attempt(l, "a2a.interrupt.permission.reply", { request_id: requestId, reply: "once" }, short), l, "INTERRUPT_REQUEST_EXPIRED");
        expect(JSON.stringify(err)).toContain(requestId);
      }
      await expectRpcError(
        await attempt("1.0", "tasks/provideInputAndContinue", { taskId: task.id, permissionOptionId: "once" }, short),
        "1.0",
        "INTERRUPT_REQUEST_EXPIRED",
      );
      expect((await call("1.0", "opencode.permissions.list", {}, short)).items).toEqual([]);
      // nothing reached OpenCode: the task still waits
      expect(stateOf(await getTask("1.0", task.id, short))).toBe("input-required");

      expect(Date.now(), "the expired checks ran into the tombstone's end").toBeLessThan(expiresAt + 2_000);

      // gone: past the tombstone window
      await sleepUntil(expiresAt + 2_150);
      for (const l of LINES) {
        await expectRpcError(await attempt(l, "a2a.interrupt.permission.reply", { request_id: requestId, reply: "once" }, short), l, "INTERRUPT_REQUEST_NOT_FOUND");
      }
      expect((await call("0.3", CANCEL["0.3"], { id: task.id }, short)).status.state).toBe("canceled");
    } finally {
      await short.close();
    }
  });
});

// ---- 3: recovery after a gateway restart ---------------------------------------------------------------------------

describe("recovery after a gateway restart (SQLite store, OpenCode keeps waiting)", () => {
  it("pending requests are still listed and answerable through a2a.interrupt.*, and OpenCode continues", async () => {
    model.script(tool("bash", { command: "echo restart-permission", description: "restart" }));
    const p = taskOf("0.3", await call("0.3", SEND["0.3"], { message: userMessage("0.3", "run restart-permission") }));
    expect(stateOf(p)).toBe("input-required");
    model.script(tool("question", { questions: QUESTIONS }));
    const q = taskOf("1.0", await call("1.0", SEND["1.0"], { message: userMessage("1.0", "ask me, then restart") }));
    expect(stateOf(q)).toBe("input-required");
    const perm = { requestId: p.metadata.shared.interrupt.request_id as string, sessionId: p.metadata.shared.session.id as string };
    const ques = { requestId: q.metadata.shared.interrupt.request_id as string, sessionId: q.metadata.shared.session.id as string };

    await gw.close();
    gw = await startGateway(env, { upstream });

    // the tasks could not survive the restart: failed, with the reason
    for (const [line, id] of [["0.3", p.id], ["1.0", q.id]] as const) {
      const t = await getTask(line, id);
      expect(stateOf(t)).toBe("failed");
      expect(t.metadata.opencode.error.type).toBe("GATEWAY_RESTARTED");
    }
    // …but their OpenCode requests are still pending and listed, on both lines
    for (const line of LINES) {
      const perms = await call(line, "opencode.permissions.list", {});
      await expectValid("extensions/InterruptRecoveryResult", perms);
      expect(perms.items).toEqual([expect.objectContaining({ request_id: perm.requestId, interrupt_type: "permission", task_id: p.id, session_id: perm.sessionId })]);
      const questions = await call(line, "opencode.questions.list", {});
      expect(questions.items).toEqual([expect.objectContaining({ request_id: ques.requestId, interrupt_type: "question", task_id: q.id, session_id: ques.sessionId })]);
    }

    // answering goes to OpenCode, which continues the turn: the model server receives the next request
    model.scriptFor(perm.sessionId, text("Resumed after the restart."));
    const permChats = chatsOf(perm.sessionId).length;
    expect(await call("1.0", "a2a.interrupt.permission.reply", { request_id: perm.requestId, reply: "once" })).toEqual({ ok: true, request_id: perm.requestId });
    await until("OpenCode to continue the permission's turn", () => (chatsOf(perm.sessionId).length > permChats ? true : undefined));
    expect(lastToolResults(perm.sessionId)).toContain("restart-permission");

    model.scriptFor(ques.sessionId, text("Answered after the restart."));
    const quesChats = chatsOf(ques.sessionId).length;
    expect(await call("0.3", "a2a.interrupt.question.reply", { request_id: ques.requestId, answers: [["red"]] })).toEqual({ ok: true, request_id: ques.requestId });
    await until("OpenCode to continue the question's turn", () => (chatsOf(ques.sessionId).length > quesChats ? true : undefined));
    expect(lastToolResults(ques.sessionId)).toContain('\\"Pick a color?\\"=\\"red\\"');

    for (const line of LINES) {
      expect((await call(line, "opencode.permissions.list", {})).items).toEqual([]);
      expect((await call(line, "opencode.questions.list", {})).items).toEqual([]);
    }
    await expectGone("1.0", perm.requestId);
    // the tasks stay failed: the answer does not revive them
    expect(stateOf(await getTask("0.3", p.id))).toBe("failed");
    expect(stateOf(await getTask("1.0", q.id))).toBe("failed");
    expect(model.pending()).toBe(0);
  });
});
