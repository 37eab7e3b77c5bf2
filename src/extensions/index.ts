// The handlers of every extension method (opencode.*, a2a.interrupt.*, tasks/provideInputAndContinue), by
// JSON-RPC method name, merged from the family modules.
import type { MethodHandler } from "../operations/index.js";
import type { ExtensionDeps } from "./context.js";
import { handlers as discovery } from "./discovery.js";
import { handlers as interrupts } from "./interrupts.js";
import { handlers as sessions } from "./sessions.js";
import { handlers as workspace } from "./workspace.js";

export type { ExtensionDeps } from "./context.js";

type Family = (deps: ExtensionDeps) => Record<string, MethodHandler>;

const families: Family[] = [sessions, discovery, workspace, interrupts];

export function extensionHandlers(deps: ExtensionDeps): Record<string, MethodHandler> {
  const all: Record<string, MethodHandler> = {};
  for (const family of families) {
    for (const [name, handler] of Object.entries(family(deps))) {
      if (all[name] !== undefined) throw new Error(`extension method ${name} is handled twice`);
      all[name] = handler;
    }
  }
  return all;
}
