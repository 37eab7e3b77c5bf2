// Issue 6 accountability: the audit log (GET /admin/audit, audit.read) records who called what about which task and
// how it ended — never a secret, never a body — including refused (401) attempts; non-admins cannot read it. And
// no secret of any scheme, valid or not, ever reaches a log line, at trace level with payload logging on, including
// the errors of a bad credentials configuration.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CredentialError } from "../../src/auth/credentials.js";
import { loadConfig } from "../../src/config/index.js";
import { createLogger } from "../../src/logging/index.js";
import { serve } from "../../src/main.js";
import { createGateway } from "../../src/server/app.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { startStubUpstream, type StubUpstream } from "../../tools/upstream/stub.js";
import { text } from "../../tools/upstream/script.js";
import { expectRestError } from "../support/contract.js";
import { call, rpc, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { until } from "../support/task-wire.js";
import { Capture } from "../support/logs.js";

type Obj = Record<string, any>;
const ADMIN = { authorization: `Bearer ${TEST_TOKEN}` };


// ---- 8. audit ----------------------------------------------------------------------------------------------------------

describe("8. GET /admin/audit", () => {
  const ALICE_SECRET = "alice-audit-secret-0123456789";
  const CAROL_SECRET = "carol-audit-apikey-0123456789";
  const WRONG_SECRET = "wrong-audit-secret-0123456789";
  const PROMPT = "PROMPT-zebra-quartz-7f3a: please refactor the flux capacitor";
  const REPLY = "REPLY-okapi-marimba-91c2";
  let tg: TaskGateway;
  let taskId: string;
  let unknownTask: string;
  let entries: Obj[];
  let auditText: string;

  beforeAll(async () => {
    tg = await startTaskGateway({
      A2A_CREDENTIALS: JSON.stringify([
        { id: "alice-key", principal: "alice", scheme: "bearer", secret: ALICE_SECRET, trust_level: "execute" },
        { id: "carol-key", principal: "carol", scheme: "api_key", secret: CAROL_SECRET, trust_level: "autonomous" },
      ]),
    });
    const alice = { authorization: `Bearer ${ALICE_SECRET}` };
    tg.stub.script(text([REPLY]));
    const sent = await rpc(tg.url, { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: PROMPT }] } } }, alice);
    expect(sent.body?.result?.status?.state, sent.text).toBe("completed");
    taskId = sent.body.result.id;
    expect(JSON.stringify(sent.body.result)).toContain(REPLY); // premise: the reply really is in the task
    expect((await rpc(tg.url, { jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: taskId } }, alice)).body.result.id).toBe(taskId);
    expect((await call(tg.url, `/v1/tasks/${taskId}`, { auth: false, headers: alice })).status).toBe(200);
    unknownTask = randomUUID();
    expect((await rpc(tg.url, { jsonrpc: "2.0", id: 3, method: "tasks/get", params: { id: unknownTask } }, alice)).body.error.data.type).toBe("TASK_NOT_FOUND");
    const batch = await rpc(
      tg.url,
      [
        { jsonrpc: "2.0", id: "b1", method: "ListTasks", params: {} },
        { jsonrpc: "2.0", id: "b2", method: "GetTask", params: { id: taskId } },
      ],
      { authorization: undefined, "x-api-key": CAROL_SECRET, "A2A-Version": "1.0" },
    );
    expect(batch.status).toBe(200);
    expect((await call(tg.url, "/health", { auth: false, headers: { authorization: `Bearer ${WRONG_SECRET}` } })).status).toBe(401);
    expect((await rpc(tg.url, { jsonrpc: "2.0", id: 4, method: "tasks/get", params: { id: taskId } }, { authorization: undefined, "x-api-key": WRONG_SECRET })).status).toBe(401);
    expect((await call(tg.url, "/v1/tasks", { auth: false })).status).toBe(401);
    expect((await call(tg.url, "/.well-known/agent-card.json", { auth: false })).status).toBe(200);
    // alice may not read the log
    await expectRestError(await call(tg.url, "/admin/audit", { auth: false, headers: alice }), "0.3", "SCOPE_INSUFFICIENT", 403);
    await expectRestError(await call(tg.url, "/admin/audit", { auth: false, headers: { ...alice, "A2A-Version": "1.0" } }), "1.0", "SCOPE_INSUFFICIENT", 403);
    const res = await call(tg.url, "/admin/audit?limit=500", { auth: false, headers: ADMIN });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    entries = res.body.entries;
    auditText = res.text;
  });
  afterAll(() => tg?.close());

  const find = (where: Obj) => entries.filter((e) => Object.entries(where).every(([k, v]) => e[k] === v));

  it("the admin sees one entry per call: principal, credential, method, task, outcome, status", () => {
    expect(find({ principal: "alice", credential_id: "alice-key", method: "message/send", task_id: taskId, outcome: "ok", status: 200, transport: "jsonrpc", line: "0.3" })).toHaveLength(1);
    expect(find({ principal: "alice", method: "tasks/get", task_id: taskId, outcome: "ok" })).toHaveLength(1);
    expect(find({ principal: "alice", method: "GET /v1/tasks/{id}", task_id: taskId, outcome: "ok", transport: "rest", status: 200 })).toHaveLength(1);
    expect(find({ principal: "alice", method: "tasks/get", task_id: unknownTask, outcome: "error", error_reason: "TASK_NOT_FOUND", status: 200 })).toHaveLength(1);
    // a batch: every call
    expect(find({ principal: "carol", credential_id: "carol-key", line: "1.0", transport: "jsonrpc" }).map((e) => e.method).sort()).toEqual(["GetTask", "ListTasks"]);
    // carol may not see alice's task: her call is recorded with its outcome
    expect(find({ principal: "carol", method: "GetTask", task_id: taskId, outcome: "error", error_reason: "TASK_NOT_FOUND" })).toHaveLength(1);
    // the refused read of the log itself
    expect(find({ principal: "alice", error_reason: "SCOPE_INSUFFICIENT", status: 403 }).length).toBe(2);
  });

  it("401 attempts are recorded with principal null", () => {
    const refused = find({ principal: null, status: 401 });
    expect(refused.length).toBeGreaterThanOrEqual(3);
    for (const e of refused) {
      expect(e.credential_id).toBeNull();
      expect(e.outcome).toBe("error");
      expect(e.error_reason).toBe("UNAUTHENTICATED");
    }
    expect(refused.map((e) => e.transport).sort()).toEqual(expect.arrayContaining(["jsonrpc", "rest"]));
  });

  it("public routes are not recorded", () => {
    expect(entries.filter((e) => String(e.method).includes("agent-card"))).toEqual([]);
  });

  it("never a secret, never body text", () => {
    for (const secret of [ALICE_SECRET, CAROL_SECRET, WRONG_SECRET, TEST_TOKEN]) expect(auditText).not.toContain(secret);
    expect(auditText).not.toContain("zebra-quartz");
    expect(auditText).not.toContain("flux capacitor");
    expect(auditText).not.toContain(REPLY);
    const allowed = new Set(["id", "at", "principal", "credential_id", "transport", "line", "method", "task_id", "context_id", "session_id", "outcome", "error_reason", "status", "duration_ms", "client_ip", "trace_id"]);
    for (const e of entries) for (const key of Object.keys(e)) expect(allowed, key).toContain(key);
    // Every request has a trace (W3C trace context): its id, never anything else of the request.
    for (const e of entries) expect(e.trace_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it("filters: by principal and by task", async () => {
    const byPrincipal = await call(tg.url, "/admin/audit?principal=alice&limit=500", { auth: false, headers: ADMIN });
    expect(byPrincipal.body.entries.length).toBeGreaterThan(0);
    expect(new Set(byPrincipal.body.entries.map((e: Obj) => e.principal))).toEqual(new Set(["alice"]));
    const byTask = await call(tg.url, `/admin/audit?task_id=${taskId}`, { auth: false, headers: ADMIN });
    expect(byTask.body.entries.length).toBeGreaterThanOrEqual(3);
    for (const e of byTask.body.entries) expect(e.task_id).toBe(taskId);
  });

  it("a non-admin of any scheme without audit.read gets 403", async () => {
    await expectRestError(await call(tg.url, "/admin/audit", { auth: false, headers: { authorization: undefined, "x-api-key": CAROL_SECRET } }), "0.3", "SCOPE_INSUFFICIENT", 403);
  });

  it("a call to an unknown method inside a batch is recorded too (it is a call made)", async () => {
    const batch = await rpc(
      tg.url,
      [
        { jsonrpc: "2.0", id: "p1", method: "tasks/probe-admin-secrets", params: {} },
        { jsonrpc: "2.0", id: "p2", method: "tasks/get", params: { id: taskId } },
      ],
      { authorization: undefined, "x-api-key": CAROL_SECRET },
    );
    expect((batch.body as Obj[]).find((r) => r.id === "p1")!.error.code).toBe(-32601);
    const res = await call(tg.url, "/admin/audit?principal=carol&limit=500", { auth: false, headers: ADMIN });
    const methods = (res.body.entries as Obj[]).map((e) => `${e.method} ${e.outcome} ${e.error_reason ?? ""}`);
    expect(methods).toContain("tasks/get error TASK_NOT_FOUND");
    expect(methods.some((m) => m.includes("tasks/probe-admin-secrets") && m.includes("METHOD_NOT_SUPPORTED")), methods.join("\n")).toBe(true);
  });

  it("every call of a concurrent burst is listed by the next read (the batched rows are flushed before it); no write failed", async () => {
    const alice = { authorization: `Bearer ${ALICE_SECRET}` };
    const burst = 120;
    const answers = await Promise.all(
      Array.from({ length: burst }, (_, i) => rpc(tg.url, { jsonrpc: "2.0", id: `burst-${i}`, method: "tasks/get", params: { id: taskId } }, alice)),
    );
    expect(answers.every((a) => a.body?.result?.id === taskId)).toBe(true);
    // The entries are built on the next turn of the event loop and written in batches: the read must see them all.
    const res = await call(tg.url, `/admin/audit?principal=alice&method=tasks/get&task_id=${taskId}&limit=500`, { auth: false, headers: ADMIN });
    expect(res.status).toBe(200);
    expect(res.body.entries.length).toBeGreaterThanOrEqual(burst);
    const metrics = (await call(tg.url, "/metrics", { auth: false, headers: ADMIN })).text;
    expect(Number(/a2a_audit_write_failures_total (\d+)/.exec(metrics)?.[1])).toBe(0);
    expect(Number(/a2a_audit_entries_dropped_total (\d+)/.exec(metrics)?.[1])).toBe(0);
  });
});

// ---- 9. secrets never reach the logs -----------------------------------------------------------------------------------


describe("9. no secret in any log line (trace level, payload logging on)", () => {
  const SECRETS = {
    bearer: "log-bearer-secret-Q7w8e9r0t1y2",
    api_key: "log-apikey-secret-A1s2d3f4g5h6",
    basic: "loguser:log-basic-password-Z9x8c7v6",
    file: "log-file-secret-P0o9i8u7y6t5r4",
    broken: "log-broken-secret-M1n2b3v4c5x6",
  };
  const forms = (secret: string): string[] => [secret, Buffer.from(secret).toString("base64"), ...(secret.includes(":") ? [secret.split(":")[1]!] : [])];
  const everySecret = () => [...Object.values(SECRETS), TEST_TOKEN].flatMap(forms);
  const out = new Capture();
  let stub: StubUpstream;
  let upstream: Upstream;
  let gw: StartedGateway;
  let dir: string;
  let file: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "authz-logs-"));
    file = path.join(dir, "credentials.json");
    fs.writeFileSync(file, JSON.stringify([{ id: "from-file", principal: "filer", scheme: "bearer", secret: SECRETS.file, trust_level: "admin" }]));
    stub = await startStubUpstream();
    const env = {
      A2A_BEARER_TOKEN: TEST_TOKEN,
      OPENCODE_BASE_URL: stub.url,
      A2A_TASK_STORE_BACKEND: "memory",
      A2A_LOG_LEVEL: "trace",
      A2A_LOG_PAYLOADS: "true",
      A2A_CREDENTIALS_FILE: file,
      A2A_CREDENTIALS: JSON.stringify([
        { id: "log-b", principal: "log-b", scheme: "bearer", secret: SECRETS.bearer, trust_level: "admin" },
        { id: "log-k", principal: "log-k", scheme: "api_key", secret: SECRETS.api_key, trust_level: "admin" },
        { id: "log-u", principal: "log-u", scheme: "basic", secret: SECRETS.basic, trust_level: "admin" },
      ]),
    };
    upstream = await startUpstream(loadConfig(env), pino({ level: "silent" }));
    gw = await startGateway(env, { upstream, logger: createLogger("trace", out) });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.stop();
    await stub?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const schemeHeaders = (): [string, Record<string, string | undefined>][] => [
    ["bearer", { authorization: `Bearer ${SECRETS.bearer}` }],
    ["bearer (wrong)", { authorization: `Bearer ${SECRETS.bearer}-wrong` }],
    ["file bearer", { authorization: `Bearer ${SECRETS.file}` }],
    ["api key", { authorization: undefined, "x-api-key": SECRETS.api_key }],
    ["api key (wrong)", { authorization: undefined, "x-api-key": `${SECRETS.api_key}x` }],
    ["basic", { authorization: `Basic ${Buffer.from(SECRETS.basic).toString("base64")}` }],
    ["basic (wrong)", { authorization: `Basic ${Buffer.from(`${SECRETS.basic}x`).toString("base64")}` }],
    ["admin token", { authorization: `Bearer ${TEST_TOKEN}` }],
    ["admin token (prefix)", { authorization: `Bearer ${TEST_TOKEN.slice(0, -2)}` }],
  ];

  it("requests with every scheme's secrets, valid and not, on every kind of route", async () => {
    const before = out.lines.length;
    for (const [, headers] of schemeHeaders()) {
      await call(gw.url, "/health", { auth: false, headers });
      await call(gw.url, "/v1/tasks?limit=1", { auth: false, headers });
      await call(gw.url, "/tasks/nope", { auth: false, headers: { ...headers, "A2A-Version": "1.0" } });
      await rpc(gw.url, { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hi" }] } } }, headers);
      await rpc(gw.url, { jsonrpc: "2.0", id: 2, method: "no/such/method" }, headers);
      await rpc(gw.url, "{not json", headers);
      await call(gw.url, "/v1/message:send", { method: "POST", auth: false, headers, body: { message: { nope: true } } });
    }
    expect(out.lines.length - before, "the capture works").toBeGreaterThan(20);
    for (const line of out.lines) expect(() => JSON.parse(line)).not.toThrow();
    for (const s of everySecret()) expect(out.text, `a log line carries ${s.slice(0, 8)}…`).not.toContain(s);
  });

  it("a credentials file that cannot be loaded is reported without its secrets (the old ones stay in force)", async () => {
    fs.writeFileSync(
      file,
      JSON.stringify([
        { id: "bad-1", principal: "x", scheme: "basic", secret: SECRETS.broken, trust_level: "admin" }, // basic without a colon
        { id: "bad-2", principal: "x", scheme: "bearer", secret: SECRETS.broken, trust_level: "nope" },
        { id: "bad-3", principal: "x", scheme: "bearer", secret: "short", trust_level: "admin" },
      ]),
    );
    const logged = await until(
      "the reload error to be logged",
      async () => {
        await call(gw.url, "/health", { auth: false, headers: { authorization: `Bearer ${SECRETS.file}` } });
        const line = out.lines.find((l) => l.includes("cannot be loaded"));
        return line;
      },
      5000,
    );
    expect(logged).toContain("invalid credentials");
    expect((await call(gw.url, "/health", { auth: false, headers: { authorization: `Bearer ${SECRETS.file}` } })).status).toBe(200);
    for (const s of everySecret()) expect(out.text).not.toContain(s);
    expect(out.text).not.toContain('"short"');
  });

  it("a bad A2A_CREDENTIALS stops the gateway with an error that quotes no secret (createGateway and serve)", async () => {
    const sink = new Capture();
    const bad = [
      `[{"id":"a","principal":"a","scheme":"bearer","secret":"${SECRETS.broken}"`, // not JSON
      JSON.stringify([{ id: "a", principal: "a", scheme: "basic", secret: SECRETS.broken, trust_level: "admin" }]),
      JSON.stringify([{ id: "a", principal: "a", scheme: "bearer", secret: SECRETS.broken, trust_level: "admin", extra: SECRETS.broken }]),
      JSON.stringify([
        { id: "a", principal: "a", scheme: "bearer", secret: SECRETS.broken, trust_level: "admin" },
        { id: "b", principal: "b", scheme: "bearer", secret: SECRETS.broken, trust_level: "admin" },
      ]),
    ];
    for (const credentials of bad) {
      const env = { A2A_CREDENTIALS: credentials, A2A_PUBLIC_URL: "http://127.0.0.1:1", OPENCODE_BASE_URL: "http://127.0.0.1:9", A2A_LOG_LEVEL: "trace" };
      let error: unknown;
      try {
        await createGateway(loadConfig(env), createLogger("trace", sink));
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CredentialError);
      expect((error as Error).message).not.toContain(SECRETS.broken);
      const served = await serve(env).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(served).toBeInstanceOf(CredentialError);
      expect((served as Error).message).not.toContain(SECRETS.broken);
    }
    expect(sink.text).not.toContain(SECRETS.broken);
  });
});
