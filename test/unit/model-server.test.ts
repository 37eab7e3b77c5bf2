// The scripted OpenAI-compatible model server (tools/upstream/model-server.ts), over real HTTP on 127.0.0.1.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startModelServer, type ModelServer } from "../../tools/upstream/model-server.js";
import { failure, hang, text, tool } from "../../tools/upstream/script.js";

type Frame = Record<string, unknown> | "[DONE]";

interface ChatOptions {
  sessionID?: string;
  stream?: boolean;
  system?: string;
  tools?: unknown[];
  messages?: unknown[];
  signal?: AbortSignal;
}

let server: ModelServer;

beforeEach(async () => {
  server = await startModelServer();
});

afterEach(async () => {
  await server.close();
});

function chat(opts: ChatOptions = {}): Promise<Response> {
  const messages = opts.messages ?? [
    { role: "system", content: opts.system ?? "You are opencode, an interactive CLI tool" },
    { role: "user", content: "hi" },
  ];
  const body = {
    model: "fake-model",
    messages,
    ...(opts.stream === false ? {} : { stream: true, stream_options: { include_usage: true } }),
    tools: opts.tools ?? [{ type: "function", function: { name: "bash", parameters: {} } }],
  };
  return fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(opts.sessionID === undefined ? {} : { "x-session-id": opts.sessionID }) },
    body: JSON.stringify(body),
    ...(opts.signal === undefined ? {} : { signal: opts.signal }),
  });
}

function parseFrames(raw: string): Frame[] {
  const frames = raw.split("\n\n");
  expect(frames.pop()).toBe(""); // every frame ends with a blank line
  return frames.map((frame) => {
    expect(frame.startsWith("data: ")).toBe(true);
    const data = frame.slice("data: ".length);
    return data === "[DONE]" ? "[DONE]" : (JSON.parse(data) as Record<string, unknown>);
  });
}

async function streamed(res: Response): Promise<Frame[]> {
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  return parseFrames(await res.text());
}

