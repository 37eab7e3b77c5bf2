// StreamMapper: one OpenCode turn's upstream events → A2A artifact/status updates and the turn's outcome.
// Hand-built sequences follow the real event order (opencode-upstream.md §7–§8.3); the last block feeds the mapper
// with sequences the stub upstream emits (same order as the real server, proven by the stub parity test).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { Event as OpencodeEvent } from "../../generated/opencode/types.gen.js";
import { EMPTY_OUTPUT_TEXT, StreamMapper, type MapperOutput, type TurnContext } from "../../src/bridge/stream-mapper.js";
import { TEXT_PART_SEPARATOR } from "../../src/bridge/text-lanes.js";
import { acceptsJson } from "../../src/bridge/tool-blocks.js";
import type { ArtifactUpdateEvent, StatusUpdateEvent } from "../../src/protocol/model.js";
import { startStubUpstream, type StubUpstream } from "../../tools/upstream/stub.js";
import { failure, hang, text as textReply, tool as toolReply, type Reply } from "../../tools/upstream/script.js";
import { collectUntil, link, type Link } from "../support/upstream.js";

// -- event builders (shapes of generated/opencode/types.gen.ts) --------------------------------------------------

const SES = "ses_turn";
const USER = "msg_user1";
const A1 = "msg_asst1";
const A2 = "msg_asst2";
let evtCounter = 0;

const ev = (type: string, properties: Record<string, unknown>): OpencodeEvent =>
  ({ id: `evt_${++evtCounter}`, type, properties }) as unknown as OpencodeEvent;
const tokens = (input: number, output: number, extra: { reasoning?: number; read?: number; write?: number } = {}) => ({
  total: input + output + (extra.reasoning ?? 0),
  input,
  output,
  reasoning: extra.reasoning ?? 0,
  cache: { read: extra.read ?? 0, write: extra.write ?? 0 },
});
const userMsg = (id = USER, session = SES) =>
  ev("message.updated", {
    sessionID: session,
    info: { id, sessionID: session, role: "user", time: { created: 1 }, agent: "build", model: { providerID: "fake", modelID: "fake-model" } },
  });
const asstMsg = (id: string, extra: Record<string, unknown> = {}, session = SES) =>
  ev("message.updated", {
    sessionID: session,
    info: {
      id,
      sessionID: session,
      role: "assistant",
      parentID: USER,
      time: { created: 1 },
      modelID: "fake-model",
      providerID: "fake",
      mode: "build",
      agent: "build",
      path: { cwd: "/w", root: "/w" },
      cost: 0,
      tokens: tokens(0, 0),
      ...extra,
    },
  });
const part = (p: Record<string, unknown>, session = SES) => ev("message.part.updated", { sessionID: session, part: { sessionID: session, ...p }, time: 1 });
const textPart = (id: string, messageID: string, text: string, session = SES) => part({ id, messageID, type: "text", text }, session);
const reasoningPart = (id: string, messageID: string, text: string) => part({ id, messageID, type: "reasoning", text, time: { start: 1 } });
const delta = (partID: string, messageID: string, d: string, session = SES) =>
  ev("message.part.delta", { sessionID: session, messageID, partID, field: "text", delta: d });
const stepStart = (id: string, messageID: string) => part({ id, messageID, type: "step-start" });
const stepFinish = (id: string, messageID: string, reason: string, t = tokens(10, 4), cost = 0) =>
  part({ id, messageID, type: "step-finish", reason, tokens: t, cost });
const toolPart = (id: string, messageID: string, callID: string, state: Record<string, unknown>) => part({ id, messageID, type: "tool", callID, tool: "bash", state });
const status = (type: "busy" | "idle") => ev("session.status", { sessionID: SES, status: { type } });
const idle = (session = SES) => ev("session.idle", { sessionID: session });

/** What precedes the model's output (§8.3 items 1–4). */
const prelude = (assistant = A1): OpencodeEvent[] => [
  userMsg(),
  textPart("prt_user", USER, "hi there"),
  ev("session.updated", { sessionID: SES, info: { id: SES } }),
  status("busy"),
  asstMsg(assistant),
  ev("session.diff", { sessionID: SES, diff: [] }),
  userMsg(),
  status("busy"),
];
/** What follows it (§8.3 items 7–8), for an assistant message that finished with `finish`. */
const epilogue = (assistant = A1, t = tokens(10, 4), cost = 0): OpencodeEvent[] => [
  asstMsg(assistant, { finish: "stop", tokens: t, cost }),
  asstMsg(assistant, { finish: "stop", tokens: t, cost, time: { created: 1, completed: 2 } }),
  status("busy"),
  status("idle"),
  idle(),
  ev("session.updated", { sessionID: SES, info: { id: SES } }),
  userMsg(),
];

const ctx = (extra: Partial<TurnContext> = {}): TurnContext => ({
  taskId: "task-1",
  contextId: "ctx-1",
  sessionId: SES,
  userMessageId: USER,
  userText: "hi there",
  acceptedOutputModes: ["text/plain", "application/json"],
  now: () => "2026-01-01T00:00:00.000Z",
  ...extra,
});

function run(mapper: StreamMapper, events: OpencodeEvent[]): MapperOutput[] {
  return events.flatMap((e) => mapper.push(e));
}
/** The artifact and status updates among the outputs, in order. */
const eventsOf = (out: MapperOutput[]): (ArtifactUpdateEvent | StatusUpdateEvent)[] => out.flatMap((o) => (o.kind === "artifact" || o.kind === "status" ? [o.event] : []));
const artifactsOf = (out: MapperOutput[], artifactId?: string): ArtifactUpdateEvent[] =>
  eventsOf(out).filter((o): o is ArtifactUpdateEvent => o.kind === "artifact-update" && (artifactId === undefined || o.artifact.artifactId === artifactId));
const statusesOf = (out: MapperOutput[]): StatusUpdateEvent[] => eventsOf(out).filter((o): o is StatusUpdateEvent => o.kind === "status-update");
const terminals = (out: MapperOutput[]) => out.filter((o) => o.kind === "terminal");
const chunkTexts = (updates: ArtifactUpdateEvent[]): string[] => updates.map((u) => (u.artifact.parts[0]?.kind === "text" ? u.artifact.parts[0].text : "<data>"));
const streamMeta = (u: ArtifactUpdateEvent | StatusUpdateEvent) =>
  ((u.kind === "artifact-update" ? u.artifact.metadata : u.metadata) as { shared: { stream: Record<string, unknown> } }).shared.stream;
