// Handlers of the push notification config operations (push.set / get / list / delete), JSON-RPC and REST of both
// lines: decode with the caller's codec, run on the PushService, encode for the caller's line. REST passes the path
// parameters in `params` (0.3 `{id, configId}`, 1.0 `{taskId, id}`) and the body in `params.body`.
import { invalid } from "../protocol/codec/common.js";
import { codecFor } from "../protocol/codec/index.js";
import type { PushService } from "../push/service.js";
import type { Call, MethodHandler } from "./index.js";

const pathParams = (params: Record<string, unknown>): Record<string, unknown> => {
  const { body: _body, ...rest } = params;
  return rest;
};

export function pushHandlers(push: PushService): Record<string, MethodHandler> {
  const refOf = (params: Record<string, unknown>, call: Call) =>
    codecFor(call.line, call.transport).decodePushConfigRef(call.transport === "rest" ? pathParams(params) : params);
  return {
    "push.set": async (params, call) => {
      const codec = codecFor(call.line, call.transport);
      let input;
      if (call.transport === "rest") {
        // The task comes from the path: 0.3 `/v1/tasks/{id}/…`, 1.0 `/tasks/{taskId}/…`.
        const taskId = (call.line === "0.3" ? params.id : params.taskId) as string | undefined;
        input = codec.decodePushConfig(params.body ?? {}, taskId);
      } else {
        input = codec.decodePushConfig(params);
      }
      return codec.pushConfig(push.set(call.principal, call.line, input));
    },
    "push.get": async (params, call) => codecFor(call.line, call.transport).pushConfig(push.get(call.principal, refOf(params, call))),
    "push.list": async (params, call) => {
      const { taskId } = refOf(params, call);
      return codecFor(call.line, call.transport).pushConfigList(push.list(call.principal, taskId));
    },
    "push.delete": async (params, call) => {
      const ref = refOf(params, call);
      if (ref.id === undefined) {
        throw invalid(call.line === "0.3" ? (call.transport === "rest" ? "configId" : "pushNotificationConfigId") : "id", "is required (the config to delete)");
      }
      push.delete(call.principal, { taskId: ref.taskId, id: ref.id });
      return codecFor(call.line, call.transport).pushConfigDeleted();
    },
  };
}