/** Reads frames incrementally until `count` complete frames arrived. */
async function readFrames(reader: ReadableStreamDefaultReader<Uint8Array>, count: number): Promise<Frame[]> {
  const decoder = new TextDecoder();
  let buffered = "";
  while (buffered.split("\n\n").length - 1 < count) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended after ${buffered.split("\n\n").length - 1} frames`);
    buffered += decoder.decode(value, { stream: true });
  }
  return parseFrames(buffered);
}

/** The interesting part of each frame: delta + finish_reason, or usage, or [DONE]. */
function shape(frames: Frame[]): unknown[] {
  return frames.map((frame) => {
    if (frame === "[DONE]") return frame;
    const choices = frame.choices as Array<{ delta: unknown; finish_reason: unknown }>;
    if (choices.length === 0) return { usage: frame.usage };
    expect(choices).toHaveLength(1);
    return { delta: choices[0]!.delta, finish: choices[0]!.finish_reason };
  });
}

async function until(check: () => boolean, timeoutMs = 1000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("model server: streamed replies", () => {
  it("text: role chunk, reasoning_content chunks, content chunks, stop, usage, [DONE]", async () => {
    server.script(text(["Hello ", "world"], { reasoning: ["Let me ", "think"] }));
    const frames = await streamed(await chat());
    expect(shape(frames)).toEqual([
      { delta: { role: "assistant", content: "" }, finish: null },
      { delta: { reasoning_content: "Let me " }, finish: null },
      { delta: { reasoning_content: "think" }, finish: null },
      { delta: { content: "Hello " }, finish: null },
      { delta: { content: "world" }, finish: null },
      { delta: {}, finish: "stop" },
      { usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 } },
      "[DONE]",
    ]);
    const first = frames[0] as Record<string, unknown>;
    expect(first.object).toBe("chat.completion.chunk");
    expect(first.model).toBe("fake-model");
    expect(String(first.id)).toMatch(/^chatcmpl-/);
    for (const frame of frames.slice(0, -1)) expect((frame as Record<string, unknown>).id).toBe(first.id);
  });

  it("text: scripted usage and delayMs before each chunk", async () => {
    server.script(text(["a", "b", "c"], { delayMs: 40, usage: { prompt_tokens: 7, completion_tokens: 3 } }));
    const started = Date.now();
    const frames = await streamed(await chat());
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
    expect(shape(frames).at(-2)).toEqual({ usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } });
  });

  it("tool: several calls with indexes, JSON-encoded arguments, finish_reason tool_calls", async () => {
    server.script({
      kind: "tool",
      calls: [
        { name: "bash", args: { command: "echo hi", description: "x" } },
        { name: "read", args: { filePath: "/w/a.txt" }, id: "call_custom" },
      ],
    });
    server.script(tool("todowrite", { todos: [] }));
    const frames = await streamed(await chat());
    expect(shape(frames)).toEqual([
      {
        delta: {
          role: "assistant",
          content: null,
          tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "bash", arguments: "" } }],
        },
        finish: null,
      },
      { delta: { tool_calls: [{ index: 0, function: { arguments: '{"command":"echo hi","description":"x"}' } }] }, finish: null },
      {
        delta: { tool_calls: [{ index: 1, id: "call_custom", type: "function", function: { name: "read", arguments: "" } }] },
        finish: null,
      },
      { delta: { tool_calls: [{ index: 1, function: { arguments: '{"filePath":"/w/a.txt"}' } }] }, finish: null },
      { delta: {}, finish: "tool_calls" },
      { usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } },
      "[DONE]",
    ]);
    // Default call ids keep counting across replies.
    const next = shape(await streamed(await chat()))[0] as { delta: { tool_calls: Array<{ id: string }> } };
    expect(next.delta.tool_calls[0]!.id).toBe("call_2");
  });

  it("error: the scripted HTTP status with an OpenAI error body", async () => {
    server.script(failure(400, "scripted bad request"));
    const res = await chat();
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual({ error: { message: "scripted bad request", type: "invalid_request_error" } });
    expect(server.chatRequests()[0]!.reply).toEqual(failure(400, "scripted bad request"));
  });

  it("hang with holdMs: the chunks, a stall, then a normal finish", async () => {
    server.script(hang({ chunks: ["par", "tial"], holdMs: 150 }));
    const started = Date.now();
    const frames = await streamed(await chat());
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(shape(frames)).toEqual([
      { delta: { role: "assistant", content: "" }, finish: null },
      { delta: { content: "par" }, finish: null },
      { delta: { content: "tial" }, finish: null },
      { delta: {}, finish: "stop" },
      { usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } },
      "[DONE]",
    ]);
    expect(server.chatRequests()[0]!.aborted).toBeUndefined();
  });

  it("hang without holdMs stalls until the client disconnects, which is recorded as aborted", async () => {
    server.script(hang());
    const controller = new AbortController();
    const res = await chat({ signal: controller.signal });
    const reader = res.body!.getReader();
    expect(shape(await readFrames(reader, 2))).toEqual([
      { delta: { role: "assistant", content: "" }, finish: null },
      { delta: { content: "partial" }, finish: null },
    ]);
    expect(server.chatRequests()[0]!.aborted).toBeUndefined();
    controller.abort();
    await until(() => server.chatRequests()[0]!.aborted === true);
  });

  it("close() ends a hanging stream", async () => {
    server.script(hang({ chunks: [] }));
    const reader = (await chat()).body!.getReader();
    await readFrames(reader, 1);
    const ended = (async () => {
      for (;;) if ((await reader.read().catch(() => ({ done: true }))).done) return true;
    })();
    await server.close();
    await expect(ended).resolves.toBe(true);
  }, 2000);
});

describe("model server: queues and recording", () => {
  it("the per-session queue goes before the global queue; empty queues fall back to the unscripted default", async () => {
    server.script(text("global-1"), text("global-2"));
    server.scriptFor("ses_a", text("session-a"));
    expect(server.pending()).toBe(3);

    const contentOf = async (sessionID: string): Promise<string> =>
      (await streamed(await chat({ sessionID })))
        .map((frame) => (frame === "[DONE]" ? "" : ((frame.choices as Array<{ delta: { content?: string } }>)[0]?.delta.content ?? "")))
        .join("");

    expect(await contentOf("ses_b")).toBe("global-1");
    expect(await contentOf("ses_a")).toBe("session-a");
    expect(await contentOf("ses_a")).toBe("global-2");
    expect(server.pending()).toBe(0);
    expect(await contentOf("ses_a")).toBe("ok");

    const chats = server.chatRequests();
    expect(chats.map((r) => r.sessionID)).toEqual(["ses_b", "ses_a", "ses_a", "ses_a"]);
    expect(chats.map((r) => r.unscripted)).toEqual([undefined, undefined, undefined, true]);
    expect(chats[3]!.reply).toEqual(text("ok"));
    expect(chats[0]!.headers["x-session-id"]).toBe("ses_b");
    expect(chats[0]!.at).toBeGreaterThan(Date.now() - 5000);
  });

  it("title requests are answered with titleText and never consume scripted replies", async () => {
    server.script(text("for the chat"));
    const frames = await streamed(await chat({ sessionID: "ses_t", system: "You are a title generator. You output ONLY a thread title.", tools: [] }));
    expect(shape(frames).slice(0, 3)).toEqual([
      { delta: { role: "assistant", content: "" }, finish: null },
      { delta: { content: "Scripted title" }, finish: null },
      { delta: {}, finish: "stop" },
    ]);
    expect(server.pending()).toBe(1);
    expect(server.requests.map((r) => r.kind)).toEqual(["title"]);
    expect(server.requests[0]!.reply).toBeUndefined();
    expect(server.chatRequests()).toEqual([]);
    expect(server.titleRequests()[0]!.sessionID).toBe("ses_t");
    // The same system prompt with tools is an ordinary chat request.
    await streamed(await chat({ system: "You are a title generator." }));
    expect(server.pending()).toBe(0);
  });

  it("options: defaultReply, titleText", async () => {
    await server.close();
    server = await startModelServer({ defaultReply: failure(418, "nothing scripted"), titleText: "My title" });
    const res = await chat();
    expect(res.status).toBe(418);
    expect(server.chatRequests()[0]!.unscripted).toBe(true);
    const title = await streamed(await chat({ system: "You are a title generator.", tools: [] }));
    expect(shape(title)[1]).toEqual({ delta: { content: "My title" }, finish: null });
  });

  it("waitForRequests resolves once n chat requests arrived (titles do not count) and rejects on timeout", async () => {
    const waiting = server.waitForRequests(2, { timeoutMs: 2000 });
    let resolved = false;
    void waiting.then(() => (resolved = true));
    await streamed(await chat({ system: "You are a title generator.", tools: [] }));
    await streamed(await chat());
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(resolved).toBe(false);
    await streamed(await chat());
    const chats = await waiting;
    expect(chats).toHaveLength(2);
    expect(chats.every((r) => r.kind === "chat")).toBe(true);
    await expect(server.waitForRequests(1)).resolves.toHaveLength(2);
    await expect(server.waitForRequests(3, { timeoutMs: 30 })).rejects.toThrow(/only 2 chat request/);
  });

  it("lastUserText and toolResults read the recorded conversation", async () => {
    const messages = [
      { role: "system", content: "sys" },
      { role: "user", content: "first" },
      { role: "user", content: [{ type: "text", text: "second" }, { type: "image_url", image_url: {} }, { type: "text", text: "more" }] },
      { role: "assistant", content: "", tool_calls: [{ id: "call_9", type: "function", function: { name: "bash", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_9", content: "hi\n" },
    ];
    await streamed(await chat({ messages }));
    const req = server.chatRequests()[0]!;
    expect(server.lastUserText(req)).toBe("second\nmore");
    expect(server.toolResults(req)).toEqual([{ role: "tool", tool_call_id: "call_9", content: "hi\n" }]);
    expect(req.body.stream).toBe(true);
  });

  it("reset() clears queues, recordings and id counters", async () => {
    server.script(tool("bash", { command: "x" }));
    await streamed(await chat());
    server.script(text("left over"));
    server.scriptFor("ses_x", text("also left over"));
    server.reset();
    expect(server.pending()).toBe(0);
    expect(server.requests).toEqual([]);
    server.script(tool("bash", { command: "y" }));
    const first = shape(await streamed(await chat()))[0] as { delta: { tool_calls: Array<{ id: string }> } };
    expect(first.delta.tool_calls[0]!.id).toBe("call_1");
  });
});

describe("model server: other answers", () => {
  it("non-streaming requests get one chat.completion object", async () => {
    server.script(text(["Hel", "lo"], { reasoning: ["hmm"] }), tool("bash", { command: "ls" }, { id: "c1" }));
    const textRes = await chat({ stream: false });
    expect(textRes.status).toBe(200);
    const textBody = (await textRes.json()) as Record<string, unknown>;
    expect(textBody.object).toBe("chat.completion");
    expect(textBody.choices).toEqual([
      { index: 0, message: { role: "assistant", content: "Hello", reasoning_content: "hmm" }, finish_reason: "stop" },
    ]);
    expect(textBody.usage).toEqual({ prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 });
    const toolBody = (await (await chat({ stream: false })).json()) as Record<string, unknown>;
    expect(toolBody.choices).toEqual([
      {
        index: 0,
        message: { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: '{"command":"ls"}' } }] },
        finish_reason: "tool_calls",
      },
    ]);
  });

  it("GET /v1/models lists fake-model; unknown routes are 404 JSON; bad JSON is 400 and not recorded", async () => {
    const models = await fetch(`${server.baseUrl}/models`);
    expect(models.status).toBe(200);
    expect(((await models.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual(["fake-model"]);
    const missing = await fetch(`${server.url}/v1/embeddings`, { method: "POST", body: "{}" });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toMatch(/embeddings/);
    const bad = await fetch(`${server.baseUrl}/chat/completions`, { method: "POST", body: "{not json" });
    expect(bad.status).toBe(400);
    expect(server.requests).toEqual([]);
  });

  it("listens on 127.0.0.1 and baseUrl is the origin plus /v1", () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.baseUrl).toBe(`${server.url}/v1`);
  });
});
