// The restart sweep of the task runtime (./tasks.ts): tasks a previous process left running cannot be continued
// (their turn's events are gone), so at start they end as failed with GATEWAY_RESTARTED, told to their observers
// like any other state change.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { now, type Task } from "../protocol/model.js";
import type { SaveResult, TaskStore } from "../storage/tasks.js";
import { mergeOpencode } from "./lifecycle.js";

const MESSAGE = "The gateway restarted while this task was running; its turn cannot be continued.";

/** Fails every task stored in a non-terminal state; returns how many. */
export async function failOrphans(store: TaskStore, save: (task: Task) => Promise<SaveResult>, log: Pick<Logger, "warn">): Promise<number> {
  const error = { type: "GATEWAY_RESTARTED", message: MESSAGE };
  let failed = 0;
  for (const state of ["submitted", "working", "input-required", "auth-required"] as const) {
    for (;;) {
      const page = await store.list(undefined, { state, pageSize: 100 });
      let applied = 0;
      for (const task of page.tasks) {
        const status = {
          state: "failed" as const,
          timestamp: now(),
          message: { messageId: randomUUID(), role: "agent" as const, parts: [{ kind: "text" as const, text: MESSAGE }], taskId: task.id, contextId: task.contextId },
        };
        if ((await save({ ...task, status, metadata: mergeOpencode(task.metadata, { error }) })).applied) applied++;
      }
      failed += applied;
      if (applied === 0) break; // the page is empty (or nothing could change): done with this state
    }
  }
  if (failed > 0) log.warn({ failed }, "tasks left running by a previous process were marked failed");
  return failed;
}
