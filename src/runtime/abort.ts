// Stopping a session's turn in OpenCode (cancel, a turn past its deadline, a task the store refused): best effort
// within A2A_CANCEL_ABORT_TIMEOUT_SECONDS, counted by outcome, never thrown.
import type { Routing } from "../bridge/directory.js";
import type { AbortOutcome } from "../observability/metrics.js";
import { UpstreamError } from "../upstream/errors.js";
import type { RuntimeOptions } from "./options.js";
import { errorText } from "./task-error.js";

export type AbortUpstream = (sessionId: string, routing: Routing) => Promise<AbortOutcome>;

export function upstreamAbort(opts: Pick<RuntimeOptions, "upstream" | "metrics" | "log" | "cancelAbortTimeoutMs">): AbortUpstream {
  return async (sessionId, routing) => {
    const m = opts.metrics;
    m.cancelAbortAttempts.inc();
    try {
      await opts.upstream.abort(sessionId, { ...routing, timeout: opts.cancelAbortTimeoutMs });
      m.cancelAbortSuccess.inc();
      return "success";
    } catch (error) {
      if (error instanceof UpstreamError && error.kind === "timeout") {
        m.cancelAbortTimeout.inc();
        return "timeout";
      }
      m.cancelAbortError.inc();
      opts.log.warn({ err: errorText(error), sessionId }, "upstream abort failed");
      return "error";
    }
  };
}
