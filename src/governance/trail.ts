// The governance trail of a task (spec: GovernanceHistory): every decision on its permission and question requests —
// a policy rule's, a principal's answer through any path, an expiry — kept in the store (src/storage/governance.ts),
// its requests still waiting (the interrupt bindings), and governor feedback. Reads are owner-scoped like the task
// itself (another principal's task is TASK_NOT_FOUND; an admin reads every task's). Expiries are recorded by a sweep
// over the bindings past their TTL (at every read of a trail and summary, before bindings are purged, and on a timer),
// so a request nobody answered lands in the trail even when nobody looks.
import type { Logger } from "pino";
import type { GovernanceHistory, GovernanceSummary } from "../../generated/types/extensions.js";
import type { Principal } from "../auth/index.js";
import { A2AError } from "../contract/errors.js";
import type { Task } from "../protocol/model.js";
import type { Storage } from "../storage/index.js";
import type { InterruptRecord } from "../storage/interrupts.js";
import type { TrailDecision, TrailFeedback } from "../storage/governance.js";
import { isObject } from "../util/object.js";

/** How the decision reached OpenCode (the trail's `metadata.via`). */
export type DecisionPath =
  | "policy"
  | "a2a.interrupt.permission.reply"
  | "a2a.interrupt.question.reply"
  | "a2a.interrupt.question.reject"
  | "tasks/provideInputAndContinue"
  | "message"
  | "ttl";

/** The request a decision is about: its binding, or (a policy's decision) the interrupt as it was asked. */
export interface DecidedRequest {
  requestId: string;
  type: "permission" | "question";
  taskId: string;
  owner: string;
  details: Record<string, unknown>;
}

export interface TrailDeps {
  storage: Pick<Storage, "governance" | "interrupts" | "tasks">;
  log: Pick<Logger, "error">;
  now?: () => number;
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []);

/** `tool.callID` of the request, when it names the tool call that asked. */
function toolCallOf(details: Record<string, unknown>): string | undefined {
  return isObject(details.tool) && typeof details.tool.callID === "string" ? details.tool.callID : undefined;
}

/** What the trail says about the request itself (type, permission, patterns). */
function requestFacts(request: DecidedRequest): Record<string, unknown> {
  const facts: Record<string, unknown> = { interrupt_type: request.type };
  if (request.type === "permission") {
    if (typeof request.details.permission === "string") facts.permission = request.details.permission;
    facts.patterns = strings(request.details.patterns);
  }
  return facts;
}

export class GovernanceTrail {
  readonly #now: () => number;

  constructor(private readonly deps: TrailDeps) {
    this.#now = deps.now ?? Date.now;
  }

  /**
   * Records a decision. A failing store never fails the answer that was already given to OpenCode: it is logged (the
   * request stays answered upstream), so the promise never rejects.
   */
  async record(
    request: DecidedRequest,
    source: string,
    optionId: string,
    via: DecisionPath,
    summary: string,
    extra: Record<string, unknown> = {},
    at: number = this.#now(),
  ): Promise<void> {
    const toolCallId = toolCallOf(request.details);
    const decision: TrailDecision = {
      ...(toolCallId === undefined ? {} : { toolCallId }),
      requestId: request.requestId,
      source,
      optionId,
      governorsInvolved: [],
      timestamp: new Date(at).toISOString(),
      metadata: { ...requestFacts(request), via, summary: [summary], ...extra },
    };
    try {
      await this.deps.storage.governance.addDecision(request.taskId, request.owner, decision);
    } catch (error) {
      this.deps.log.error({ err: error instanceof Error ? error.message : String(error), requestId: request.requestId, taskId: request.taskId }, "could not record a governance decision");
    }
  }

  /** A principal answered the request (any path). */
  answered(request: DecidedRequest, principal: Principal, optionId: string, via: DecisionPath, extra: Record<string, unknown> = {}): Promise<void> {
    return this.record(request, `principal:${principal.id}`, optionId, via, `${principal.id} answered ${optionId} (${via})`, extra);
  }

  /** Governor feedback on the task (post-run reviews); like a decision, a failing store is logged, never thrown. */
  async feedback(taskId: string, owner: string, entry: TrailFeedback): Promise<void> {
    try {
      await this.deps.storage.governance.addFeedback(taskId, owner, entry);
    } catch (error) {
      this.deps.log.error({ err: error instanceof Error ? error.message : String(error), taskId }, "could not record governor feedback");
    }
  }