const shared = (u: StatusUpdateEvent) => (u.metadata as { shared: Record<string, Record<string, unknown>> }).shared;

/** What an A2A client holds for one artifact after applying the updates (append vs replace). */
function clientView(updates: ArtifactUpdateEvent[]): string {
  let view = "";
  for (const u of updates) {
    const t = u.artifact.parts.map((p) => (p.kind === "text" ? p.text : "")).join("");
    view = u.append === true ? view + t : t;
  }
  return view;
}

/** Sequence numbers of every artifact/status update, in emission order. */
const sequences = (out: MapperOutput[]): number[] => eventsOf(out).map((o) => streamMeta(o).sequence as number);
const strictlyIncreasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > (xs[i - 1] as number));

// -- hand-built sequences ----------------------------------------------------------------------------------------

describe("text", () => {
  const plain = (): OpencodeEvent[] => [
    ...prelude(),
    stepStart("prt_s1", A1),
    textPart("prt_t1", A1, ""),
    delta("prt_t1", A1, "Hello "),
    delta("prt_t1", A1, "world."),
    textPart("prt_t1", A1, "Hello world."),
    stepFinish("prt_f1", A1, "stop"),
    ...epilogue(),
  ];

  it("streams deltas as appended chunks of one text lane and completes on idle", () => {
    const mapper = new StreamMapper(ctx({ startSequence: 10 }));
    const out = run(mapper, plain());
    const text = artifactsOf(out, "task-1:text");
    expect(chunkTexts(text)).toEqual(["Hello ", "world."]);
    expect(text.map((u) => u.append)).toEqual([false, true]);
    expect(text[0]).toMatchObject({ kind: "artifact-update", taskId: "task-1", contextId: "ctx-1", lastChunk: false, artifact: { name: "response" } });
    expect(streamMeta(text[1] as ArtifactUpdateEvent)).toEqual({
      block_type: "text",
      source: "assistant_text",
      message_id: A1,
      part_id: "prt_t1",
      event_id: `task-1:ctx-1:${streamMeta(text[1] as ArtifactUpdateEvent).sequence as number}`,
      sequence: streamMeta(text[1] as ArtifactUpdateEvent).sequence,
      role: "agent",
    });
    expect(terminals(out)).toEqual([{ kind: "terminal", state: "completed" }]);
    const seqs = sequences(out);
    expect(seqs[0]).toBe(10);
    expect(strictlyIncreasing(seqs)).toBe(true);
    expect(mapper.sequence).toBe(seqs.at(-1));

    const result = mapper.finish();
    expect(result.finalText).toBe("Hello world.");
    expect(result.state).toBe("completed");
    expect(result.finalTextChunk).toBeUndefined();
    expect(result.error).toBeUndefined();
    expect(result.artifacts).toEqual([
      { artifactId: "task-1:text", name: "response", parts: [{ kind: "text", text: "Hello world." }], metadata: { shared: { stream: streamMeta(text[1] as ArtifactUpdateEvent) } } },
    ]);
    expect(clientView(text)).toBe(result.finalText);
  });

  it("reports step progress as deduplicated working status updates", () => {
    const mapper = new StreamMapper(ctx());
    const events = plain();
    events.splice(events.indexOf(events.find((e) => e.type === "message.part.updated" && (e.properties as { part: { type: string } }).part.type === "step-finish")!), 0, stepStart("prt_s1", A1));
    const progress = statusesOf(run(mapper, events));
    expect(progress.map((s) => [s.status.state, s.final, shared(s).progress])).toEqual([
      ["working", false, { type: "step-start", part_id: "prt_s1" }],
      ["working", false, { type: "step-finish", part_id: "prt_f1", reason: "stop" }],
    ]);
    expect(shared(progress[0] as StatusUpdateEvent).session).toEqual({ id: SES });
    expect(streamMeta(progress[0] as StatusUpdateEvent)).toMatchObject({ source: "progress", message_id: A1, role: "agent" });
    expect(progress[0]?.status.timestamp).toBe("2026-01-01T00:00:00.000Z");
  });

  it("replays deltas that arrive before the part's first update, in order", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      delta("prt_t1", A1, "Hel"),
      delta("prt_t1", A1, "lo "),
      textPart("prt_t1", A1, ""), // the part's first (empty) update arrives late
      delta("prt_t1", A1, "world"),
      textPart("prt_t1", A1, "Hello world"),
      ...epilogue(),
    ]);
    const text = artifactsOf(out, "task-1:text");
    expect(chunkTexts(text)).toEqual(["Hello ", "world"]);
    expect(mapper.finish().finalText).toBe("Hello world");
  });

  it("does not duplicate early deltas a late snapshot already contains", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [...prelude(), delta("prt_t1", A1, "Hello "), textPart("prt_t1", A1, "Hello world"), ...epilogue()]);
    expect(chunkTexts(artifactsOf(out))).toEqual(["Hello world"]);
  });

  it("diffs full-text snapshots and emits only the appended suffix; stale snapshots are ignored", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      textPart("prt_t1", A1, ""),
      textPart("prt_t1", A1, "Hello"),
      textPart("prt_t1", A1, "Hello world"),
      textPart("prt_t1", A1, "Hello"), // stale (shorter prefix): ignored
      delta("prt_t1", A1, "!"),
      textPart("prt_t1", A1, "Hello world!"),
      ...epilogue(),
    ]);
    const text = artifactsOf(out);
    expect(chunkTexts(text)).toEqual(["Hello", " world", "!"]);
    expect(text.map((u) => u.append)).toEqual([false, true, true]);
  });

  it("replaces the lane when a snapshot rewrites the text instead of extending it", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      textPart("prt_t1", A1, ""),
      delta("prt_t1", A1, "Hello wrld"),
      textPart("prt_t1", A1, "Hello world"),
      delta("prt_t1", A1, "."),
      ...epilogue(),
    ]);
    const text = artifactsOf(out);
    expect(text.map((u) => [chunkTexts([u])[0], u.append])).toEqual([
      ["Hello wrld", false],
      ["Hello world", false],
      [".", true],
    ]);
    const result = mapper.finish();
    expect(result.finalText).toBe("Hello world.");
    expect(clientView(text)).toBe(result.finalText);
    expect(result.finalTextChunk).toBeUndefined();
  });

  it("joins the text parts of several assistant messages and replaces the lane when an earlier part grows late", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      textPart("prt_t1", A1, "Let me check."),
      toolPart("prt_tool", A1, "call_1", { status: "completed", input: { command: "ls" }, output: "a\n", title: "ls", metadata: {}, time: { start: 1, end: 2 } }),
      asstMsg(A1, { finish: "tool-calls" }),
      asstMsg(A2),
      textPart("prt_t2", A2, ""),
      delta("prt_t2", A2, "Done"),
      textPart("prt_t1", A1, "Let me check!"), // an earlier part rewritten after a later one started
      delta("prt_t2", A2, "."),
      ...epilogue(A2),
    ]);
    const text = artifactsOf(out, "task-1:text");
    const result = mapper.finish();
    expect(result.finalText).toBe(`Let me check!${TEXT_PART_SEPARATOR}Done.`);
    expect(text.map((u) => [chunkTexts([u])[0], u.append])).toEqual([
      ["Let me check.", false],
      [`${TEXT_PART_SEPARATOR}Done`, true],
      [`Let me check!${TEXT_PART_SEPARATOR}Done`, false],
      [".", true],
    ]);
    expect(clientView(text)).toBe(result.finalText);
  });

  it("returns the placeholder as a replace-on-finish chunk when a completed turn produced no text", () => {
    const mapper = new StreamMapper(ctx());
    run(mapper, [...prelude(), stepStart("prt_s1", A1), stepFinish("prt_f1", A1, "stop"), ...epilogue()]);
    const result = mapper.finish();
    expect(result.finalText).toBe(EMPTY_OUTPUT_TEXT);
    expect(result.finalTextChunk).toMatchObject({
      kind: "artifact-update",
      append: false,
      lastChunk: true,
      artifact: { artifactId: "task-1:text", parts: [{ kind: "text", text: EMPTY_OUTPUT_TEXT }] },
    });
    expect(streamMeta(result.finalTextChunk as ArtifactUpdateEvent).sequence).toBe(mapper.sequence);
    expect(mapper.finish()).toBe(result); // idempotent: the chunk is built once
    expect(result.artifacts[0]?.parts).toEqual([{ kind: "text", text: EMPTY_OUTPUT_TEXT }]);
  });
});

