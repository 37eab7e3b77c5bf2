// StreamMapper: one OpenCode turn (a `prompt_async` on a bound session) → internal A2A stream events.
//
// A pure, synchronous state machine (no I/O): the runtime feeds it the session's upstream events in order (from the
// EventHub) and forwards what `push()` returns; `finish()` gives the turn's outcome for the final status and the
// task store. Rules (reference §9, seed 000 "streaming"):
//
//   - Scope: only events of the bound session. Parts count only when their message is an assistant message of this
//     turn (parentID = our user message id when known, else the parent of the first assistant message seen after the
//     turn started). Roles are learned from `message.updated`; parts of messages whose role is not known yet are
//     held (bounded) and replayed once it is. User/system parts and OpenCode's compaction summaries are dropped.
//   - Lanes (stable artifact ids): `<taskId>:text` (all text parts of the turn, joined with a blank line),
//     `<taskId>:reasoning`, `<taskId>:tool:<callID>` (one per tool call). Text/reasoning chunks are appended
//     (`append: true` after a lane's first chunk). Deltas arriving before their part's first `message.part.updated`
//     are buffered per part and replayed when it arrives; full-text snapshots are diffed against the part buffer and
//     only the new suffix is sent. A snapshot that is not a prefix extension REPLACES the lane (`append: false`, the
//     lane's full text) instead of being suppressed as the reference does (§17.9), so the live stream never diverges
//     from the final text. A snapshot that is a stale prefix of what deltas already built is ignored.
//   - Tool calls: data `{call_id, tool, status, title?, subtitle?, input, output?, error?}`, sent (replacing the
//     lane, `append: false`) whenever its normalized JSON changes; compact JSON text instead of a data part when the
//     client does not accept `application/json`.
//   - Echo guard: while nothing has been streamed yet, a text part equal to the user's own input is held back (and
//     left out of the final text) unless it grows into something else.
//   - Status updates (non-final): step-start / step-finish / snapshot parts and `session.status retry` → `working`
//     with `shared.progress` (deduplicated); `permission.asked` / `question.asked` → `input-required` with
//     `shared.interrupt{phase: "asked"}`; their replies → `phase: "resolved"` (only for requests asked in this
//     turn, once); while any asked request is still pending, status updates say `input-required`. Every artifact and status update carries `shared.stream` with a per-turn, strictly increasing
//     `sequence` (from `startSequence`) and `event_id` `<taskId>:<contextId>:<sequence>`.
//   - Terminal: the first `session.idle` (or `session.status idle`) after the turn started → `{kind: "terminal"}`:
//     completed, or failed / auth-required / canceled when a `session.error` or an assistant `info.error` was seen
//     (classifyAssistantError). Everything after it is ignored (idle fires twice on abort/API errors).
//   - Usage: per assistant message of the turn, its `info.tokens` (or the sum of its step-finish tokens while the
//     info has less), summed over the turn's messages.
//   - `finish()` freezes the mapper (later pushes return nothing). The final text is the text lane (never
//     reasoning); since every change is streamed, it differs from what was streamed only for the empty-output
//     placeholder, which then comes as one replace-on-finish chunk (`append: false, lastChunk: true`).
import type {
  Event as OpencodeEvent,
  Message as OcMessage,
  Part as OcPart,
} from "../../generated/opencode/types.gen.js";
import {
  now as isoNow,
  type Artifact,
  type ArtifactUpdateEvent,
  type Message,
  type Metadata,
  type Part,
  type StatusUpdateEvent,
  type TaskState,
} from "../protocol/model.js";
import { classifyAssistantError, type AssistantError, type UpstreamError } from "../upstream/errors.js";
import { sessionIdOf } from "../upstream/hub.js";
import { addUsage, usageFromTokens, zeroUsage, type Usage } from "./usage.js";
import { isObject } from "../util/object.js";

export type { Usage } from "./usage.js";

/** Final text of a completed turn that produced no text (reference §9.9). */
export const EMPTY_OUTPUT_TEXT = "(No text content returned by OpenCode.)";
/** Joins the text parts of one turn (several assistant messages / steps) into the text lane and final text. */
export const TEXT_PART_SEPARATOR = "\n\n";
/** The replies a client may give to a permission request (a2a.interrupt.permission.reply). */
export const PERMISSION_REPLIES = ["once", "always", "reject"] as const;

/** The advertised permission decisions (spec: PermissionOption). */
export const PERMISSION_OPTIONS = [
  { id: "once", label: "Allow once" },
  { id: "always", label: "Always allow" },
  { id: "reject", label: "Reject" },
] as const;

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

export type BlockType = "text" | "reasoning" | "tool_call" | "file" | "changes";
export type TurnOutcome = "completed" | "failed" | "canceled" | "auth-required";

