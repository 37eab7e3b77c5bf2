// Extension family: explicit sub-agent orchestration (`opencode.subtasks.run`, `.get`, `.cancel`), served by the
// SubtaskService (src/subtasks). Declared `@conditional("A2A_ENABLE_SUBTASKS")` (on by default), so the dispatcher
// answers METHOD_NOT_SUPPORTED before a handler runs when it is off.
import type { SubtasksHandlers } from "../../generated/types/methods.js";
import type { Call } from "../operations/index.js";
import type { ExtensionDeps } from "./context.js";

export function handlers(deps: ExtensionDeps) {
  const { subtasks } = deps;
  return {
    "opencode.subtasks.run": (params, c) => subtasks.run(c.principal, params, c.line, c.trace),
    "opencode.subtasks.get": async (params, c) => subtasks.get(c.principal, params.call_id),
    "opencode.subtasks.cancel": (params, c) => subtasks.cancel(c.principal, params.call_id, params.parallel_group),
  } satisfies SubtasksHandlers<Call>;
}