describe("echo guard", () => {
  it("holds back an initial text chunk equal to the user's input", () => {
    const mapper = new StreamMapper(ctx({ userText: "  hi there " }));
    const out = run(mapper, [...prelude(), textPart("prt_echo", A1, "hi there"), textPart("prt_t1", A1, ""), delta("prt_t1", A1, "Real answer"), ...epilogue()]);
    const text = artifactsOf(out);
    expect(chunkTexts(text)).toEqual(["Real answer"]);
    expect(text[0]?.append).toBe(false);
    expect(mapper.finish().finalText).toBe("Real answer");
  });

  it("releases the held chunk when the part grows into something else", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [...prelude(), textPart("prt_t1", A1, "hi there"), delta("prt_t1", A1, ", friend"), ...epilogue()]);
    expect(chunkTexts(artifactsOf(out))).toEqual(["hi there, friend"]);
  });

  it("does not apply once something was streamed", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [...prelude(), reasoningPart("prt_r", A1, "thinking"), textPart("prt_t1", A1, "hi there"), ...epilogue()]);
    expect(chunkTexts(artifactsOf(out, "task-1:text"))).toEqual(["hi there"]);
  });
});

describe("reasoning", () => {
  it("streams reasoning in its own lane and keeps it out of the final text", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      stepStart("prt_s1", A1),
      reasoningPart("prt_r1", A1, ""),
      delta("prt_r1", A1, "Think "),
      delta("prt_r1", A1, "hard."),
      reasoningPart("prt_r1", A1, "Think hard."),
      textPart("prt_t1", A1, ""),
      delta("prt_t1", A1, "Answer."),
      textPart("prt_t1", A1, "Answer."),
      stepFinish("prt_f1", A1, "stop"),
      ...epilogue(),
    ]);
    const reasoning = artifactsOf(out, "task-1:reasoning");
    expect(chunkTexts(reasoning)).toEqual(["Think ", "hard."]);
    expect(reasoning.map((u) => u.append)).toEqual([false, true]);
    expect(streamMeta(reasoning[0] as ArtifactUpdateEvent)).toMatchObject({ block_type: "reasoning", source: "reasoning", part_id: "prt_r1" });
    const result = mapper.finish();
    expect(result.finalText).toBe("Answer.");
    expect(result.artifacts.map((a) => [a.artifactId, a.parts])).toEqual([
      ["task-1:text", [{ kind: "text", text: "Answer." }]],
      ["task-1:reasoning", [{ kind: "text", text: "Think hard." }]],
    ]);
  });
});

describe("tool calls", () => {
  const states = [
    { status: "pending", input: {}, raw: "" },
    { status: "running", input: { command: "echo hi", description: "say hi" }, time: { start: 1 } },
    { status: "running", input: { description: "say hi", command: "echo hi" }, time: { start: 1 }, metadata: { output: "hi\n" } },
    { status: "completed", input: { command: "echo hi", description: "say hi" }, output: "hi\n", title: "echo hi", metadata: { output: "hi\n", exit: 0 }, time: { start: 1, end: 2 } },
  ];
  const events = (): OpencodeEvent[] => [
    ...prelude(),
    stepStart("prt_s1", A1),
    ...states.map((s) => toolPart("prt_tool", A1, "call_1", s)),
    toolPart("prt_tool", A1, "call_1", states[3] as Record<string, unknown>), // repeated: no change
    stepFinish("prt_f1", A1, "tool-calls"),
    ...epilogue(A1),
  ];

  it("emits a tool_call data block per changed state, replacing the per-call artifact", () => {
    const mapper = new StreamMapper(ctx());
    const tool = artifactsOf(run(mapper, events()), "task-1:tool:call_1");
    expect(tool.map((u) => u.artifact.parts)).toEqual([
      [{ kind: "data", data: { call_id: "call_1", tool: "bash", status: "pending", input: {} } }],
      [{ kind: "data", data: { call_id: "call_1", tool: "bash", status: "running", input: { command: "echo hi", description: "say hi" } } }],
      [
        {
          kind: "data",
          data: { call_id: "call_1", tool: "bash", status: "completed", input: { command: "echo hi", description: "say hi" }, output: "hi\n", title: "echo hi" },
        },
      ],
    ]);
    expect(tool.every((u) => u.append === false)).toBe(true);
    expect(streamMeta(tool[0] as ArtifactUpdateEvent)).toMatchObject({ block_type: "tool_call", source: "tool", part_id: "prt_tool", message_id: A1 });
    const result = mapper.finish();
    expect(result.artifacts.find((a) => a.artifactId === "task-1:tool:call_1")?.parts).toEqual(tool[2]?.artifact.parts);
    expect(result.finalText).toBe(EMPTY_OUTPUT_TEXT);
  });

  it("downgrades tool_call blocks to compact JSON text when application/json is not accepted", () => {
    const mapper = new StreamMapper(ctx({ acceptedOutputModes: ["text/plain"] }));
    const tool = artifactsOf(run(mapper, events()), "task-1:tool:call_1");
    expect(tool).toHaveLength(3);
    const last = tool[2]?.artifact.parts[0];
    expect(last?.kind).toBe("text");
    const json = last?.kind === "text" ? last.text : "";
    expect(json).not.toMatch(/\s{2}|\n {2}/);
    expect(JSON.parse(json)).toEqual({ call_id: "call_1", tool: "bash", status: "completed", input: { command: "echo hi", description: "say hi" }, output: "hi\n", title: "echo hi" });
    expect(mapper.finish().artifacts.find((a) => a.artifactId === "task-1:tool:call_1")?.parts[0]?.kind).toBe("text");
  });

  it("treats an empty or wildcard mode list as accepting JSON", () => {
    expect(acceptsJson([])).toBe(true);
    expect(acceptsJson(["text/plain", "*/*"])).toBe(true);
    expect(acceptsJson(["text/plain", "application/json; charset=utf-8"])).toBe(true);
    expect(acceptsJson(["text/plain"])).toBe(false);
  });
});

