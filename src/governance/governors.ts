// Post-run governors (spec: GovernorConfig, GovernorFollowUp): the reviewers of A2A_GOVERNANCE_POLICIES_FILE that
// run when a task's turn completes, before the task does (the runtime's TurnReview hook, src/runtime/turn.ts). The
// governors whose conditions select the task run in parallel, each bounded by its timeout and by the task's abort
// signal: an OpenCode agent in a read-only child session of the task's session (./agent-governor.ts), or a local
// command given the diff on stdin (./command-governor.ts). Their results are one round of `governorFeedback` in the
// task's trail; with follow-ups on, the prompts they ask for go back to the runtime, which runs them in the task's
// session as a further turn (at most `max_rounds` per turn). A governor that fails counts as `needs_attention`.
import type { GovernorAnswer, GovernorConfig, GovernorResult } from "../../generated/types/extensions.js";
import { explain, preloadValidators, validate } from "../contract/validate.js";
import type { FileChange, ReviewInput, ReviewSubject, ReviewVerdict, TurnReview } from "../runtime/options.js";
import { worstStatus, type ReviewStatus } from "../storage/governance.js";
import { runAgentGovernor } from "./agent-governor.js";
import { runCommandGovernor } from "./command-governor.js";
import type { GovernorDeps, GovernorRun, RunOutcome } from "./governor-run.js";

export type { GovernorDeps } from "./governor-run.js";

const ANSWER = "extensions/GovernorAnswer";

/** Default review budgets (spec: GovernorConfig.timeout_seconds). */
export const DEFAULT_TIMEOUT_SECONDS = { agent: 300, command: 120 } as const;

/** The diff as one text: each file's patch, or a line naming the change when OpenCode gave none. */
export function patchText(changes: FileChange[]): string {
  return changes
    .map((c) => {
      const patch = c.patch ?? "";
      if (patch !== "") return patch.endsWith("\n") ? patch : `${patch}\n`;
      return `# ${c.file}: ${c.status ?? "modified"} (+${c.additions ?? 0} -${c.deletions ?? 0}), no patch\n`;
    })
    .join("");
}

const LABEL: Record<ReviewStatus, string> = { ok: "Ok", needs_attention: "Needs attention", rejected: "Rejected" };

/** A result's line in the round's summary (seed 004: `[code-reviewer] Needs attention: add tests`). */
export function summaryLine(result: GovernorResult): string {
  const first = result.messages[0];
  return `[${result.governorId}] ${LABEL[result.status]}${first === undefined ? "" : `: ${first}`}`;
}

/** The governor's answer as a result, or `needs_attention` saying why there is none. */
function resultOf(governor: GovernorConfig, outcome: RunOutcome, durationMs: number): GovernorResult {
  const details = { kind: governor.kind, ...outcome.details, duration_ms: Math.round(durationMs) };
  const failed = (error: string): GovernorResult => ({
    governorId: governor.id,
    status: "needs_attention",
    messages: [`The governor did not give a review: ${error}`],
    details: { ...details, error },
  });
  if (outcome.error !== undefined) return failed(outcome.error);
  const verdict = validate(ANSWER, outcome.answer);
  // The validator is preloaded with the service, so the verdict is never a promise.
  if (verdict instanceof Promise || !verdict.ok) {
    const why = explain(ANSWER, outcome.answer)
      .map((v) => `${v.field} ${v.description}`)
      .join("; ");
    return failed(`its answer is not {status, messages, followUpPrompt?} (${why || "not an object"})`);
  }
  const answer = outcome.answer as GovernorAnswer;
  return {
    governorId: governor.id,
    status: answer.status,
    messages: answer.messages,
    ...(answer.followUpPrompt === undefined ? {} : { followUpPrompt: answer.followUpPrompt }),
    details,
  };
}

export class GovernorService implements TurnReview {
  readonly #now: () => number;

  private constructor(private readonly deps: GovernorDeps) {
    this.#now = deps.now ?? Date.now;
  }

