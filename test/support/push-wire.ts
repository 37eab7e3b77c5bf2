// Push notification test helpers (test/integration/push*.test.ts): a webhook receiver of their own (node:http on
// 127.0.0.1), push configs rendered in each mode's wire shape, the config methods of both lines and transports, and
// the checks of an A2A notification body.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { expectValid } from "./contract.js";
import { call, rpc, TEST_TOKEN } from "./gateway.js";
import { expectOk, METHODS, restPrefix, schemasOf, sendParams, stateOf, taskOfSend, TERMINAL, until, userMessage, versionHeader, type Line, type Mode, type Reply } from "./task-wire.js";
import type { TaskGateway } from "./tasks.js";
import { text, tool } from "../../tools/upstream/script.js";
import type { StubUpstream } from "../../tools/upstream/stub.js";

export type Obj = Record<string, any>;
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** How long "nothing more arrives" is watched for (the retry delays of these gateways are at most 200 ms). */
export const QUIET_MS = 600;

// ---- the webhook receiver -----------------------------------------------------------------------------------------

export interface Hit {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}
/** A status, optionally with Retry-After, optionally answered only after `delayMs` (to outlast the gateway's timeout). */
export type Answer = number | { status: number; retryAfter?: string; delayMs?: number };

export class Receiver {
  readonly hits: Hit[] = [];
  readonly #scripts = new Map<string, Answer[]>();
  readonly #then = new Map<string, Answer>();

  private constructor(
    readonly server: http.Server,
    readonly port: number,
  ) {}

  static async start(port = 0): Promise<Receiver> {
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    const rx = new Receiver(server, (server.address() as AddressInfo).port);
    server.on("request", (req, res) => rx.#handle(req, res));
    return rx;
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const p = req.url ?? "/";
      this.hits.push({ method: req.method ?? "", path: p, headers: req.headers, text: raw, body });
      const answer = this.#scripts.get(p)?.shift() ?? this.#then.get(p) ?? 200;
      const { status, retryAfter, delayMs } = typeof answer === "number" ? { status: answer, retryAfter: undefined, delayMs: undefined } : answer;
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(status, { "content-type": "text/plain", ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }) });
        res.end(status < 300 ? "ok" : "no");
      };
      if (delayMs === undefined) reply();
      else setTimeout(reply, delayMs).unref();
    });
  }

  /** A fresh path on this receiver. */
  path(label = "hook"): string {
    return `/${label}/${randomUUID()}`;
  }

  url(p: string): string {
    return `http://127.0.0.1:${this.port}${p}`;
  }

  /** `p` answers `answers` in order, then `then` (default 200) for ever. */
  answer(p: string, answers: Answer[], then: Answer = 200): void {
    this.#scripts.set(p, [...answers]);
    this.#then.set(p, then);
  }

  on(p: string): Hit[] {
    return this.hits.filter((h) => h.path === p);
  }

  /** Waits (bounded) until `p` got at least `n` POSTs; returns them all. */
  async waitFor(p: string, n: number, ms = 5000): Promise<Hit[]> {
    return until(`${n} notification(s) at ${p} (got ${this.on(p).length})`, () => (this.on(p).length >= n ? this.on(p) : undefined), ms);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}


/** Retries are quick here: polling stays short and "no more POSTs" is a short watch. */
export const QUICK = {
  A2A_PUSH_ALLOW_PRIVATE_NETWORKS: "true",
  A2A_PUSH_RETRY_INITIAL_SECONDS: "0.05",
  A2A_PUSH_RETRY_MAX_SECONDS: "0.2",
  A2A_PUSH_TIMEOUT_SECONDS: "2",
  A2A_RATE_LIMIT_MAX_REQUESTS: "0",
  A2A_RATE_LIMIT_MAX_STREAMS: "0",
};


export type Who = Record<string, string>;
export const ADMIN: Who = { authorization: `Bearer ${TEST_TOKEN}` };
export const as = (c: { secret: string }): Who => ({ authorization: `Bearer ${c.secret}` });

// ---- wire helpers -------------------------------------------------------------------------------------------------

