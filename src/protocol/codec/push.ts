// Push config shapes, the other strategy of the codec (parts, src/protocol/codec/parts.ts, are the first). 0.3
// JSON-RPC nests the webhook as `{taskId, pushNotificationConfig}` (or seed 004's `{taskId, config}`, answered with
// `{id, status: "active", createdAt}`; get / delete / list also take seed 004's `{taskId, configId}`); 0.3 HTTP+JSON
// makes it a resource `{name: "tasks/{t}/pushNotificationConfigs/{c}", pushNotificationConfig}`; both authenticate
// with `{schemes[], credentials}`. 1.0 is flat: `{id, taskId, url, token, authentication: {scheme, credentials}}`.
// Every line's webhook carries seed 004's selection, quiet hours and payload format under the same names.
//
// Every request carrying a config (set, and message/send's configuration) was validated by the transport with the
// dialect's generated schema: decoding takes its types and required members as given and checks only what the
// schemas cannot say (an http(s) URL, a non-empty task id or scheme, resource names agreeing with each other).
import type { PushConfig } from "../model.js";
import { at, compact, has, httpUrl, invalid, optStr, reqStr, type Obj, type PushConfigInput, type PushConfigRef, type PushFields } from "./common.js";

/** A webhook without its task, as a send configuration carries it. */
type Webhook = Omit<PushConfigInput, "taskId">;

export interface PushStrategy {
  readonly fields: PushFields;
  encode(config: PushConfig): Obj;
  decodeWebhook(o: Obj, path: string): Webhook;
  /** A set request; `taskId` (the REST path's task) wins over the body. */
  decodeSet(o: Obj, taskId?: string): PushConfigInput;
  /** get / delete / list params (REST: the path parameters, under the names of the line's paths); `needsConfig`: delete. */
  decodeRef(o: Obj, needsConfig: boolean): PushConfigRef;
  /** The answer to a set request `o` (the shape of the request decides it where a line has two). */
  encodeSet(config: PushConfig, o: Obj): Obj;
  /** Where set request `o` carries the config's fields, for the errors that name them. */
  setField(o: Obj): string;
}

/** Seed 004's selection, quiet hours and payload format, as every line names them (validated by the schemas). */
const seedFields = (o: Obj) => ({
  // proto3: an empty repeated field is an unset one (every state change).
  enabledEvents: Array.isArray(o.enabledEvents) && o.enabledEvents.length > 0 ? (o.enabledEvents as PushConfig["enabledEvents"]) : undefined,
  quietHoursStart: (o.quietHoursStart as string | undefined) || undefined,
  quietHoursEnd: (o.quietHoursEnd as string | undefined) || undefined,
  quietHoursTimeZone: (o.quietHoursTimeZone as string | undefined) || undefined,
  payloadFormat: (o.payloadFormat as PushConfig["payloadFormat"]) || undefined,
});

const encodeSeedFields = (c: Webhook) => ({
  enabledEvents: c.enabledEvents && [...c.enabledEvents],
  quietHoursStart: c.quietHoursStart,
  quietHoursEnd: c.quietHoursEnd,
  quietHoursTimeZone: c.quietHoursTimeZone,
  payloadFormat: c.payloadFormat,
});

/** get / delete / list params naming the task by `taskKey` and the config by `configKey` (required for a delete). */
const refBy =
  (taskKey: string, configKey: string) =>
  (o: Obj, needsConfig: boolean): PushConfigRef => {
    const id = optStr(o, configKey, "");
    if (needsConfig && id === undefined) throw invalid(configKey, "is required (the config to delete)");
    return compact({ taskId: reqStr(o, taskKey, ""), id });
  };

/** A webhook's decoder; `schemes` reads the dialect's authentication (0.3 lists schemes, 1.0 names one). */
function webhookDecoder(schemes: (auth: Obj, path: string) => string[]): PushStrategy["decodeWebhook"] {
  return (o, path) => {
    const auth = o.authentication as Obj | undefined;
    return compact({
      id: o.id as string | undefined,
      url: httpUrl(o, "url", path),
      token: o.token as string | undefined,
      authentication: auth && compact({ schemes: schemes(auth, at(path, "authentication")), credentials: auth.credentials as string | undefined }),
      ...seedFields(o),
    });
  };
}

const decodeWebhook03 = webhookDecoder((auth) => auth.schemes as string[]);

const encodeWebhook03 = (c: Webhook): Obj =>
  compact({ id: c.id, url: c.url, token: c.token, authentication: c.authentication && compact({ ...c.authentication }), ...encodeSeedFields(c) });

const schemesAt = (i: number): string => `authentication.schemes[${i}]`;

/** Which of the two 0.3 JSON-RPC set shapes `o` is: the A2A `pushNotificationConfig` or seed 004's `config`. */
function setShape(o: Obj): "pushNotificationConfig" | "config" {
  if (has(o, "pushNotificationConfig") === has(o, "config")) {
    throw invalid(has(o, "config") ? "config" : "pushNotificationConfig", "exactly one of pushNotificationConfig (A2A) and config (seed 004) is required");
  }
  return has(o, "config") ? "config" : "pushNotificationConfig";
}

