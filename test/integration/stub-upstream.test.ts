// The OpenCode stub (tools/upstream/stub.ts) driven through the generated hey-api client: routes, shapes, SSE
// framing, the event order of scripted turns (as observed on a real opencode 1.18.33) and the test controls.
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { createInterface } from "node:readline";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClient, type Client } from "../../generated/opencode/client/index.js";
import {
  eventSubscribe,
  globalHealth,
  permissionList,
  permissionReply,
  questionList,
  questionReject,
  questionReply,
  sessionAbort,
  sessionCreate,
  sessionDelete,
  sessionGet,
  sessionList,
  sessionMessage,
  sessionMessages,
  sessionPrompt,
  sessionPromptAsync,
  sessionStatus,
} from "../../generated/opencode/sdk.gen.js";
import type { Event, GlobalEvent, Part, ToolPart } from "../../generated/opencode/types.gen.js";
import { failure, hang, text, tool } from "../../tools/upstream/script.js";
import { startStubUpstream, type StubUpstream, type StubUpstreamOptions } from "../../tools/upstream/stub.js";

type AnyEvent = { id?: string; type: string; properties: Record<string, any> };

/** Raw SSE reader: keeps the exact bytes and the parsed frames. */
class SseReader {
  raw = "";
  frames: any[] = [];
  ended = false;
  private readonly controller = new AbortController();
  private constructor(readonly status: number, readonly headers: Headers) {}

