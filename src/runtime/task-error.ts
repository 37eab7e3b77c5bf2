// The one coercion of anything thrown in the task runtime: the text a log line records, and the typed error a task
// fails with (typed errors as they are, anything else INTERNAL_ERROR).
import { A2AError } from "../contract/errors.js";
import { UpstreamError } from "../upstream/errors.js";

/** What was thrown, as text (a log line's `err`). */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Any failure as what a task can fail with. */
export function asTaskError(error: unknown): UpstreamError | A2AError {
  return error instanceof UpstreamError || error instanceof A2AError ? error : new A2AError("INTERNAL_ERROR", errorText(error));
}