  static async create(deps: GovernorDeps): Promise<GovernorService> {
    await preloadValidators([ANSWER]);
    return new GovernorService(deps);
  }

  /** The governors whose principal and trust-level conditions select the task, in file order. */
  #selected(subject: ReviewSubject): GovernorConfig[] {
    return this.deps.policies.governors.filter(
      (g) =>
        (g.principals === undefined || g.principals.includes(subject.owner)) &&
        (g.trust_levels === undefined || (subject.trustLevel !== undefined && g.trust_levels.includes(subject.trustLevel))),
    );
  }

  reviews(subject: ReviewSubject): boolean {
    return this.#selected(subject).length > 0;
  }

  async review(subject: ReviewSubject, input: ReviewInput): Promise<ReviewVerdict | undefined> {
    // `changes` governors only review a turn that changed files (or whose diff could not be read: they say so).
    const changed = input.changes.length > 0 || input.changesError !== undefined;
    const governors = this.#selected(subject).filter((g) => (g.run_on ?? "changes") === "always" || changed);
    if (governors.length === 0) return undefined;
    input.started(governors.map((g) => g.id));
    const patch = patchText(input.changes);
    const results = await Promise.all(governors.map((g) => this.#run(g, subject, input, patch)));
    const followUp = this.#followUp(results, input);
    const summary = results.map(summaryLine);
    const entry = {
      phase: "post_run" as const,
      timestamp: new Date(this.#now()).toISOString(),
      summary,
      results,
      round: input.round,
      followUpSent: followUp !== undefined,
    };
    await this.deps.trail.feedback(subject.taskId, subject.owner, entry);
    for (const r of results) this.deps.metrics?.governorReviews.inc({ governor: r.governorId, status: r.status });
    if (followUp !== undefined) this.deps.metrics?.governorFollowUps.inc();
    return {
      round: input.round,
      status: worstStatus(results),
      governors: governors.map((g) => g.id),
      summary,
      ...(followUp === undefined ? {} : { followUp }),
    };
  }

  /** The follow-up prompt of the round: off, out of rounds, canceled, or no result asking for one → undefined. */
  #followUp(results: GovernorResult[], input: ReviewInput): string | undefined {
    const setting = this.deps.policies.followUp;
    if (setting === undefined || !setting.enabled || input.signal.aborted) return undefined;
    if (input.round > (setting.max_rounds ?? 1)) return undefined;
    const on: ReadonlySet<string> = new Set(setting.on ?? ["needs_attention", "rejected"]);
    const asking = results.filter((r) => r.followUpPrompt !== undefined && on.has(r.status));
    if (asking.length === 0) return undefined;
    if (asking.length === 1) return asking[0]!.followUpPrompt;
    return asking.map((r) => `[${r.governorId}] ${r.followUpPrompt}`).join("\n\n");
  }

  /** One governor, bounded by its timeout and the task's signal; never throws (a failure is its result). */
  async #run(governor: GovernorConfig, subject: ReviewSubject, input: ReviewInput, patch: string): Promise<GovernorResult> {
    const started = performance.now();
    if (input.changesError !== undefined) {
      return resultOf(governor, { details: {}, error: `OpenCode's diff of the turn could not be read (${input.changesError})` }, 0);
    }
    const timeoutMs = (governor.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS[governor.kind]) * 1000;
    const signal = AbortSignal.any([input.signal, AbortSignal.timeout(timeoutMs)]);
    const run: GovernorRun = { governor, subject, input, patch, timeoutMs, signal, deps: this.deps };
    let outcome: RunOutcome;
    try {
      outcome = governor.kind === "agent" ? await runAgentGovernor(run) : await runCommandGovernor(run);
    } catch (error) {
      outcome = { details: {}, error: error instanceof Error ? error.message : String(error) };
    }
    if (outcome.error !== undefined) this.deps.log.warn({ governor: governor.id, taskId: subject.taskId, err: outcome.error }, "governor gave no review");
    return resultOf(governor, outcome, performance.now() - started);
  }
}