/** 0.3 JSON-RPC get / delete / list: the A2A `{id, pushNotificationConfigId}` or seed 004's `{taskId, configId}`, not mixed. */
function decodeRef03(o: Obj, needsConfig: boolean): PushConfigRef {
  const seed = has(o, "taskId");
  if (seed && has(o, "id")) throw invalid("taskId", "is seed 004's name of id: send one of the two");
  const [other, own] = seed ? ["pushNotificationConfigId", "configId"] : ["configId", "pushNotificationConfigId"];
  if (has(o, other)) throw invalid(other, `does not belong to the ${seed ? "seed 004 shape {taskId, configId}" : "A2A shape {id, pushNotificationConfigId}"}; use ${own}`);
  return refBy(seed ? "taskId" : "id", own)(o, needsConfig);
}

export const push03: PushStrategy = {
  fields: { config: "pushNotificationConfig", send: "configuration.pushNotificationConfig", configId: "pushNotificationConfigId", scheme: schemesAt },
  encode: (c) => ({ taskId: c.taskId, pushNotificationConfig: encodeWebhook03(c) }),
  decodeWebhook: decodeWebhook03,
  decodeSet(o, taskId) {
    const key = setShape(o);
    const webhook = decodeWebhook03(o[key] as Obj, key);
    return { ...webhook, taskId: taskId ?? reqStr(o, "taskId", "") };
  },
  decodeRef: decodeRef03,
  setField: setShape,
  encodeSet: (c, o) => (setShape(o) === "config" ? { id: c.id, status: "active", createdAt: c.createdAt } : push03.encode(c)),
};

const RESOURCE = /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]+)$/;

export const push03Rest: PushStrategy = {
  fields: { config: "pushNotificationConfig", send: "configuration.pushNotification", configId: "configId", scheme: schemesAt },
  encode: (c) => ({ name: `tasks/${c.taskId}/pushNotificationConfigs/${c.id}`, pushNotificationConfig: encodeWebhook03(c) }),
  decodeRef: refBy("id", "configId"),
  setField: () => push03Rest.fields.config,
  encodeSet: (c) => push03Rest.encode(c),
  decodeWebhook: decodeWebhook03,
  decodeSet(body, taskId) {
    let o = body;
    let path = "";
    let configId: string | undefined;
    // The whole proto CreateTaskPushNotificationConfigRequest `{parent, configId, config}`, or its `config` alone.
    if (has(o, "config") || has(o, "parent") || has(o, "configId")) {
      // The schema takes `{parent, pushNotificationConfig}` for the bare form with an unknown member.
      if (has(o, "pushNotificationConfig")) throw invalid("pushNotificationConfig", "must be inside config when the request is wrapped ({parent, configId, config})");
      const parent = o.parent as string | undefined;
      if (parent !== undefined && parent !== "") {
        const task = /^tasks\/([^/]+)$/.exec(parent)?.[1];
        if (task === undefined) throw invalid("parent", "must be tasks/{taskId}");
        if (taskId !== undefined && task !== taskId) throw invalid("parent", `names task ${task}, but the path names task ${taskId}`);
        taskId ??= task;
      }
      configId = (o.configId as string | undefined) || undefined;
      o = o.config as Obj;
      path = "config";
    }
    const name = o.name as string | undefined;
    const parsed = name ? RESOURCE.exec(name) : null;
    if (name && !parsed) throw invalid(at(path, "name"), "must be tasks/{taskId}/pushNotificationConfigs/{configId}");
    if (parsed && taskId !== undefined && parsed[1] !== taskId) throw invalid(at(path, "name"), `names task ${parsed[1]}, but the path names task ${taskId}`);
    const webhookPath = at(path, "pushNotificationConfig");
    const webhook = decodeWebhook03(o.pushNotificationConfig as Obj, webhookPath);
    const ids = [
      [at(webhookPath, "id"), webhook.id],
      [at(path, "name"), parsed?.[2]],
      ["configId", configId],
    ].filter((e): e is [string, string] => e[1] !== undefined);
    const clash = ids.find(([, id]) => id !== ids[0]![1]);
    if (clash) throw invalid(clash[0], `names config ${clash[1]}, but ${ids[0]![0]} names config ${ids[0]![1]}`);
    const task = taskId ?? parsed?.[1];
    if (!task) throw invalid(at(path, "name"), "is required (it names the task)");
    return compact({ ...webhook, id: ids[0]?.[1], taskId: task });
  },
};

const decodeFlat = webhookDecoder((auth, path) => [reqStr(auth, "scheme", path)]);

export const push10: PushStrategy = {
  fields: { config: "", send: "configuration.taskPushNotificationConfig", configId: "id", scheme: () => "authentication.scheme" },
  /**
   * 1.0 authenticates a webhook with one scheme: the first of the stored `schemes`. With no scheme there is nothing
   * to put in an Authorization header, so `authentication` is left out.
   */
  encode(c) {
    const scheme = c.authentication?.schemes[0];
    const authentication = scheme === undefined ? undefined : compact({ scheme, credentials: c.authentication?.credentials });
    return compact({ id: c.id, taskId: c.taskId, url: c.url, token: c.token, authentication, ...encodeSeedFields(c) });
  },
  decodeRef: refBy("taskId", "id"),
  setField: () => push10.fields.config,
  encodeSet: (c) => push10.encode(c),
  // `tenant` is ignored: a single-tenant gateway.
  decodeWebhook: decodeFlat,
  decodeSet: (o, taskId) => ({ ...decodeFlat(o, ""), taskId: taskId ?? reqStr(o, "taskId", "") }),
};
