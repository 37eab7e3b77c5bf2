// The restart sweep of the task runtime (./tasks.ts): tasks a previous process (or, on PostgreSQL, a gateway instance
// whose lease ran out) left running cannot be continued (their turn's events are gone), so they end as failed with
// GATEWAY_RESTARTED, told to their observers like any other state change.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { isTerminal, now, type Task } from "../protocol/model.js";
import type { OrphanScope, SaveResult, TaskStore } from "../storage/tasks.js";
import { mergeOpencode } from "./lifecycle.js";
import type { LiveTask } from "./live-task.js";

const RESTARTED = "The gateway restarted while this task was running; its turn cannot be continued.";
const LOST = "The gateway instance running this task stopped or restarted (its lease ended); its turn cannot be continued.";

/**
 * Fails every task stored in a non-terminal state that no live instance runs (`scope`; undefined: every one); returns
 * how many. A task that ended meanwhile is left as it is (first terminal state wins).
 */
export async function failOrphans(store: TaskStore, save: (task: Task) => Promise<SaveResult>, log: Pick<Logger, "warn">, scope?: OrphanScope): Promise<number> {
  const message = scope === undefined ? RESTARTED : LOST;
  const error = { type: "GATEWAY_RESTARTED", message };
  let failed = 0;
  for (;;) {
    let applied = 0;
    for (const task of await store.orphans(scope, 100)) {
      const status = {
        state: "failed" as const,
        timestamp: now(),
        message: { messageId: randomUUID(), role: "agent" as const, parts: [{ kind: "text" as const, text: message }], taskId: task.id, contextId: task.contextId },
      };
      if ((await save({ ...task, status, metadata: mergeOpencode(task.metadata, { error }) })).applied) applied++;
      // SQLite answers at once: without this the sweep would hold the event loop (and every request) until its end.
      await new Promise((resolve) => setImmediate(resolve));
    }
    failed += applied;
    if (applied === 0) break; // none left (or none could change): done
  }
  if (failed > 0) log.warn({ failed }, scope === undefined ? "tasks left running by a previous process were marked failed" : "tasks of gateway instances that stopped were marked failed");
  return failed;
}

/**
 * The restart sweep in the background: the first call of the returned `sweep` (the cluster's start) starts `fail` and
 * returns at once, so the gateway serves its card, health and docs without waiting for it; `pending()` is that
 * sweep's promise until it ends (the method registry holds calls until then, see gateMethods), then undefined. A
 * failed first sweep is logged and releases the calls (on PostgreSQL the next lease renewal sweeps again). Later
 * calls (lease renewals) run after the first one and are awaited.
 */
export function sweepInBackground(fail: (scope?: OrphanScope) => Promise<number>, log: Pick<Logger, "error">): { sweep: (scope?: OrphanScope) => Promise<void>; pending: () => Promise<void> | undefined } {
  let first: Promise<void> | undefined;
  let done = false;
  return {
    sweep: async (scope) => {
      if (first === undefined) {
        first = fail(scope).then(
          () => void (done = true),
          (error: unknown) => {
            done = true;
            log.error({ err: error instanceof Error ? error.message : String(error) }, "the restart sweep failed; tasks left running by a previous process stay as they are");
          },
        );
        return;
      }
      await first;
      await fail(scope);
    },
    pending: () => (done ? undefined : first),
  };
}

/** Every unfinished turn in progress upstream is lost (`lose`); returns how many. */
export function loseTurns(tasks: Iterable<LiveTask>, lose: (live: LiveTask) => void): number {
  let lost = 0;
  for (const live of [...tasks]) {
    if (isTerminal(live.state) || live.sessionId === undefined) continue;
    lose(live);
    lost++;
  }
  return lost;
}

/** Shutdown deadline: every unfinished task's waiting clients get its current state (LiveTask.release); how many. */
export function releaseAll(tasks: Iterable<LiveTask>): number {
  let released = 0;
  for (const live of tasks) {
    if (isTerminal(live.state)) continue;
    released++;
    live.release();
  }
  return released;
}
