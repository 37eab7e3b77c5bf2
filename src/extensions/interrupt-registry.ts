// The interrupt registry: every `permission.asked` / `question.asked` the runtime maps becomes a durable binding in
// the store (src/storage/interrupts.ts) owned by the task's principal, answerable for A2A_INTERRUPT_REQUEST_TTL_SECONDS
// and then a tombstone for A2A_INTERRUPT_REQUEST_TOMBSTONE_TTL_SECONDS; `*.replied` / `question.rejected` and successful
// answers discard it. The same registry answers the runtime's follow-up messages to an `input-required` task
// (`InterruptHooks.answer`). It is built before the runtime (which reports to it) and reaches the runtime lazily.
//
// Governance (src/governance): before a permission request reaches the task, the policy rules may answer it
// (`InterruptHooks.govern`, the same upstream reply as a2a.interrupt.permission.reply); every answer through any path,
// and every expiry, lands in the task's trail; reads of a task carry the trail's summary (`InterruptHooks.annotation`).
import type { Logger } from "pino";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import {
  PermissionDecisionValues,
  type GovernanceHistory,
  type InterruptDetails,
  type InterruptRecoveryItem,
  type PermissionDecision,
} from "../../generated/types/extensions.js";
import type { Principal } from "../auth/index.js";
import type { GovernancePolicySet, PolicyMatch } from "../governance/policies.js";
import type { GovernanceTrail } from "../governance/trail.js";
import { userText } from "../bridge/parts.js";
import type { Config } from "../config/index.js";
import { A2AError, invalidParams } from "../contract/errors.js";
import type { Message, Metadata, Task } from "../protocol/model.js";
import type { InterruptHooks, PendingInterrupt, TaskRuntime } from "../runtime/tasks.js";
import { forwarded, type InterruptForwarding } from "./interrupt-forwarding.js";
import type { Storage } from "../storage/index.js";
import type { InterruptRecord, InterruptType } from "../storage/interrupts.js";
import type { TraceContext } from "../tracing/index.js";
import type { CallContext, SdkResult, UpstreamClient } from "../upstream/client.js";
import { UpstreamError } from "../upstream/errors.js";
import { isObject } from "../util/object.js";

/** The permission decisions advertised in the interrupt details (`permission_options[].id` or `reply_options`). */
export function advertisedPermissionOptions(details: Metadata): PermissionDecision[] {
  const known = new Set<string>(PermissionDecisionValues);
  const ids: string[] = [];
  if (Array.isArray(details.permission_options)) {
    for (const o of details.permission_options) if (isObject(o) && typeof o.id === "string") ids.push(o.id);
  }
  if (Array.isArray(details.reply_options)) for (const o of details.reply_options) if (typeof o === "string") ids.push(o);
  const advertised = [...new Set(ids)].filter((id): id is PermissionDecision => known.has(id));
  return advertised.length > 0 || ids.length > 0 ? advertised : [...PermissionDecisionValues];
}

interface QuestionShape {
  options: string[];
}

function questionsOf(details: Metadata): QuestionShape[] {
  if (!Array.isArray(details.questions)) return [];
  return details.questions.filter(isObject).map((q) => ({
    options: Array.isArray(q.options) ? q.options.filter(isObject).flatMap((o) => (typeof o.label === "string" ? [o.label] : [])) : [],
  }));
}

/** A free-text answer that names an option (case-insensitively) becomes that option's exact label. */
function normalizeAnswer(text: string, question: QuestionShape | undefined): string {
  const t = text.trim();
  const hit = question?.options.find((label) => label.toLowerCase() === t.toLowerCase());
  return hit ?? t;
}

/**
 * The `answers` of a follow-up message to a task waiting on a question: one question → the whole text; several →
 * one text part per question, or one line per question.
 */
