// Push config shapes, the other strategy of the codec (parts, src/protocol/codec/parts.ts, are the first). 0.3
// JSON-RPC nests the webhook as `{taskId, pushNotificationConfig}`; 0.3 HTTP+JSON makes it a resource `{name:
// "tasks/{t}/pushNotificationConfigs/{c}", pushNotificationConfig}`; both authenticate with `{schemes[],
// credentials}`. 1.0 is flat: `{id, taskId, url, token, authentication: {scheme, credentials}}`.
//
// Every request carrying a config (set, and message/send's configuration) was validated by the transport with the
// dialect's generated schema: decoding takes its types and required members as given and checks only what the
// schemas cannot say (an http(s) URL, a non-empty task id or scheme, resource names agreeing with each other).
import type { PushConfig } from "../model.js";
import { at, compact, has, httpUrl, invalid, reqStr, type Obj, type PushConfigInput, type PushFields } from "./common.js";

/** A webhook without its task, as a send configuration carries it. */
type Webhook = Omit<PushConfigInput, "taskId">;

export interface PushStrategy {
  readonly fields: PushFields;
  /** The get / delete / list member naming the task (the config's is `fields.configId`). */
  readonly taskKey: string;
  encode(config: PushConfig): Obj;
  decodeWebhook(o: Obj, path: string): Webhook;
  /** A set request; `taskId` (the REST path's task) wins over the body. */
  decodeSet(o: Obj, taskId?: string): PushConfigInput;
}

/** A webhook's decoder; `schemes` reads the dialect's authentication (0.3 lists schemes, 1.0 names one). */
function webhookDecoder(schemes: (auth: Obj, path: string) => string[]): PushStrategy["decodeWebhook"] {
  return (o, path) => {
    const auth = o.authentication as Obj | undefined;
    return compact({
      id: o.id as string | undefined,
      url: httpUrl(o, "url", path),
      token: o.token as string | undefined,
      authentication: auth && compact({ schemes: schemes(auth, at(path, "authentication")), credentials: auth.credentials as string | undefined }),
    });
  };
}

const decodeWebhook03 = webhookDecoder((auth) => auth.schemes as string[]);

const encodeWebhook03 = (c: Webhook): Obj =>
  compact({ id: c.id, url: c.url, token: c.token, authentication: c.authentication && compact({ ...c.authentication }) });

const schemesAt = (i: number): string => `authentication.schemes[${i}]`;

export const push03: PushStrategy = {
  fields: { config: "pushNotificationConfig", send: "configuration.pushNotificationConfig", configId: "pushNotificationConfigId", scheme: schemesAt },
  taskKey: "id",
  encode: (c) => ({ taskId: c.taskId, pushNotificationConfig: encodeWebhook03(c) }),
  decodeWebhook: decodeWebhook03,
  decodeSet(o, taskId) {
    const webhook = decodeWebhook03(o.pushNotificationConfig as Obj, "pushNotificationConfig");
    return { ...webhook, taskId: taskId ?? reqStr(o, "taskId", "") };
  },
};

const RESOURCE = /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]+)$/;

export const push03Rest: PushStrategy = {
  fields: { config: "pushNotificationConfig", send: "configuration.pushNotification", configId: "configId", scheme: schemesAt },
  taskKey: "id",
  encode: (c) => ({ name: `tasks/${c.taskId}/pushNotificationConfigs/${c.id}`, pushNotificationConfig: encodeWebhook03(c) }),
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
  taskKey: "taskId",
  /**
   * 1.0 authenticates a webhook with one scheme: the first of the stored `schemes`. With no scheme there is nothing
   * to put in an Authorization header, so `authentication` is left out.
   */
  encode(c) {
    const scheme = c.authentication?.schemes[0];
    const authentication = scheme === undefined ? undefined : compact({ scheme, credentials: c.authentication?.credentials });
    return compact({ id: c.id, taskId: c.taskId, url: c.url, token: c.token, authentication });
  },
  // `tenant` is ignored: a single-tenant gateway.
  decodeWebhook: decodeFlat,
  decodeSet: (o, taskId) => ({ ...decodeFlat(o, ""), taskId: taskId ?? reqStr(o, "taskId", "") }),
};
