// Handlers of the push notification config operations (push.set / get / list / delete), JSON-RPC and REST of both
// lines: decode with the caller's codec, run on the PushService, encode for the caller's line. REST passes the path
// parameters in `params` (0.3 `{id, configId}`, 1.0 `{taskId, id}`), the query parameters beside them and the body in
// `params.body`. 1.0 lists page (`pageSize`, `pageToken` → `nextPageToken`); 0.3 lists answer every config at once.
import type { PushNotificationConfigsHandlers } from "../../generated/types/methods.js";
import { checkQuery, type QueryLookup } from "../contract/query.js";
import { invalid } from "../protocol/codec/common.js";
import { codecFor } from "../protocol/codec/index.js";
import type { PushService } from "../push/service.js";
import type { PushConfig } from "../protocol/model.js";
import type { Call } from "./call.js";

/**
 * One page of a task's configs (1.0): `pageSize` unset or 0 answers all that are left. The token is the position of
 * the next config in the task's list (in the order the configs were set), bound to the task: a config deleted between
 * two pages moves the later ones up by one.
 */
export function pushConfigPage(taskId: string, configs: PushConfig[], pageSize: unknown, pageToken: unknown): { configs: PushConfig[]; nextPageToken: string } {
  let start = 0;
  if (pageToken !== undefined && pageToken !== "") {
    const [task, offset] = decodeToken(pageToken);
    if (task !== taskId || !Number.isSafeInteger(offset) || (offset as number) < 0) throw invalid("pageToken", "is not a page token of this task's configs");
    start = offset as number;
  }
  const size = Number(pageSize ?? 0) || configs.length;
  const end = Math.min(configs.length, start + size);
  return { configs: configs.slice(start, end), nextPageToken: end < configs.length ? Buffer.from(JSON.stringify([taskId, end])).toString("base64url") : "" };
}

function decodeToken(token: unknown): unknown[] {
  try {
    const value: unknown = typeof token === "string" ? JSON.parse(Buffer.from(token, "base64url").toString("utf8")) : undefined;
    if (Array.isArray(value) && value.length === 2) return value;
  } catch {
    // not base64url JSON: refused below
  }
  return [];
}

/**
 * The task and config ids of a REST route's path, whichever path family the route has: `/v1/tasks/{id}/
 * pushNotificationConfigs/{configId}` (0.3) or `/tasks/{taskId}/pushNotificationConfigs/{id}` (root paths, which
 * speak the negotiated line: 0.3 too when the request says so or names no version).
 */
function restIds(params: Record<string, unknown>): { taskId?: unknown; configId?: unknown } {
  return "taskId" in params ? { taskId: params.taskId, configId: params.id } : { taskId: params.id, configId: params.configId };
}

export function pushHandlers(push: PushService, queries: QueryLookup) {
  const refOf = (params: Record<string, unknown>, call: Call, needsConfig = false) => {
    const codec = codecFor(call.line, call.transport);
    if (call.transport !== "rest") return codec.decodePushConfigRef(params, needsConfig);
    // Handed to the codec under the names its line's REST paths use.
    const { taskId, configId } = restIds(params);
    const named = call.line === "0.3" ? { id: taskId, configId } : { taskId, id: configId };
    return codec.decodePushConfigRef(Object.fromEntries(Object.entries(named).filter(([, v]) => v !== undefined)), needsConfig);
  };
  return {
    "push.set": async (params, call) => {
      const codec = codecFor(call.line, call.transport);
      const request = call.transport === "rest" ? (params.body ?? {}) : params;
      const input = codec.decodePushConfig(request, call.transport === "rest" ? (restIds(params).taskId as string | undefined) : undefined);
      const config = await push.set(call.principal, call.line, input, true, { field: codec.pushSetField(request), scheme: codec.pushFields.scheme }, call.trace);
      return codec.pushConfigSet(config, request);
    },
    "push.get": async (params, call) => codecFor(call.line, call.transport).pushConfig(await push.get(call.principal, refOf(params, call))),
    "push.list": async (params, call) => {
      const { taskId } = refOf(params, call);
      const codec = codecFor(call.line, call.transport);
      const configs = await push.list(call.principal, taskId);
      if (call.line !== "1.0") return codec.pushConfigList(configs);
      const schema = call.transport === "rest" ? queries(call.line, call.method.operation!) : undefined;
      if (schema !== undefined) checkQuery(schema, params);
      const page = pushConfigPage(taskId, configs, params.pageSize, params.pageToken);
      return codec.pushConfigList(page.configs, page.nextPageToken);
    },
    "push.delete": async (params, call) => {
      const ref = refOf(params, call, true);
      await push.delete(call.principal, { taskId: ref.taskId, id: ref.id! });
      return codecFor(call.line, call.transport).pushConfigDeleted();
    },
  } satisfies PushNotificationConfigsHandlers<Call>;
}