  static async open(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
    const controller = new AbortController();
    const res = await fetch(url, { headers, signal: controller.signal });
    const reader = new SseReader(res.status, res.headers);
    reader.controller.signal.addEventListener("abort", () => controller.abort());
    if (res.body === null) return reader;
    const body = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await body.read();
          if (done) break;
          const chunk = decoder.decode(value, { stream: true });
          reader.raw += chunk;
          buffer += chunk;
          let i: number;
          while ((i = buffer.indexOf("\n\n")) >= 0) {
            const frame = buffer.slice(0, i);
            buffer = buffer.slice(i + 2);
            reader.frames.push(JSON.parse(frame.replace(/^data: /, "")));
          }
        }
      } catch {
        // aborted or destroyed
      }
      reader.ended = true;
    })();
    return reader;
  }

  /** /event frames are events; /global/event frames carry them in `payload` */
  get events(): AnyEvent[] {
    return this.frames.map((f) => ("payload" in f ? f.payload : f));
  }

  async waitFor(pred: (e: AnyEvent) => boolean, timeoutMs = 3000): Promise<AnyEvent> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(pred);
      if (found !== undefined) return found;
      if (Date.now() > end) throw new Error(`event not seen; got ${this.events.map((e) => e.type).join(", ")}`);
      await sleep(5);
    }
  }

  async waitUntil(cond: () => boolean, timeoutMs = 3000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!cond()) {
      if (Date.now() > end) throw new Error("condition not met");
      await sleep(5);
    }
  }

  close(): void {
    this.controller.abort();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The event order of a one-reply text turn on a fresh session, as the real 1.18.33 emits it. */
const TEXT_TURN = [
  "session.updated", // first prompt: agent + model set
  "message.updated:user",
  "message.part.updated:text",
  "session.updated",
  "session.status:busy",
  "message.updated:assistant",
  "session.updated",
  "session.diff",
  "message.updated:user",
  "session.status:busy",
  "message.part.updated:step-start",
  "message.part.updated:text",
  "message.part.delta",
  "message.part.delta",
  "message.part.updated:text",
  "message.part.updated:step-finish",
  "message.updated:assistant",
  "message.updated:assistant",
  "session.status:busy",
  "session.status:idle",
  "session.idle",
  "session.updated",
  "session.diff",
  "message.updated:user",
];

function label(e: AnyEvent): string {
  const p = e.properties;
  if (e.type === "message.part.updated") return `${e.type}:${p.part.type}${p.part.type === "tool" ? `/${p.part.state.status}` : ""}`;
  if (e.type === "message.updated") return `${e.type}:${p.info.role}`;
  if (e.type === "session.status") return `${e.type}:${p.status.type}`;
  return e.type;
}

function sessionEvents(reader: SseReader, sessionID: string): AnyEvent[] {
  return reader.events.filter((e) => e.properties?.sessionID === sessionID);
}

let stub: StubUpstream;
let client: Client;
const readers: SseReader[] = [];

async function start(opts: StubUpstreamOptions = {}): Promise<void> {
  await stub?.close();
  stub = await startStubUpstream({ directory: "/tmp/stub-workspace", ...opts });
  client = createClient({ baseUrl: stub.url });
}

async function events(path = "/event"): Promise<SseReader> {
  const reader = await SseReader.open(stub.url + path);
  readers.push(reader);
  await reader.waitFor((e) => e.type === "server.connected");
  return reader;
}

async function newSession(title = "stub test", extra: Record<string, unknown> = {}): Promise<string> {
  const { data } = await sessionCreate({ client, body: { title, ...extra } });
  if (data === undefined) throw new Error("session create failed");
  return data.id;
}

const ask = (sessionID: string, words = "hi") => sessionPrompt({ client, path: { sessionID }, body: { parts: [{ type: "text", text: words }] } });

beforeEach(async () => {
  await start();
});

afterEach(async () => {
  for (const r of readers.splice(0)) r.close();
  await stub.close();
});

describe("stub upstream: HTTP surface", () => {
  it("answers /global/health like the real server", async () => {
    const { data, response } = await globalHealth({ client });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(data).toEqual({ healthy: true, version: "1.18.33" });
    await start({ version: "9.9.9" });
    expect((await globalHealth({ client })).data).toEqual({ healthy: true, version: "9.9.9" });
  });

  it("creates, gets, lists and deletes sessions; unknown ids are NotFoundError 404", async () => {
    const ev = await events();
    const { data: created } = await sessionCreate({ client, body: { title: "alpha", permission: [{ permission: "bash", pattern: "*", action: "ask" }] } });
    expect(created?.id).toMatch(/^ses_[0-9a-f]{12}[0-9A-Za-z]{14}$/);
    expect(created).toMatchObject({ title: "alpha", directory: "/tmp/stub-workspace", version: "1.18.33", path: "", cost: 0 });
    expect(created?.permission).toEqual([{ permission: "bash", pattern: "*", action: "ask" }]);
    const id = created!.id;
    const createdEvent = await ev.waitFor((e) => e.type === "session.created");
    expect(createdEvent.properties).toEqual({ sessionID: id, info: created });
    expect(createdEvent.id).toMatch(/^evt_/);

    const untitled = await sessionCreate({ client, body: {} });
    expect(untitled.data?.title).toMatch(/^New session - \d{4}-\d\d-\d\dT/);

    expect((await sessionGet({ client, path: { sessionID: id } })).data).toEqual(created);
    const list = (await sessionList({ client })).data ?? [];
    expect(list.map((s) => s.id).sort()).toEqual([id, untitled.data!.id].sort());
    expect((await sessionList({ client, query: { directory: "/elsewhere" } })).data).toEqual([]);

    const missing = await sessionGet({ client, path: { sessionID: "ses_nope" } });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toEqual({ name: "NotFoundError", data: { message: "Session not found: ses_nope" } });

    expect((await sessionDelete({ client, path: { sessionID: id } })).data).toBe(true);
    await ev.waitFor((e) => e.type === "session.deleted" && e.properties.sessionID === id);
    expect((await sessionGet({ client, path: { sessionID: id } })).response.status).toBe(404);
    expect((await sessionDelete({ client, path: { sessionID: id } })).response.status).toBe(404);
  });

  it("answers unknown routes 404, bad bodies 400, and records every request", async () => {
    const res = await fetch(`${stub.url}/no/such/route?x=1`);
    expect(res.status).toBe(404);
    const id = await newSession();
    const bad = await fetch(`${stub.url}/session/${id}/message`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ name: "BadRequest", data: { message: 'Missing key\n  at ["parts"]', kind: "Payload" } });
    const badId = await sessionPrompt({ client, path: { sessionID: id }, body: { messageID: "nope", parts: [{ type: "text", text: "x" }] } });
    expect(badId.response.status).toBe(400);
    const recorded = stub.requests.find((r) => r.path === "/no/such/route");
    expect(recorded).toMatchObject({ method: "GET", query: { x: "1" } });
    expect(stub.requests.find((r) => r.method === "POST" && r.path === "/session")?.body).toEqual({ title: "stub test" });
  });
});