export const PUSH_METHODS = {
  "0.3": { set: "tasks/pushNotificationConfig/set", get: "tasks/pushNotificationConfig/get", list: "tasks/pushNotificationConfig/list", delete: "tasks/pushNotificationConfig/delete" },
  "1.0": { set: "CreateTaskPushNotificationConfig", get: "GetTaskPushNotificationConfig", list: "ListTaskPushNotificationConfigs", delete: "DeleteTaskPushNotificationConfig" },
} as const;

/** A config as a test writes it; rendered in each mode's wire shape. */
export interface Cfg {
  id?: string;
  url?: string;
  token?: string;
  auth?: { scheme: string; credentials?: string };
  /** Seed 004's fields (enabledEvents, quietHours*, payloadFormat), the same names on every line; anything else too. */
  seed?: Obj;
}

/** The PushNotificationConfig object (0.3 nested one, 1.0 the flat fields without taskId). */
export function wireCfg(line: Line, c: Cfg): Obj {
  const out: Obj = {};
  if (c.id !== undefined) out.id = c.id;
  if (c.url !== undefined) out.url = c.url;
  if (c.token !== undefined) out.token = c.token;
  if (c.auth !== undefined) {
    out.authentication =
      line === "0.3"
        ? { schemes: [c.auth.scheme], ...(c.auth.credentials === undefined ? {} : { credentials: c.auth.credentials }) }
        : { scheme: c.auth.scheme, ...(c.auth.credentials === undefined ? {} : { credentials: c.auth.credentials }) };
  }
  return { ...out, ...c.seed };
}

let seq = 0;
export async function jsonrpc(url: string, m: Mode, method: string, params: unknown, who: Who = ADMIN): Promise<Reply> {
  const rpcId = ++seq;
  return { ...(await rpc(url, { jsonrpc: "2.0", id: rpcId, method, params }, { ...versionHeader(m), ...who })), rpcId };
}
export async function rest(url: string, m: Mode, method: string, p: string, body?: unknown, who: Who = ADMIN): Promise<Reply> {
  return { ...(await call(url, p, { method, headers: { ...versionHeader(m), ...who }, ...(body === undefined ? {} : { body }) })), rpcId: 0 };
}
export const configsPath = (m: Mode, taskId: string, id?: string) =>
  `${restPrefix(m)}/tasks/${encodeURIComponent(taskId)}/pushNotificationConfigs${id === undefined ? "" : `/${encodeURIComponent(id)}`}`;

export function pushSet(url: string, m: Mode, taskId: string, c: Cfg, who?: Who): Promise<Reply> {
  if (m.transport === "jsonrpc") {
    const params = m.line === "0.3" ? { taskId, pushNotificationConfig: wireCfg("0.3", c) } : { taskId, ...wireCfg("1.0", c) };
    return jsonrpc(url, m, PUSH_METHODS[m.line].set, params, who);
  }
  const body = m.line === "0.3" ? { pushNotificationConfig: wireCfg("0.3", c) } : wireCfg("1.0", c);
  return rest(url, m, "POST", configsPath(m, taskId), body, who);
}
export function pushGet(url: string, m: Mode, taskId: string, id: string, who?: Who): Promise<Reply> {
  if (m.transport === "jsonrpc") return jsonrpc(url, m, PUSH_METHODS[m.line].get, m.line === "0.3" ? { id: taskId, pushNotificationConfigId: id } : { taskId, id }, who);
  return rest(url, m, "GET", configsPath(m, taskId, id), undefined, who);
}
export function pushList(url: string, m: Mode, taskId: string, who?: Who): Promise<Reply> {
  if (m.transport === "jsonrpc") return jsonrpc(url, m, PUSH_METHODS[m.line].list, m.line === "0.3" ? { id: taskId } : { taskId }, who);
  return rest(url, m, "GET", configsPath(m, taskId), undefined, who);
}
export function pushDelete(url: string, m: Mode, taskId: string, id: string, who?: Who): Promise<Reply> {
  if (m.transport === "jsonrpc") return jsonrpc(url, m, PUSH_METHODS[m.line].delete, m.line === "0.3" ? { id: taskId, pushNotificationConfigId: id } : { taskId, id }, who);
  return rest(url, m, "DELETE", configsPath(m, taskId, id), undefined, who);
}

