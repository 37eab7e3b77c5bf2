// Handlers of the push notification config operations (push.set / get / list / delete), JSON-RPC and REST of both
// lines: decode with the caller's codec, run on the PushService, encode for the caller's line. REST passes the path
// parameters in `params` (0.3 `{id, configId}`, 1.0 `{taskId, id}`) and the body in `params.body`. The query is not
// read: push.list answers every config at once, so the pageSize and pageToken its 1.0 route declares are not checked
// either (refusing a malformed one would turn an answer that succeeds today into an error).
import type { PushNotificationConfigsHandlers } from "../../generated/types/methods.js";
import { invalid } from "../protocol/codec/common.js";
import { codecFor } from "../protocol/codec/index.js";
import type { PushService } from "../push/service.js";
import type { Call } from "./call.js";

/**
 * The task and config ids of a REST route's path, whichever path family the route has: `/v1/tasks/{id}/
 * pushNotificationConfigs/{configId}` (0.3) or `/tasks/{taskId}/pushNotificationConfigs/{id}` (root paths, which
 * speak the negotiated line: 0.3 too when the request says so or names no version).
 */
function restIds(params: Record<string, unknown>): { taskId?: unknown; configId?: unknown } {
  return "taskId" in params ? { taskId: params.taskId, configId: params.id } : { taskId: params.id, configId: params.configId };
}

export function pushHandlers(push: PushService) {
  const refOf = (params: Record<string, unknown>, call: Call) => {
    const codec = codecFor(call.line, call.transport);
    if (call.transport !== "rest") return codec.decodePushConfigRef(params);
    // Handed to the codec under the names its line's REST paths use.
    const { taskId, configId } = restIds(params);
    const named = call.line === "0.3" ? { id: taskId, configId } : { taskId, id: configId };
    return codec.decodePushConfigRef(Object.fromEntries(Object.entries(named).filter(([, v]) => v !== undefined)));
  };
  return {
    "push.set": async (params, call) => {
      const codec = codecFor(call.line, call.transport);
      const input =
        call.transport === "rest"
          ? codec.decodePushConfig(params.body ?? {}, restIds(params).taskId as string | undefined)
          : codec.decodePushConfig(params);
      return codec.pushConfig(push.set(call.principal, call.line, input, true, { field: codec.pushFields.config, scheme: codec.pushFields.scheme }, call.trace));
    },
    "push.get": async (params, call) => codecFor(call.line, call.transport).pushConfig(push.get(call.principal, refOf(params, call))),
    "push.list": async (params, call) => {
      const { taskId } = refOf(params, call);
      return codecFor(call.line, call.transport).pushConfigList(push.list(call.principal, taskId));
    },
    "push.delete": async (params, call) => {
      const codec = codecFor(call.line, call.transport);
      const ref = refOf(params, call);
      if (ref.id === undefined) throw invalid(codec.pushFields.configId, "is required (the config to delete)");
      push.delete(call.principal, { taskId: ref.taskId, id: ref.id });
      return codec.pushConfigDeleted();
    },
  } satisfies PushNotificationConfigsHandlers<Call>;
}
