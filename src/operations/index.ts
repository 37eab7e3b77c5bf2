// The method registry: one handler per JSON-RPC method of the generated catalog. REST routes reach the same
// handlers through their logical operation. Methods the catalog marks `not_implemented_until` answer
// NOT_IMPLEMENTED (their issue owns them); push-config methods answer PUSH_NOTIFICATION_NOT_SUPPORTED while the
// `pushNotifications` capability is off (A2A_PUSH_NOTIFICATIONS_ENABLED=false, or no task runtime).
import type { Catalog, MethodEntry, ProtocolLine } from "../contract/catalog.js";
import type { MethodHandler } from "./call.js";
import { A2AError } from "../contract/errors.js";
import type { PushService } from "../push/service.js";
import type { TaskRuntime } from "../runtime/tasks.js";
import { pushHandlers } from "./push.js";
import { taskHandlers } from "./tasks.js";

export type { Call, MethodHandler } from "./call.js";

export interface OperationDeps {
  /** The extended card of `line`, or the dual card of both lines (`dual`). */
  extendedCard(shape: ProtocolLine | "dual"): Record<string, unknown>;
  /** The task runtime; without one (no OpenCode upstream) task operations answer UPSTREAM_UNREACHABLE. */
  tasks?: TaskRuntime;
  /** Push notification configs and delivery; without it the push-config methods answer PUSH_NOTIFICATION_NOT_SUPPORTED. */
  push?: PushService;
  /** Extension method handlers by JSON-RPC name (src/extensions). */
  extensions?: Record<string, MethodHandler>;
}

function notImplemented(m: MethodEntry): MethodHandler {
  return async () => {
    throw new A2AError("NOT_IMPLEMENTED", `${m.name} is declared in the contract but not implemented by this build yet`, {
      method: m.name,
      operation: m.operation ?? undefined,
    });
  };
}

const pushNotSupported: MethodHandler = async () => {
  throw new A2AError("PUSH_NOTIFICATION_NOT_SUPPORTED", "This agent does not deliver push notifications (capabilities.pushNotifications is false)");
};

/** Handlers for logical core operations that are implemented in this build. */
const noUpstream: MethodHandler = async () => {
  throw new A2AError("UPSTREAM_UNREACHABLE", "This gateway runs without an OpenCode upstream", { detail: "no upstream configured" });
};

function coreHandlers(deps: OperationDeps): Record<string, MethodHandler> {
  const tasks =
    deps.tasks === undefined
      ? Object.fromEntries(["send", "stream", "get", "list", "cancel", "subscribe"].map((op) => [op, noUpstream]))
      : taskHandlers(deps.tasks, deps.push);
  return {
    ...tasks,
    "extended-card": async (_params, call) => deps.extendedCard(call.versionless === true ? "dual" : call.line),
    ...(deps.push === undefined
      ? { "push.set": pushNotSupported, "push.get": pushNotSupported, "push.list": pushNotSupported, "push.delete": pushNotSupported }
      : pushHandlers(deps.push)),
  };
}

export function buildMethodRegistry(catalog: Catalog, deps: OperationDeps): Map<string, MethodHandler> {
  const byOperation = coreHandlers(deps);
  const registry = new Map<string, MethodHandler>();
  for (const m of catalog.methods) {
    if (m.not_implemented_until) registry.set(m.name, notImplemented(m));
    else if (m.operation && byOperation[m.operation]) registry.set(m.name, byOperation[m.operation]!);
    else if (m.surface !== "core") registry.set(m.name, deps.extensions?.[m.name] ?? noUpstream);
  }
  return registry;
}

/** The JSON-RPC method of `line` that implements a logical operation (REST routes dispatch through it). */
export function methodForOperation(catalog: Catalog, line: ProtocolLine, operation: string): MethodEntry | undefined {
  return catalog.methods.find((m) => m.line === line && m.operation === operation);
}