/** A successful answer (JSON-RPC envelope or REST 2xx); returns the result. */
export async function ok(m: Mode, res: Reply): Promise<any> {
  if (m.transport === "jsonrpc") {
    expect(res.status, res.text).toBe(200);
    expect(res.body?.error, res.text).toBeUndefined();
    expect(res.body.id).toBe(res.rpcId);
    expect("result" in res.body, res.text).toBe(true);
    await expectValid("common/JsonRpcSuccessResponse", res.body);
    return res.body.result;
  }
  expect(res.status, res.text).toBeGreaterThanOrEqual(200);
  expect(res.status, res.text).toBeLessThan(300);
  return res.body;
}

/** Seed 004's fields of a config object as answered (absent ones left out). */
const SEED_FIELDS = ["enabledEvents", "quietHoursStart", "quietHoursEnd", "quietHoursTimeZone", "payloadFormat"];
const seedOf = (c: Obj): Obj => Object.fromEntries(SEED_FIELDS.filter((k) => c[k] !== undefined).map((k) => [k, c[k]]));

/** A flattened config answer. */
export interface FlatConfig {
  taskId: string;
  id: string;
  url: string;
  token?: string;
  scheme?: string;
  credentials?: string;
  /** Seed 004's fields, as answered. */
  seed: Obj;
}

/** A config answer checked against the mode's schema, flattened to one shape for the assertions. */
export async function configOf(m: Mode, result: any): Promise<FlatConfig> {
  await expectValid(schemasOf(m).pushConfig, result);
  if (m.line === "1.0") {
    const { taskId, id, url, token } = result;
    return { taskId, id, url, token, scheme: result.authentication?.scheme, credentials: result.authentication?.credentials, seed: seedOf(result) };
  }
  const c = result.pushNotificationConfig;
  let taskId: string = result.taskId;
  if (m.transport === "rest") {
    const named = /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]+)$/.exec(result.name);
    expect(named, `resource name ${result.name}`).not.toBeNull();
    taskId = named![1]!;
    expect(named![2]).toBe(c.id);
  }
  return { taskId, id: c.id, url: c.url, token: c.token, scheme: c.authentication?.schemes?.[0], credentials: c.authentication?.credentials, seed: seedOf(c) };
}

/** A list answer checked against the mode's schema; its configs flattened. */
export async function configsOf(m: Mode, result: any): Promise<FlatConfig[]> {
  let items: any[];
  if (m.line === "0.3" && m.transport === "jsonrpc") {
    expect(Array.isArray(result), JSON.stringify(result)).toBe(true);
    items = result;
  } else {
    await expectValid(schemasOf(m).pushConfigList, result);
    expect(result.nextPageToken).toBe("");
    items = result.configs;
  }
  const out = [];
  for (const item of items) out.push(await configOf(m, item));
  return out;
}

/** What a delete answers: 0.3 JSON-RPC `null`, otherwise `{}` (google.protobuf.Empty). */
export async function expectDeleted(m: Mode, res: Reply): Promise<void> {
  const result = await ok(m, res);
  if (m.line === "0.3" && m.transport === "jsonrpc") expect(result).toBeNull();
  else expect(result).toEqual({});
  if (m.line === "1.0") await expectValid("v1_0/Empty", result);
}

/** Where a config given with a message sits in the mode's send configuration. */
export const sendField = (m: Mode): string => (m.line === "1.0" ? "taskPushNotificationConfig" : m.transport === "rest" ? "pushNotification" : "pushNotificationConfig");
/** The field name a config-method error names for `key` (0.3 nests the config, 1.0 is flat). */
export const setFieldName = (m: Mode, key: string): string => (m.line === "0.3" ? `pushNotificationConfig.${key}` : key);
export const sendFieldName = (m: Mode, key: string): string => `configuration.${sendField(m)}.${key}`;

export function withPush(m: Mode, params: Obj, c: Cfg): Obj {
  // proto3: a 0.3 REST configuration without `blocking` is non-blocking; a send here is blocking unless it says not.
  const blocking = m.line === "0.3" && m.transport === "rest" && !("blocking" in ((params.configuration as Obj | undefined) ?? {})) ? { blocking: true } : {};
  return { ...params, configuration: { ...blocking, ...(params.configuration ?? {}), [sendField(m)]: wireCfg(m.line, c) } };
}

