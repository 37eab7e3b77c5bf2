// The status updates of a turn (StreamMapper, ./stream-mapper.ts), all non-final: step-start / step-finish /
// snapshot parts and `session.status retry` → `working` with `shared.progress` (deduplicated);
// `permission.asked` / `question.asked` → `input-required` with `shared.interrupt{phase: "asked"}`; their replies →
// `phase: "resolved"` (only for requests asked in this turn, once). While any asked request is still pending, status
// updates say `input-required`. Interrupt updates carry their typed InterruptSignal for the runtime.
import { PermissionDecisionValues } from "../../generated/types/extensions.js";
import type { Message } from "../protocol/model.js";
import type { InterruptType, MapperOutput, TurnWire } from "./turn-events.js";
import { isObject } from "../util/object.js";

/** The replies a client may give to a permission request (a2a.interrupt.permission.reply), as the spec declares them. */
export const PERMISSION_REPLIES = PermissionDecisionValues;

/** The advertised permission decisions (spec: PermissionOption). */
export const PERMISSION_OPTIONS = [
  { id: "once", label: "Allow once" },
  { id: "always", label: "Always allow" },
  { id: "reject", label: "Reject" },
] as const;

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

export class TurnStatus {
  /** Progress identity → its last published JSON. */
  readonly #progress = new Map<string, string>();
  /** Interrupts asked in this turn: request id → type and whether still pending. */
  readonly #interrupts = new Map<string, { type: InterruptType; pending: boolean }>();

  constructor(
    private readonly wire: TurnWire,
    private readonly ids: { taskId: string; contextId: string },
  ) {}

  progress(identity: string, progress: Record<string, unknown>, messageId: string | undefined, out: MapperOutput[]): void {
    // Progress objects are built here with a fixed key order: plain JSON identifies them (stableJson is for tool data).
    const key = JSON.stringify(progress);
    if (this.#progress.get(identity) === key) return;
    this.#progress.set(identity, key);
    out.push(this.wire.status(this.#state(), { progress }, "progress", messageId));
  }

  /** A `permission.asked` / `question.asked` of the running turn (each request once). */
  asked(type: InterruptType, p: Record<string, unknown>, out: MapperOutput[]): void {
    const requestId = str(p.id);
    if (requestId === undefined || this.#interrupts.has(requestId)) return;
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
      messageId: `${this.ids.taskId}:interrupt:${requestId}`,
      role: "agent",
      taskId: this.ids.taskId,
      contextId: this.ids.contextId,
      parts: [{ kind: "text", text: interruptText(type, p) }],
    };
    const interrupt = { request_id: requestId, type, phase: "asked", details };
    out.push(this.wire.status("input-required", { interrupt }, "interrupt", tool, message, { requestId, type, phase: "asked", details, published: interrupt }));
  }

  /** A reply to (or rejection of) a request asked in this turn and still pending. */
  resolved(p: Record<string, unknown>, resolution: "replied" | "rejected", details: Record<string, unknown> | undefined, out: MapperOutput[]): void {
    const requestId = str(p.requestID);
    const asked = requestId === undefined ? undefined : this.#interrupts.get(requestId);
    if (requestId === undefined || asked === undefined || !asked.pending) return;
    asked.pending = false;
    const type = asked.type;
    const interrupt = { request_id: requestId, type, phase: "resolved", resolution, ...(details === undefined ? {} : { details }) };
    out.push(this.wire.status(this.#state(), { interrupt }, "interrupt", undefined, undefined, { requestId, type, phase: "resolved", published: interrupt }));
  }

  get anyPending(): boolean {
    for (const i of this.#interrupts.values()) if (i.pending) return true;
    return false;
  }

  /** Requests asked in this turn and not resolved. */
  pending(): { requestId: string; type: InterruptType }[] {
    return [...this.#interrupts].filter(([, i]) => i.pending).map(([requestId, i]) => ({ requestId, type: i.type }));
  }

  #state(): "input-required" | "working" {
    return this.anyPending ? "input-required" : "working";
  }
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
