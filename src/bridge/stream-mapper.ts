// StreamMapper: one OpenCode turn (a `prompt_async` on a bound session) → internal A2A stream events.
//
// A pure, synchronous state machine (no I/O): the runtime feeds it the session's upstream events in order (from the
// EventHub) and acts on what `push()` returns: typed outputs (./turn-events.ts), each artifact or status update with
// its block or interrupt next to it (an artifact update also with the artifact as the client holds it after it), the
// turn's end, or a stall; `finish()` gives the turn's outcome for the final status and the task store. Rules
// (reference §9, seed 000 "streaming"), each in a piece of its own:
//
//   - Scope (./turn-scope.ts): only events of the bound session, and parts of the turn's assistant messages.
//   - Lanes (./text-lanes.ts): text and reasoning chunks, early deltas, snapshot diffing, the echo guard.
//   - Tool calls and files (./tool-blocks.ts).
//   - Status updates (./turn-status.ts): progress and interrupts.
//   - Usage (./usage.ts): per assistant message of the turn, summed.
//   - Wire metadata (./turn-events.ts): `shared.stream` with a per-turn, strictly increasing `sequence` on every event.
//   - Terminal: the first `session.idle` (or `session.status idle`) after the turn started → `{kind: "terminal"}`:
//     completed, or failed / auth-required / canceled when a `session.error` or an assistant `info.error` was seen
//     (classifyAssistantError). Everything after it is ignored (idle fires twice on abort/API errors). While a
//     follow-up sent into the turn is unanswered an idle does not end it (`{kind: "stalled"}` when OpenCode stored
//     the follow-up but did not start on it).
//   - `finish()` freezes the mapper (later pushes return nothing). The final text is the text lane (never
//     reasoning); since every change is streamed, it differs from what was streamed only for the empty-output
//     placeholder, which then comes as one replace-on-finish chunk (`append: false, lastChunk: true`).
import type { Event as OpencodeEvent, Message as OcMessage, Part as OcPart } from "../../generated/opencode/types.gen.js";
import { now as isoNow, type Artifact, type ArtifactUpdateEvent, type Message, type Metadata, type Part, type TaskState } from "../protocol/model.js";
import { classifyAssistantError, type AssistantError, type UpstreamError } from "../upstream/errors.js";
import { sessionIdOf } from "../upstream/frames.js";
import { TextLanes } from "./text-lanes.js";
import { DEFAULT_FILE_MAX_BYTES, ToolBlocks } from "./tool-blocks.js";
import { TurnWire, type BlockType, type InterruptType, type MapperOutput, type StatusOutput, type TerminalOutput } from "./turn-events.js";
import { TurnScope } from "./turn-scope.js";
import { TurnStatus } from "./turn-status.js";
import { TurnUsage, type Usage } from "./usage.js";
import { isObject } from "../util/object.js";

export type { ArtifactOutput, BlockType, InterruptSignal, MapperOutput, StalledOutput, StatusOutput, TerminalOutput, TurnOutcome } from "./turn-events.js";
export type { Usage } from "./usage.js";

/** Final text of a completed turn that produced no text (reference §9.9). */
export const EMPTY_OUTPUT_TEXT = "(No text content returned by OpenCode.)";

export interface TurnContext {
  taskId: string;
  contextId: string;
  sessionId: string;
  /** The OpenCode message id of our prompt (`messageID` sent with prompt_async); strongly recommended. */
  userMessageId?: string;
  /** The user's text, for the echo guard. */
  userText: string;
  /** The task's accepted output modes; empty = anything. */
  acceptedOutputModes: string[];
  /** First `sequence` number of this turn (default 1). */
  startSequence?: number;
  /** Largest file OpenCode emits (file parts, tool attachments) carried inline as bytes; larger ones by reference. */
  fileMaxBytes?: number;
  /** Clock for status timestamps (tests). */
  now?: () => string;
  /** Bounds of the out-of-order buffers. */
  limits?: { heldEvents?: number; earlyDeltaParts?: number };
}