describe("terminal outcome", () => {
  it("is idempotent: a second idle and later events change nothing", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [...prelude(), textPart("prt_t1", A1, "ok"), ...epilogue(), idle(), textPart("prt_t1", A1, "ok and more")]);
    expect(terminals(out)).toHaveLength(1);
    expect(mapper.finish().finalText).toBe("ok");
  });

  it("ignores an idle that arrives before the turn started (the tail of a previous turn)", () => {
    const mapper = new StreamMapper(ctx());
    const stale = run(mapper, [idle(), status("idle"), asstMsg("msg_old", { parentID: "msg_prev", error: { name: "MessageAbortedError", data: { message: "Aborted" } } })]);
    expect(stale).toEqual([]);
    expect(mapper.started).toBe(false);
    const out = run(mapper, [...prelude(), textPart("prt_t1", A1, "fine"), ...epilogue()]);
    expect(terminals(out)).toEqual([{ kind: "terminal", state: "completed" }]);
  });

  it("maps an abort (session.error MessageAbortedError) to canceled, in the real abort order", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      textPart("prt_t1", A1, ""),
      delta("prt_t1", A1, "partial "),
      ev("session.error", { sessionID: SES, error: { name: "MessageAbortedError", data: { message: "Aborted" } } }),
      status("idle"),
      idle(),
      textPart("prt_t1", A1, "partial "),
      asstMsg(A1, { error: { name: "MessageAbortedError", data: { message: "Aborted" } } }),
      status("idle"),
      idle(),
    ]);
    const [terminal] = terminals(out);
    expect(terminal).toMatchObject({ kind: "terminal", state: "canceled", error: { kind: "aborted", upstreamName: "MessageAbortedError" } });
    expect(terminals(out)).toHaveLength(1);
    const result = mapper.finish();
    expect(result).toMatchObject({ state: "canceled", finalText: "partial " });
    expect(result.finalTextChunk).toBeUndefined();
  });

  it("maps an APIError 400 to failed", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      ev("session.error", {
        sessionID: SES,
        error: { name: "APIError", data: { message: "bad request thing", statusCode: 400, isRetryable: false } },
      }),
      status("idle"),
      idle(),
    ]);
    expect(terminals(out)).toMatchObject([{ state: "failed", error: { kind: "model", status: 400, detail: "bad request thing" } }]);
    const result = mapper.finish();
    expect(result.state).toBe("failed");
    expect(result.finalText).toBe("");
    expect(result.finalTextChunk).toBeUndefined();
    expect(result.error?.toA2AError().reason).toBe("UPSTREAM_HTTP_ERROR");
  });

  it("maps a ProviderAuthError in the assistant's info.error to auth-required", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      asstMsg(A1, { error: { name: "ProviderAuthError", data: { providerID: "fake", message: "no key" } }, time: { created: 1, completed: 2 } }),
      status("idle"),
      idle(),
    ]);
    expect(terminals(out)).toMatchObject([{ state: "auth-required", error: { upstreamName: "ProviderAuthError" } }]);
  });

  it("reports working (not terminal) when finished before any terminal signal", () => {
    const mapper = new StreamMapper(ctx());
    run(mapper, [...prelude(), textPart("prt_t1", A1, "so far")]);
    const result = mapper.finish();
    expect(result).toMatchObject({ state: "working", finalText: "so far" });
    expect(mapper.push(idle())).toEqual([]);
  });
});

describe("usage", () => {
  it("sums the assistant messages of the turn (info tokens, step-finish while the info lags)", () => {
    const mapper = new StreamMapper(ctx());
    run(mapper, [
      ...prelude(),
      stepStart("prt_s1", A1),
      toolPart("prt_tool", A1, "call_1", { status: "pending", input: {}, raw: "" }),
      stepFinish("prt_f1", A1, "tool-calls", tokens(10, 1), 0.25),
      asstMsg(A1, { finish: "tool-calls", tokens: tokens(10, 1, { read: 3, write: 2 }), cost: 0.25 }),
      asstMsg(A2),
      stepStart("prt_s2", A2),
      textPart("prt_t2", A2, "done"),
      // A2's info never catches up: its step-finish counts.
      stepFinish("prt_f2", A2, "stop", tokens(20, 5, { reasoning: 7 }), 0.5),
      status("idle"),
      idle(),
    ]);
    expect(mapper.finish().usage).toEqual({
      input_tokens: 30,
      output_tokens: 6,
      total_tokens: 11 + 32,
      reasoning_tokens: 7,
      cache_tokens: { read_tokens: 3, write_tokens: 2 },
      cost: 0.75,
    });
  });

  it("does not count messages of other turns and has no usage without any token report", () => {
    const mapper = new StreamMapper(ctx());
    run(mapper, [asstMsg("msg_old", { parentID: "msg_prev", tokens: tokens(100, 100), cost: 9 }), ...prelude(), ...epilogue(A1, tokens(1, 2), 0.1)]);
    expect(mapper.finish().usage).toMatchObject({ input_tokens: 1, output_tokens: 2, total_tokens: 3, cost: 0.1 });
    const none = new StreamMapper(ctx());
    run(none, [userMsg(), status("busy"), idle()]);
    expect(none.finish().usage).toBeUndefined();
  });
});

