// What a post-run governor runner (./agent-governor.ts, ./command-governor.ts) is given and gives back; the service
// that runs them is ./governors.ts.
import type { Logger } from "pino";
import type { GovernorConfig } from "../../generated/types/extensions.js";
import type { RoutingPolicy } from "../bridge/directory.js";
import type { SessionResolver } from "../bridge/sessions.js";
import type { Metrics } from "../observability/metrics.js";
import type { ReviewInput, ReviewSubject } from "../runtime/options.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { GovernancePolicySet } from "./policies.js";
import type { GovernanceTrail } from "./trail.js";

export interface GovernorDeps {
  policies: Pick<GovernancePolicySet, "governors" | "followUp">;
  trail: Pick<GovernanceTrail, "feedback">;
  upstream: UpstreamClient;
  sessions: Pick<SessionResolver, "createOwned">;
  routing: RoutingPolicy;
  metrics?: Metrics;
  log: Pick<Logger, "warn">;
  now?: () => number;
}

/** One governor's run: the governor, the task, the review input, and its time budget. */
export interface GovernorRun {
  governor: GovernorConfig;
  subject: ReviewSubject;
  input: ReviewInput;
  /** The turn's diff as unified patches (one per changed file). */
  patch: string;
  timeoutMs: number;
  /** Aborts when the budget is spent or the task is canceled. */
  signal: AbortSignal;
  deps: GovernorDeps;
}

/** A governor's answer as it arrived, with how the run went (`details`). */
export interface RunOutcome {
  answer?: unknown;
  details: Record<string, unknown>;
  /** Why there is no usable answer (the run failed, timed out or was canceled). */
  error?: string;
}

/** Why a run's signal aborted: the task was canceled, or the governor's time ran out. */
export function abortReason(run: Pick<GovernorRun, "input" | "timeoutMs">): string {
  return run.input.signal.aborted ? "the task was canceled" : `no answer within ${run.timeoutMs / 1000} s`;
}

/** The task's directory (its routing's, else the workspace root). */
export function directoryOf(run: Pick<GovernorRun, "subject" | "deps">): string {
  const routing = run.subject.routing;
  return "directory" in routing ? routing.directory : run.deps.routing.root;
}