describe("stub upstream: turns", () => {
  it("streams a text turn over /event in the real server's order", async () => {
    const ev = await events();
    const id = await newSession();
    stub.script(text(["Hello ", "world"]));
    const { data, response } = await ask(id);
    expect(response.status).toBe(200);
    await ev.waitFor((e) => e.type === "message.updated" && e.properties.info.role === "user" && e.properties.info.summary !== undefined && ev.events.filter((x) => x.type === "session.idle").length > 0);
    await sleep(20);
    const got = sessionEvents(ev, id).filter((e) => e.type !== "session.created");
    expect(got.map(label)).toEqual(TEXT_TURN);

    const deltas = got.filter((e) => e.type === "message.part.delta").map((e) => e.properties);
    expect(deltas.map((d) => d.delta)).toEqual(["Hello ", "world"]);
    expect(deltas[0]).toMatchObject({ sessionID: id, messageID: data?.info.id, field: "text" });
    const textParts = got.filter((e) => e.type === "message.part.updated" && e.properties.part.type === "text" && e.properties.part.messageID === data?.info.id);
    expect(textParts.map((e) => e.properties.part.text)).toEqual(["", "Hello world"]);
    expect(textParts[1]?.properties.part.time.end).toBeTypeOf("number");

    // the sync answer is the last assistant message
    expect(data?.info).toMatchObject({ role: "assistant", finish: "stop", modelID: "fake-model", providerID: "fake", mode: "build", agent: "build" });
    expect(data?.info.time.completed).toBeTypeOf("number");
    expect(data?.info.tokens).toEqual({ total: 12, input: 10, output: 2, reasoning: 0, cache: { write: 0, read: 0 } });
    expect(data?.parts.map((p: Part) => p.type)).toEqual(["step-start", "text", "step-finish"]);
    const messages = (await sessionMessages({ client, path: { sessionID: id } })).data ?? [];
    expect(messages.map((m) => m.info.role)).toEqual(["user", "assistant"]);
    expect(messages[1]?.info).toMatchObject({ role: "assistant", parentID: messages[0]?.info.id });
    expect((await sessionMessages({ client, path: { sessionID: id }, query: { limit: 1 } })).data?.map((m) => m.info.id)).toEqual([data?.info.id]);
    const one = await sessionMessage({ client, path: { sessionID: id, messageID: data!.info.id } });
    expect(one.data?.parts.map((p: Part) => p.type)).toEqual(["step-start", "text", "step-finish"]);
    expect((await sessionMessage({ client, path: { sessionID: id, messageID: "msg_nope" } })).response.status).toBe(404);
    // a second turn of the same session has no leading session.updated, and the default reply is "ok"
    const second = await ask(id);
    expect(second.data?.parts.find((p: Part) => p.type === "text")).toMatchObject({ text: "ok" });
  });

  it("emits reasoning before the text, and uses the session's own script first", async () => {
    const ev = await events();
    const id = await newSession();
    stub.script(text("global"));
    stub.scriptFor(id, text(["an", "swer"], { reasoning: ["think ", "hard"] }));
    const { data } = await ask(id);
    await ev.waitFor((e) => e.type === "session.idle" && e.properties.sessionID === id);
    expect(data?.parts.map((p: Part) => p.type)).toEqual(["step-start", "reasoning", "text", "step-finish"]);
    expect(data?.parts[1]).toMatchObject({ type: "reasoning", text: "think hard" });
    const kinds = sessionEvents(ev, id).filter((e) => e.type === "message.part.updated" || e.type === "message.part.delta").map((e) => (e.type === "message.part.delta" ? `delta:${e.properties.delta}` : e.properties.part.type));
    expect(kinds).toEqual(["text", "step-start", "reasoning", "delta:think ", "delta:hard", "reasoning", "text", "delta:an", "delta:swer", "text", "step-finish"]);
    expect((await ask(id)).data?.parts.find((p: Part) => p.type === "text")).toMatchObject({ text: "global" });
  });

  it("prompt_async answers 204 at once; /global/event frames carry directory, project and payload", async () => {
    const global = await events("/global/event");
    const id = await newSession();
    stub.script(text(["x", "y"], { delayMs: 40 }));
    const res = await sessionPromptAsync({ client, path: { sessionID: id }, body: { parts: [{ type: "text", text: "go" }] } });
    expect(res.response.status).toBe(204);
    await global.waitFor((e) => e.type === "message.part.delta");
    expect((await sessionStatus({ client })).data).toEqual({ [id]: { type: "busy" } });
    await global.waitFor((e) => e.type === "session.idle" && e.properties.sessionID === id);
    expect((await sessionStatus({ client })).data).toEqual({});

    // framing: only `data:` lines, frames separated by a blank line
    expect(global.headers.get("content-type")).toBe("text/event-stream");
    expect(global.raw.split("\n\n").filter((f) => f !== "").every((f) => f.startsWith("data: {") && !f.includes("\n"))).toBe(true);
    expect(global.frames[0]).toEqual({ payload: { id: expect.stringMatching(/^evt_/), type: "server.connected", properties: {} } });
    const frames = global.frames.slice(1) as GlobalEvent[];
    expect(frames.every((f) => f.directory === "/tmp/stub-workspace" && typeof f.project === "string")).toBe(true);
    // the real server's `sync` duplicates follow the persisted events, with the same id
    const created = frames.findIndex((f) => f.payload.type === "session.created");
    expect(frames[created + 1]?.payload).toMatchObject({ type: "sync", id: frames[created]?.payload.id, syncEvent: { type: "session.created.1", aggregateID: id, seq: 0 } });
    expect(frames.filter((f) => f.payload.type === "message.part.delta")).toHaveLength(2);
    expect(frames.some((f) => f.payload.type === "sync" && (f.payload as { syncEvent: { type: string } }).syncEvent.type.startsWith("message.part.delta"))).toBe(false);
  });

  it("queues a prompt sent while busy and answers both with one more reply and a single idle", async () => {
    const ev = await events();
    const id = await newSession();
    stub.script(text(["1", "2", "3"], { delayMs: 30 }), text("second"));
    await sessionPromptAsync({ client, path: { sessionID: id }, body: { parts: [{ type: "text", text: "q1" }] } });
    await ev.waitFor((e) => e.type === "message.part.delta");
    const sync = await ask(id, "q2");
    expect(sync.data?.parts.find((p: Part) => p.type === "text")).toMatchObject({ text: "second" });
    await sleep(20);
    expect(sessionEvents(ev, id).filter((e) => e.type === "session.idle")).toHaveLength(1);
    const messages = (await sessionMessages({ client, path: { sessionID: id } })).data ?? [];
    expect(messages.map((m) => m.info.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(messages[3]?.info).toMatchObject({ role: "assistant", parentID: messages[2]?.info.id });
  });

  it("runs a bash tool call, then the next reply", async () => {
    const ev = await events();
    const id = await newSession();
    stub.script(tool("bash", { command: "echo hi && echo there", description: "greet" }, { id: "call_b" }), text("done"));
    const { data } = await ask(id);
    expect(data?.info.finish).toBe("stop");
    await ev.waitFor((e) => e.type === "session.idle" && e.properties.sessionID === id);
    const tools = sessionEvents(ev, id).filter((e) => e.type === "message.part.updated" && e.properties.part.type === "tool").map((e) => e.properties.part as ToolPart);
    expect(tools.map((t) => t.state.status)).toEqual(["pending", "running", "running", "running", "running", "completed"]);
    expect(tools[5]?.state).toMatchObject({ status: "completed", output: "hi\nthere\n", title: "echo hi && echo there", metadata: { exit: 0, truncated: false } });
    expect(tools[0]).toMatchObject({ callID: "call_b", tool: "bash", state: { status: "pending", input: {}, raw: "" } });
    const assistants = sessionEvents(ev, id).filter((e) => e.type === "message.updated" && e.properties.info.role === "assistant" && e.properties.info.time.completed);
    expect(assistants.map((e) => e.properties.info.finish)).toEqual(["tool-calls", "stop"]);
  });

  it("question: asked, listed, replied; the turn continues", async () => {
    const ev = await events();
    const id = await newSession();
    const questions = [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }];
    stub.script(tool("question", { questions }, { id: "call_q" }), text("blue it is"));
    const pending = ask(id);
    const asked = await ev.waitFor((e) => e.type === "question.asked");
    expect(asked.properties).toEqual({ id: expect.stringMatching(/^que_/), sessionID: id, questions, tool: { messageID: expect.stringMatching(/^msg_/), callID: "call_q" } });
    expect((await questionList({ client })).data).toEqual([asked.properties]);
    const reply = await questionReply({ client, path: { requestID: asked.properties.id }, body: { answers: [["blue"]] } });
    expect(reply.data).toBe(true);
    const { data } = await pending;
    expect(data?.parts.find((p: Part) => p.type === "text")).toMatchObject({ text: "blue it is" });
    const replied = await ev.waitFor((e) => e.type === "question.replied");
    expect(replied.properties).toEqual({ sessionID: id, requestID: asked.properties.id, answers: [["blue"]] });
    const labels = sessionEvents(ev, id).map(label);
    expect(labels.slice(labels.indexOf("question.asked") - 1, labels.indexOf("question.replied") + 2)).toEqual([
      "message.part.updated:tool/pending",
      "question.asked",
      "message.part.updated:tool/running",
      "question.replied",
      "message.part.updated:tool/completed",
    ]);
    const toolPart = (await sessionMessages({ client, path: { sessionID: id } })).data?.flatMap((m) => m.parts).find((p): p is ToolPart => p.type === "tool");
    expect(toolPart?.state).toMatchObject({ status: "completed", output: 'User has answered your questions: "Pick a color?"="blue". You can now continue with the user\'s answers in mind.' });
    expect((await questionList({ client })).data).toEqual([]);
    const again = await questionReply({ client, path: { requestID: asked.properties.id }, body: { answers: [["blue"]] } });
    expect(again.response.status).toBe(404);
    expect(again.error).toMatchObject({ _tag: "QuestionNotFoundError", requestID: asked.properties.id });
  });

  it("question: rejected; the tool errors and the turn ends without another reply", async () => {
    const ev = await events();
    const id = await newSession();
    stub.script(tool("question", { questions: [{ question: "Q?", header: "Q", options: [{ label: "a", description: "A" }] }] }), text("left over"));
    const pending = ask(id);
    const asked = await ev.waitFor((e) => e.type === "question.asked");
    expect((await questionReject({ client, path: { requestID: asked.properties.id } })).data).toBe(true);
    const { data } = await pending;
    expect(data?.info.finish).toBe("tool-calls");
    expect(data?.parts.find((p: Part) => p.type === "tool")).toMatchObject({ state: { status: "error", error: "The user dismissed this question" } });
    await ev.waitFor((e) => e.type === "session.idle" && e.properties.sessionID === id);
    const tail = sessionEvents(ev, id).map(label);
    expect(tail.slice(tail.indexOf("question.rejected"))).toEqual([
      "question.rejected",
      "message.part.updated:tool/error",
      "message.part.updated:step-finish",
      "message.updated:assistant",
      "message.updated:assistant",
      "session.status:idle",
      "session.idle",
      "session.updated",
      "session.diff",
      "message.updated:user",
    ]);
    // the unused reply is still queued
    expect((await ask(id)).data?.parts.find((p: Part) => p.type === "text")).toMatchObject({ text: "left over" });
  });

  it("permission: a read outside the directory asks external_directory; reply once continues the turn", async () => {
    const ev = await events();
    const id = await newSession();
    stub.script(tool("read", { filePath: "/etc/hostname" }, { id: "call_r" }), text("read ok"));
    const pending = ask(id);
    const asked = await ev.waitFor((e) => e.type === "permission.asked");
    expect(asked.properties).toEqual({
      id: expect.stringMatching(/^per_/),
      sessionID: id,
      permission: "external_directory",
      patterns: ["/etc/*"],
      metadata: { filepath: "/etc/hostname", parentDir: "/etc" },
      always: ["/etc/*"],
      tool: { messageID: expect.stringMatching(/^msg_/), callID: "call_r" },
    });
    expect((await permissionList({ client })).data).toEqual([asked.properties]);
    expect((await permissionReply({ client, path: { requestID: asked.properties.id }, body: { reply: "once" } })).data).toBe(true);
    expect((await pending).data?.parts.find((p: Part) => p.type === "text")).toMatchObject({ text: "read ok" });
    expect((await ev.waitFor((e) => e.type === "permission.replied")).properties).toEqual({ sessionID: id, requestID: asked.properties.id, reply: "once" });
    const labels = sessionEvents(ev, id).map(label);
    expect(labels.slice(labels.indexOf("permission.asked") - 1, labels.indexOf("permission.replied") + 2)).toEqual([
      "message.part.updated:tool/running",
      "permission.asked",
      "permission.replied",
      "message.part.updated:tool/completed",
    ]);
    expect((await permissionList({ client })).data).toEqual([]);
    expect((await permissionReply({ client, path: { requestID: asked.properties.id }, body: { reply: "once" } })).response.status).toBe(404);
  });

  it("permission: a session rule asks for bash; reject with a message errors the tool and takes one more reply", async () => {
    const ev = await events();
    const id = await newSession("rules", { permission: [{ permission: "bash", pattern: "*", action: "ask" }] });
    stub.script(tool("bash", { command: "echo X && ls", description: "x" }, { id: "call_p" }), text("understood"));
    const pending = ask(id);
    const asked = await ev.waitFor((e) => e.type === "permission.asked");
    expect(asked.properties).toMatchObject({ permission: "bash", patterns: ["echo X", "ls"], always: ["echo *", "ls *"], metadata: { command: "echo X && ls" } });
    await permissionReply({ client, path: { requestID: asked.properties.id }, body: { reply: "reject", message: "no thanks" } });
    const { data } = await pending;
    expect(data?.parts.find((p: Part) => p.type === "text")).toMatchObject({ text: "understood" });
    const toolPart = (await sessionMessages({ client, path: { sessionID: id } })).data?.flatMap((m) => m.parts).find((p): p is ToolPart => p.type === "tool");
    expect(toolPart?.state).toMatchObject({ status: "error", error: "The user rejected permission to use this specific tool call with the following feedback: no thanks" });
    expect((await ev.waitFor((e) => e.type === "permission.replied")).properties.reply).toBe("reject");
  });

  it("error reply: session.error APIError, the sync call still answers 200 with info.error", async () => {
    const ev = await events();
    const id = await newSession();
    stub.script(failure(400, "bad things"));
    const { data, response } = await ask(id);
    expect(response.status).toBe(200);
    await ev.waitUntil(() => sessionEvents(ev, id).filter((e) => e.type === "session.idle").length === 2);
    expect(data?.parts).toEqual([]);
    expect(data?.info.error).toMatchObject({ name: "APIError", data: { message: "bad things", statusCode: 400, isRetryable: false } });
    await sleep(20);
    const labels = sessionEvents(ev, id).map(label);
    expect(labels.slice(labels.indexOf("session.error"))).toEqual([
      "session.error",
      "session.status:idle",
      "session.idle",
      "message.updated:assistant",
      "session.status:idle",
      "session.idle",
    ]);
    const err = sessionEvents(ev, id).find((e) => e.type === "session.error");
    expect(err?.properties.error.data.responseBody).toBe(JSON.stringify({ error: { message: "bad things" } }));
  });

  it("hang + abort: MessageAbortedError, the partial text is kept, idle comes twice", async () => {
    const ev = await events();
    const id = await newSession();
    stub.script(hang({ chunks: ["partial "] }));
    const pending = ask(id);
    await ev.waitFor((e) => e.type === "message.part.delta");
    expect((await sessionStatus({ client })).data).toEqual({ [id]: { type: "busy" } });
    const from = sessionEvents(ev, id).length;
    expect((await sessionAbort({ client, path: { sessionID: id } })).data).toBe(true);
    const { data } = await pending;
    await ev.waitUntil(() => sessionEvents(ev, id).filter((e) => e.type === "session.idle").length === 2);
    expect(data?.info.error).toEqual({ name: "MessageAbortedError", data: { message: "Aborted" } });
    expect(data?.info.time.completed).toBeTypeOf("number");
    expect(data?.parts.map((p: Part) => p.type)).toEqual(["step-start", "text"]);
    expect(data?.parts[1]).toMatchObject({ text: "partial " });
    await sleep(20);
    expect(sessionEvents(ev, id).slice(from).map(label)).toEqual([
      "session.error",
      "session.status:idle",
      "session.idle",
      "message.part.updated:text",
      "message.updated:assistant",
      "session.status:idle",
      "session.idle",
    ]);
    expect((await sessionStatus({ client })).data).toEqual({});
    // abort of an idle session is still true and still announces idle
    expect((await sessionAbort({ client, path: { sessionID: id } })).data).toBe(true);
    await ev.waitUntil(() => sessionEvents(ev, id).filter((e) => e.type === "session.idle").length === 3);
  });

  it("hang with holdMs finishes normally", async () => {
    const id = await newSession();
    stub.script(hang({ chunks: ["held"], holdMs: 30 }));
    const { data } = await ask(id);
    expect(data?.info.finish).toBe("stop");
    expect(data?.parts.find((p: Part) => p.type === "text")).toMatchObject({ text: "held" });
  });
});

describe("stub upstream: auth and test controls", () => {
  it("Basic auth: 401 with the realm on every route, 200 with the right credentials", async () => {
    await start({ password: "s3cret" });
    for (const path of ["/global/health", "/event", "/doc", "/session", "/nope"]) {
      const res = await fetch(stub.url + path);
      expect(res.status, path).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Basic realm="Secure Area"');
      expect(await res.text()).toBe("");
    }
    const basic = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString("base64")}` });
    expect((await fetch(`${stub.url}/global/health`, { headers: basic("opencode", "wrong") })).status).toBe(401);
    expect((await fetch(`${stub.url}/global/health`, { headers: basic("bob", "s3cret") })).status).toBe(401);
    const authed = createClient({ baseUrl: stub.url, headers: basic("opencode", "s3cret") });
    expect((await globalHealth({ client: authed })).data).toEqual({ healthy: true, version: "1.18.33" });
    const { stream } = await eventSubscribe({ client: authed, sseMaxRetryAttempts: 1 });
    const first = await stream.next();
    expect((first.value as Event).type).toBe("server.connected");
    await stream.return(undefined);
    await start({ password: "s3cret", username: "bob" });
    expect((await fetch(`${stub.url}/global/health`, { headers: basic("bob", "s3cret") })).status).toBe(200);
  });

  it("failNext injects a status/body, a destroyed socket or a delay, once", async () => {
    stub.failNext("GET /global/health", { status: 503, body: { name: "Overloaded" } });
    const failed = await fetch(`${stub.url}/global/health`);
    expect(failed.status).toBe(503);
    expect(await failed.json()).toEqual({ name: "Overloaded" });
    expect((await fetch(`${stub.url}/global/health`)).status).toBe(200);

    const id = await newSession();
    stub.failNext("POST /session/*/message", { destroy: true });
    await expect(fetch(`${stub.url}/session/${id}/message`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ parts: [{ type: "text", text: "x" }] }) })).rejects.toThrow();

    stub.failNext(/^GET \/session\/status$/, { delayMs: 150 });
    const t0 = Date.now();
    expect((await sessionStatus({ client })).data).toEqual({});
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    const t1 = Date.now();
    await sessionStatus({ client });
    expect(Date.now() - t1).toBeLessThan(140);
  });

  it("heartbeats every heartbeatMs on both streams until paused", async () => {
    await start({ heartbeatMs: 30 });
    const ev = await events();
    const global = await events("/global/event");
    await ev.waitUntil(() => ev.events.filter((e) => e.type === "server.heartbeat").length >= 2);
    await global.waitUntil(() => global.frames.filter((f) => f.payload.type === "server.heartbeat").length >= 2);
    const beat = global.frames.find((f) => f.payload.type === "server.heartbeat");
    expect(beat).toEqual({ payload: { id: expect.stringMatching(/^evt_/), type: "server.heartbeat", properties: {} } });
    stub.pauseHeartbeats(true);
    await sleep(40);
    const count = ev.events.length;
    await sleep(120);
    expect(ev.events.length).toBe(count);
    stub.pauseHeartbeats(false);
    await ev.waitUntil(() => ev.events.length > count);
  });

  it("emit() reaches /event of that directory and /global/event; dropEventStreams() ends them", async () => {
    const ev = await events();
    const other = await events("/event?directory=/tmp/other-dir");
    const global = await events("/global/event");
    expect(stub.eventConnections()).toBe(3);
    stub.emit({ type: "todo.updated", properties: { sessionID: "ses_x", todos: [] } });
    stub.emit({ type: "file.edited", properties: { file: "/tmp/other-dir/a" } }, { directory: "/tmp/other-dir" });
    await global.waitUntil(() => global.frames.length >= 3);
    expect(ev.events.map((e) => e.type)).toEqual(["server.connected", "todo.updated"]);
    expect(other.events.map((e) => e.type)).toEqual(["server.connected", "file.edited"]);
    expect(global.frames.slice(1).map((f) => [f.directory, f.payload.type])).toEqual([
      ["/tmp/stub-workspace", "todo.updated"],
      ["/tmp/other-dir", "file.edited"],
    ]);
    stub.dropEventStreams();
    await ev.waitUntil(() => ev.ended && other.ended && global.ended);
    expect(stub.eventConnections()).toBe(0);
    const again = await events();
    expect(again.events[0]?.type).toBe("server.connected");
    expect(stub.eventConnections()).toBe(1);
  });

  it("burst() emits round-robin deltas as fast as readers take them; also over HTTP", async () => {
    const ev = await events();
    const global = await events("/global/event");
    const result = await stub.burst({ sessions: ["ses_a", "ses_b"], eventsPerSession: 500, deltaBytes: 8 });
    expect(result.events).toBe(1000);
    expect(result.ms).toBeGreaterThanOrEqual(0);
    await ev.waitUntil(() => ev.events.filter((e) => e.type === "message.part.delta").length === 1000);
    await global.waitUntil(() => global.events.filter((e) => e.type === "message.part.delta").length === 1000);
    const deltas = ev.events.filter((e) => e.type === "message.part.delta");
    expect(deltas.slice(0, 4).map((e) => e.properties.sessionID)).toEqual(["ses_a", "ses_b", "ses_a", "ses_b"]);
    expect(deltas[0]?.properties).toMatchObject({ field: "text", delta: "xxxxxxxx" });

    const res = await fetch(`${stub.url}/__stub/burst`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sessions: ["ses_c"], eventsPerSession: 10 }) });
    expect((await res.json()).events).toBe(10);
    const stats = await (await fetch(`${stub.url}/__stub/stats`)).json();
    expect(stats).toMatchObject({ eventConnections: 2, slowReadersDropped: 0 });
    expect(stats.eventsEmitted).toBeGreaterThanOrEqual(1010);
  });

  it("drops SSE readers that stop reading: past maxBufferedBytes, or stalled during a burst", async () => {
    // The stall timeout is what a reader that keeps reading must never hit: 100 ms was too short for the healthy
    // reader on a loaded CI machine (it was dropped too, during the 16 MB burst).
    await start({ maxBufferedBytes: 256 * 1024, slowReaderTimeoutMs: 1000 });
    /** a raw /event connection that never reads */
    const stalledReader = async () => {
      const socket = connect(stub.port, "127.0.0.1");
      await new Promise<void>((r) => socket.once("connect", () => r()));
      socket.pause();
      const before = stub.eventConnections();
      socket.write("GET /event HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      const deadline = Date.now() + 2000;
      while (stub.eventConnections() === before && Date.now() < deadline) await sleep(5);
      return socket;
    };
    const healthy = await events();

    // turn events never wait for a reader; the backlog limit cuts a stalled one off
    const first = await stalledReader();
    expect(stub.eventConnections()).toBe(2);
    const big = "y".repeat(64 * 1024);
    for (let i = 0; i < 300 && stub.stats().slowReadersDropped === 0; i++) {
      stub.emit({ type: "message.part.delta", properties: { sessionID: "ses_s", messageID: "msg_s", partID: "prt_s", field: "text", delta: big } });
      await new Promise((r) => setImmediate(r));
    }
    expect(stub.stats().slowReadersDropped).toBe(1);
    expect(stub.eventConnections()).toBe(1);
    first.destroy();

    // burst() waits for 'drain', but only slowReaderTimeoutMs
    const second = await stalledReader();
    const result = await stub.burst({ sessions: ["ses_slow"], eventsPerSession: 4000, deltaBytes: 4096 });
    expect(result.events).toBe(4000);
    expect(stub.stats().slowReadersDropped).toBe(2);
    expect(stub.eventConnections()).toBe(1);
    second.destroy();
    await healthy.waitUntil(() => healthy.events.filter((e) => e.properties?.sessionID === "ses_slow").length === 4000, 10_000);
  });
});

describe("stub upstream: CLI", () => {
  it("prints the listening line, serves, and exits on SIGTERM", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "tools/upstream/stub.ts", "--port", "0", "--heartbeat-ms", "50"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const line = await new Promise<string>((resolveLine, reject) => {
        const timer = setTimeout(() => reject(new Error("no listening line")), 20_000);
        createInterface({ input: child.stdout! }).once("line", (l) => {
          clearTimeout(timer);
          resolveLine(l);
        });
        child.once("exit", (code) => reject(new Error(`exited ${code}`)));
      });
      const match = /^opencode stub listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
      expect(match).not.toBeNull();
      const res = await fetch(`${match![1]}/global/health`);
      expect(await res.json()).toEqual({ healthy: true, version: "1.18.33" });
      const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });
});