describe("interrupts", () => {
  const permissionAsked = (id = "per_1") =>
    ev("permission.asked", {
      id,
      sessionID: SES,
      permission: "bash",
      patterns: ["echo hi"],
      metadata: { command: "echo hi" },
      always: ["echo *"],
      tool: { messageID: A1, callID: "call_1" },
    });
  const questionAsked = (id = "que_1") =>
    ev("question.asked", {
      id,
      sessionID: SES,
      questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }],
      tool: { messageID: A1, callID: "call_2" },
    });

  it("maps permission asked → input-required and replied → working, once each", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      toolPart("prt_tool", A1, "call_1", { status: "pending", input: {}, raw: "" }),
      permissionAsked(),
      permissionAsked(), // duplicate
      ev("permission.replied", { sessionID: SES, requestID: "per_other", reply: "once" }), // never asked here
      ev("permission.replied", { sessionID: SES, requestID: "per_1", reply: "once" }),
      ev("permission.replied", { sessionID: SES, requestID: "per_1", reply: "once" }), // duplicate
      ...epilogue(),
    ]);
    const interrupts = statusesOf(out).filter((s) => shared(s).interrupt !== undefined);
    expect(interrupts.map((s) => [s.status.state, s.final, shared(s).interrupt])).toEqual([
      [
        "input-required",
        false,
        {
          request_id: "per_1",
          type: "permission",
          phase: "asked",
          details: {
            permission: "bash",
            patterns: ["echo hi"],
            metadata: { command: "echo hi" },
            always: ["echo *"],
            tool: { messageID: A1, callID: "call_1" },
            permission_options: [
              { id: "once", label: "Allow once" },
              { id: "always", label: "Always allow" },
              { id: "reject", label: "Reject" },
            ],
            reply_options: ["once", "always", "reject"],
          },
        },
      ],
      ["working", false, { request_id: "per_1", type: "permission", phase: "resolved", resolution: "replied", details: { reply: "once" } }],
    ]);
    expect(interrupts[0]?.status.message?.parts[0]).toMatchObject({ kind: "text", text: expect.stringContaining("bash") });
    expect(streamMeta(interrupts[0] as StatusUpdateEvent)).toMatchObject({ source: "interrupt", message_id: A1 });
    expect(mapper.finish().pendingInterrupts).toEqual([]);
  });

  it("maps question asked (with option labels) and rejected", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      questionAsked(),
      ev("question.rejected", { sessionID: SES, requestID: "que_1" }),
      ev("question.replied", { sessionID: SES, requestID: "que_1", answers: [["blue"]] }), // already resolved
      ...epilogue(),
    ]);
    const interrupts = statusesOf(out).map((s) => [s.status.state, shared(s).interrupt]);
    expect(interrupts).toEqual([
      [
        "input-required",
        {
          request_id: "que_1",
          type: "question",
          phase: "asked",
          details: {
            questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }],
            tool: { messageID: A1, callID: "call_2" },
          },
        },
      ],
      ["working", { request_id: "que_1", type: "question", phase: "resolved", resolution: "rejected" }],
    ]);
    expect(statusesOf(out)[0]?.status.message?.parts[0]).toMatchObject({ text: "Pick a color? [blue | red]" });
  });

  it("stays input-required while another request is pending and reports the pending ones", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [...prelude(), permissionAsked("per_1"), questionAsked("que_1"), ev("question.replied", { sessionID: SES, requestID: "que_1", answers: [["red"]] })]);
    expect(statusesOf(out).map((s) => s.status.state)).toEqual(["input-required", "input-required", "input-required"]);
    expect(mapper.finish()).toMatchObject({ state: "input-required", pendingInterrupts: [{ requestId: "per_1", type: "permission" }] });
  });

  it("ignores interrupts of other sessions and before the turn started", () => {
    const mapper = new StreamMapper(ctx());
    const other = ev("permission.asked", { id: "per_x", sessionID: "ses_other", permission: "bash", patterns: [], metadata: {}, always: [] });
    expect(run(mapper, [permissionAsked("per_early"), other, ...prelude(), other])).toEqual([]);
  });
});

