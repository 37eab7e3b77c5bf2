/**
 * Scripted OpenAI-compatible model server for tests: the "LLM" behind a real hermetic `opencode serve`
 * (tools/upstream/hermetic.ts). Tests queue Replies (tools/upstream/script.ts); every chat request consumes one,
 * per-session queue (header `x-session-id`) first, then the global queue, then `defaultReply` (recorded as
 * `unscripted`). Title-generation requests are answered with `titleText` and never consume a reply.
 * Wire formats follow /work/shared/reference/opencode-upstream.md §4. Node built-ins only; 127.0.0.1 only.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { DEFAULT_HANG_CHUNKS, replyUsage, text, type ErrorReply, type HangReply, type Reply, type TextReply, type ToolReply } from "./script.js";

export interface ModelServerOptions {
  /** default 0 (any free port) */
  port?: number;
  /** answer when no scripted reply is queued (default: text "ok") */
  defaultReply?: Reply;
  /** text streamed for title-generation requests (default "Scripted title") */
  titleText?: string;
}

export interface ChatMessage {
  role: string;
  content?: string | Array<{ type: string; text?: string; [key: string]: unknown }> | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [key: string]: unknown;
}

export interface ChatRequestBody {
  model?: string;
  messages?: ChatMessage[];
  stream?: boolean;
  tools?: unknown[];
  [key: string]: unknown;
}

export interface RecordedRequest {
  kind: "chat" | "title";
  /** from the `x-session-id` header OpenCode sends on every model request */
  sessionID?: string;
  body: ChatRequestBody;
  headers: IncomingHttpHeaders;
  /** the reply that answered it (absent for title requests) */
  reply?: Reply;
  /** true when no scripted reply was queued and `defaultReply` answered */
  unscripted?: boolean;
  /** ms epoch when the request body was received */
  at: number;
  /** true when the client disconnected before the reply finished */
  aborted?: boolean;
}

export interface ModelServer {
  /** e.g. http://127.0.0.1:PORT/v1 (OpenCode provider `options.baseURL`) */
  baseUrl: string;
  /** origin, e.g. http://127.0.0.1:PORT */
  url: string;
  port: number;
  /** every recorded request, chat and title, in arrival order */
  requests: RecordedRequest[];
  /** append to the global FIFO queue */
  script(...replies: Reply[]): void;
  /** append to the FIFO queue of one OpenCode session (consulted before the global queue) */
  scriptFor(sessionID: string, ...replies: Reply[]): void;
  chatRequests(): RecordedRequest[];
  titleRequests(): RecordedRequest[];
  /** text of the last `role:"user"` message (array content: text parts joined with "\n"); "" when none */
  lastUserText(req: RecordedRequest): string;
  /** the `role:"tool"` messages of a request (tool results sent back to the model) */
  toolResults(req: RecordedRequest): ChatMessage[];
  /** resolves with the chat requests once at least n were recorded; rejects after timeoutMs (default 5000) */
  waitForRequests(n: number, opts?: { timeoutMs?: number }): Promise<RecordedRequest[]>;
  /** scripted replies not yet consumed (global + per-session) */
  pending(): number;
  /** clears queues, recorded requests and id counters (in-flight streams keep running) */
  reset(): void;
  /** ends every open stream and socket, rejects pending waitForRequests, stops listening. Idempotent. */
  close(): Promise<void>;
}

const TITLE_PROMPT = "You are a title generator";
const MAX_BODY_BYTES = 32 * 1024 * 1024;

interface Waiter {
  n: number;
  resolve: (requests: RecordedRequest[]) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

function messageText(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((part) => part.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("\n");
}

function isTitleRequest(body: ChatRequestBody): boolean {
  if (Array.isArray(body.tools) && body.tools.length > 0) return false;
  const messages = Array.isArray(body.messages) ? body.messages : [];
  return messages.some((m) => m.role === "system" && messageText(m.content).trimStart().startsWith(TITLE_PROMPT));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error("request body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
    req.on("close", () => reject(new Error("request closed before its body was read")));
  });
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/** Resolves true after ms, or false as soon as signal aborts (the timer is cleared either way). */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Waits until signal aborts (never resolves otherwise). */
function untilAborted(signal: AbortSignal): Promise<false> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(false), { once: true }));
}