export interface TurnResult {
  /** The turn's text (text lanes of its assistant messages; never reasoning); the placeholder when a completed turn has none. */
  finalText: string;
  usage?: Usage;
  /** Compact canonical per-lane artifacts for the task store (same ids as streamed). */
  artifacts: Artifact[];
  /** The terminal state, or `working` / `input-required` when no terminal signal arrived yet. */
  state: TaskState;
  error?: UpstreamError;
  /** Replace-on-finish chunk (`append: false, lastChunk: true`), only when the streamed text differs from finalText. */
  finalTextChunk?: ArtifactUpdateEvent;
  /** Interrupt requests asked in this turn and not resolved. */
  pendingInterrupts: { requestId: string; type: InterruptType }[];
  /** OpenCode user messages of this turn (the first prompt's, when seen, then each follow-up's), oldest first. */
  userMessageIds: string[];
  /** Upstream events dropped by the out-of-order buffer bounds (diagnostics). */
  dropped: number;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

export class StreamMapper {
  readonly #sessionId: string;
  readonly #wire: TurnWire;
  readonly #scope: TurnScope;
  readonly #lanes: TextLanes;
  readonly #blocks: ToolBlocks;
  readonly #status: TurnStatus;
  readonly #usage = new TurnUsage();
  #terminal: TerminalOutput | undefined;
  #error: UpstreamError | undefined;
  #result: TurnResult | undefined;

  constructor(ctx: TurnContext) {
    this.#sessionId = ctx.sessionId;
    this.#wire = new TurnWire(ctx, ctx.startSequence ?? 1, ctx.now ?? isoNow);
    this.#scope = new TurnScope(ctx.userMessageId, ctx.limits?.heldEvents ?? 2048);
    this.#lanes = new TextLanes(this.#wire, ctx.taskId, ctx.userText, ctx.limits?.earlyDeltaParts ?? 256);
    this.#blocks = new ToolBlocks(this.#wire, ctx.taskId, ctx.acceptedOutputModes, ctx.fileMaxBytes ?? DEFAULT_FILE_MAX_BYTES);
    this.#status = new TurnStatus(this.#wire, ctx);
  }

  /** The last sequence number used (the runtime continues from here for its own final events). */
  get sequence(): number {
    return this.#wire.sequence;
  }

  /** The turn has begun upstream (our user message, `busy`, or an assistant message of the turn was seen). */
  get started(): boolean {
    return this.#scope.started;
  }

  get terminal(): TerminalOutput | undefined {
    return this.#terminal;
  }

  /**
   * Whether OpenCode finished the turn's answer as far as its messages show: at least one assistant message of the
   * turn (or an error), and every one of them completed. False means the turn was cut off (OpenCode died or lost it).
   */
  get answerFinished(): boolean {
    return this.#error !== undefined || this.#scope.allFinished;
  }

  /** The turn's text so far (its text lanes; never reasoning). */
  get text(): string {
    return this.#lanes.text;
  }

