// The post-run review of a completed turn (the turn loop, ./turn.ts; RuntimeOptions.review, implemented by the
// governors of src/governance): asked when OpenCode ends a turn that completed, before the task completes. The task
// stays `working` while the governors run, with a status update when they start and one with their verdict; a
// follow-up they send goes into the same turn (the mapper reopened, the prompt in the task's history), and the turn
// goes on until it completes again and is reviewed again.
import { randomUUID } from "node:crypto";
import type { Routing } from "../bridge/directory.js";
import type { StatusOutput } from "../bridge/stream-mapper.js";
import { isTerminal, type Message, type Metadata } from "../protocol/model.js";
import type { TaskLifecycle } from "./lifecycle.js";
import type { ActiveTurn, LiveTask, PromptBody } from "./live-task.js";
import type { FileChange, ReviewSubject, RuntimeOptions } from "./options.js";
import { errorText } from "./task-error.js";
import type { TurnArtifacts } from "./turn-artifacts.js";

export interface TurnReviewDeps {
  opts: RuntimeOptions;
  lifecycle: TaskLifecycle;
  artifacts: TurnArtifacts;
  /** Applies a status update of the turn to its task and streams. */
  apply(live: LiveTask, out: StatusOutput): Promise<void>;
  /** Sends a prompt into the turn's session. */
  prompt(sessionId: string, routing: Routing, body: PromptBody, signal: AbortSignal): Promise<unknown>;
}

export class TurnReviews {
  constructor(private readonly deps: TurnReviewDeps) {}

  /**
   * The post-run review of a completed turn (RuntimeOptions.review): the task stays `working` while the governors
   * run, with a status update when they start and one with their verdict. When they send a follow-up, it goes into
   * the turn (the mapper reopened, the prompt in the task's history) and true is returned: the turn goes on and is
   * reviewed again when it completes. False: the turn ends as it is (no review, or nothing to follow up).
   */
  async run(live: LiveTask, turn: ActiveTurn, routing: Routing): Promise<boolean> {
    const review = this.deps.opts.review;
    const { mapper } = turn;
    const { lifecycle, opts } = this.deps;
    if (review === undefined || mapper.terminal?.state !== "completed" || isTerminal(live.state) || lifecycle.stopped) return false;
    const subject: ReviewSubject = live.turnRef(turn.sessionId, routing);
    if (!review.reviews(subject)) return false;
    let changes: FileChange[] | undefined;
    let changesError: string | undefined;
    try {
      changes = await this.deps.artifacts.changes(live, mapper, routing);
      turn.reviewedChanges = changes;
    } catch (error) {
      changesError = errorText(error);
      opts.log.warn({ err: changesError, taskId: live.id }, "could not read the turn's diff for its review");
    }
    if (isTerminal(live.state) || lifecycle.stopped) return false;
    const round = (turn.reviewRounds ?? 0) + 1;
    turn.reviewRounds = round;
    const status = (metadata: Metadata, text: string): Promise<void> => {
      const message: Message = { messageId: randomUUID(), role: "agent", parts: [{ kind: "text", text }], taskId: live.id, contextId: live.contextId };
      return this.deps.apply(live, mapper.statusEvent({ governance: { review: { phase: "post_run", round, ...metadata } } }, message, "governance"));
    };
    const verdict = await review.review(subject, {
      round,
      changes: changes ?? [],
      ...(changesError === undefined ? {} : { changesError }),
      finalText: mapper.text,
      signal: live.abort.signal,
      // A status update without an interrupt is applied before apply() returns; only a failure comes later.
      started: (governors) => {
        status({ state: "running", governors }, `Governors reviewing the turn (round ${round}): ${governors.join(", ")}`).catch((error: unknown) =>
          opts.log.error({ err: errorText(error), taskId: live.id }, "could not apply the review's status"),
        );
      },
    });
    if (verdict === undefined || isTerminal(live.state) || lifecycle.stopped) return false;
    const followUp = verdict.followUp !== undefined && mapper.reopen() ? verdict.followUp : undefined;
    await status(
      { state: "done", status: verdict.status, governors: verdict.governors, follow_up: followUp !== undefined },
      [`Governors (round ${round}): ${verdict.status}${followUp === undefined ? "" : "; their follow-up prompt runs next"}`, ...verdict.summary].join("\n"),
    );
    if (followUp === undefined) return false;
    // The follow-up runs in the task's session like a client's follow-up, as the turn's agent and model.
    turn.reviewedChanges = undefined;
    const ordinal = mapper.acceptFollowUp();
    if (ordinal === undefined) return false;
    const body: PromptBody = {
      parts: [{ type: "text", text: followUp }],
      ...(turn.model === undefined ? {} : { model: turn.model }),
      ...(turn.agent === undefined ? {} : { agent: turn.agent }),
    };
    turn.followUps[ordinal] = body;
    try {
      await this.deps.prompt(turn.sessionId, routing, body, live.abort.signal);
    } catch (error) {
      mapper.withdrawFollowUp(ordinal);
      throw error;
    }
    const prompt: Message = {
      messageId: randomUUID(),
      role: "user",
      parts: [{ kind: "text", text: followUp }],
      taskId: live.id,
      contextId: live.contextId,
      metadata: { opencode: { governance: { follow_up: { round, governors: verdict.governors } } } },
    };
    live.update({ history: [...(live.task.history ?? []), prompt] });
    lifecycle.persistSoon(live);
    return true;
  }
}
