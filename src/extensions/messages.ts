// Extension family: messages between OpenCode sessions (`opencode.messages.list_sessions`, `.send`, `.buffer`,
// `.get`; seed 002), served by the MessageService (src/messages). Declared `@conditional("A2A_ENABLE_MESSAGES")` (on
// by default). The request's directory (`metadata.opencode.directory` / workspace) routes the OpenCode calls;
// `list_sessions`'s `dir` names another directory unless A2A_MESSAGES_CURRENT_DIRECTORY_ONLY.
import type { MessagesHandlers } from "../../generated/types/methods.js";
import { resolveRouting, type Routing } from "../bridge/directory.js";
import type { Metadata } from "../protocol/model.js";
import type { Call } from "../operations/index.js";
import { withTrace } from "../tracing/index.js";
import type { ExtensionDeps } from "./context.js";

export function handlers(deps: ExtensionDeps) {
  const { messages } = deps;
  const routingOf = (metadata: unknown, c: Call): Routing => withTrace(resolveRouting(metadata as Metadata | undefined, deps.routing), c.trace);
  return {
    "opencode.messages.list_sessions": (params, c) =>
      messages.listSessions(c.principal, routingOf(params.metadata, c), params, (dir) => routingOf({ opencode: { directory: dir } }, c)),
    "opencode.messages.send": (params, c) => messages.send({ principal: c.principal }, params, routingOf(params.metadata, c)),
    "opencode.messages.buffer": (params, c) => messages.buffer({ principal: c.principal }, params, routingOf(params.metadata, c)),
    "opencode.messages.get": async (params, c) => messages.get(c.principal, params.id),
  } satisfies MessagesHandlers<Call>;
}
