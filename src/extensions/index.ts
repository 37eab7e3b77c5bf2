// The handlers of every extension method (opencode.*, a2a.interrupt.*, tasks/provideInputAndContinue), by
// JSON-RPC method name, merged from the family modules. Each family satisfies its generated handler interface, so
// the families cannot overlap and together they handle every extension method of the contract.
import type { ExtensionHandlers } from "../operations/index.js";
import type { ExtensionDeps } from "./context.js";
import { handlers as discovery } from "./discovery.js";
import { handlers as interrupts } from "./interrupts.js";
import { handlers as messages } from "./messages.js";
import { handlers as sessions } from "./sessions/index.js";
import { handlers as subtasks } from "./subtasks.js";
import { handlers as workspace } from "./workspace.js";

export type { ExtensionDeps } from "./context.js";

export function extensionHandlers(deps: ExtensionDeps): ExtensionHandlers {
  return { ...sessions(deps), ...discovery(deps), ...workspace(deps), ...interrupts(deps), ...subtasks(deps), ...messages(deps) } satisfies ExtensionHandlers;
}
