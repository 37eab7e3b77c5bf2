// A2A_LOG_PAYLOADS / A2A_LOG_BODY_LIMIT against a real gateway with the stub OpenCode behind it, the gateway and the
// upstream link logging into one capture: off by default, bodies at debug when on (secrets redacted), truncation,
// the opencode.sessions.* privacy guard, nothing at info, REST bodies, upstream event previews.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LogLevel } from "../../src/config/index.js";
import { createLogger } from "../../src/logging/index.js";
import { REDACTED, SUPPRESSED } from "../../src/logging/payloads.js";
import { text } from "../../tools/upstream/script.js";
import { call, rpc, TEST_TOKEN } from "../support/gateway.js";
import { Capture } from "../support/logs.js";
import { until } from "../support/task-wire.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

interface Logged extends TaskGateway {
  out: Capture;
}

const open: Logged[] = [];

/** A gateway with tasks whose gateway and upstream logs both go to one capture at `level`. */
async function start(level: LogLevel, env: Record<string, string> = {}): Promise<Logged> {
  const out = new Capture();
  const g: Logged = Object.assign(
    await startTaskGateway(
      {
        A2A_LOG_LEVEL: level,
        // Push configs in the bodies below point nowhere reachable: no delivery may be attempted during the tests.
        A2A_PUSH_ALLOW_PRIVATE_NETWORKS: "false",
        ...env,
      },
      {},
      { logger: createLogger(level, out) },
    ),
    { out },
  );
  open.push(g);
  return g;
}

afterAll(async () => {
  for (const g of open.splice(0)) await g.close();
});

type Entry = Record<string, any>;
const entries = (g: Logged, from = 0): Entry[] => g.out.lines.slice(from).map((l) => JSON.parse(l) as Entry);
const byMsg = (g: Logged, msg: string, from = 0): Entry[] => entries(g, from).filter((e) => e.msg === msg);

const SECRETS = {
  pushToken: `push-token-${randomUUID()}`,
  pushCredentials: `push-credentials-${randomUUID()}`,
  authorization: `auth-header-${randomUUID()}`,
  apiKey: `api-key-${randomUUID()}`,
};

let rpcId = 0;
/** 0.3 message/send of `words` with a push config and header-like metadata carrying every secret of SECRETS. */
function sendBody(words: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    jsonrpc: "2.0",
    id: ++rpcId,
    method: "message/send",
    params: {
      message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: words }] },
      configuration: {
        blocking: true,
        pushNotificationConfig: {
          url: "https://push.example.invalid/hook",
          token: SECRETS.pushToken,
          authentication: { schemes: ["Bearer"], credentials: SECRETS.pushCredentials },
        },
      },
      metadata: { client: { headers: { Authorization: `Bearer ${SECRETS.authorization}` }, api_key: SECRETS.apiKey } },
      ...extra,
    },
  };
}

function expectNoSecrets(g: Logged): void {
  for (const secret of [...Object.values(SECRETS), TEST_TOKEN]) expect(g.out.text, secret).not.toContain(secret);
}

describe("off by default", () => {
  let g: Logged;
  beforeAll(async () => {
    g = await start("debug");
  });

  it("logs no body at debug when A2A_LOG_PAYLOADS is not set", async () => {
    const marker = `off-marker-${randomUUID()}`;
    g.stub.script(text(`answer ${marker}`));
    const res = await rpc(g.url, sendBody(marker));
    expect(res.body.result?.kind, res.text).toBe("task");
    await call(g.url, "/v1/tasks/no-such-task");
    expect(entries(g).some((e) => e.msg === "request")).toBe(true); // the capture works
    expect(entries(g).some((e) => e.level === 20)).toBe(true); // and is at debug
    expect(g.out.text).not.toContain(marker);
    for (const msg of ["jsonrpc call", "rest call", "opencode event"]) expect(byMsg(g, msg), msg).toEqual([]);
    expectNoSecrets(g);
  });
});

