// The method registry: one handler per JSON-RPC method of the generated catalog. REST routes reach the same
// handlers through their logical operation. Methods the catalog marks `not_implemented_until` answer
// NOT_IMPLEMENTED (their issue owns them); push-config methods answer PUSH_NOTIFICATION_NOT_SUPPORTED while the
// `pushNotifications` capability is off (A2A_PUSH_NOTIFICATIONS_ENABLED=false, or no task runtime). Each family of
// core operations satisfies its generated handler interface (generated/types/methods.ts).
import {
  FAMILIES,
  type ExtendedCardHandlers,
  type InteractiveInterruptHandlers,
  type InterruptRecoveryHandlers,
  type ProviderDiscoveryHandlers,
  type PushNotificationConfigsHandlers,
  type SessionsHandlers,
  type TasksHandlers,
  type WorkspaceControlHandlers,
} from "../../generated/types/methods.js";
import type { Catalog, MethodEntry, ProtocolLine } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";
import { operationQueries } from "../contract/query.js";
import type { PushService } from "../push/service.js";
import type { TaskRuntime } from "../runtime/tasks.js";
import type { Call, MethodHandler } from "./call.js";
import { pushHandlers } from "./push.js";
import { taskHandlers } from "./tasks.js";

export type { Call, MethodHandler } from "./call.js";

/** The handlers of every extension method (src/extensions), one generated interface per family. */
export type ExtensionHandlers = SessionsHandlers<Call> &
  ProviderDiscoveryHandlers<Call> &
  WorkspaceControlHandlers<Call> &
  InteractiveInterruptHandlers<Call> &
  InterruptRecoveryHandlers<Call>;

export interface OperationDeps {
  /** The extended card of `line`, or the dual card of both lines (`dual`). */
  extendedCard(shape: ProtocolLine | "dual"): Record<string, unknown>;
  /** The task runtime; without one (no OpenCode upstream) task operations answer UPSTREAM_UNREACHABLE. */
  tasks?: TaskRuntime;
  /** Push notification configs and delivery; without it the push-config methods answer PUSH_NOTIFICATION_NOT_SUPPORTED. */
  push?: PushService;
  /** Extension method handlers by JSON-RPC name (src/extensions). */
  extensions?: ExtensionHandlers;
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

const noUpstream: MethodHandler = async () => {
  throw new A2AError("UPSTREAM_UNREACHABLE", "This gateway runs without an OpenCode upstream", { detail: "no upstream configured" });
};

/** The same handler for every member of a family (a capability that is off answers all of them alike). */
function everyMember<K extends string>(members: readonly K[], handler: MethodHandler): Record<K, MethodHandler> {
  return Object.fromEntries(members.map((m) => [m, handler])) as Record<K, MethodHandler>;
}

type CoreHandlers = TasksHandlers<Call> & PushNotificationConfigsHandlers<Call> & ExtendedCardHandlers<Call>;

function coreHandlers(catalog: Catalog, deps: OperationDeps): CoreHandlers {
  const tasks: TasksHandlers<Call> =
    deps.tasks === undefined ? everyMember(FAMILIES.Tasks, noUpstream) : taskHandlers(deps.tasks, deps.push, operationQueries(catalog));
  const push: PushNotificationConfigsHandlers<Call> =
    deps.push === undefined ? everyMember(FAMILIES.PushNotificationConfigs, pushNotSupported) : pushHandlers(deps.push, operationQueries(catalog));
  const card = {
    "extended-card": async (_params, call) => deps.extendedCard(call.versionless === true ? "dual" : call.line),
  } satisfies ExtendedCardHandlers<Call>;
  return { ...tasks, ...push, ...card };
}

export function buildMethodRegistry(catalog: Catalog, deps: OperationDeps): Map<string, MethodHandler> {
  const byOperation: CoreHandlers = coreHandlers(catalog, deps);
  const extensions: Partial<Record<string, MethodHandler>> = { ...deps.extensions };
  const registry = new Map<string, MethodHandler>();
  for (const m of catalog.methods) {
    if (m.not_implemented_until) registry.set(m.name, notImplemented(m));
    else if (m.operation !== null) registry.set(m.name, byOperation[m.operation]);
    else if (m.surface === "extension") registry.set(m.name, extensions[m.name] ?? noUpstream);
  }
  return registry;
}

/**
 * Holds every method of `registry` until the restart sweep running now (`pending()`, asked once: call this after the
 * sweep started) settles, fulfilled or rejected; then the held calls run and the registry gets its original handlers
 * back, so later calls pay nothing. Only the first sweep holds calls: sweepInBackground's pending() stays undefined
 * after it, and a later sweep (a lease renewal on PostgreSQL) only fails tasks of gateways whose lease ended, which
 * callers may see running until then anyway; holding every method at each renewal would stall the gateway for that.
 */
export function gateMethods(registry: Map<string, MethodHandler>, pending: () => Promise<void> | undefined): void {
  const sweep = pending();
  if (sweep === undefined) return;
  const settled = sweep.then(
    () => undefined,
    () => undefined, // a failed sweep releases the calls too (sweepInBackground logs it)
  );
  const originals = new Map(registry);
  const gated = new Map<string, MethodHandler>();
  for (const [name, handler] of originals) gated.set(name, (params, call) => settled.then(() => handler(params, call)));
  for (const [name, handler] of gated) registry.set(name, handler);
  void settled.then(() => {
    for (const [name, handler] of originals) if (registry.get(name) === gated.get(name)) registry.set(name, handler);
  });
}

/** The JSON-RPC method of `line` that implements a logical operation (REST routes dispatch through it). */
export function methodForOperation(catalog: Catalog, line: ProtocolLine, operation: string): MethodEntry | undefined {
  return catalog.methods.find((m) => m.line === line && m.operation === operation);
}
