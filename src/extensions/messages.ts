// Extension family: messages between OpenCode sessions (`opencode.messages.list_sessions`, `.send`, `.buffer`,
// `.get`; seed 002), served by the MessageService (src/messages). Declared `@conditional("A2A_ENABLE_MESSAGES")` (on
// by default). The request's directory (`metadata.opencode.directory` / workspace) routes the OpenCode calls;
// `list_sessions`'s `dir` names another directory unless A2A_MESSAGES_CURRENT_DIRECTORY_ONLY.
import type { MessagesHandlers } from "../../generated/types/methods.js";
import { resolveRouting, type Routing } from "../bridge/directory.js";
import type { Metadata } from "../protocol/model.js";
import { A2AError } from "../contract/errors.js";
import type { Call } from "../operations/index.js";
import { invalid } from "../protocol/codec/common.js";
import { withTrace } from "../tracing/index.js";
import type { ExtensionDeps } from "./context.js";

export function handlers(deps: ExtensionDeps) {
  const { messages, config } = deps;
  const routingOf = (metadata: unknown, c: Call): Routing => withTrace(resolveRouting(metadata as Metadata | undefined, deps.routing), c.trace);
  return {
    "opencode.messages.list_sessions": async (params, c) => {
      let routing = routingOf(params.metadata, c);
      if (params.dir !== undefined) {
        const current = "directory" in routing ? routing.directory : deps.routing.root;
        if (config.messagesCurrentDirectoryOnly && params.dir !== current) {
          throw invalid("dir", "must be the request's directory (A2A_MESSAGES_CURRENT_DIRECTORY_ONLY)");
        }
        try {
          routing = routingOf({ opencode: { directory: params.dir } }, c);
        } catch (error) {
          if (error instanceof A2AError && error.reason === "INVALID_PARAMS") throw invalid("dir", error.message.replace(/^directory /, ""));
          throw error;
        }
      }
      const active = config.messagesActiveOnly ? true : params.active;
      return messages.listSessions(c.principal, routing, active);
    },
    "opencode.messages.send": (params, c) => messages.send({ principal: c.principal }, params, routingOf(params.metadata, c)),
    "opencode.messages.buffer": (params, c) => messages.buffer({ principal: c.principal }, params, routingOf(params.metadata, c)),
    "opencode.messages.get": async (params, c) => messages.get(c.principal, params.id),
  } satisfies MessagesHandlers<Call>;
}