export async function startModelServer(opts: ModelServerOptions = {}): Promise<ModelServer> {
  const defaultReply: Reply = opts.defaultReply ?? text("ok");
  const titleText = opts.titleText ?? "Scripted title";
  const globalQueue: Reply[] = [];
  const sessionQueues = new Map<string, Reply[]>();
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const inFlight = new Set<AbortController>();
  let waiters: Waiter[] = [];
  let completionCounter = 0;
  let callCounter = 0;
  let closing: Promise<void> | undefined;

  const chatRequests = (): RecordedRequest[] => requests.filter((r) => r.kind === "chat");

  const notifyWaiters = (): void => {
    const chats = chatRequests();
    waiters = waiters.filter((w) => {
      if (chats.length < w.n) return true;
      clearTimeout(w.timer);
      w.resolve(chats);
      return false;
    });
  };

  const takeReply = (sessionID: string | undefined): Reply | undefined => {
    if (sessionID !== undefined) {
      const queue = sessionQueues.get(sessionID);
      const reply = queue?.shift();
      if (queue !== undefined && queue.length === 0) sessionQueues.delete(sessionID);
      if (reply !== undefined) return reply;
    }
    return globalQueue.shift();
  };

  /** Writes one reply (streamed or as one JSON object); marks the record aborted if the client leaves early. */
  const answer = async (res: ServerResponse, body: ChatRequestBody, reply: Reply, record: RecordedRequest): Promise<void> => {
    if (reply.kind === "error") return answerError(res, reply);
    const controller = new AbortController();
    const { signal } = controller;
    inFlight.add(controller);
    res.on("close", () => {
      if (!res.writableFinished) record.aborted = true;
      controller.abort();
    });
    try {
      if (body.stream === true) await stream(res, body, reply, signal);
      else await respondWhole(res, body, reply, signal);
    } finally {
      inFlight.delete(controller);
    }
  };

  const answerError = (res: ServerResponse, reply: ErrorReply): void => {
    sendJson(res, reply.status, { error: { message: reply.message, type: "invalid_request_error" } });
  };

  const stream = async (res: ServerResponse, body: ChatRequestBody, reply: TextReply | ToolReply | HangReply, signal: AbortSignal): Promise<void> => {
    const id = `chatcmpl-${++completionCounter}`;
    const created = Math.floor(Date.now() / 1000);
    const model = typeof body.model === "string" ? body.model : "fake-model";
    const frame = (data: string): boolean => {
      if (signal.aborted || res.destroyed) return false;
      res.write(`data: ${data}\n\n`);
      return true;
    };
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): boolean =>
      frame(JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finishReason }] }));
    const finish = (finishReason: string): void => {
      if (!chunk({}, finishReason)) return;
      if (!frame(JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage: replyUsage(reply) }))) return;
      frame("[DONE]");
      res.end();
    };

    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.flushHeaders();

    if (reply.kind === "tool") {
      const delay = reply.delayMs ?? 0;
      for (const [index, call] of reply.calls.entries()) {
        const callId = call.id ?? `call_${++callCounter}`;
        const head = { index, id: callId, type: "function", function: { name: call.name, arguments: "" } };
        if (!(await sleep(delay, signal))) return;
        if (!chunk(index === 0 ? { role: "assistant", content: null, tool_calls: [head] } : { tool_calls: [head] })) return;
        if (!(await sleep(delay, signal))) return;
        if (!chunk({ tool_calls: [{ index, function: { arguments: JSON.stringify(call.args) } }] })) return;
      }
      if (!(await sleep(delay, signal))) return;
      finish("tool_calls");
      return;
    }

    if (!chunk({ role: "assistant", content: "" })) return;
    if (reply.kind === "hang") {
      for (const piece of reply.chunks ?? DEFAULT_HANG_CHUNKS) if (!chunk({ content: piece })) return;
      const held = reply.holdMs === undefined ? await untilAborted(signal) : await sleep(reply.holdMs, signal);
      if (held) finish("stop");
      return;
    }
    const delay = reply.delayMs ?? 0;
    for (const piece of reply.reasoning ?? []) {
      if (!(await sleep(delay, signal))) return;
      if (!chunk({ reasoning_content: piece })) return;
    }
    for (const piece of reply.chunks) {
      if (!(await sleep(delay, signal))) return;
      if (!chunk({ content: piece })) return;
    }
    finish("stop");
  };

  const respondWhole = async (res: ServerResponse, body: ChatRequestBody, reply: TextReply | ToolReply | HangReply, signal: AbortSignal): Promise<void> => {
    let message: Record<string, unknown>;
    let finishReason = "stop";
    if (reply.kind === "tool") {
      if (!(await sleep((reply.delayMs ?? 0) * reply.calls.length, signal))) return;
      const toolCalls = reply.calls.map((call) => ({
        id: call.id ?? `call_${++callCounter}`,
        type: "function",
        function: { name: call.name, arguments: JSON.stringify(call.args) },
      }));
      message = { role: "assistant", content: null, tool_calls: toolCalls };
      finishReason = "tool_calls";
    } else if (reply.kind === "hang") {
      const held = reply.holdMs === undefined ? await untilAborted(signal) : await sleep(reply.holdMs, signal);
      if (!held) return;
      message = { role: "assistant", content: (reply.chunks ?? DEFAULT_HANG_CHUNKS).join("") };
    } else {
      const count = reply.chunks.length + (reply.reasoning?.length ?? 0);
      if (!(await sleep((reply.delayMs ?? 0) * count, signal))) return;
      message = { role: "assistant", content: reply.chunks.join("") };
      if (reply.reasoning !== undefined) message.reasoning_content = reply.reasoning.join("");
    }
    if (signal.aborted || res.destroyed) return;
    sendJson(res, 200, {
      id: `chatcmpl-${++completionCounter}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: typeof body.model === "string" ? body.model : "fake-model",
      choices: [{ index: 0, message, finish_reason: finishReason }],
      usage: replyUsage(reply),
    });
  };

  const handleChat = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let body: ChatRequestBody;
    try {
      const parsed: unknown = JSON.parse(await readBody(req));
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("body is not a JSON object");
      body = parsed as ChatRequestBody;
    } catch (error) {
      if (!res.destroyed) {
        sendJson(res, 400, { error: { message: `bad request: ${(error as Error).message}`, type: "invalid_request_error" } });
      }
      return;
    }
    const header = req.headers["x-session-id"];
    const sessionID = typeof header === "string" && header !== "" ? header : undefined;
    const base = { ...(sessionID === undefined ? {} : { sessionID }), body, headers: req.headers, at: Date.now() };

    if (isTitleRequest(body)) {
      const record: RecordedRequest = { kind: "title", ...base };
      requests.push(record);
      await answer(res, body, text(titleText), record);
      return;
    }
    const scripted = takeReply(sessionID);
    const reply = scripted ?? defaultReply;
    const record: RecordedRequest = { kind: "chat", ...base, reply, ...(scripted === undefined ? { unscripted: true } : {}) };
    requests.push(record);
    notifyWaiters();
    await answer(res, body, reply, record);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname.replace(/\/+$/, "");
    if (req.method === "POST" && path === "/v1/chat/completions") return handleChat(req, res);
    if (req.method === "GET" && path === "/v1/models") {
      sendJson(res, 200, { object: "list", data: [{ id: "fake-model", object: "model", created: 0, owned_by: "scripted" }] });
      return;
    }
    req.resume();
    sendJson(res, 404, { error: { message: `no route for ${req.method ?? "?"} ${path || "/"}`, type: "not_found" } });
  };

  const server = createServer({ noDelay: true }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        sendJson(res, 500, { error: { message: `model server bug: ${String(error)}`, type: "server_error" } });
      } else {
        res.destroy();
      }
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("model server has no TCP address");
  const url = `http://127.0.0.1:${address.port}`;

  return {
    baseUrl: `${url}/v1`,
    url,
    port: address.port,
    requests,
    script(...replies) {
      globalQueue.push(...replies);
    },
    scriptFor(sessionID, ...replies) {
      if (replies.length === 0) return;
      const queue = sessionQueues.get(sessionID) ?? [];
      queue.push(...replies);
      sessionQueues.set(sessionID, queue);
    },
    chatRequests,
    titleRequests: () => requests.filter((r) => r.kind === "title"),
    lastUserText(req) {
      const users = (req.body.messages ?? []).filter((m) => m.role === "user");
      const last = users[users.length - 1];
      return last === undefined ? "" : messageText(last.content);
    },
    toolResults: (req) => (req.body.messages ?? []).filter((m) => m.role === "tool"),
    waitForRequests(n, { timeoutMs = 5000 } = {}) {
      const chats = chatRequests();
      if (chats.length >= n) return Promise.resolve(chats);
      if (closing !== undefined) return Promise.reject(new Error("model server is closed"));
      return new Promise((resolve, reject) => {
        const waiter: Waiter = {
          n,
          resolve,
          reject,
          timer: setTimeout(() => {
            waiters = waiters.filter((w) => w !== waiter);
            reject(new Error(`waitForRequests(${n}): only ${chatRequests().length} chat request(s) after ${timeoutMs} ms`));
          }, timeoutMs),
        };
        waiters.push(waiter);
      });
    },
    pending() {
      let count = globalQueue.length;
      for (const queue of sessionQueues.values()) count += queue.length;
      return count;
    },
    reset() {
      globalQueue.length = 0;
      sessionQueues.clear();
      requests.length = 0;
      completionCounter = 0;
      callCounter = 0;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const w of waiters) {
          clearTimeout(w.timer);
          w.reject(new Error("model server closed"));
        }
        waiters = [];
        server.close(() => resolve());
        for (const controller of inFlight) controller.abort();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}