export interface TerminalOutput {
  kind: "terminal";
  state: TurnOutcome;
  error?: UpstreamError;
}

/**
 * The session went idle while follow-ups of this turn are still unanswered (`ordinals`: their acceptFollowUp()
 * numbers, 0-based). OpenCode may start a loop for them by itself (a prompt that arrived just as its loop ended), so the
 * runtime waits briefly and prompts again only what is still unanswered then (stalledFollowUps()).
 */
export interface StalledOutput {
  kind: "stalled";
  ordinals: number[];
}

export type MapperOutput = ArtifactUpdateEvent | StatusUpdateEvent | TerminalOutput | StalledOutput;

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

type InterruptType = "permission" | "question";

interface StreamMeta {
  block_type?: BlockType;
  source: string;
  message_id: string;
  part_id?: string;
  event_id: string;
  sequence: number;
  role: "agent";
}

interface TextPartState {
  id: string;
  messageId: string;
  text: string;
  /** Held back by the echo guard. */
  echo: boolean;
}

interface Lane {
  artifactId: string;
  name: string;
  block: "text" | "reasoning";
  source: string;
  parts: TextPartState[];
  emitted: boolean;
  meta?: StreamMeta;
}

interface ToolCallState {
  artifactId: string;
  name: string;
  key: string;
  data: Record<string, unknown>;
  meta?: StreamMeta;
}

interface MessageUsage {
  info?: Usage;
  steps: Map<string, Usage>;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** JSON with object keys sorted (stable identity for "did this tool block change"). */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    isObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

/** True when the modes admit `application/json` (empty list = no restriction). */
export function acceptsJson(modes: readonly string[]): boolean {
  if (modes.length === 0) return true;
  return modes.some((m) => {
    const type = (m.split(";")[0] ?? "").trim().toLowerCase();
    return type === "application/json" || type === "application/*" || type === "*/*" || type === "*";
  });
}

export class StreamMapper {
  readonly #ctx: TurnContext;
  readonly #json: boolean;
  readonly #now: () => string;
  readonly #heldLimit: number;
  readonly #earlyLimit: number;
  #seq: number;

  #started = false;
  /** OpenCode said busy since the last idle. */
  #busy = false;
  /** A stall was reported for the current idle period (idle is announced twice: status idle, then session.idle). */
  #stallReported = false;
  #terminal: TerminalOutput | undefined;
  #error: UpstreamError | undefined;
  #result: TurnResult | undefined;
  /** Parent (user message) of the turn's first assistant messages. */
  #parentId: string | undefined;
  /** The newest user message id seen before the turn started (OpenCode's ids ascend): follow-ups are newer. */
  #userFloor: string | undefined;
  /** Follow-up prompts sent into this turn, by acceptFollowUp() ordinal: their user message once seen, answered or not. */
  readonly #followUps: { id?: string; answered: boolean }[] = [];
  /** User message id → follow-up ordinal. */
  readonly #followUpIds = new Map<string, number>();
  /** The turn's assistant messages → whether OpenCode finished them (`time.completed` or `finish`). */
  readonly #finished = new Map<string, boolean>();
  /** Message id → whether its parts belong to this turn. */
  readonly #messages = new Map<string, boolean>();
  /** Events of messages whose role is not known yet, in arrival order. */
  readonly #held = new Map<string, OpencodeEvent[]>();
  #heldCount = 0;
  #dropped = 0;
  /** Deltas that arrived before their part's first message.part.updated (part id → text so far). */
  readonly #early = new Map<string, string>();
  readonly #textParts = new Map<string, TextPartState & { lane: Lane }>();
  readonly #text: Lane;
  readonly #reasoning: Lane;
  readonly #tools = new Map<string, ToolCallState>();
  /** File artifacts (OpenCode file parts and tool attachments), by artifact id: the latest snapshot of each. */
  readonly #files = new Map<string, { artifact: Artifact; key: string }>();
  readonly #progress = new Map<string, string>();
  readonly #usage = new Map<string, MessageUsage>();
  /** Interrupts asked in this turn: request id → type and whether still pending. */
  readonly #interrupts = new Map<string, { type: InterruptType; pending: boolean }>();
  #emittedAny = false;

  constructor(ctx: TurnContext) {
    this.#ctx = ctx;
    this.#json = acceptsJson(ctx.acceptedOutputModes);
    this.#now = ctx.now ?? isoNow;
    this.#seq = (ctx.startSequence ?? 1) - 1;
    this.#heldLimit = ctx.limits?.heldEvents ?? 2048;
    this.#earlyLimit = ctx.limits?.earlyDeltaParts ?? 256;
    const lane = (kind: "text" | "reasoning", name: string, source: string): Lane => ({
      artifactId: `${ctx.taskId}:${kind}`,
      name,
      block: kind,
      source,
      parts: [],
      emitted: false,
    });
    this.#text = lane("text", "response", "assistant_text");
    this.#reasoning = lane("reasoning", "reasoning", "reasoning");
  }