describe("scope", () => {
  it("drops user parts, other sessions and assistant messages of other turns", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      textPart("prt_user2", USER, "hi there again"),
      asstMsg("msg_foreign", { parentID: "msg_someone_else" }),
      textPart("prt_f", "msg_foreign", "not ours"),
      textPart("prt_x", "msg_x", "other session", "ses_other"),
      delta("prt_x", "msg_x", " more", "ses_other"),
      idle("ses_other"),
      textPart("prt_t1", A1, "ours"),
      ...epilogue(),
    ]);
    expect(chunkTexts(artifactsOf(out))).toEqual(["ours"]);
    expect(mapper.finish().finalText).toBe("ours");
  });

  it("holds parts until their message's role is known, then replays or drops them", () => {
    const mapper = new StreamMapper(ctx());
    const early = run(mapper, [
      userMsg(),
      status("busy"),
      textPart("prt_t1", A1, ""),
      delta("prt_t1", A1, "early "),
      textPart("prt_u", "msg_later_user", "user words"),
    ]);
    expect(early).toEqual([]);
    const out = run(mapper, [
      asstMsg(A1),
      ev("message.updated", { sessionID: SES, info: { id: "msg_later_user", sessionID: SES, role: "user", time: { created: 1 }, agent: "build", model: {} } }),
      delta("prt_t1", A1, "bird"),
      ...epilogue(),
    ]);
    expect(chunkTexts(artifactsOf(out))).toEqual(["early ", "bird"]);
    expect(mapper.finish().finalText).toBe("early bird");
  });

  it("bounds the held events and counts what it dropped", () => {
    const mapper = new StreamMapper(ctx({ limits: { heldEvents: 3 } }));
    run(mapper, [userMsg(), status("busy"), ...["a", "b", "c", "d", "e"].map((x, i) => textPart(`prt_${x}`, `msg_unknown_${i}`, x))]);
    expect(mapper.finish().dropped).toBe(2);
  });

  it("without a user message id, adopts the parent of the first assistant message after busy", () => {
    const mapper = new StreamMapper(ctx({ userMessageId: undefined }));
    const out = run(mapper, [
      asstMsg("msg_old", { parentID: "msg_prev" }),
      textPart("prt_old", "msg_old", "stale"),
      ...prelude(),
      textPart("prt_t1", A1, "fresh"),
      asstMsg("msg_stray", { parentID: "msg_other" }),
      textPart("prt_s", "msg_stray", "stray"),
      ...epilogue(),
    ]);
    expect(chunkTexts(artifactsOf(out))).toEqual(["fresh"]);
    expect(terminals(out)).toHaveLength(1);
  });

  it("keeps one strictly increasing sequence across artifacts and status updates", () => {
    const mapper = new StreamMapper(ctx({ startSequence: 5 }));
    const out = run(mapper, [
      ...prelude(),
      stepStart("prt_s1", A1),
      reasoningPart("prt_r", A1, "hmm"),
      toolPart("prt_tool", A1, "call_1", { status: "pending", input: {}, raw: "" }),
      ev("permission.asked", { id: "per_1", sessionID: SES, permission: "bash", patterns: ["x"], metadata: {}, always: [] }),
      ev("permission.replied", { sessionID: SES, requestID: "per_1", reply: "always" }),
      toolPart("prt_tool", A1, "call_1", { status: "completed", input: {}, output: "", title: "x", metadata: {}, time: { start: 1, end: 2 } }),
      stepFinish("prt_f1", A1, "tool-calls"),
      asstMsg(A2),
      textPart("prt_t2", A2, "a"),
      delta("prt_t2", A2, "b"),
      ...epilogue(A2),
    ]);
    const seqs = sequences(out);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => 5 + i));
    expect(seqs.length).toBeGreaterThanOrEqual(9);
    const ids = eventsOf(out).map((o) => streamMeta(o).event_id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("catches up from a message snapshot after a reconnect, emitting only what was missed", () => {
    const mapper = new StreamMapper(ctx());
    run(mapper, [...prelude(), textPart("prt_t1", A1, ""), delta("prt_t1", A1, "Hello ")]);
    const info = { id: A1, sessionID: SES, role: "assistant", parentID: USER, time: { created: 1 }, modelID: "m", providerID: "p", mode: "build", agent: "build", path: { cwd: "/", root: "/" }, cost: 0, tokens: tokens(3, 4) };
    const missed = mapper.resync([
      {
        info: info as never,
        parts: [
          { id: "prt_t1", sessionID: SES, messageID: A1, type: "text", text: "Hello world" },
          { id: "prt_f1", sessionID: SES, messageID: A1, type: "step-finish", reason: "stop", cost: 0, tokens: tokens(3, 4) },
        ],
      },
    ]);
    expect(chunkTexts(artifactsOf(missed))).toEqual(["world"]);
    expect(statusesOf(missed).map((s) => shared(s).progress)).toEqual([{ type: "step-finish", part_id: "prt_f1", reason: "stop" }]);
    run(mapper, [status("idle")]);
    expect(mapper.finish()).toMatchObject({ finalText: "Hello world", state: "completed", usage: { input_tokens: 3, output_tokens: 4 } });
  });
});

// -- the stub's event order ----------------------------------------------------------------------------------------