describe("on, at debug", () => {
  let g: Logged;
  beforeAll(async () => {
    g = await start("debug", { A2A_LOG_PAYLOADS: "true" });
  });

  it("logs a message/send call with its params and result, secrets redacted", async () => {
    const marker = `send-marker-${randomUUID()}`;
    const from = g.out.lines.length;
    g.stub.script(text(`Hello ${marker}-answer`));
    const body = sendBody(marker);
    const res = await rpc(g.url, body);
    const task = res.body.result;
    expect(task?.kind, res.text).toBe("task");

    const calls = byMsg(g, "jsonrpc call", from).filter((e) => e.method === "message/send");
    expect(calls).toHaveLength(1);
    const entry = calls[0]!;
    expect(entry).toMatchObject({ level: 20, id: body.id });
    const params = JSON.parse(entry.params);
    expect(params.message.parts[0].text).toBe(marker);
    expect(params.configuration.pushNotificationConfig).toEqual({
      url: "https://push.example.invalid/hook",
      token: REDACTED,
      authentication: { schemes: ["Bearer"], credentials: REDACTED },
    });
    expect(params.metadata.client).toEqual({ headers: { Authorization: REDACTED }, api_key: REDACTED });
    const result = JSON.parse(entry.result);
    expect(result.id).toBe(task.id);
    expect(entry.result).toContain(`${marker}-answer`);
    expectNoSecrets(g);
  });

  it("logs an error answer and every call of a batch", async () => {
    const from = g.out.lines.length;
    const res = await rpc(g.url, [
      { jsonrpc: "2.0", id: "b1", method: "tasks/get", params: { id: "no-such-task", token: SECRETS.pushToken } },
      { jsonrpc: "2.0", id: "b2", method: "no/such/method" },
      { jsonrpc: "2.0", method: "opencode.providers.list", params: {} },
    ]);
    expect(res.body).toHaveLength(2);
    const calls = byMsg(g, "jsonrpc call", from);
    expect(calls).toHaveLength(3);
    const get = calls.find((e) => e.id === "b1")!;
    expect(JSON.parse(get.params)).toEqual({ id: "no-such-task", token: REDACTED });
    expect(JSON.parse(get.error).code).toBe(-32001);
    expect(JSON.parse(calls.find((e) => e.id === "b2")!.error).code).toBe(-32601);
    expect(calls.find((e) => e.notification === true)).toMatchObject({ method: "opencode.providers.list" });
    expectNoSecrets(g);
  });

  it("never logs the params or results of opencode.sessions.*, alone or in a batch", async () => {
    const marker = `sessions-marker-${randomUUID()}`;
    const from = g.out.lines.length;
    const list = await rpc(g.url, { jsonrpc: "2.0", id: "s1", method: "opencode.sessions.list", params: { search: marker } });
    expect(list.body.result ?? list.body.error, list.text).toBeDefined();
    const missing = await rpc(g.url, { jsonrpc: "2.0", id: "s2", method: "opencode.sessions.get", params: { session_id: `ses_${marker}` } });
    expect(missing.body.error, missing.text).toBeDefined();
    await rpc(g.url, [
      { jsonrpc: "2.0", id: "s3", method: "opencode.sessions.messages.list", params: { session_id: `ses_${marker}` } },
      { jsonrpc: "2.0", id: "s4", method: "tasks/get", params: { id: "plain-task-id" } },
    ]);
    const logged = g.out.lines.slice(from);
    for (const line of logged) expect(line).not.toContain(marker);
    const calls = byMsg(g, "jsonrpc call", from);
    const suppressed = calls.filter((e) => e.body === SUPPRESSED);
    expect(suppressed.map((e) => [e.method, e.id])).toEqual([
      ["opencode.sessions.list", "s1"],
      ["opencode.sessions.get", "s2"],
      ["opencode.sessions.messages.list", "s3"],
    ]);
    for (const e of suppressed) expect(Object.keys(e)).not.toEqual(expect.arrayContaining(["params"]));
    for (const e of suppressed) for (const k of ["params", "result", "error"]) expect(e[k], k).toBeUndefined();
    // The other call of the batch is still logged in full.
    expect(JSON.parse(calls.find((e) => e.id === "s4")!.params)).toEqual({ id: "plain-task-id" });
  });

  it("logs REST request and response bodies per route", async () => {
    const marker = `rest-marker-${randomUUID()}`;
    const from = g.out.lines.length;
    g.stub.script(text(`rest answer ${marker}`));
    const sent = await call(g.url, "/v1/message:send", {
      method: "POST",
      body: {
        message: { messageId: randomUUID(), role: "ROLE_USER", content: [{ text: marker }] },
        metadata: { "x-api-key": SECRETS.apiKey, password: SECRETS.pushCredentials },
      },
    });
    expect(sent.status, sent.text).toBe(200);
    const missing = await call(g.url, "/v1/tasks/no-such-task");
    expect(missing.status).toBe(404);

    const rest = byMsg(g, "rest call", from);
    const send = rest.find((e) => e.route === "POST /v1/message:send")!;
    expect(send, JSON.stringify(rest)).toBeDefined();
    expect(send).toMatchObject({ level: 20, path: "/v1/message:send", method: "message/send" });
    const request = JSON.parse(send.request);
    expect(request.message.content[0].text).toBe(marker);
    expect(request.metadata).toEqual({ "x-api-key": REDACTED, password: REDACTED });
    expect(send.response).toContain(`rest answer ${marker}`);
    const get = rest.find((e) => e.route === "GET /v1/tasks/{id}")!;
    expect(get, JSON.stringify(rest)).toMatchObject({ path: "/v1/tasks/no-such-task", method: "tasks/get" });
    expect(get.request).toBeUndefined();
    expect(get.error).toContain("no-such-task");
    expectNoSecrets(g);
  });

  it("logs upstream event frames as previews (type, session, data)", async () => {
    const marker = `event-marker-${randomUUID()}`;
    const from = g.out.lines.length;
    g.stub.script(text(`streamed ${marker}`));
    const res = await rpc(g.url, sendBody("events please"));
    const sessionId: string = res.body.result?.metadata?.shared?.session?.id;
    expect(sessionId, res.text).toMatch(/^ses_/);
    const events = await until("event previews of the turn", () => {
      const found = byMsg(g, "opencode event", from).filter((e) => e.sessionId === sessionId);
      return found.some((e) => typeof e.preview === "string" && e.preview.includes(marker)) ? found : undefined;
    });
    expect(events.every((e) => e.level === 20 && typeof e.type === "string" && typeof e.preview === "string")).toBe(true);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["message.part.updated"]));
    expect(events.find((e) => e.preview.includes(marker))!.component).toBe("upstream");
  });
});

