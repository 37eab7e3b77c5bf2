/**
 * A session's turns: a prompt becomes a user message and starts (or queues onto) the session's loop, which answers
 * with the scripted replies step by step (text, reasoning, tools, model errors, hangs) and emits the event sequence
 * the real server emits for them; abort and loss of the process end a loop the way the real server shows it.
 */
import type { ApiError, AssistantMessage, MessageAbortedError, OutputFormat, Part, ReasoningPart, StepFinishPart, TextPart, UserMessage } from "../../../generated/opencode/types.gen.js";
import { DEFAULT_HANG_CHUNKS, PROMPT_TOKENS, replyUsage, type Reply } from "../script.js";
import { Aborted, badRequest, ev, isObject, newId, sleep } from "./common.js";
import type { EventBus } from "./events.js";
import type { Interactions } from "./interactions.js";
import type { Loop, MessageRecord, SessionRecord, StubState } from "./state.js";
import { ToolRunner } from "./tools.js";

export { PROMPT_TOKENS };

type StepResult = "stop" | "tool-calls" | "blocked" | { error: ApiError };

interface PromptInput {
  messageID?: string;
  model?: { providerID: string; modelID: string };
  agent?: string;
  noReply?: boolean;
  system?: string;
  tools?: Record<string, boolean>;
  format?: OutputFormat;
  parts: Array<Record<string, unknown> & { type: string }>;
}

/** The body of a prompt, checked with the real server's 400 messages. */
export function parsePrompt(body: unknown): PromptInput {
  if (!isObject(body)) throw badRequest('Missing key\n  at ["parts"]');
  if (!Array.isArray(body.parts)) throw badRequest('Missing key\n  at ["parts"]');
  const parts: PromptInput["parts"] = [];
  for (const [i, part] of body.parts.entries()) {
    if (!isObject(part) || typeof part.type !== "string" || !["text", "file", "agent", "subtask"].includes(part.type)) {
      throw badRequest(`Expected a valid part\n  at ["parts"][${i}]`);
    }
    if (part.type === "text" && typeof part.text !== "string") throw badRequest(`Missing key\n  at ["parts"][${i}]["text"]`);
    parts.push(part as PromptInput["parts"][number]);
  }
  const input: PromptInput = { parts };
  if (body.messageID !== undefined) {
    if (typeof body.messageID !== "string" || !body.messageID.startsWith("msg")) {
      throw badRequest(`Expected a string starting with "msg", got ${JSON.stringify(body.messageID)}\n  at ["messageID"]`);
    }
    input.messageID = body.messageID;
  }
  if (isObject(body.model) && typeof body.model.providerID === "string" && typeof body.model.modelID === "string") {
    input.model = { providerID: body.model.providerID, modelID: body.model.modelID };
  }
  if (typeof body.agent === "string") input.agent = body.agent;
  if (body.noReply === true) input.noReply = true;
  if (typeof body.system === "string") input.system = body.system;
  if (isObject(body.tools)) input.tools = body.tools as Record<string, boolean>;
  if (isObject(body.format) && (body.format.type === "text" || (body.format.type === "json_schema" && isObject(body.format.schema)))) {
    input.format = body.format as OutputFormat;
  }
  return input;
}

/** Token counts as the scripted model server reports them. */
function usageOf(reply: Reply): { input: number; output: number; total: number } {
  const u = replyUsage(reply);
  return { input: u.prompt_tokens, output: u.completion_tokens, total: u.total_tokens };
}

/** The unfinished assistant message that answers `user` (a model step, or a user shell command). */
export function newAssistant(rec: SessionRecord, user: UserMessage): AssistantMessage {
  return {
    id: newId("msg"),
    sessionID: rec.info.id,
    role: "assistant",
    time: { created: Date.now() },
    parentID: user.id,
    modelID: user.model.modelID,
    providerID: user.model.providerID,
    mode: user.agent,
    agent: user.agent,
    path: { cwd: rec.info.directory, root: rec.info.directory },
    cost: 0,
    tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
  };
}