describe("against the stub upstream's event order", () => {
  let stub: StubUpstream;
  let upstream: Link;
  let msgCounter = 0;

  beforeAll(async () => {
    stub = await startStubUpstream({ heartbeatMs: 1_000 });
    upstream = link(stub.url);
  });
  afterAll(async () => {
    await upstream?.stop();
    await stub?.close();
  });

  /**
   * Runs one scripted turn through the stub, client and hub, feeding every hub event to a mapper until it reports
   * the terminal outcome; `answer` replies to interrupts as they are asked.
   */
  async function turn(
    replies: Reply[],
    opts: { permission?: unknown; abortAfterMs?: number; answer?: (requestId: string, type: string) => Promise<void>; modes?: string[] } = {},
  ) {
    const { client, hub } = upstream;
    const session = await client.createSession({ title: "mapper", ...(opts.permission === undefined ? {} : { permission: opts.permission }) } as never);
    stub.scriptFor(session.id, ...replies);
    const userMessageId = `msg_mapper${String(++msgCounter).padStart(4, "0")}`;
    const mapper = new StreamMapper({
      taskId: "task-s",
      contextId: "ctx-s",
      sessionId: session.id,
      userMessageId,
      userText: "hi there",
      acceptedOutputModes: opts.modes ?? ["text/plain", "application/json"],
    });
    const sub = hub.subscribe({ sessions: [session.id] });
    await sub.ready(5_000);
    await client.call("sessionPromptAsync", (c) =>
      sdk.sessionPromptAsync({ ...c, path: { sessionID: session.id }, body: { messageID: userMessageId, parts: [{ type: "text", text: "hi there" }] } }),
    );
    if (opts.abortAfterMs !== undefined) {
      setTimeout(() => void client.call("sessionAbort", (c) => sdk.sessionAbort({ ...c, path: { sessionID: session.id } })), opts.abortAfterMs);
    }
    const out: MapperOutput[] = [];
    const answers: Promise<void>[] = [];
    await collectUntil(sub, (_items, last) => {
      if (last.type !== "event") return false;
      const produced = mapper.push(last.event);
      out.push(...produced);
      for (const o of produced) {
        const interrupt = o.kind === "status" ? (shared(o.event).interrupt as { request_id: string; type: string; phase: string } | undefined) : undefined;
        if (interrupt?.phase === "asked" && opts.answer !== undefined) answers.push(opts.answer(interrupt.request_id, interrupt.type));
      }
      return mapper.terminal !== undefined;
    });
    await Promise.all(answers);
    sub.close();
    return { out, result: mapper.finish() };
  }

  it("text with reasoning", async () => {
    const { out, result } = await turn([textReply(["Hello ", "world."], { reasoning: ["Think ", "hard."] })]);
    expect(chunkTexts(artifactsOf(out, "task-s:text"))).toEqual(["Hello ", "world."]);
    expect(clientView(artifactsOf(out, "task-s:reasoning"))).toBe("Think hard.");
    expect(result).toMatchObject({ state: "completed", finalText: "Hello world.", usage: { input_tokens: 10, output_tokens: 4, total_tokens: 14 } });
    expect(result.finalTextChunk).toBeUndefined();
    expect(statusesOf(out).map((s) => (shared(s).progress as { type: string }).type)).toEqual(["step-start", "step-finish"]);
    expect(strictlyIncreasing(sequences(out))).toBe(true);
  });

  it("a tool call followed by text (two assistant messages)", async () => {
    const { out, result } = await turn([toolReply("bash", { command: "echo hi", description: "say hi" }), textReply("done")]);
    const tool = artifactsOf(out).filter((u) => u.artifact.artifactId.startsWith("task-s:tool:"));
    // pending, running (the metadata-only running updates are not changes), completed
    expect(tool.map((u) => (u.artifact.parts[0]?.kind === "data" ? (u.artifact.parts[0].data as { status: string }).status : ""))).toEqual(["pending", "running", "completed"]);
    expect(result).toMatchObject({ state: "completed", finalText: "done", usage: { input_tokens: 20, output_tokens: 2, total_tokens: 22 } });
  });

  it("a permission asked and answered", async () => {
    const { out, result } = await turn([toolReply("bash", { command: "echo hi", description: "say hi" }), textReply("done")], {
      permission: [{ permission: "bash", pattern: "*", action: "ask" }],
      answer: (requestId) => upstream.client.call("permissionReply", (c) => sdk.permissionReply({ ...c, path: { requestID: requestId }, body: { reply: "once" } })).then(() => undefined),
    });
    const interrupts = statusesOf(out).filter((s) => shared(s).interrupt !== undefined);
    expect(interrupts.map((s) => [s.status.state, (shared(s).interrupt as { phase: string }).phase])).toEqual([
      ["input-required", "asked"],
      ["working", "resolved"],
    ]);
    expect(shared(interrupts[0] as StatusUpdateEvent).interrupt).toMatchObject({ type: "permission", details: { permission: "bash", patterns: ["echo hi"] } });
    expect(result).toMatchObject({ state: "completed", finalText: "done", pendingInterrupts: [] });
  });

  it("a question asked and answered, with tool blocks downgraded to JSON text", async () => {
    const questions = [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }];
    const { out, result } = await turn([toolReply("question", { questions }), textReply("ok blue")], {
      modes: ["text/plain"],
      answer: (requestId) => upstream.client.call("questionReply", (c) => sdk.questionReply({ ...c, path: { requestID: requestId }, body: { answers: [["blue"]] } })).then(() => undefined),
    });
    expect(statusesOf(out).filter((s) => shared(s).interrupt !== undefined).map((s) => shared(s).interrupt)).toMatchObject([
      { type: "question", phase: "asked", details: { questions } },
      { type: "question", phase: "resolved", resolution: "replied", details: { answers: [["blue"]] } },
    ]);
    expect(artifactsOf(out).filter((u) => u.artifact.artifactId.startsWith("task-s:tool:")).every((u) => u.artifact.parts[0]?.kind === "text")).toBe(true);
    expect(result.finalText).toBe("ok blue");
  });

  it("a model API error (400)", async () => {
    const { out, result } = await turn([failure(400, "bad request thing")]);
    expect(terminals(out)).toMatchObject([{ state: "failed", error: { status: 400, upstreamName: "APIError" } }]);
    expect(result.state).toBe("failed");
  });

  it("an aborted turn", async () => {
    const { out, result } = await turn([hang({ chunks: ["partial "] })], { abortAfterMs: 150 });
    expect(terminals(out)).toMatchObject([{ state: "canceled" }]);
    expect(result).toMatchObject({ state: "canceled", finalText: "partial " });
  });
});

describe("follow-ups into a running turn", () => {
  const USER2 = "msg_user2";
  const USER3 = "msg_user3";
  const noIds = () => new StreamMapper(ctx({ userMessageId: undefined }));
  const firstAnswer = (): OpencodeEvent[] => [userMsg(), status("busy"), asstMsg(A1), textPart("prt_t1", A1, "first answer")];

  it("takes the answer to a follow-up into the same turn and ends only after it", () => {
    const mapper = noIds();
    const before = run(mapper, firstAnswer());
    expect(mapper.acceptFollowUp()).toBe(0);
    const after = run(mapper, [
      userMsg(USER2),
      asstMsg(A1, { finish: "stop" }),
      asstMsg(A2, { parentID: USER2 }),
      textPart("prt_t2", A2, "second answer"),
      asstMsg(A2, { parentID: USER2, finish: "stop" }),
      status("idle"),
      idle(),
    ]);
    expect(terminals(after)).toHaveLength(1);
    const result = mapper.finish();
    expect(result.state).toBe("completed");
    expect(result.finalText).toBe(`first answer${TEXT_PART_SEPARATOR}second answer`);
    expect(result.userMessageIds).toEqual([USER, USER2]);
    expect(clientView(artifactsOf([...before, ...after], "task-1:text"))).toBe(result.finalText);
  });

  it("an idle before the follow-up reached OpenCode does not end the turn", () => {
    const mapper = noIds();
    run(mapper, firstAnswer());
    mapper.acceptFollowUp();
    expect(terminals(run(mapper, [asstMsg(A1, { finish: "stop" }), status("idle"), idle()]))).toHaveLength(0);
    const out = run(mapper, [userMsg(USER2), status("busy"), asstMsg(A2, { parentID: USER2 }), textPart("prt_t2", A2, "late"), status("idle"), idle()]);
    expect(terminals(out)).toHaveLength(1);
    expect(mapper.finish().finalText).toContain("late");
  });

  it("an idle that leaves a stored follow-up unanswered reports it stalled; a new prompt of it is then taken", () => {
    const mapper = noIds();
    run(mapper, firstAnswer());
    mapper.acceptFollowUp();
    const out = run(mapper, [userMsg(USER2), asstMsg(A1, { finish: "stop" }), status("idle"), idle()]);
    expect(terminals(out)).toHaveLength(0);
    expect(out.filter((o) => o.kind === "stalled")).toEqual([{ kind: "stalled", ordinals: [0] }]);
    expect(mapper.stalledFollowUps()).toEqual([0]);
    // The stalled follow-up waits for its next user message: the re-sent prompt's.
    const again = run(mapper, [userMsg(USER3), status("busy"), asstMsg("msg_asst3", { parentID: USER3 }), textPart("prt_t3", "msg_asst3", "answered now"), status("idle"), idle()]);
    expect(terminals(again)).toHaveLength(1);
    expect(mapper.finish().userMessageIds).toEqual([USER, USER3]);
  });

  it("stalledFollowUps() is empty while OpenCode is busy (its own loop may still answer)", () => {
    const mapper = noIds();
    run(mapper, firstAnswer());
    mapper.acceptFollowUp();
    run(mapper, [userMsg(USER2), status("idle"), idle(), status("busy")]);
    expect(mapper.stalledFollowUps()).toEqual([]);
  });

  it("a withdrawn follow-up (its prompt failed) no longer holds the turn open; none is accepted after the end", () => {
    const mapper = noIds();
    run(mapper, firstAnswer());
    const ordinal = mapper.acceptFollowUp()!;
    mapper.withdrawFollowUp(ordinal);
    expect(terminals(run(mapper, [asstMsg(A1, { finish: "stop" }), status("idle"), idle()]))).toHaveLength(1);
    expect(mapper.acceptFollowUp()).toBeUndefined();
  });

  it("older user messages republished during the turn are not taken for the follow-up", () => {
    const mapper = noIds();
    run(mapper, firstAnswer());
    mapper.acceptFollowUp();
    run(mapper, [userMsg("msg_old0")]);
    expect(terminals(run(mapper, [asstMsg(A1, { finish: "stop" }), status("idle"), idle()]))).toHaveLength(0);
  });
});