  /**
   * After a completed terminal, before finish(): the turn goes on (the runtime sends one more prompt into it, e.g. a
   * governor's follow-up). False when the turn did not complete or was finished.
   */
  reopen(): boolean {
    if (this.#result !== undefined || this.#terminal?.state !== "completed") return false;
    this.#terminal = undefined;
    return true;
  }

  /**
   * A non-final `working` status update the runtime adds to the turn (e.g. a governors' review), in this turn's
   * sequence, with `opencode` metadata next to `shared`.
   */
  statusEvent(opencode: Metadata, message: Message | undefined, source: string): StatusOutput {
    const out = this.#wire.status("working", {}, source, undefined, message);
    out.event.metadata = { opencode, ...out.event.metadata };
    return out;
  }

  /** Tokens the turn used so far (undefined when none were reported). */
  get usage(): Usage | undefined {
    return this.#usage.total();
  }

  /** Whether any tool call came in this turn (without one, nothing of OpenCode's changed a file). */
  get ranTools(): boolean {
    return this.#blocks.ranTools;
  }

  /** Whether a file-writing tool call completed in this turn (its changes are due in OpenCode's diff). */
  get wroteFiles(): boolean {
    return this.#blocks.wroteFiles;
  }

  /** OpenCode user messages of this turn so far (see TurnResult.userMessageIds). */
  get userMessageIds(): string[] {
    return this.#scope.userMessageIds();
  }

  /**
   * A follow-up prompt is about to be sent into this turn's session: the next new user message there is its own,
   * assistant messages answering it belong to the turn, and the turn does not end before it is answered. Returns its
   * ordinal, or undefined when the turn is already over (the caller must not send it into this turn).
   */
  acceptFollowUp(): number | undefined {
    if (this.#terminal !== undefined || this.#result !== undefined) return undefined;
    return this.#scope.acceptFollowUp();
  }

  /** The follow-up `ordinal` could not be sent (its prompt failed): the turn no longer waits for it. */
  withdrawFollowUp(ordinal: number): void {
    this.#scope.withdrawFollowUp(ordinal);
  }

  /**
   * Follow-ups whose user message OpenCode stored but left unanswered when the session went idle; each is forgotten
   * (the caller prompts it again, and the new user message takes its place).
   */
  stalledFollowUps(): number[] {
    if (this.#terminal !== undefined || this.#result !== undefined || this.#scope.busy) return [];
    return this.#scope.stalledFollowUps();
  }

  /** The upstream event types push() reads; the runtime subscribes to these only. */
  static readonly EVENT_TYPES: ReadonlySet<string> = new Set([
    "message.updated",
    "message.part.updated",
    "message.part.delta",
    "session.status",
    "session.idle",
    "session.error",
    "permission.asked",
    "question.asked",
    "permission.replied",
    "question.replied",
    "question.rejected",
  ]);

  /** Feeds one upstream event; returns what to publish, in order. */
  push(event: OpencodeEvent): MapperOutput[] {
    const out: MapperOutput[] = [];
    if (this.#terminal !== undefined || this.#result !== undefined) return out;
    if (sessionIdOf(event) !== this.#sessionId) return out;
    const p: Record<string, unknown> = isObject(event.properties) ? event.properties : {};
    switch (event.type) {
      case "message.updated":
        this.#onMessage(p.info, out);
        break;
      case "message.part.updated":
      case "message.part.delta": {
        const messageId = event.type === "message.part.updated" ? (isObject(p.part) ? str(p.part.messageID) : undefined) : str(p.messageID);
        if (messageId !== undefined && this.#scope.route(messageId, event)) this.#apply(event, out);
        break;
      }
      case "session.status": {
        const status = isObject(p.status) ? p.status : {};
        if (status.type === "busy") this.#scope.busyNow();
        else if (status.type === "idle") this.#onIdle(out);
        else if (status.type === "retry" && this.#scope.started) {
          const attempt = typeof status.attempt === "number" ? status.attempt : 0;
          const reason = str(status.message);
          this.#status.progress(`retry:${attempt}`, { type: "retry", attempt, ...(reason === undefined ? {} : { reason }) }, undefined, out);
        }
        break;
      }
      case "session.idle":
        this.#onIdle(out);
        break;
      case "session.error":
        if (this.#scope.started) this.#recordError(p.error as AssistantError | undefined, "session.error");
        break;
      case "permission.asked":
      case "question.asked":
        if (this.#scope.started) this.#status.asked(event.type === "permission.asked" ? "permission" : "question", p, out);
        break;
      case "permission.replied":
        this.#status.resolved(p, "replied", str(p.reply) === undefined ? undefined : { reply: p.reply }, out);
        break;
      case "question.replied":
        this.#status.resolved(p, "replied", Array.isArray(p.answers) ? { answers: p.answers } : undefined, out);
        break;
      case "question.rejected":
        this.#status.resolved(p, "rejected", undefined, out);
        break;
      default:
        break;
    }
    return out;
  }

  /**
   * Catches up from a message snapshot (GET /session/{id}/message) after the event stream reconnected: replays
   * each message and its parts as updates, so only what was missed is emitted (suffixes, changed tool states,
   * progress, usage). It cannot recover a missed idle or interrupt: the runtime checks those itself.
   */
  resync(messages: { info: OcMessage; parts: OcPart[] }[]): MapperOutput[] {
    const sessionID = this.#sessionId;
    const out: MapperOutput[] = [];
    for (const m of messages) {
      out.push(...this.push({ id: "resync", type: "message.updated", properties: { sessionID, info: m.info } }));
      for (const part of m.parts) {
        out.push(...this.push({ id: "resync", type: "message.part.updated", properties: { sessionID, part, time: 0 } }));
      }
    }
    return out;
  }

  /** The turn's outcome; idempotent (the replace-on-finish chunk, when any, is built once). */
  finish(): TurnResult {
    if (this.#result !== undefined) return this.#result;
    const state: TaskState = this.#terminal?.state ?? (this.#status.anyPending ? "input-required" : "working");
    const streamed = this.#lanes.text;
    const finalText = streamed === "" && state === "completed" ? EMPTY_OUTPUT_TEXT : streamed;
    const finalTextChunk = state === "completed" && finalText !== streamed ? this.#lanes.replaceText(finalText) : undefined;
    const usage = this.#usage.total();
    this.#result = {
      finalText,
      ...(usage === undefined ? {} : { usage }),
      artifacts: [...this.#lanes.artifacts(finalText), ...this.#blocks.artifacts()],
      state,
      ...(this.#error === undefined ? {} : { error: this.#error }),
      ...(finalTextChunk === undefined ? {} : { finalTextChunk }),
      pendingInterrupts: this.#status.pending(),
      userMessageIds: this.#scope.userMessageIds(),
      dropped: this.#scope.dropped + this.#lanes.dropped,
    };
    return this.#result;
  }

  /**
   * An artifact the runtime adds to the turn (the `changes` diff, changed files): one whole chunk (`append: false,
   * lastChunk: true`) in this turn's sequence. Only before finish().
   */
  artifactEvent(artifactId: string, name: string, parts: Part[], block: BlockType, source: string, metadata: Metadata): ArtifactUpdateEvent {
    return this.#wire.artifact(artifactId, name, parts, false, block, source, undefined, { metadata, lastChunk: true }).event;
  }

  #onMessage(info: unknown, out: MapperOutput[]): void {
    if (!isObject(info)) return;
    const id = str(info.id);
    if (id === undefined) return;
    const { ours, held } = this.#scope.message(id, info);
    for (const e of held) this.#apply(e, out);
    if (!ours) return;
    this.#usage.message(id, info.tokens, info.cost);
    if (isObject(info.error)) this.#recordError(info.error as AssistantError, "assistant.error");
  }

  /** A part event of one of the turn's messages. */
  #apply(event: OpencodeEvent, out: MapperOutput[]): void {
    if (event.type === "message.part.delta") {
      const { partID, field, delta } = event.properties;
      if (field !== "text" || typeof delta !== "string" || delta === "" || typeof partID !== "string") return;
      this.#lanes.delta(partID, delta, out);
      return;
    }
    if (event.type !== "message.part.updated" || !isObject(event.properties.part)) return;
    const part = event.properties.part;
    switch (part.type) {
      case "text":
        if (part.ignored !== true) this.#lanes.snapshot("text", part.id, part.messageID, part.text, out);
        break;
      case "reasoning":
        this.#lanes.snapshot("reasoning", part.id, part.messageID, part.text, out);
        break;
      case "tool":
        this.#blocks.tool(part, out);
        break;
      case "file":
        this.#blocks.file(part, out);
        break;
      case "step-start":
      case "step-finish":
      case "snapshot": {
        const reason = part.type === "step-finish" ? str(part.reason) : undefined;
        this.#status.progress(`${part.type}:${part.id}`, { type: part.type, part_id: part.id, ...(reason === undefined ? {} : { reason }) }, part.messageID, out);
        if (part.type === "step-finish") this.#usage.step(part.messageID, part.id, part.tokens, part.cost);
        break;
      }
      default:
        break;
    }
  }

  #recordError(error: AssistantError | undefined, operation: string): void {
    this.#error ??= classifyAssistantError(error, operation, this.#sessionId);
  }

  #onIdle(out: MapperOutput[]): void {
    this.#scope.idleNow();
    if (!this.#scope.started || this.#terminal !== undefined) return;
    const error = this.#error;
    if (error === undefined) {
      // Not over while a follow-up is not in OpenCode yet, or OpenCode stored it but has not answered it.
      const stalled = this.#scope.waitingFollowUps();
      if (stalled !== undefined) {
        if (stalled.length > 0) out.push({ kind: "stalled", ordinals: stalled });
        return;
      }
    }
    this.#terminal = { kind: "terminal", state: error === undefined ? "completed" : error.taskState, ...(error === undefined ? {} : { error }) };
    out.push(this.#terminal);
  }
}