describe("A2A_LOG_BODY_LIMIT", () => {
  const LIMIT = 120;
  const MARK = /…\[truncated, (\d+) chars\]$/;
  let g: Logged;
  beforeAll(async () => {
    g = await start("debug", { A2A_LOG_PAYLOADS: "true", A2A_LOG_BODY_LIMIT: String(LIMIT) });
  });

  it("cuts logged bodies and event previews to the limit, with the original length", async () => {
    const long = `long-${"x".repeat(2000)}`;
    const from = g.out.lines.length;
    g.stub.script(text(`reply ${"y".repeat(2000)}`));
    const res = await rpc(g.url, sendBody(long));
    expect(res.body.result?.kind, res.text).toBe("task");
    const entry = byMsg(g, "jsonrpc call", from).find((e) => e.method === "message/send")!;
    for (const field of ["params", "result"]) {
      const value: string = entry[field];
      const m = MARK.exec(value);
      expect(m, `${field}: ${value}`).not.toBeNull();
      expect(Number(m![1])).toBeGreaterThan(2000);
      expect(value.length).toBeLessThanOrEqual(LIMIT + m![0].length);
      expect(value.length - m![0].length).toBeLessThanOrEqual(LIMIT);
    }
    expect(g.out.text).not.toContain(long);
    const previews = await until("event previews", () => {
      const found = byMsg(g, "opencode event", from);
      return found.some((e) => MARK.test(e.preview)) ? found : undefined;
    });
    for (const e of previews) {
      const m = MARK.exec(e.preview);
      expect(e.preview.length - (m ? m[0].length : 0)).toBeLessThanOrEqual(LIMIT);
    }
    expectNoSecrets(g);
  });
});

describe("on, but the level is info", () => {
  let g: Logged;
  beforeAll(async () => {
    g = await start("info", { A2A_LOG_PAYLOADS: "true" });
  });

  it("logs no body, no event preview", async () => {
    const marker = `info-marker-${randomUUID()}`;
    g.stub.script(text(`answer ${marker}`));
    const res = await rpc(g.url, sendBody(marker));
    expect(res.body.result?.kind, res.text).toBe("task");
    await call(g.url, "/v1/message:send", { method: "POST", body: { message: { messageId: randomUUID(), role: "ROLE_USER", content: [{ text: marker }] } } });
    expect(entries(g).filter((e) => e.msg === "request").length).toBeGreaterThanOrEqual(2); // the capture works
    expect(g.out.text).not.toContain(marker);
    for (const msg of ["jsonrpc call", "rest call", "opencode event"]) expect(byMsg(g, msg), msg).toEqual([]);
    expectNoSecrets(g);
  });
});