  /** The last sequence number used (the runtime continues from here for its own final events). */
  get sequence(): number {
    return this.#seq;
  }

  /** The turn has begun upstream (our user message, `busy`, or an assistant message of the turn was seen). */
  get started(): boolean {
    return this.#started;
  }

  get terminal(): TerminalOutput | undefined {
    return this.#terminal;
  }

  /**
   * Whether OpenCode finished the turn's answer as far as its messages show: at least one assistant message of the
   * turn (or an error), and every one of them completed. False means the turn was cut off (OpenCode died or lost it).
   */
  get answerFinished(): boolean {
    if (this.#error !== undefined) return true;
    if (this.#finished.size === 0) return false;
    for (const done of this.#finished.values()) if (!done) return false;
    return true;
  }

  /** Tokens the turn used so far (undefined when none were reported). */
  get usage(): Usage | undefined {
    return this.#turnUsage();
  }

  /** OpenCode user messages of this turn so far (see TurnResult.userMessageIds). */
  get userMessageIds(): string[] {
    return this.#turnUserIds();
  }

  /**
   * A follow-up prompt is about to be sent into this turn's session: the next new user message there is its own,
   * assistant messages answering it belong to the turn, and the turn does not end before it is answered. Returns its
   * ordinal, or undefined when the turn is already over (the caller must not send it into this turn).
   */
  acceptFollowUp(): number | undefined {
    if (this.#terminal !== undefined || this.#result !== undefined) return undefined;
    this.#followUps.push({ answered: false });
    return this.#followUps.length - 1;
  }

  /** The follow-up `ordinal` could not be sent (its prompt failed): the turn no longer waits for it. */
  withdrawFollowUp(ordinal: number): void {
    const f = this.#followUps[ordinal];
    if (f === undefined) return;
    f.answered = true;
    if (f.id !== undefined) this.#followUpIds.delete(f.id);
  }

  /**
   * Follow-ups whose user message OpenCode stored but left unanswered when the session went idle; each is forgotten
   * (the caller prompts it again, and the new user message takes its place).
   */
  stalledFollowUps(): number[] {
    if (this.#terminal !== undefined || this.#result !== undefined || this.#busy) return [];
    const stalled: number[] = [];
    this.#followUps.forEach((f, ordinal) => {
      if (f.answered || f.id === undefined) return;
      this.#followUpIds.delete(f.id);
      delete f.id;
      stalled.push(ordinal);
    });
    return stalled;
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
    if (sessionIdOf(event) !== this.#ctx.sessionId) return out;
    const p: Record<string, unknown> = isObject(event.properties) ? event.properties : {};
    switch (event.type) {
      case "message.updated":
        this.#onMessage(p.info, out);
        break;
      case "message.part.updated":
      case "message.part.delta": {
        const messageId = event.type === "message.part.updated" ? (isObject(p.part) ? str(p.part.messageID) : undefined) : str(p.messageID);
        if (messageId !== undefined) this.#route(messageId, event, out);
        break;
      }
      case "session.status": {
        const status = isObject(p.status) ? p.status : {};
        if (status.type === "busy") {
          this.#started = true;
          this.#busy = true;
          this.#stallReported = false;
        } else if (status.type === "idle") this.#onIdle(out);
        else if (status.type === "retry" && this.#started) {
          const attempt = typeof status.attempt === "number" ? status.attempt : 0;
          const reason = str(status.message);
          this.#emitProgress(`retry:${attempt}`, { type: "retry", attempt, ...(reason === undefined ? {} : { reason }) }, undefined, out);
        }
        break;
      }
      case "session.idle":
        this.#onIdle(out);
        break;
      case "session.error":
        if (this.#started) this.#recordError(p.error as AssistantError | undefined, "session.error");
        break;
      case "permission.asked":
      case "question.asked":
        this.#onAsked(event.type === "permission.asked" ? "permission" : "question", p, out);
        break;
      case "permission.replied":
        this.#onResolved(p, "replied", str(p.reply) === undefined ? undefined : { reply: p.reply }, out);
        break;
      case "question.replied":
        this.#onResolved(p, "replied", Array.isArray(p.answers) ? { answers: p.answers } : undefined, out);
        break;
      case "question.rejected":
        this.#onResolved(p, "rejected", undefined, out);
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
    const sessionID = this.#ctx.sessionId;
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
    const state: TaskState = this.#terminal?.state ?? (this.#anyPending() ? "input-required" : "working");
    const streamed = laneText(this.#text);
    const finalText = streamed === "" && state === "completed" ? EMPTY_OUTPUT_TEXT : streamed;
    let finalTextChunk: ArtifactUpdateEvent | undefined;
    if (state === "completed" && finalText !== streamed) {
      finalTextChunk = this.#artifactUpdate(this.#text.artifactId, this.#text.name, [{ kind: "text", text: finalText }], false, "text", this.#text.source, undefined);
      finalTextChunk.lastChunk = true;
      this.#text.meta = metaOf(finalTextChunk);
    }
    const artifacts: Artifact[] = [];
    const laneArtifact = (lane: Lane, text: string): void => {
      if (text === "") return;
      artifacts.push({ artifactId: lane.artifactId, name: lane.name, parts: [{ kind: "text", text }], ...(lane.meta === undefined ? {} : { metadata: { shared: { stream: lane.meta } } }) });
    };
    laneArtifact(this.#text, finalText);
    laneArtifact(this.#reasoning, laneText(this.#reasoning));
    for (const tool of this.#tools.values()) {
      artifacts.push({ artifactId: tool.artifactId, name: tool.name, parts: [this.#toolPart(tool)], ...(tool.meta === undefined ? {} : { metadata: { shared: { stream: tool.meta } } }) });
    }
    for (const file of this.#files.values()) artifacts.push(file.artifact);
    const usage = this.#turnUsage();
    this.#result = {
      finalText,
      ...(usage === undefined ? {} : { usage }),
      artifacts,
      state,
      ...(this.#error === undefined ? {} : { error: this.#error }),
      ...(finalTextChunk === undefined ? {} : { finalTextChunk }),
      pendingInterrupts: this.#pendingInterrupts(),
      userMessageIds: this.#turnUserIds(),
      dropped: this.#dropped,
    };
    return this.#result;
  }

  // -- messages and roles -------------------------------------------------------------------------------------

  #onMessage(info: unknown, out: MapperOutput[]): void {
    if (!isObject(info)) return;
    const id = str(info.id);
    if (id === undefined) return;
    let ours = this.#messages.get(id);
    if (ours === undefined) {
      ours = this.#classify(info);
      this.#messages.set(id, ours);
      const held = this.#held.get(id);
      if (held !== undefined) {
        this.#held.delete(id);
        this.#heldCount -= held.length;
        if (ours) for (const e of held) this.#apply(e, out);
      }
    }
    if (!ours) return;
    const time = isObject(info.time) ? info.time : {};
    const done = typeof time.completed === "number" || (typeof info.finish === "string" && info.finish !== "");
    this.#finished.set(id, (this.#finished.get(id) ?? false) || done);
    const usage = usageFromTokens(info.tokens, info.cost);
    if (usage !== undefined) this.#messageUsage(id).info = usage;
    if (isObject(info.error)) this.#recordError(info.error as AssistantError, "assistant.error");
  }

  /** Whether a message's parts belong to this turn (decided once per message id). */
  #classify(info: Record<string, unknown>): boolean {
    const userMessageId = this.#ctx.userMessageId;
    const id = str(info.id);
    if (info.role === "user") {
      if (userMessageId !== undefined && id === userMessageId) this.#started = true;
      else if (id !== undefined && !this.#started) {
        if (this.#userFloor === undefined || id > this.#userFloor) this.#userFloor = id;
      } else if (id !== undefined && (this.#userFloor === undefined || id > this.#userFloor)) {
        // A new user message while the turn runs: the oldest follow-up still waiting for its own takes it.
        const ordinal = this.#followUps.findIndex((f) => f.id === undefined && !f.answered);
        if (ordinal >= 0) {
          (this.#followUps[ordinal] as { id?: string }).id = id;
          this.#followUpIds.set(id, ordinal);
        }
      }
      return false;
    }
    if (info.role !== "assistant" || info.summary === true) return false;
    const parent = str(info.parentID);
    const followUp = parent === undefined ? undefined : this.#followUpIds.get(parent);
    if (followUp !== undefined) {
      (this.#followUps[followUp] as { answered: boolean }).answered = true;
      this.#started = true;
      return true;
    }
    if (userMessageId !== undefined) {
      if (parent !== userMessageId) return false;
      this.#started = true;
      return true;
    }
    if (!this.#started) return false;
    this.#parentId ??= parent;
    return parent === this.#parentId;
  }

  #turnUserIds(): string[] {
    const first = this.#ctx.userMessageId ?? this.#parentId ?? (this.#started ? this.#userFloor : undefined);
    const ids = first === undefined ? [] : [first];
    for (const f of this.#followUps) if (f.id !== undefined && !ids.includes(f.id)) ids.push(f.id);
    return ids;
  }

  #route(messageId: string, event: OpencodeEvent, out: MapperOutput[]): void {
    const ours = this.#messages.get(messageId);
    if (ours === true) this.#apply(event, out);
    else if (ours === undefined) this.#hold(messageId, event);
  }

  #hold(messageId: string, event: OpencodeEvent): void {
    while (this.#heldCount >= this.#heldLimit && this.#held.size > 0) {
      const [oldest, events] = this.#held.entries().next().value as [string, OpencodeEvent[]];
      this.#held.delete(oldest);
      this.#heldCount -= events.length;
      this.#dropped += events.length;
    }
    if (this.#heldLimit <= 0) {
      this.#dropped++;
      return;
    }
    const list = this.#held.get(messageId);
    if (list === undefined) this.#held.set(messageId, [event]);
    else list.push(event);
    this.#heldCount++;
  }

  // -- parts ----------------------------------------------------------------------------------------------------

  #apply(event: OpencodeEvent, out: MapperOutput[]): void {
    if (event.type === "message.part.delta") {
      const { partID, field, delta } = event.properties;
      if (field !== "text" || typeof delta !== "string" || delta === "" || typeof partID !== "string") return;
      const part = this.#textParts.get(partID);
      if (part !== undefined) this.#setText(part, part.text + delta, out);
      else this.#bufferEarly(partID, delta);
      return;
    }
    if (event.type !== "message.part.updated" || !isObject(event.properties.part)) return;
    const part = event.properties.part;
    switch (part.type) {
      case "text":
        if (part.ignored !== true) this.#onTextLike(part.id, part.messageID, part.text, this.#text, out);
        break;
      case "reasoning":
        this.#onTextLike(part.id, part.messageID, part.text, this.#reasoning, out);
        break;
      case "tool":
        this.#onTool(part, out);
        for (const attachment of toolAttachments(part)) this.#onFile(attachment, out);
        break;
      case "file":
        this.#onFile(part, out);
        break;
      case "step-start":
      case "step-finish":
      case "snapshot": {
        const reason = part.type === "step-finish" ? str(part.reason) : undefined;
        this.#emitProgress(`${part.type}:${part.id}`, { type: part.type, part_id: part.id, ...(reason === undefined ? {} : { reason }) }, part.messageID, out);
        if (part.type === "step-finish") {
          const usage = usageFromTokens(part.tokens, part.cost);
          if (usage !== undefined) this.#messageUsage(part.messageID).steps.set(part.id, usage);
        }
        break;
      }
      default:
        break;
    }
  }

  #bufferEarly(partId: string, delta: string): void {
    const existing = this.#early.get(partId);
    if (existing !== undefined) {
      this.#early.set(partId, existing + delta);
      return;
    }
    if (this.#early.size >= this.#earlyLimit) {
      const oldest = this.#early.keys().next().value as string;
      this.#early.delete(oldest);
      this.#dropped++;
    }
    this.#early.set(partId, delta);
  }

  #onTextLike(id: string, messageId: string, snapshot: unknown, lane: Lane, out: MapperOutput[]): void {
    const next = typeof snapshot === "string" ? snapshot : "";
    let part = this.#textParts.get(id);
    if (part === undefined) {
      part = { id, messageId, text: "", echo: false, lane };
      this.#textParts.set(id, part);
      lane.parts.push(part);
      // Deltas that came first are replayed before the snapshot, so a snapshot that already contains them is
      // recognized as equal / an extension, and an older, shorter one as stale.
      const early = this.#early.get(id);
      if (early !== undefined) {
        this.#early.delete(id);
        this.#setText(part, mergeSnapshot(early, next), out);
        return;
      }
    }
    this.#setText(part, mergeSnapshot(part.text, next), out);
  }

  /** Updates a text/reasoning part and emits the change of its lane (append the suffix, or replace the lane). */
  #setText(part: TextPartState & { lane: Lane }, text: string, out: MapperOutput[]): void {
    if (text === part.text) return;
    const lane = part.lane;
    const before = visible(part);
    part.text = text;
    if (part.echo) {
      part.echo = text.trim() === this.#ctx.userText.trim();
    } else if (lane.block === "text" && !this.#emittedAny && before === "" && this.#isEcho(text)) {
      part.echo = true;
    }
    const after = visible(part);
    if (after === before) return;
    const index = lane.parts.indexOf(part);
    const isTail = lane.parts.slice(index + 1).every((p) => visible(p) === "");
    if (isTail && after.startsWith(before)) {
      let chunk = after.slice(before.length);
      if (before === "" && lane.parts.slice(0, index).some((p) => visible(p) !== "")) chunk = TEXT_PART_SEPARATOR + chunk;
      this.#emitLane(lane, part, chunk, true, out);
    } else {
      this.#emitLane(lane, part, laneText(lane), false, out);
    }
  }

  #isEcho(text: string): boolean {
    const user = this.#ctx.userText.trim();
    return user !== "" && text.trim() === user;
  }

  #emitLane(lane: Lane, part: TextPartState, text: string, append: boolean, out: MapperOutput[]): void {
    const update = this.#artifactUpdate(lane.artifactId, lane.name, [{ kind: "text", text }], append && lane.emitted, lane.block, lane.source, part);
    lane.emitted = true;
    lane.meta = metaOf(update);
    out.push(update);
  }

  #onTool(part: Extract<OcPart, { type: "tool" }>, out: MapperOutput[]): void {
    const state: Record<string, unknown> = isObject(part.state) ? part.state : {};
    const data: Record<string, unknown> = {
      call_id: part.callID,
      tool: part.tool,
      status: state.status,
      input: isObject(state.input) ? state.input : {},
    };
    for (const key of ["title", "subtitle", "output", "error"] as const) if (state[key] !== undefined && state[key] !== null) data[key] = state[key];
    const key = stableJson(data);
    const toolId = str(part.callID) ?? part.id;
    let tool = this.#tools.get(toolId);
    if (tool === undefined) {
      tool = { artifactId: `${this.#ctx.taskId}:tool:${toolId}`, name: `tool:${part.tool}`, key: "", data };
      this.#tools.set(toolId, tool);
    }
    if (tool.key === key) return;
    tool.key = key;
    tool.data = data;
    // A tool block is a snapshot of the call's state: every update replaces the lane's artifact.
    const update = this.#artifactUpdate(tool.artifactId, tool.name, [this.#toolPart(tool)], false, "tool_call", "tool", part);
    tool.meta = metaOf(update);
    out.push(update);
  }

  /** An OpenCode file (assistant file part or tool attachment) → a file artifact `<taskId>:file:<partId>`. */
  #onFile(file: OcFile, out: MapperOutput[]): void {
    const part = openCodeFilePart(file, this.#ctx.fileMaxBytes ?? DEFAULT_FILE_MAX_BYTES);
    const artifactId = `${this.#ctx.taskId}:file:${file.id}`;
    const key = stableJson(part);
    if (this.#files.get(artifactId)?.key === key) return;
    const update = this.#artifactUpdate(artifactId, file.filename ?? "file", [part], false, "file", "opencode_file", file);
    this.#files.set(artifactId, { artifact: update.artifact, key });
    out.push(update);
  }

  /**
   * An artifact the runtime adds to the turn (the `changes` diff, changed files): one whole chunk (`append: false,
   * lastChunk: true`) in this turn's sequence. Only before finish().
   */
  artifactEvent(artifactId: string, name: string, parts: Part[], block: BlockType, source: string, metadata: Metadata): ArtifactUpdateEvent {
    const update = this.#artifactUpdate(artifactId, name, parts, false, block, source, undefined);
    update.artifact.metadata = { ...metadata, ...update.artifact.metadata };
    update.lastChunk = true;
    return update;
  }

  #toolPart(tool: ToolCallState): Part {
    return this.#json ? { kind: "data", data: tool.data } : { kind: "text", text: tool.key };
  }

  // -- status updates -------------------------------------------------------------------------------------------

  #emitProgress(identity: string, progress: Record<string, unknown>, messageId: string | undefined, out: MapperOutput[]): void {
    // Progress objects are built here with a fixed key order: plain JSON identifies them (stableJson is for tool data).
    const key = JSON.stringify(progress);
    if (this.#progress.get(identity) === key) return;
    this.#progress.set(identity, key);
    const state = this.#anyPending() ? "input-required" : "working";
    out.push(this.#status(state, { progress }, "progress", messageId));
  }

  #onAsked(type: InterruptType, p: Record<string, unknown>, out: MapperOutput[]): void {
    const requestId = str(p.id);
    if (!this.#started || requestId === undefined || this.#interrupts.has(requestId)) return;
    this.#interrupts.set(requestId, { type, pending: true });
    const { sessionID: _s, id: _i, ...rest } = p;
    // Permission choices as the contract declares them (permission_options [{id, label}]); reply_options keeps the
    // bare ids for clients of the reference implementation.
    const details: Record<string, unknown> =
      type === "permission"
        ? { ...rest, permission_options: PERMISSION_OPTIONS.map((o) => ({ ...o })), reply_options: [...PERMISSION_REPLIES] }
        : { ...rest, questions: normalizeQuestions(p.questions) };
    const tool = isObject(p.tool) ? str(p.tool.messageID) : undefined;
    const message: Message = {
      messageId: `${this.#ctx.taskId}:interrupt:${requestId}`,
      role: "agent",
      taskId: this.#ctx.taskId,
      contextId: this.#ctx.contextId,
      parts: [{ kind: "text", text: interruptText(type, p) }],
    };
    out.push(this.#status("input-required", { interrupt: { request_id: requestId, type, phase: "asked", details } }, "interrupt", tool, message));
  }

  #onResolved(p: Record<string, unknown>, resolution: "replied" | "rejected", details: Record<string, unknown> | undefined, out: MapperOutput[]): void {
    const requestId = str(p.requestID);
    const asked = requestId === undefined ? undefined : this.#interrupts.get(requestId);
    if (asked === undefined || !asked.pending) return;
    asked.pending = false;
    const state = this.#anyPending() ? "input-required" : "working";
    const interrupt = { request_id: requestId, type: asked.type, phase: "resolved", resolution, ...(details === undefined ? {} : { details }) };
    out.push(this.#status(state, { interrupt }, "interrupt", undefined));
  }

  #anyPending(): boolean {
    for (const i of this.#interrupts.values()) if (i.pending) return true;
    return false;
  }

  #pendingInterrupts(): { requestId: string; type: InterruptType }[] {
    return [...this.#interrupts].filter(([, i]) => i.pending).map(([requestId, i]) => ({ requestId, type: i.type }));
  }

  // -- terminal -------------------------------------------------------------------------------------------------

  #recordError(error: AssistantError | undefined, operation: string): void {
    this.#error ??= classifyAssistantError(error, operation, this.#ctx.sessionId);
  }

  #onIdle(out: MapperOutput[]): void {
    this.#busy = false;
    if (!this.#started || this.#terminal !== undefined) return;
    const error = this.#error;
    if (error === undefined && this.#followUps.some((f) => !f.answered)) {
      // Not over: a follow-up is not in OpenCode yet, or OpenCode stored it but has not answered it.
      const ordinals = this.#followUps.flatMap((f, i) => (!f.answered && f.id !== undefined ? [i] : []));
      if (ordinals.length > 0 && !this.#stallReported) out.push({ kind: "stalled", ordinals });
      this.#stallReported = ordinals.length > 0;
      return;
    }
    this.#terminal = { kind: "terminal", state: error === undefined ? "completed" : error.taskState, ...(error === undefined ? {} : { error }) };
    out.push(this.#terminal);
  }

  // -- usage ----------------------------------------------------------------------------------------------------

  #messageUsage(messageId: string): MessageUsage {
    let usage = this.#usage.get(messageId);
    if (usage === undefined) {
      usage = { steps: new Map() };
      this.#usage.set(messageId, usage);
    }
    return usage;
  }

  #turnUsage(): Usage | undefined {
    if (this.#usage.size === 0) return undefined;
    let total = zeroUsage();
    for (const m of this.#usage.values()) {
      let steps: Usage | undefined;
      for (const s of m.steps.values()) steps = addUsage(steps ?? zeroUsage(), s);
      // info.tokens is the message's own cumulative count; step-finish parts fill in while it lags behind.
      const pick = m.info === undefined || (steps !== undefined && steps.total_tokens > m.info.total_tokens) ? steps : m.info;
      if (pick !== undefined) total = addUsage(total, pick);
    }
    // A message that has not reported its tokens yet says 0: no usage is reported rather than a false zero.
    return total.total_tokens > 0 || total.cost > 0 ? total : undefined;
  }

  // -- event construction ---------------------------------------------------------------------------------------

  #nextMeta(source: string, messageId: string | undefined, partId: string | undefined, block: BlockType | undefined): StreamMeta {
    const sequence = ++this.#seq;
    const { taskId, contextId } = this.#ctx;
    return {
      ...(block === undefined ? {} : { block_type: block }),
      source,
      message_id: messageId ?? `${taskId}:${contextId}:assistant`,
      ...(partId === undefined ? {} : { part_id: partId }),
      event_id: `${taskId}:${contextId}:${sequence}`,
      sequence,
      role: "agent",
    };
  }

  #artifactUpdate(
    artifactId: string,
    name: string,
    parts: Part[],
    append: boolean,
    block: BlockType,
    source: string,
    part: { id: string; messageID?: string; messageId?: string } | undefined,
  ): ArtifactUpdateEvent {
    this.#emittedAny = true;
    const meta = this.#nextMeta(source, part?.messageID ?? part?.messageId, part?.id, block);
    return {
      kind: "artifact-update",
      taskId: this.#ctx.taskId,
      contextId: this.#ctx.contextId,
      artifact: { artifactId, name, parts, metadata: { shared: { stream: meta } } },
      append,
      lastChunk: false,
    };
  }

  #status(state: TaskState, shared: Metadata, source: string, messageId: string | undefined, message?: Message): StatusUpdateEvent {
    const stream = this.#nextMeta(source, messageId, undefined, undefined);
    return {
      kind: "status-update",
      taskId: this.#ctx.taskId,
      contextId: this.#ctx.contextId,
      status: { state, timestamp: this.#now(), ...(message === undefined ? {} : { message }) },
      final: false,
      metadata: { shared: { ...shared, stream, session: { id: this.#ctx.sessionId } } },
    };
  }
}

// -- helpers ----------------------------------------------------------------------------------------------------

/** Default of A2A_ARTIFACT_FILE_MAX_BYTES. */
export const DEFAULT_FILE_MAX_BYTES = 1024 * 1024;

/** The fields of an OpenCode file part (FilePart) the mapper reads. */
export interface OcFile {
  id: string;
  messageID?: string;
  mime?: string;
  filename?: string;
  url?: string;
  source?: unknown;
}

function toolAttachments(part: Extract<OcPart, { type: "tool" }>): OcFile[] {
  const state: Record<string, unknown> = isObject(part.state) ? part.state : {};
  if (!Array.isArray(state.attachments)) return [];
  return state.attachments.filter((a): a is OcFile => isObject(a) && typeof a.id === "string");
}

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*?)(;base64)?,(.*)$/s;

/**
 * An OpenCode file as an A2A file part: a `data:` URL up to `maxBytes` becomes inline bytes (base64); a larger one,
 * or any other URL, is carried by reference (`uri`: the OpenCode URL, or `file://` of its source path for an
 * oversize data URL) with `metadata.opencode {size, omitted: "size"}` saying why the bytes are not inline.
 */
export function openCodeFilePart(file: OcFile, maxBytes: number): Part {
  const mimeType = str(file.mime);
  const name = str(file.filename);
  const base = { ...(mimeType === undefined ? {} : { mimeType }), ...(name === undefined ? {} : { name }) };
  const url = str(file.url) ?? "";
  const data = DATA_URL.exec(url);
  if (data === null) return { kind: "file", file: { ...base, uri: url === "" ? `opencode:part/${file.id}` : url } };
  const payload = data[4] ?? "";
  const bytes = data[3] !== undefined ? Buffer.from(payload, "base64") : Buffer.from(decodeURIComponent(payload), "utf8");
  if (bytes.length <= maxBytes) return { kind: "file", file: { ...base, bytes: bytes.toString("base64") } };
  const source = isObject(file.source) ? str(file.source.path) : undefined;
  return {
    kind: "file",
    file: { ...base, uri: source === undefined ? `opencode:part/${file.id}` : `file://${source.startsWith("/") ? "" : "/"}${source}` },
    metadata: { opencode: { size: bytes.length, omitted: "size", max_bytes: maxBytes } },
  };
}

const visible = (p: TextPartState): string => (p.echo ? "" : p.text);

/** A lane's text as the client has it: its visible parts joined with the separator. */
function laneText(lane: Lane): string {
  let text = "";
  for (const p of lane.parts) {
    const v = visible(p);
    if (v === "") continue;
    text = text === "" ? v : text + TEXT_PART_SEPARATOR + v;
  }
  return text;
}

/** The part text after a full-text snapshot: extensions and rewrites win, a stale (shorter) prefix does not. */
function mergeSnapshot(buffer: string, snapshot: string): string {
  if (snapshot === buffer || snapshot.startsWith(buffer)) return snapshot;
  return buffer.startsWith(snapshot) ? buffer : snapshot;
}

function metaOf(update: ArtifactUpdateEvent): StreamMeta {
  return (update.artifact.metadata as { shared: { stream: StreamMeta } }).shared.stream;
}

function normalizeQuestions(value: unknown): unknown[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isObject).map((q) => ({
    ...q,
    options: Array.isArray(q.options)
      ? q.options.filter(isObject).map((o) => ({ label: o.label, ...(o.description === undefined ? {} : { description: o.description }) }))
      : [],
  }));
}

function interruptText(type: InterruptType, p: Record<string, unknown>): string {
  if (type === "permission") {
    const patterns = Array.isArray(p.patterns) ? p.patterns.filter((x): x is string => typeof x === "string") : [];
    return `OpenCode asks for permission "${String(p.permission ?? "")}"${patterns.length > 0 ? ` (${patterns.join(", ")})` : ""}: reply once, always or reject.`;
  }
  const questions = Array.isArray(p.questions) ? p.questions.filter(isObject) : [];
  return questions
    .map((q) => {
      const labels = Array.isArray(q.options) ? q.options.filter(isObject).map((o) => String(o.label)) : [];
      return `${String(q.question ?? q.header ?? "")}${labels.length > 0 ? ` [${labels.join(" | ")}]` : ""}`;
    })
    .join("\n");
}