export function answersFromMessage(details: Metadata, message: Message): string[][] {
  const questions = questionsOf(details);
  const text = userText(message).trim();
  if (text === "") throw invalidParams("The task waits for an answer to a question: send it as text", "message.parts");
  if (questions.length <= 1) return [[normalizeAnswer(text, questions[0])]];
  const parts = message.parts.flatMap((p) => (p.kind === "text" && p.text.trim() !== "" ? [p.text] : []));
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "");
  const given = parts.length === questions.length ? parts : lines.length === questions.length ? lines : undefined;
  if (given === undefined) {
    throw invalidParams(
      `The task waits for answers to ${questions.length} questions: send one text part (or one line) per question, in order, or use a2a.interrupt.question.reply`,
      "message.parts",
    );
  }
  return given.map((answer, i) => [normalizeAnswer(answer, questions[i])]);
}

function permissionFromText(details: Metadata, message: Message): PermissionDecision {
  const options = advertisedPermissionOptions(details);
  const text = userText(message).trim().toLowerCase();
  const hit = options.find((o) => o === text);
  if (hit !== undefined) return hit;
  throw invalidParams(
    `The task waits for a permission decision: answer with one of ${options.map((o) => `"${o}"`).join(", ")} ` +
      "(or use a2a.interrupt.permission.reply, or tasks/provideInputAndContinue with permissionOptionId)",
    "message.parts",
    { supported: options },
  );
}

/** The recovery view of a binding. */
function recoveryItem(record: InterruptRecord): InterruptRecoveryItem {
  return {
    request_id: record.requestId,
    session_id: record.sessionId,
    interrupt_type: record.type,
    task_id: record.taskId,
    context_id: record.contextId,
    // Stored as the stream mapper reported them, in the spec's shape of the interrupt's type.
    details: record.details as InterruptDetails,
    expires_at: new Date(record.expiresAt).toISOString(),
  };
}

/** What the registry needs: the stores, OpenCode, the TTLs, and the runtime (built after the registry, which it is given to). */
export interface InterruptRegistryDeps {
  config: Pick<Config, "interruptTtl" | "interruptTombstoneTtl">;
  storage: Pick<Storage, "interrupts" | "tasks">;
  upstream: UpstreamClient;
  log: Pick<Logger, "warn" | "error" | "debug">;
  tasks: () => Pick<TaskRuntime, "pendingInterrupt" | "resume">;
  /** The trail every decision lands in, and the policy rules (absent: every request is left to a client). */
  governance: { trail: GovernanceTrail; policies?: GovernancePolicySet };
  /** Several gateways on one database: a reply for a task another one runs goes to that one (./interrupt-forwarding.ts). */
  forward?: InterruptForwarding;
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []);

export class InterruptRegistry implements InterruptHooks {
  constructor(private readonly deps: InterruptRegistryDeps) {}