export class Turns {
  private readonly tools: ToolRunner;

  constructor(
    private readonly state: StubState,
    private readonly bus: EventBus,
    private readonly interactions: Interactions,
  ) {
    this.tools = new ToolRunner(state, bus, interactions);
  }

  async prompt(sessionID: string, body: unknown): Promise<MessageRecord> {
    const rec = this.state.session(sessionID);
    const input = parsePrompt(body);
    const now = Date.now();
    if (!rec.prompted) {
      rec.prompted = true;
      rec.info.agent = input.agent ?? "build";
      rec.info.model = { id: input.model?.modelID ?? this.state.model.modelID, providerID: input.model?.providerID ?? this.state.model.providerID, variant: "default" };
      this.state.touch(rec);
      this.bus.session(rec);
    }
    const user: UserMessage = {
      id: input.messageID ?? newId("msg"),
      sessionID,
      role: "user",
      time: { created: now },
      agent: input.agent ?? "build",
      model: input.model ?? { ...this.state.model },
    };
    if (input.system !== undefined) user.system = input.system;
    if (input.tools !== undefined) user.tools = input.tools;
    if (input.format !== undefined) user.format = input.format;
    const record: MessageRecord = { info: user, parts: [] };
    rec.messages.push(record);
    this.bus.message(rec, user);
    for (const part of input.parts) {
      const stored = { ...part, id: typeof part.id === "string" ? part.id : newId("prt"), sessionID, messageID: user.id } as Part;
      record.parts.push(stored);
      this.bus.part(rec, stored);
    }
    this.state.touch(rec);
    this.bus.session(rec);
    if (input.noReply === true) return record;

    this.bus.status(rec, { type: "busy" });
    return new Promise<MessageRecord>((resolveTurn) => {
      if (rec.loop !== undefined) {
        // Busy: queued; the running loop answers it after its current reply, without an idle in between.
        rec.loop.queued.push(user);
        rec.loop.waiters.push(resolveTurn);
        return;
      }
      const loop: Loop = { user, queued: [], controller: new AbortController(), current: undefined, waiters: [resolveTurn], silent: false };
      rec.loop = loop;
      this.runLoop(rec, loop).catch((error: unknown) => {
        process.stderr.write(`opencode stub: turn of ${sessionID} failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      });
    });
  }

  private async runLoop(rec: SessionRecord, loop: Loop): Promise<void> {
    const sessionID = rec.info.id;
    try {
      for (;;) {
        const user = loop.user;
        const info = newAssistant(rec, user);
        const current: MessageRecord = { info, parts: [] };
        loop.current = current;
        rec.messages.push(current);
        this.bus.message(rec, info);
        rec.info.summary ??= { additions: 0, deletions: 0, files: 0 };
        this.state.touch(rec);
        this.bus.session(rec);
        this.bus.diff(rec);
        // (the real server re-sends the user message with its summary at a racy point of the step; this is one
        // of the observed positions)
        this.bus.userSummary(rec, user);
        this.bus.status(rec, { type: "busy" });

        const reply = this.state.nextReply(rec);
        const result = await this.runStep(rec, loop, current, reply);
        if (typeof result === "object") {
          info.error = result.error;
          this.bus.send(rec, ev("session.error", { sessionID, error: result.error }));
          this.bus.idle(rec);
          info.time.completed = Date.now();
          this.bus.message(rec, info);
          this.bus.idle(rec);
          return;
        }
        this.finishStep(rec, current, result === "stop" ? "stop" : "tool-calls", reply);
        // Structured output (`format: json_schema`): a StructuredOutput call ends the loop with its input as the
        // message's `structured`; a step that ends without one is a StructuredOutputError (as the real server, 1.18).
        if (loop.user.format?.type === "json_schema" && result !== "blocked") {
          const call = current.parts.find((p) => p.type === "tool" && p.tool === "StructuredOutput" && p.state.status === "completed");
          if (call !== undefined && call.type === "tool") info.structured = call.state.input;
          else if (result === "stop") info.error = { name: "StructuredOutputError", data: { message: "Model did not produce structured output", retries: 0 } };
          if (call !== undefined || result === "stop") {
            this.bus.message(rec, info);
            this.bus.idle(rec);
            this.state.touch(rec);
            this.bus.session(rec);
            return;
          }
        }
        if (result === "tool-calls") {
          this.bus.status(rec, { type: "busy" });
          continue;
        }
        if (result === "stop" && loop.queued.length > 0) {
          // One model request answers every queued prompt; its parent is the newest of them.
          loop.user = loop.queued[loop.queued.length - 1] ?? user;
          loop.queued = [];
          this.bus.status(rec, { type: "busy" });
          continue;
        }
        if (result === "stop") this.bus.status(rec, { type: "busy" });
        this.bus.idle(rec);
        this.state.touch(rec);
        this.bus.session(rec);
        this.bus.diff(rec);
        this.bus.userSummary(rec, loop.user);
        return;
      }
    } catch (error) {
      if (!(error instanceof Aborted)) throw error;
      if (loop.lost !== true) this.abortEvents(rec, loop);
    } finally {
      if (rec.loop === loop) rec.loop = undefined;
      const last = loop.current ?? { info: loop.user, parts: [] };
      for (const resolveTurn of loop.waiters) resolveTurn(last);
    }
  }

  /** §7.2: session.error, idle, the kept partial parts, the errored assistant message, idle again. */
  private abortEvents(rec: SessionRecord, loop: Loop): void {
    const sessionID = rec.info.id;
    const error: MessageAbortedError = { name: "MessageAbortedError", data: { message: "Aborted" } };
    this.bus.send(rec, ev("session.error", { sessionID, error }));
    this.bus.idle(rec);
    const current = loop.current;
    if (current === undefined) return;
    const now = Date.now();
    for (const part of current.parts) {
      if ((part.type === "text" || part.type === "reasoning") && part.time !== undefined && part.time.end === undefined) {
        part.time.end = now;
        this.bus.part(rec, part);
      } else if (part.type === "tool" && (part.state.status === "pending" || part.state.status === "running")) {
        const start = part.state.status === "running" ? part.state.time.start : now;
        part.state = { status: "error", input: part.state.input, time: { start, end: now }, error: "Tool execution aborted", metadata: { interrupted: true } };
        this.bus.part(rec, part);
      }
    }
    const info = current.info as AssistantMessage;
    info.error = error;
    info.time.completed = now;
    this.bus.message(rec, info);
    this.bus.idle(rec);
  }

  private finishStep(rec: SessionRecord, current: MessageRecord, reason: "stop" | "tool-calls", reply: Reply): void {
    const usage = usageOf(reply);
    const tokens = { total: usage.total, input: usage.input, output: usage.output, reasoning: 0, cache: { write: 0, read: 0 } };
    const part: StepFinishPart = {
      id: newId("prt"),
      sessionID: rec.info.id,
      messageID: current.info.id,
      type: "step-finish",
      reason,
      snapshot: this.state.snapshot(rec),
      cost: 0,
      tokens,
    };
    current.parts.push(part);
    this.bus.part(rec, part);
    const info = current.info as AssistantMessage;
    info.tokens = { ...tokens, cache: { ...tokens.cache } };
    info.finish = reason;
    this.bus.message(rec, info);
    info.time.completed = Date.now();
    this.bus.message(rec, info);
    const total = rec.info.tokens ?? { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } };
    rec.info.tokens = { ...total, input: total.input + usage.input, output: total.output + usage.output };
  }

  private async runStep(rec: SessionRecord, loop: Loop, current: MessageRecord, reply: Reply): Promise<StepResult> {
    const signal = loop.controller.signal;
    const base = { sessionID: rec.info.id, messageID: current.info.id };
    if (reply.kind === "error") {
      const error: ApiError = {
        name: "APIError",
        data: {
          message: reply.message,
          statusCode: reply.status,
          isRetryable: reply.status === 429 || reply.status >= 500,
          responseHeaders: {
            connection: "keep-alive",
            "content-type": "application/json",
            date: new Date().toUTCString(),
            "keep-alive": "timeout=5",
            "transfer-encoding": "chunked",
          },
          responseBody: JSON.stringify({ error: { message: reply.message } }),
          metadata: { url: "http://127.0.0.1/v1/chat/completions" },
        },
      };
      return { error };
    }
    if (reply.kind === "tool" && reply.delayMs !== undefined && reply.delayMs > 0) await sleep(reply.delayMs, signal);
    const stepStart: Part = { id: newId("prt"), ...base, type: "step-start", snapshot: this.state.snapshot(rec) };
    current.parts.push(stepStart);
    this.bus.part(rec, stepStart);

    if (reply.kind === "tool") return this.tools.run(rec, loop, current, reply.calls);

    const delayMs = reply.kind === "text" ? (reply.delayMs ?? 0) : 0;
    const stream = async (part: TextPart | ReasoningPart, chunks: string[]): Promise<void> => {
      current.parts.push(part);
      this.bus.part(rec, part);
      for (const chunk of chunks) {
        if (delayMs > 0) await sleep(delayMs, signal);
        part.text += chunk;
        this.bus.send(rec, ev("message.part.delta", { ...base, partID: part.id, field: "text", delta: chunk }));
      }
    };
    const close = (part: TextPart | ReasoningPart): void => {
      if (part.time !== undefined) part.time.end = Date.now();
      this.bus.part(rec, part);
    };
    if (reply.kind === "text" && reply.reasoning !== undefined && reply.reasoning.length > 0) {
      const reasoning: ReasoningPart = { id: newId("prt"), ...base, type: "reasoning", text: "", time: { start: Date.now() } };
      await stream(reasoning, reply.reasoning);
      close(reasoning);
    }
    const chunks = reply.kind === "text" ? reply.chunks : (reply.chunks ?? DEFAULT_HANG_CHUNKS);
    const text: TextPart = { id: newId("prt"), ...base, type: "text", text: "", time: { start: Date.now() } };
    if (chunks.length > 0) await stream(text, chunks);
    if (reply.kind === "hang") await sleep(reply.holdMs ?? Infinity, signal);
    if (chunks.length > 0) close(text);
    return "stop";
  }

  /** Always `true`. An idle (or unknown) session still gets `session.status idle` + `session.idle`, like the real one.
   * Pending questions/permissions of an aborted turn stay listed (as on the real server); answering them later
   * only emits the replied event. */
  abort(sessionID: string): boolean {
    const rec = this.state.sessions.get(sessionID);
    if (rec?.loop !== undefined) {
      this.interactions.detach(sessionID);
      rec.loop.controller.abort();
      return true;
    }
    const directory = rec?.info.directory ?? this.state.directory;
    this.bus.broadcast(ev("session.status", { sessionID, status: { type: "idle" } }), directory);
    this.bus.broadcast(ev("session.idle", { sessionID }), directory);
    return true;
  }

  /** Ends a running loop without emitting anything (delete, close). */
  cancelLoop(rec: SessionRecord): void {
    if (rec.loop === undefined) return;
    rec.loop.silent = true;
    this.interactions.detach(rec.info.id);
    rec.loop.controller.abort();
  }

  /** Every running turn stops without another event; its assistant message stays unfinished. */
  loseAll(): void {
    for (const rec of this.state.sessions.values()) {
      if (rec.loop === undefined) continue;
      rec.loop.lost = true;
      this.cancelLoop(rec);
      rec.loop = undefined;
    }
  }
}
