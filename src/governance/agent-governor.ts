// An agent governor (spec: GovernorKind.agent): a new child session of the task's session (same directory, owned by
// the task's owner, allowed only to read), prompted with the governor's instructions, the task's final text and the
// turn's diff, and asked for OpenCode's structured output in the GovernorAnswer schema (OpenCode adds its
// StructuredOutput tool and makes the model call it). The prompt is OpenCode's synchronous one: it answers when the
// reviewer's turn is over. On timeout or cancel the child session is aborted upstream. The session is kept (the
// result names it), so the review can be read in OpenCode.
import * as sdk from "../../generated/opencode/sdk.gen.js";
import { readGeneratedJson } from "../contract/catalog.js";
import { isObject } from "../util/object.js";
import { abortReason, type GovernorRun, type RunOutcome } from "./governor-run.js";

/** The longest final text and diff put into the prompt (longer ones are cut, and the prompt says so). */
const FINAL_TEXT_MAX_CHARS = 20_000;
const DIFF_MAX_CHARS = 200_000;

/** The reviewer may look but not touch: every permission denied except reading and the structured answer. */
export const REVIEWER_PERMISSION = [
  { permission: "*", pattern: "*", action: "deny" as const },
  ...["read", "grep", "glob", "list", "StructuredOutput"].map((permission) => ({ permission, pattern: "*", action: "allow" as const })),
];

let answerSchema: Record<string, unknown> | undefined;

/** The GovernorAnswer JSON Schema as OpenCode's `format` takes it (the generated file without `$schema` / `$id`). */
function schema(): Record<string, unknown> {
  if (answerSchema === undefined) {
    const { $schema: _s, $id: _i, ...rest } = readGeneratedJson<Record<string, unknown>>("json-schema", "extensions", "GovernorAnswer.json");
    answerSchema = rest;
  }
  return answerSchema;
}

const cut = (text: string, max: number): { text: string; cut: boolean } => (text.length <= max ? { text, cut: false } : { text: text.slice(0, max), cut: true });

/** The reviewer's prompt: the governor's instructions, then what it reviews. */
export function reviewPrompt(run: Pick<GovernorRun, "governor" | "subject" | "input" | "patch">): string {
  const answer = cut(run.input.finalText, FINAL_TEXT_MAX_CHARS);
  const diff = cut(run.patch, DIFF_MAX_CHARS);
  return [
    run.governor.prompt ?? "",
    "",
    `You are reviewing the work of task ${run.subject.taskId} (OpenCode session ${run.subject.sessionId}), review round ${run.input.round}. ` +
      "You may read files of the project; you cannot change anything. Give your verdict as status `ok`, `needs_attention` or `rejected`, " +
      "your findings as messages, and a followUpPrompt when the agent should do more work.",
    "",
    `The agent's final answer${answer.cut ? ` (its first ${FINAL_TEXT_MAX_CHARS} characters)` : ""}:`,
    "<<<",
    answer.text,
    ">>>",
    "",
    run.patch === "" ? "The turn changed no files." : `The changes, as a unified diff${diff.cut ? ` (its first ${DIFF_MAX_CHARS} characters)` : ""}:`,
    ...(run.patch === "" ? [] : ["<<<", diff.text, ">>>"]),
  ].join("\n");
}

/** `provider/model` as OpenCode's prompt takes it. */
function modelOf(spec: string | undefined): { providerID: string; modelID: string } | undefined {
  if (spec === undefined) return undefined;
  const slash = spec.indexOf("/");
  return { providerID: spec.slice(0, slash), modelID: spec.slice(slash + 1) };
}

export async function runAgentGovernor(run: GovernorRun): Promise<RunOutcome> {
  const { governor, subject, deps } = run;
  const details: Record<string, unknown> = {};
  const routing = subject.routing;
  let sessionId: string;
  try {
    sessionId = await deps.sessions.createOwned(
      { id: subject.owner },
      {
        title: `Governor ${governor.id}: review of task ${subject.taskId} (round ${run.input.round})`,
        parentID: subject.sessionId,
        permission: REVIEWER_PERMISSION,
        ...(governor.agent === undefined ? {} : { agent: governor.agent }),
      },
      routing,
    );
  } catch (error) {
    return { details, error: run.signal.aborted ? abortReason(run) : `its session could not be created: ${error instanceof Error ? error.message : String(error)}` };
  }
  details.session_id = sessionId;
  const model = modelOf(governor.model);
  const body = {
    parts: [{ type: "text" as const, text: reviewPrompt(run) }],
    format: { type: "json_schema" as const, schema: schema() },
    ...(governor.agent === undefined ? {} : { agent: governor.agent }),
    ...(model === undefined ? {} : { model }),
  };
  let answer: unknown;
  try {
    answer = await deps.upstream.call("sessionPrompt", (c) => sdk.sessionPrompt({ ...c, path: { sessionID: sessionId }, body }), {
      ...routing,
      sessionId,
      signal: run.signal,
      timeout: false,
    });
  } catch (error) {
    if (run.signal.aborted) {
      // Stop the reviewer upstream too (best effort, outside the concurrency budget).
      await deps.upstream.abort(sessionId, { ...routing, budget: false }).catch(() => undefined);
      return { details, error: abortReason(run) };
    }
    return { details, error: `OpenCode did not run the review: ${error instanceof Error ? error.message : String(error)}` };
  }
  const info = isObject(answer) && isObject(answer.info) ? answer.info : {};
  if (isObject(info.error)) {
    const data = isObject(info.error.data) ? info.error.data : {};
    const message = typeof data.message === "string" ? data.message : "";
    return { details, error: `OpenCode's review ended with ${String(info.error.name)}${message === "" ? "" : `: ${message}`}` };
  }
  if (info.structured === undefined) return { details, error: "OpenCode's review gave no structured answer" };
  return { answer: info.structured, details };
}