export async function sendMsg(url: string, m: Mode, params: Obj, who: Who = ADMIN): Promise<Reply> {
  if (m.transport === "jsonrpc") return jsonrpc(url, m, METHODS[m.line].send, params, who);
  return rest(url, m, "POST", `${restPrefix(m)}/message:send`, params, who);
}
export async function sendTask(url: string, m: Mode, params: Obj, who: Who = ADMIN): Promise<any> {
  const result = await expectOk(m, await sendMsg(url, m, params, who), "send");
  const task = taskOfSend(m, result);
  expect(task, JSON.stringify(result)).toBeDefined();
  return task;
}

/** A completed task (blocking send, no config). */
export async function completedTask(g: TaskGateway, m: Mode, who: Who = ADMIN): Promise<any> {
  g.stub.script(text(`done (${m.name})`));
  const task = await sendTask(g.url, m, sendParams(m, userMessage(m, `finish quickly (${m.name})`)), who);
  expect(stateOf(task)).toBe("completed");
  return task;
}

/** A fresh OpenCode session with its own scripted replies, named in the send's metadata. */
export async function scriptedSession(stub: StubUpstream, ...replies: Parameters<StubUpstream["script"]>): Promise<Obj> {
  const res = await fetch(`${stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "push" }) });
  const session = (await res.json()) as { id: string };
  stub.scriptFor(session.id, ...replies);
  return { shared: { session: { id: session.id } } };
}
export const askColor = () => tool("question", { questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }] });

/** Metrics of a gateway: `value(name, labels?)`, 0 for a labelled series not yet emitted. */
export async function metrics(url: string): Promise<(name: string, labels?: string) => number> {
  const res = await call(url, "/metrics");
  expect(res.status).toBe(200);
  return (name, labels) => {
    const key = labels === undefined ? name : `${name}{${labels}}`;
    const line = res.text.split("\n").find((l) => l.startsWith(`${key} `));
    if (line === undefined) {
      expect(labels, `${name} in /metrics`).toBeDefined();
      return 0;
    }
    return Number(line.split(" ").at(-1));
  };
}
export const pending = async (url: string) => (await metrics(url))("a2a_push_outbox_pending");
export const attempts = async (url: string, outcome: string) => (await metrics(url))("a2a_push_delivery_attempts_total", `outcome="${outcome}"`);
export const finished = async (url: string, outcome: string) => (await metrics(url))("a2a_push_notifications_finished_total", `outcome="${outcome}"`);

// ---- notification bodies ------------------------------------------------------------------------------------------

export const wireState = (line: Line, state: string) => (line === "0.3" ? state : `TASK_STATE_${state.toUpperCase().replace(/-/g, "_")}`);

/**
 * One webhook POST of `line` carrying `state` for `taskId`: method, Content-Type, User-Agent, schema, shape. Returns
 * the task (0.3, 1.0 terminal) or the status update (1.0 non-terminal).
 */
export async function expectNotification(line: Line, hit: Hit, taskId: string, state: string): Promise<any> {
  expect(hit.method).toBe("POST");
  expect(hit.headers["user-agent"] ?? "").toMatch(/^opencode-a2a\//);
  expect(Number(hit.headers["content-length"])).toBe(Buffer.byteLength(hit.text, "utf8"));
  if (line === "0.3") {
    expect(hit.headers["content-type"]).toBe("application/json");
    await expectValid("v0_3/Task", hit.body);
    expect(hit.body.kind).toBe("task");
    expect(hit.body.id).toBe(taskId);
    expect(hit.body.status.state).toBe(state);
    return hit.body;
  }
  expect(hit.headers["content-type"]).toBe("application/a2a+json");
  await expectValid("v1_0/StreamResponse", hit.body);
  if (TERMINAL.has(state)) {
    expect(Object.keys(hit.body)).toEqual(["task"]);
    expect(hit.body.task.id).toBe(taskId);
    expect(hit.body.task.status.state).toBe(wireState("1.0", state));
    return hit.body.task;
  }
  expect(Object.keys(hit.body)).toEqual(["statusUpdate"]);
  expect(hit.body.statusUpdate.taskId).toBe(taskId);
  expect(hit.body.statusUpdate.status.state).toBe(wireState("1.0", state));
  return hit.body.statusUpdate;
}

