// Extension family: sessions — the `opencode.sessions.*` JSON-RPC methods (spec/extensions/opencode/sessions.tsp).
//
// Reads (status, list, get, children, todo, diff, messages.list, messages.get: reads.ts) and control methods
// (prompt_async, command, shell, fork, share, unshare, summarize, revert, unrevert: control.ts) over OpenCode's
// session routes, always through the generated SDK and the upstream wrapper; who may see and drive a session is
// decided in access.ts, what the results look like in projection.ts, and the params the schema cannot check are read
// in input.ts.
//
// Request and response bodies of these methods are never logged: this family logs nothing about them.
import type { SessionsHandlers } from "../../../generated/types/methods.js";
import type { Call } from "../../operations/index.js";
import type { ExtensionDeps } from "../context.js";
import { SessionAccess } from "./access.js";
import { controlHandlers } from "./control.js";
import { readHandlers } from "./reads.js";

export function handlers(deps: ExtensionDeps) {
  const access = new SessionAccess(deps);
  return { ...readHandlers(access), ...controlHandlers(access) } satisfies SessionsHandlers<Call>;
}
