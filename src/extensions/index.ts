// The handlers of every extension method (opencode.*, a2a.interrupt.*, tasks/provideInputAndContinue), by
// JSON-RPC method name, merged from the family modules.
import type { MethodHandler } from "../operations/index.js";
import type { ExtensionDeps } from "./context.js";

export type { ExtensionDeps } from "./context.js";

type Family = (deps: ExtensionDeps) => Record<string, MethodHandler>;

const families: Family[] = [];

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