  /** Records every request past its TTL that nobody answered (once each; the store ignores repeats). */
  async sweepExpired(records?: InterruptRecord[]): Promise<void> {
    const expired = records ?? (await this.deps.storage.interrupts.listExpired());
    const now = this.#now();
    for (const record of expired) {
      if (record.expiresAt > now) continue;
      const expiredAt = new Date(record.expiresAt).toISOString();
      // Dated when it expired, however late the sweep noticed.
      await this.record(record, "expired", "expired", "ttl", `nobody answered before ${expiredAt}`, {}, record.expiresAt);
    }
  }

  /** The task's trail, for a caller that may see the task (else TASK_NOT_FOUND). */
  async history(principal: Principal, taskId: string): Promise<GovernanceHistory> {
    const stored = await this.deps.storage.tasks.get(taskId);
    if (stored === undefined || (stored.owner !== principal.id && !principal.admin)) throw new A2AError("TASK_NOT_FOUND", undefined, { task_id: taskId });
    const bindings = await this.deps.storage.interrupts.listForTask(taskId);
    await this.sweepExpired(bindings);
    const trail = await this.deps.storage.governance.trail(taskId);
    const now = this.#now();
    return {
      permissionDecisions: trail.decisions,
      pendingPermissions: bindings
        .filter((b) => b.expiresAt > now)
        .map((b) => {
          const toolCallId = toolCallOf(b.details);
          return {
            ...(toolCallId === undefined ? {} : { toolCallId }),
            requestId: b.requestId,
            interruptType: b.type,
            ...(b.type === "permission" && typeof b.details.permission === "string" ? { permission: b.details.permission } : {}),
            ...(b.type === "permission" ? { patterns: strings(b.details.patterns) } : {}),
            askedAt: new Date(b.createdAt).toISOString(),
            expiresAt: new Date(b.expiresAt).toISOString(),
            details: b.details,
          };
        }),
      governorFeedback: trail.feedback,
    };
  }

  /**
   * `metadata.opencode.governance` of the task: undefined while it has no decisions, pending requests or reviews.
   * It is read at every read of a task (GetTask), so the common case is one statement: the store's presence() of a
   * trail and of interrupt bindings; a task with neither has no summary. A task with bindings has its expired ones
   * recorded first (the sweep adds decisions); then the counts are read (overview(), one statement).
   */
  async summary(taskId: string): Promise<GovernanceSummary | undefined> {
    const governance = this.deps.storage.governance;
    const present = await governance.presence(taskId);
    if (!present.trail && !present.bindings) return undefined;
    let pending = 0;
    if (present.bindings) {
      const bindings = await this.deps.storage.interrupts.listForTask(taskId);
      await this.sweepExpired(bindings);
      const now = this.#now();
      pending = bindings.filter((b) => b.expiresAt > now).length;
    }
    const overview = await governance.overview(taskId);
    const { count, lastSource } = overview.decisions;
    const reviews = overview.reviews;
    if (count === 0 && pending === 0 && reviews.count === 0) return undefined;
    return {
      decisions: count,
      pending,
      ...(lastSource === undefined ? {} : { last_source: lastSource }),
      ...(reviews.count === 0 ? {} : { reviews: reviews.count }),
      ...(reviews.lastStatus === undefined ? {} : { last_review: reviews.lastStatus }),
    };
  }

  /**
   * What puts the task's summary at `metadata.opencode.governance` (the task itself when there is none): read now,
   * applied synchronously to whichever snapshot of the task the caller holds when it is ready.
   */
  async annotation(taskId: string): Promise<(task: Task) => Task> {
    let summary: GovernanceSummary | undefined;
    try {
      summary = await this.summary(taskId);
    } catch (error) {
      // A read of the task never fails for its summary: it is left out and the store failure logged.
      this.deps.log.error({ err: error instanceof Error ? error.message : String(error), taskId }, "could not read the governance summary");
      return (task) => task;
    }
    if (summary === undefined) return (task) => task;
    const governance = summary;
    return (task) => {
      const metadata = task.metadata ?? {};
      const opencode = isObject(metadata.opencode) ? metadata.opencode : {};
      return { ...task, metadata: { ...metadata, opencode: { ...opencode, governance } } };
    };
  }
}