  get #store() {
    return this.deps.storage.interrupts;
  }

  get #trail(): GovernanceTrail {
    return this.deps.governance.trail;
  }

  /** Expired requests are recorded in their trails before their bindings can be purged. */
  async #purge(): Promise<void> {
    await this.#trail.sweepExpired();
    await this.#store.purgeExpired();
  }

  // ---- runtime hooks --------------------------------------------------------------------------------------------

  async asked(interrupt: PendingInterrupt): Promise<void> {
    try {
      await this.#purge();
      const created = await this.#store.add(
        {
          requestId: interrupt.requestId,
          type: interrupt.type,
          owner: interrupt.owner,
          sessionId: interrupt.sessionId,
          taskId: interrupt.taskId,
          contextId: interrupt.contextId,
          details: interrupt.details,
          routing: interrupt.routing,
        },
        this.deps.config.interruptTtl,
        this.deps.config.interruptTombstoneTtl,
      );
      if (!created) this.deps.log.debug({ requestId: interrupt.requestId, taskId: interrupt.taskId }, "duplicate interrupt asked event ignored");
    } catch (error) {
      // The turn goes on; the request is then only answerable through OpenCode itself.
      this.deps.log.error({ err: error instanceof Error ? error.message : String(error), requestId: interrupt.requestId }, "could not record interrupt request");
    }
  }

  async resolved(event: { requestId: string; type: InterruptType; taskId: string }): Promise<void> {
    try {
      await this.#store.remove(event.requestId);
    } catch (error) {
      this.deps.log.warn({ err: error instanceof Error ? error.message : String(error), requestId: event.requestId }, "could not discard interrupt request");
    }
  }

  /** A follow-up message to a task waiting on `interrupt` (message/send, SendMessage, provideInputAndContinue input). */
  async answer(principal: Principal, interrupt: PendingInterrupt, message: Message): Promise<void> {
    const record = await this.#binding(interrupt.requestId, interrupt.owner);
    if (record.type === "question") {
      const answers = answersFromMessage(record.details, message);
      await this.#replyQuestion(record, answers);
      await this.#trail.answered(record, principal, "answer", "message", { answers });
    } else {
      const decision = permissionFromText(record.details, message);
      await this.#replyPermission(record, decision);
      await this.#trail.answered(record, principal, decision, "message");
    }
  }

  /** A permission request the policy rules answer (approve, reject) is taken here: answered upstream, recorded. */
  govern(interrupt: PendingInterrupt, manual: () => void): boolean {
    const policies = this.deps.governance.policies;
    if (policies === undefined || interrupt.type !== "permission") return false;
    const match = policies.decide({
      permission: typeof interrupt.details.permission === "string" ? interrupt.details.permission : "",
      patterns: strings(interrupt.details.patterns),
      principal: interrupt.owner,
      ...(interrupt.trustLevel === undefined ? {} : { trustLevel: interrupt.trustLevel }),
    });
    if (match === undefined || match.reply === undefined) return false;
    void this.#applyPolicy(interrupt, match, match.reply, manual);
    return true;
  }

  annotation(taskId: string): Promise<(task: Task) => Task> {
    return this.#trail.annotation(taskId);
  }

  /**
   * Sends a rule's answer (the upstream call a2a.interrupt.permission.reply makes) and records it. An answer OpenCode
   * did not take is logged and the request goes the manual way: the task turns `input-required` for it.
   */
  async #applyPolicy(interrupt: PendingInterrupt, match: PolicyMatch, reply: PermissionDecision, manual: () => void): Promise<void> {
    const { rule } = match;
    const body = { reply, ...(reply === "reject" ? { message: `Rejected by the gateway's governance policy "${rule.id}"` } : {}) };
    try {
      const answered = await this.deps.upstream.call("permissionReply", (c) => sdk.permissionReply({ ...c, path: { requestID: interrupt.requestId }, body }), {
        ...interrupt.routing,
        validate: (d) => typeof d === "boolean",
      });
      if (answered !== true) throw new Error("OpenCode no longer holds the request");
    } catch (error) {
      this.deps.log.error(
        { err: error instanceof Error ? error.message : String(error), requestId: interrupt.requestId, taskId: interrupt.taskId, rule: rule.id },
        "a governance policy's answer could not be delivered; the request is left to a client",
      );
      manual();
      return;
    }
    const summary = rule.description ?? `${rule.decision === "approve" ? `approved (${reply})` : "rejected"} by rule ${rule.id}`;
    await this.#trail.record(interrupt, `policy:${rule.id}`, reply, "policy", summary, { rule: rule.id, decision: rule.decision });
  }

  // ---- methods --------------------------------------------------------------------------------------------------

  async permissionReply(principal: Principal, requestId: string, reply: PermissionDecision, message?: string, trace?: TraceContext): Promise<void> {
    const record = await this.#binding(requestId, await this.#ownerFor(principal, requestId), "permission");
    if (await forwarded(this.deps.forward, principal, record.taskId, { kind: "permission", requestId, reply, ...(message === undefined ? {} : { message }) })) return;
    await this.#replyPermission(record, reply, message, trace);
    await this.#trail.answered(record, principal, reply, "a2a.interrupt.permission.reply");
    await this.#resumeTask(principal, record);
  }

  async questionReply(principal: Principal, requestId: string, answers: string[][], trace?: TraceContext): Promise<void> {
    const record = await this.#binding(requestId, await this.#ownerFor(principal, requestId), "question");
    if (await forwarded(this.deps.forward, principal, record.taskId, { kind: "question", requestId, answers })) return;
    const count = questionsOf(record.details).length;
    if (count > 0 && answers.length !== count) {
      throw invalidParams(`request ${requestId} asked ${count} question${count === 1 ? "" : "s"}: give one answer array per question, in order`, "answers", {
        request_id: requestId,
      });
    }
    await this.#replyQuestion(record, answers, trace);
    await this.#trail.answered(record, principal, "answer", "a2a.interrupt.question.reply", { answers });
    await this.#resumeTask(principal, record);
  }

  async questionReject(principal: Principal, requestId: string, trace?: TraceContext): Promise<void> {
    const record = await this.#binding(requestId, await this.#ownerFor(principal, requestId), "question");
    if (await forwarded(this.deps.forward, principal, record.taskId, { kind: "reject", requestId })) return;
    await this.#upstream(record, "questionReject", (c) => sdk.questionReject({ ...c, path: { requestID: record.requestId } }), trace);
    await this.#trail.answered(record, principal, "reject", "a2a.interrupt.question.reject");
    await this.#resumeTask(principal, record);
  }

  /** tasks/provideInputAndContinue with a permission option: settle the task's pending permission. */
  async answerTaskPermission(principal: Principal, taskId: string, option: string, trace?: TraceContext): Promise<void> {
    if (await forwarded(this.deps.forward, principal, taskId, { kind: "task-permission", taskId, option })) return;
    const pending = await this.deps.tasks().pendingInterrupt(principal, taskId);
    if (pending === undefined || pending.type !== "permission") {
      throw invalidParams(`Task ${taskId} has no pending permission request`, "permissionOptionId", { task_id: taskId });
    }
    const options = advertisedPermissionOptions(pending.details);
    const decision = options.find((o) => o === option);
    if (decision === undefined) {
      throw invalidParams(
        `permissionOptionId must be one of the advertised permission options: ${options.map((o) => `"${o}"`).join(", ")}`,
        "permissionOptionId",
        { supported: options },
      );
    }
    const record = await this.#binding(pending.requestId, pending.owner, "permission");
    await this.#replyPermission(record, decision, undefined, trace);
    await this.#trail.answered(record, principal, decision, "tasks/provideInputAndContinue");
    await this.#resumeTask(principal, record);
  }

  /** opencode.governance.history and its REST paths: the task's trail, for a caller that may see the task. */
  history(principal: Principal, taskId: string): Promise<GovernanceHistory> {
    return this.#trail.history(principal, taskId);
  }

  async list(principal: Principal, type: InterruptType): Promise<InterruptRecoveryItem[]> {
    await this.#purge();
    const items: InterruptRecoveryItem[] = [];
    for (const record of await this.#store.listLive(principal.admin ? undefined : principal.id, type)) {
      if (!(await this.#abandoned(record))) items.push(recoveryItem(record));
    }
    return items;
  }

  // ---- internals ------------------------------------------------------------------------------------------------

  /** Whose binding the caller addresses: its own, or (admin) the binding's owner whoever it is. */
  async #ownerFor(principal: Principal, requestId: string): Promise<string> {
    if (!principal.admin) return principal.id;
    return (await this.#store.get(requestId))?.owner ?? principal.id;
  }

  /**
   * A binding whose task the caller canceled is dropped (OpenCode keeps an aborted turn's requests pending, but nobody
   * waits for the answer any more). Bindings of tasks that failed, e.g. when the gateway restarted, stay answerable.
   */
  async #abandoned(record: InterruptRecord): Promise<boolean> {
    if ((await this.deps.storage.tasks.get(record.taskId))?.task.status.state !== "canceled") return false;
    await this.#store.remove(record.requestId);
    return true;
  }

  /** The live binding `owner` may answer, or the typed error. */
  async #binding(requestId: string, owner: string, expected?: InterruptType): Promise<InterruptRecord> {
    const found = await this.#store.lookup(requestId, owner);
    if (found.status !== "not_found" && (await this.#abandoned(found.record))) {
      throw new A2AError("INTERRUPT_REQUEST_NOT_FOUND", `Interrupt request ${requestId} belongs to a canceled task`, { request_id: requestId });
    }
    if (found.status === "not_found") {
      throw new A2AError("INTERRUPT_REQUEST_NOT_FOUND", `Interrupt request ${requestId} not found`, { request_id: requestId });
    }
    if (found.status === "expired") {
      throw new A2AError("INTERRUPT_REQUEST_EXPIRED", `Interrupt request ${requestId} expired at ${new Date(found.record.expiresAt).toISOString()}`, {
        request_id: requestId,
      });
    }
    if (expected !== undefined && found.record.type !== expected) {
      throw new A2AError(
        "INTERRUPT_TYPE_MISMATCH",
        `Interrupt request ${requestId} is a ${found.record.type} request; answer it with a2a.interrupt.${found.record.type}.reply`,
        { request_id: requestId, expected_interrupt_type: expected, actual_interrupt_type: found.record.type },
      );
    }
    return found.record;
  }

  async #replyPermission(record: InterruptRecord, reply: PermissionDecision, message?: string, trace?: TraceContext): Promise<void> {
    await this.#upstream(record, "permissionReply", (c) =>
      sdk.permissionReply({ ...c, path: { requestID: record.requestId }, body: { reply, ...(message === undefined ? {} : { message }) } }), trace,
    );
  }

  async #replyQuestion(record: InterruptRecord, answers: string[][], trace?: TraceContext): Promise<void> {
    await this.#upstream(record, "questionReply", (c) => sdk.questionReply({ ...c, path: { requestID: record.requestId }, body: { answers } }), trace);
  }

  /**
   * Delivers one answer to the asking session's instance. Answered: the binding is removed. Upstream failures become
   * the project's typed errors; a request OpenCode no longer holds (404, or `false`) is gone here too.
   */
  async #upstream<T>(record: InterruptRecord, operation: string, invoke: (ctx: CallContext) => Promise<SdkResult<T>>, trace?: TraceContext): Promise<void> {
    const gone = async (extra: Record<string, unknown> = {}): Promise<A2AError> => {
      await this.#store.remove(record.requestId);
      return new A2AError("INTERRUPT_REQUEST_NOT_FOUND", `Interrupt request ${record.requestId} is no longer pending upstream`, {
        request_id: record.requestId,
        ...extra,
      });
    };
    let answered: unknown;
    try {
      // OpenCode answers `true`; anything but a boolean (an HTML page from a misrouted proxy, …) is a payload error,
      // never a success that would drop the binding and resume a turn OpenCode was not told to continue.
      // The reply carries the trace of the request that answered (else the task's, which its routing carries).
      answered = await this.deps.upstream.call(operation, invoke, { ...record.routing, ...(trace === undefined ? {} : { trace }), validate: (d) => typeof d === "boolean" });
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      // 404: OpenCode no longer knows the request (answered elsewhere, or OpenCode restarted).
      if (error.kind === "http" && error.status === 404) throw await gone({ upstream_status: 404 });
      throw error.toA2AError();
    }
    if (answered === false) throw await gone();
    await this.#store.remove(record.requestId);
  }

  /** The task continues at once when this was the request it waited on (OpenCode confirms with `*.replied`). */
  async #resumeTask(principal: Principal, record: InterruptRecord): Promise<void> {
    try {
      const tasks = this.deps.tasks();
      if ((await tasks.pendingInterrupt(principal, record.taskId))?.requestId === record.requestId) {
        await tasks.resume(principal, record.taskId);
      }
    } catch {
      // The task is gone or no longer live (e.g. after a gateway restart): OpenCode still got the answer.
    }
  }
}
