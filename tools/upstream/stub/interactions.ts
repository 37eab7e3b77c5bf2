/**
 * Permissions and questions: when a tool call asks (the session's permission rules, a path outside the session's
 * directory, the question tool), the pending request, its `*.asked` event, and the reply that wakes the waiting turn.
 */
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { tmpdir } from "node:os";
import type { PermissionRequest, PermissionRule, QuestionInfo, QuestionRequest, ToolPart } from "../../../generated/opencode/types.gen.js";
import type { ToolCall } from "../script.js";
import { ev, newId, type HttpError } from "./common.js";
import type { EventBus } from "./events.js";
import type { PendingPermission, PendingQuestion, PermissionDecision, QuestionDecision, SessionRecord, StubState } from "./state.js";

/** What a tool call waits for before it runs, or why it may not. */
export type Ask =
  | { kind: "permission"; promise: Promise<PermissionDecision> }
  | { kind: "question"; promise: Promise<QuestionDecision>; questions: QuestionInfo[] }
  | { kind: "denied"; rules: PermissionRule[] };

/** OpenCode-like wildcard: `*` any run, `?` one char; "cmd *" also matches plain "cmd". */
function wildcard(text: string, pattern: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  const tail = source.endsWith(" .*") ? `${source.slice(0, -3)}( .*)?` : source;
  return new RegExp(`^${tail}$`, "s").test(text);
}

function permissionName(tool: string): string {
  return tool === "write" || tool === "edit" ? "edit" : tool;
}

export class Interactions {
  constructor(
    private readonly state: StubState,
    private readonly bus: EventBus,
  ) {}

  permissionsOf(directory: string): PermissionRequest[] {
    return [...this.state.permissions.values()].filter((p) => p.directory === directory).map((p) => p.request);
  }

  questionsOf(directory: string): QuestionRequest[] {
    return [...this.state.questions.values()].filter((q) => q.directory === directory).map((q) => q.request);
  }

  askQuestion(rec: SessionRecord, part: ToolPart, args: Record<string, unknown>): Ask {
    const questions = Array.isArray(args.questions) ? (args.questions as QuestionInfo[]) : [];
    const request: QuestionRequest = { id: newId("que"), sessionID: rec.info.id, questions, tool: { messageID: part.messageID, callID: part.callID } };
    const pending: PendingQuestion = { request, directory: rec.info.directory, resolve: undefined };
    const promise = new Promise<QuestionDecision>((r) => (pending.resolve = r));
    this.state.questions.set(request.id, pending);
    this.bus.send(rec, ev("question.asked", request));
    return { kind: "question", promise, questions };
  }

  /** read/write/edit/glob/grep/list outside the session's directory → external_directory; then the session rules. */
  checkFileAccess(rec: SessionRecord, part: ToolPart, call: ToolCall): Ask | undefined {
    const target = call.args.filePath ?? call.args.path;
    if (typeof target !== "string" || target === "") return this.checkRules(rec, part, permissionName(call.name), ["*"], {});
    const abs = resolve(rec.info.directory, target);
    const inside = (dir: string): boolean => abs === dir || abs.startsWith(dir.endsWith(sep) ? dir : dir + sep);
    if (!inside(rec.info.directory) && !inside(resolve(tmpdir(), "opencode"))) {
      const parentDir = "filePath" in call.args ? dirname(abs) : abs;
      const pattern = `${parentDir}/*`;
      const ask = this.checkRules(rec, part, "external_directory", [pattern], { filepath: abs, parentDir }, [pattern]);
      if (ask !== undefined) return ask;
    }
    const pattern = isAbsolute(target) ? relative(rec.info.directory, abs) : target;
    return this.checkRules(rec, part, permissionName(call.name), [pattern], { filepath: abs });
  }

  /** Last matching session rule wins per pattern; default allow (ask for external_directory). Any deny denies. */
  checkRules(
    rec: SessionRecord,
    part: ToolPart,
    permission: string,
    patterns: string[],
    metadata: Record<string, unknown>,
    always: string[] = patterns.map((p) => (permission === "bash" ? `${p.split(/\s+/)[0] ?? p} *` : "*")),
  ): Ask | undefined {
    const rules = rec.info.permission ?? [];
    let needAsk = false;
    const relevant: PermissionRule[] = [];
    for (const pattern of patterns) {
      const rule = rules.findLast((r) => wildcard(permission, r.permission) && wildcard(pattern, r.pattern));
      if (rule !== undefined) relevant.push(rule);
      const action = rule?.action ?? (permission === "external_directory" ? "ask" : "allow");
      if (action === "deny") return { kind: "denied", rules: relevant };
      if (action === "ask" && !rec.approved.some((a) => a.startsWith(`${permission}\0`) && wildcard(pattern, a.slice(permission.length + 1)))) {
        needAsk = true;
      }
    }
    if (!needAsk) return undefined;
    const request: PermissionRequest = {
      id: newId("per"),
      sessionID: rec.info.id,
      permission,
      patterns,
      metadata,
      always,
      tool: { messageID: part.messageID, callID: part.callID },
    };
    const pending: PendingPermission = { request, directory: rec.info.directory, resolve: undefined };
    const promise = new Promise<PermissionDecision>((r) => (pending.resolve = r));
    this.state.permissions.set(request.id, pending);
    this.bus.send(rec, ev("permission.asked", request));
    return { kind: "permission", promise };
  }

  replyPermission(requestID: string, decision: PermissionDecision): boolean {
    const pending = this.state.permissions.get(requestID);
    if (pending === undefined) {
      throw { status: 404, body: { _tag: "PermissionNotFoundError", requestID, message: `Permission request not found: ${requestID}` } } satisfies HttpError;
    }
    this.state.permissions.delete(requestID);
    const { sessionID } = pending.request;
    const rec = this.state.sessions.get(sessionID);
    if (decision.reply === "always" && rec !== undefined) {
      for (const pattern of pending.request.always) rec.approved.push(`${pending.request.permission}\0${pattern}`);
    }
    this.bus.broadcast(ev("permission.replied", { sessionID, requestID, reply: decision.reply }), pending.directory);
    pending.resolve?.(decision);
    return true;
  }

  answerQuestion(requestID: string, decision: QuestionDecision): boolean {
    const pending = this.state.questions.get(requestID);
    if (pending === undefined) {
      throw { status: 404, body: { _tag: "QuestionNotFoundError", requestID, message: `Question request not found: ${requestID}` } } satisfies HttpError;
    }
    this.state.questions.delete(requestID);
    const { sessionID } = pending.request;
    const payload =
      "rejected" in decision
        ? ev("question.rejected", { sessionID, requestID })
        : ev("question.replied", { sessionID, requestID, answers: decision.answers });
    this.bus.broadcast(payload, pending.directory);
    pending.resolve?.(decision);
    return true;
  }

  /** The session's pending requests stay listed, but answering them no longer wakes its (ended) turn. */
  detach(sessionID: string): void {
    for (const p of this.state.permissions.values()) if (p.request.sessionID === sessionID) p.resolve = undefined;
    for (const q of this.state.questions.values()) if (q.request.sessionID === sessionID) q.resolve = undefined;
  }

  /** A deleted session's pending requests disappear. */
  forget(sessionID: string): void {
    for (const [pid, p] of this.state.permissions) if (p.request.sessionID === sessionID) this.state.permissions.delete(pid);
    for (const [qid, q] of this.state.questions) if (q.request.sessionID === sessionID) this.state.questions.delete(qid);
  }
}