describe("files OpenCode emits", () => {
  const filePart = (id: string, url: string, extra: Record<string, unknown> = {}) => part({ id, messageID: A1, type: "file", mime: "image/png", filename: "pic.png", url, ...extra });

  it("a data: URL file part becomes a file artifact with inline bytes", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [...prelude(), filePart("prt_f1", "data:image/png;base64,aGVsbG8="), ...epilogue()]);
    const [update] = artifactsOf(out, "task-1:file:prt_f1");
    expect(update?.artifact.name).toBe("pic.png");
    expect(update?.artifact.parts).toEqual([{ kind: "file", file: { mimeType: "image/png", name: "pic.png", bytes: "aGVsbG8=" } }]);
    expect(streamMeta(update!).block_type).toBe("file");
    expect(mapper.finish().artifacts.map((a) => a.artifactId)).toContain("task-1:file:prt_f1");
  });

  it("a file larger than fileMaxBytes is a reference with its size; other URLs stay references", () => {
    const mapper = new StreamMapper(ctx({ fileMaxBytes: 2 }));
    const out = run(mapper, [
      ...prelude(),
      filePart("prt_big", "data:text/plain,hello", { mime: "text/plain", filename: "big.txt", source: { type: "file", path: "/w/big.txt", text: { value: "", start: 0, end: 0 } } }),
      filePart("prt_url", "https://example.invalid/x.png"),
      ...epilogue(),
    ]);
    const big = artifactsOf(out, "task-1:file:prt_big")[0]!.artifact.parts[0];
    expect(big).toEqual({ kind: "file", file: { mimeType: "text/plain", name: "big.txt", uri: "file:///w/big.txt" }, metadata: { opencode: { size: 5, omitted: "size", max_bytes: 2 } } });
    expect(artifactsOf(out, "task-1:file:prt_url")[0]!.artifact.parts[0]).toEqual({ kind: "file", file: { mimeType: "image/png", name: "pic.png", uri: "https://example.invalid/x.png" } });
  });

  it("attachments of a completed tool call become file artifacts, once each", () => {
    const mapper = new StreamMapper(ctx());
    const attachment = { id: "prt_att", sessionID: SES, messageID: A1, type: "file", mime: "text/plain", filename: "a.txt", url: "data:text/plain;base64,YQ==" };
    const state = { status: "completed", input: {}, output: "ok", title: "t", metadata: {}, time: { start: 1, end: 2 }, attachments: [attachment] };
    const out = run(mapper, [...prelude(), toolPart("prt_tool", A1, "call_1", state), toolPart("prt_tool", A1, "call_1", state), ...epilogue()]);
    const files = artifactsOf(out, "task-1:file:prt_att");
    expect(files).toHaveLength(1);
    expect(files[0]!.artifact.parts[0]).toMatchObject({ kind: "file", file: { bytes: "YQ==", name: "a.txt" } });
  });
});

describe("typed outputs", () => {
  it("an artifact update comes with its block and the artifact as the client holds it after the update", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      textPart("prt_t1", A1, ""),
      delta("prt_t1", A1, "Hello "),
      delta("prt_t1", A1, "wrld"),
      textPart("prt_t1", A1, "Hello world"),
      toolPart("prt_tool", A1, "call_1", { status: "pending", input: {}, raw: "" }),
      ...epilogue(),
    ]);
    const artifacts = out.filter((o) => o.kind === "artifact");
    expect(artifacts.map((o) => o.block)).toEqual(["text", "text", "text", "tool_call"]);
    const text = artifacts.filter((o) => o.block === "text");
    text.forEach((o, i) => {
      expect(o.artifact).toEqual({
        artifactId: "task-1:text",
        name: "response",
        parts: [{ kind: "text", text: clientView(text.slice(0, i + 1).map((t) => t.event)) }],
        metadata: o.event.artifact.metadata,
      });
    });
    expect(text.at(-1)?.artifact.parts).toEqual([{ kind: "text", text: "Hello world" }]);
    expect(artifacts[3]?.artifact).toBe(artifacts[3]?.event.artifact);
  });

  it("a status update that asks or resolves an interrupt carries it typed, as published", () => {
    const mapper = new StreamMapper(ctx());
    const out = run(mapper, [
      ...prelude(),
      ev("permission.asked", { id: "per_1", sessionID: SES, permission: "bash", patterns: ["x"], metadata: {}, always: [] }),
      ev("permission.replied", { sessionID: SES, requestID: "per_1", reply: "once" }),
      stepStart("prt_s1", A1),
    ]);
    const statuses = out.filter((o) => o.kind === "status");
    expect(statuses.map((o) => o.interrupt?.phase)).toEqual(["asked", "resolved", undefined]);
    const [asked, resolved] = statuses;
    expect(asked?.interrupt).toMatchObject({ requestId: "per_1", type: "permission", phase: "asked", details: { permission: "bash", reply_options: ["once", "always", "reject"] } });
    expect(asked?.interrupt?.published).toBe(shared(asked!.event).interrupt);
    expect(asked?.interrupt?.phase === "asked" && asked.interrupt.details).toBe(shared(asked!.event).interrupt?.details);
    expect(resolved?.interrupt).toMatchObject({ requestId: "per_1", type: "permission", phase: "resolved" });
    expect(resolved?.interrupt?.published).toBe(shared(resolved!.event).interrupt);
  });
});
