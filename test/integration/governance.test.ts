// Governance over the stub OpenCode: the policy rules of A2A_GOVERNANCE_POLICIES_FILE decide bash and edit permission
// requests (command patterns, path globs, rule order, principal and trust-level conditions, the manual default); an
// approve or reject is answered upstream at once and the task never turns input-required (stream, store, final
// state), unless OpenCode does not take the answer (then the request is left to a client); every other way of answering lands in the task's trail with its principal, an expiry as `expired`; the trail
// is served on the seed's path, both REST lines and JSON-RPC, owner-scoped, and summarized in the task's metadata.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalog, errorInfoOf, expectValid } from "../support/contract.js";
import { call as httpCall, rpc, TEST_TOKEN, type HttpResult } from "../support/gateway.js";
import { until } from "../support/task-wire.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text, tool } from "../../tools/upstream/script.js";

type Obj = Record<string, any>;
const ALL_BUT_AUDIT = catalog.scopes.filter((s) => s !== "audit.read");
const cred = (name: string, scopes: string[] = ALL_BUT_AUDIT) => ({
  id: `${name}-key`,
  principal: name,
  scheme: "bearer",
  secret: `${name}-governance-secret-0123456789`,
  trust_level: "autonomous",
  scopes,
});
const ALICE = cred("alice");
const BOB = cred("bob");
/** Can create tasks but not read them (tasks.read missing). */
const CAROL = cred("carol", ["tasks.create"]);
const as = (c: { secret: string }) => ({ authorization: `Bearer ${c.secret}` });
const ADMIN = { authorization: `Bearer ${TEST_TOKEN}` };
const SCOPE_CODE = -32060;
type Who = Record<string, string>;

const RULES = {
  rules: [
    { id: "echo-ok", permission: "bash", patterns: ["echo *"], decision: "approve" },
    { id: "no-rm", permission: "bash", patterns: ["rm *"], decision: "reject", description: "never remove files" },
    { id: "bob-ls", permission: "bash", patterns: ["ls *"], decision: "approve", principals: ["bob"] },
    { id: "admin-git", permission: "bash", patterns: ["git *"], decision: "approve", trust_levels: ["admin"] },
    { id: "ask-secrets", permission: "edit", patterns: ["docs/secret/**"], decision: "manual" },
    { id: "docs-edit", permission: "edit", patterns: ["docs/**"], decision: "approve" },
    { id: "src-top", permission: "edit", patterns: ["src/*.ts"], decision: "approve", reply: "always" },
  ],
};

let dir: string;
const writePolicies = (file: string, value: unknown): void => fs.writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value));

let rpcId = 0;
async function rpcAs(url: string, who: Who, method: string, params: unknown, line: "0.3" | "1.0" = "0.3"): Promise<HttpResult> {
  return rpc(url, { jsonrpc: "2.0", id: ++rpcId, method, params }, { ...who, "A2A-Version": line });
}
async function ok(res: HttpResult): Promise<any> {
  expect(res.status, res.text).toBe(200);
  expect(res.body?.error, res.text).toBeUndefined();
  return res.body.result;
}

function message(texts: string, extra: Obj = {}): Obj {
  return { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: texts }], ...extra };
}

/** A stub session that asks before every bash command and every edit, with its own scripted replies. */
async function askingSession(tg: TaskGateway, ...replies: Parameters<TaskGateway["stub"]["script"]>): Promise<Obj> {
  const res = await fetch(`${tg.stub.url}/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      title: "governance",
      permission: [
        { permission: "bash", pattern: "*", action: "ask" },
        { permission: "edit", pattern: "*", action: "ask" },
      ],
    }),
  });
  const session = (await res.json()) as { id: string };
  tg.stub.scriptFor(session.id, ...replies);
  return { shared: { session: { id: session.id } } };
}

/** A blocking send of `who` whose turn runs `call` then answers "done". */
async function runTool(tg: TaskGateway, who: Who, call: ReturnType<typeof tool>): Promise<Obj> {
  const metadata = await askingSession(tg, call, text("done"));
  return ok(await rpcAs(tg.url, who, "message/send", { message: message("go"), metadata }));
}

const bash = (command: string) => tool("bash", { command, description: "run it" });
const edit = (filePath: string) => tool("write", { filePath, content: "x\n" });

/** The permission replies the gateway sent upstream (path and body), in order. */
const replies = (tg: TaskGateway) =>
  tg.stub.requests.filter((r) => r.method === "POST" && /^\/permission\/[^/]+\/reply$/.test(r.path)).map((r) => ({ id: r.path.split("/")[2], body: r.body as Obj }));

async function history(tg: TaskGateway, who: Who, taskId: string): Promise<Obj> {
  const trail = await ok(await rpcAs(tg.url, who, "opencode.governance.history", { task_id: taskId }));
  await expectValid("extensions/GovernanceHistory", trail);
  return trail;
}

/** The tool part the task's turn recorded (its tool-call artifact's data). */
function toolStatus(task: Obj): Obj | undefined {
  const artifact = (task.artifacts ?? []).find((a: Obj) => String(a.artifactId).includes(":tool:"));
  const data = artifact?.parts?.find((p: Obj) => p.kind === "data")?.data;
  return data;
}

let tg: TaskGateway;
let policyFile: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-governance-"));
  policyFile = path.join(dir, "policies.json");
  writePolicies(policyFile, RULES);
  tg = await startTaskGateway({
    A2A_CREDENTIALS: JSON.stringify([ALICE, BOB, CAROL]),
    A2A_GOVERNANCE_POLICIES_FILE: policyFile,
    A2A_RATE_LIMIT_MAX_REQUESTS: "0",
  });
});
afterAll(async () => {
  await tg?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("policy rules decide permission requests", () => {
  it("an approve rule answers OpenCode at once: the streamed task never turns input-required and the trail shows the rule", async () => {
    const before = replies(tg).length;
    const metadata = await askingSession(tg, bash("echo hello"), text("done"));
    const res = await fetch(`${tg.url}/`, {
      method: "POST",
      headers: { ...ADMIN, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method: "message/stream", params: { message: message("go"), metadata } }),
    });
    const events = (await res.text())
      .split("\n")
      .filter((l) => l.startsWith("data:"))
      .map((l) => JSON.parse(l.slice(5)).result as Obj);
    const states = events.flatMap((e) => (e.kind === "status-update" || e.kind === "task" ? [e.status.state] : []));
    expect(states).not.toContain("input-required");
    expect(states.at(-1)).toBe("completed");
    const taskId = events[0]!.id as string;

    const sent = replies(tg).slice(before);
    expect(sent).toEqual([{ id: expect.any(String), body: { reply: "once" } }]);
    const task = await ok(await rpcAs(tg.url, ADMIN, "tasks/get", { id: taskId }));
    expect(task.status.state).toBe("completed");
    expect(task.metadata.shared.interrupt).toBeUndefined();
    expect(task.metadata.opencode.governance).toEqual({ decisions: 1, pending: 0, last_source: "policy:echo-ok" });
    expect((await ok(await rpcAs(tg.url, ADMIN, "opencode.permissions.list", {}))).items).toEqual([]);

    const trail = await history(tg, ADMIN, taskId);
    expect(trail.pendingPermissions).toEqual([]);
    expect(trail.governorFeedback).toEqual([]);
    expect(trail.permissionDecisions).toEqual([
      {
        toolCallId: expect.any(String),
        requestId: sent[0]!.id,
        source: "policy:echo-ok",
        optionId: "once",
        governorsInvolved: [],
        timestamp: expect.any(String),
        metadata: expect.objectContaining({ interrupt_type: "permission", permission: "bash", patterns: ["echo hello"], via: "policy", rule: "echo-ok" }),
      },
    ]);
  });

  it("a reject rule answers reject: the tool call fails with the rule named and the task goes on to the end", async () => {
    const task = await runTool(tg, ADMIN, bash("rm -rf build"));
    expect(task.status.state).toBe("completed");
    const sent = replies(tg).at(-1)!;
    expect(sent.body).toEqual({ reply: "reject", message: 'Rejected by the gateway\'s governance policy "no-rm"' });
    expect(JSON.stringify(toolStatus(task))).toContain("no-rm");
    const trail = await history(tg, ADMIN, task.id);
    expect(trail.permissionDecisions).toMatchObject([{ source: "policy:no-rm", optionId: "reject", metadata: { summary: ["never remove files"], decision: "reject" } }]);
  });

  it("approve needs every command of the request; reject and manual one: `echo a && rm b` is rejected by the later rule", async () => {
    const task = await runTool(tg, ADMIN, bash("echo a && rm b"));
    expect(task.status.state).toBe("completed");
    expect((await history(tg, ADMIN, task.id)).permissionDecisions).toMatchObject([{ source: "policy:no-rm", optionId: "reject" }]);
  });

  it("a request no rule matches is left to a client (manual default): input-required, then the trail names who answered", async () => {
    const before = replies(tg).length;
    const task = await runTool(tg, ADMIN, bash("echo a && cat b"));
    expect(task.status.state).toBe("input-required");
    expect(replies(tg).length).toBe(before);
    const interrupt = task.metadata.shared.interrupt;
    const pending = await ok(await rpcAs(tg.url, ADMIN, "tasks/get", { id: task.id }));
    expect(pending.metadata.opencode.governance).toEqual({ decisions: 0, pending: 1 });
    expect((await history(tg, ADMIN, task.id)).pendingPermissions).toMatchObject([
      { requestId: interrupt.request_id, interruptType: "permission", permission: "bash", patterns: ["echo a", "cat b"] },
    ]);
    await ok(await rpcAs(tg.url, ADMIN, "a2a.interrupt.permission.reply", { request_id: interrupt.request_id, reply: "once" }));
    const trail = await history(tg, ADMIN, task.id);
    expect(trail.pendingPermissions).toEqual([]);
    expect(trail.permissionDecisions).toMatchObject([
      { requestId: interrupt.request_id, source: "principal:admin", optionId: "once", metadata: { via: "a2a.interrupt.permission.reply" } },
    ]);
  });

  it("an automatic answer OpenCode does not take leaves the request to a client (input-required), answerable as usual", async () => {
    tg.stub.failNext((r) => r.method === "POST" && /^\/permission\/[^/]+\/reply$/.test(r.path), { status: 500, body: { message: "boom" } });
    const task = await runTool(tg, ADMIN, bash("echo fallback"));
    expect(task.status.state).toBe("input-required");
    const requestId = task.metadata.shared.interrupt.request_id;
    expect((await history(tg, ADMIN, task.id)).permissionDecisions).toEqual([]);
    await ok(await rpcAs(tg.url, ADMIN, "a2a.interrupt.permission.reply", { request_id: requestId, reply: "once" }));
    await until("the task to complete", async () => ((await ok(await rpcAs(tg.url, ADMIN, "tasks/get", { id: task.id }))).status.state === "completed" ? true : undefined));
    expect((await history(tg, ADMIN, task.id)).permissionDecisions).toMatchObject([{ requestId, source: "principal:admin" }]);
  });

  it("a principal condition: bob's `ls -la` is approved, alice's waits for her", async () => {
    const bobs = await runTool(tg, as(BOB), bash("ls -la"));
    expect(bobs.status.state).toBe("completed");
    expect((await history(tg, as(BOB), bobs.id)).permissionDecisions).toMatchObject([{ source: "policy:bob-ls" }]);
    const alices = await runTool(tg, as(ALICE), bash("ls -la"));
    expect(alices.status.state).toBe("input-required");
  });

  it("a trust-level condition: the admin's `git status` is approved, alice's (autonomous) waits", async () => {
    const admins = await runTool(tg, ADMIN, bash("git status"));
    expect(admins.status.state).toBe("completed");
    expect((await history(tg, ADMIN, admins.id)).permissionDecisions).toMatchObject([{ source: "policy:admin-git" }]);
    expect((await runTool(tg, as(ALICE), bash("git status"))).status.state).toBe("input-required");
  });

  it("path globs in order: docs/** approved, docs/secret/** manual (the earlier rule), src/*.ts one level only", async () => {
    const guide = await runTool(tg, ADMIN, edit("docs/guide/intro.md"));
    expect(guide.status.state).toBe("completed");
    expect((await history(tg, ADMIN, guide.id)).permissionDecisions).toMatchObject([{ source: "policy:docs-edit", metadata: { patterns: ["docs/guide/intro.md"] } }]);
    expect((await runTool(tg, ADMIN, edit("docs/secret/key.md"))).status.state).toBe("input-required");
    const top = await runTool(tg, ADMIN, edit("src/a.ts"));
    expect(top.status.state).toBe("completed");
    expect(replies(tg).at(-1)!.body).toEqual({ reply: "always" });
    expect((await runTool(tg, ADMIN, edit("src/deep/a.ts"))).status.state).toBe("input-required");
  });
});

describe("every way of answering lands in the trail", () => {
  const askColor = () => tool("question", { questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }] });

  async function waiting(call: ReturnType<typeof tool>, who: Who = as(ALICE)): Promise<{ task: Obj; requestId: string }> {
    const task = await runTool(tg, who, call);
    expect(task.status.state).toBe("input-required");
    return { task, requestId: task.metadata.shared.interrupt.request_id };
  }
  const decisionOf = async (taskId: string) => (await history(tg, as(ALICE), taskId)).permissionDecisions;

  it("a2a.interrupt.question.reply and .reject", async () => {
    const asked = await waiting(askColor());
    await ok(await rpcAs(tg.url, as(ALICE), "a2a.interrupt.question.reply", { request_id: asked.requestId, answers: [["blue"]] }));
    expect(await decisionOf(asked.task.id)).toMatchObject([
      { requestId: asked.requestId, source: "principal:alice", optionId: "answer", metadata: { interrupt_type: "question", via: "a2a.interrupt.question.reply", answers: [["blue"]] } },
    ]);
    const rejected = await waiting(askColor());
    await ok(await rpcAs(tg.url, as(ALICE), "a2a.interrupt.question.reject", { request_id: rejected.requestId }));
    expect(await decisionOf(rejected.task.id)).toMatchObject([{ source: "principal:alice", optionId: "reject", metadata: { via: "a2a.interrupt.question.reject" } }]);
  });

  it("tasks/provideInputAndContinue with permissionOptionId and with input", async () => {
    const permission = await waiting(bash("cat notes"));
    await ok(await rpcAs(tg.url, as(ALICE), "tasks/provideInputAndContinue", { taskId: permission.task.id, permissionOptionId: "reject" }));
    expect(await decisionOf(permission.task.id)).toMatchObject([{ source: "principal:alice", optionId: "reject", metadata: { via: "tasks/provideInputAndContinue" } }]);
    const question = await waiting(askColor());
    await ok(await rpcAs(tg.url, as(ALICE), "tasks/provideInputAndContinue", { taskId: question.task.id, input: message("red") }));
    expect(await decisionOf(question.task.id)).toMatchObject([{ source: "principal:alice", optionId: "answer", metadata: { via: "message", answers: [["red"]] } }]);
  });

  it("a follow-up message answering the question, and an admin answering alice's permission", async () => {
    const question = await waiting(askColor());
    await ok(await rpcAs(tg.url, as(ALICE), "message/send", { message: message("blue", { taskId: question.task.id, contextId: question.task.contextId }) }));
    expect(await decisionOf(question.task.id)).toMatchObject([{ source: "principal:alice", optionId: "answer", metadata: { via: "message" } }]);
    const permission = await waiting(bash("cat secrets"));
    await ok(await rpcAs(tg.url, ADMIN, "a2a.interrupt.permission.reply", { request_id: permission.requestId, reply: "once" }));
    expect(await decisionOf(permission.task.id)).toMatchObject([{ source: "principal:admin", optionId: "once" }]);
  });
});

describe("serving the trail", () => {
  let taskId: string;
  beforeAll(async () => {
    taskId = (await runTool(tg, as(ALICE), bash("echo mine"))).id;
  });

  it("the seed's path, 0.3 and 1.0 REST and JSON-RPC on both lines answer the same trail", async () => {
    const rpcTrail = await history(tg, as(ALICE), taskId);
    expect(rpcTrail.permissionDecisions).toMatchObject([{ source: "policy:echo-ok" }]);
    const v10 = await ok(await rpcAs(tg.url, as(ALICE), "opencode.governance.history", { task_id: taskId }, "1.0"));
    expect(v10).toEqual(rpcTrail);
    for (const [route, headers] of [
      [`/a2a/tasks/${taskId}/governor/history`, {}],
      [`/v1/tasks/${taskId}/governance/history`, {}],
      [`/tasks/${taskId}/governance/history`, { "A2A-Version": "1.0" }],
    ] as const) {
      const res = await httpCall(tg.url, route, { auth: false, headers: { ...as(ALICE), ...headers } });
      expect(res.status, `${route} ${res.text}`).toBe(200);
      expect(res.body).toEqual(rpcTrail);
    }
  });

  it("another principal's task is not found on every path; an admin reads it", async () => {
    const rpcErr = await rpcAs(tg.url, as(BOB), "opencode.governance.history", { task_id: taskId });
    expect(rpcErr.body.error).toMatchObject({ code: -32001 });
    const rpc10 = await rpcAs(tg.url, as(BOB), "opencode.governance.history", { task_id: taskId }, "1.0");
    expect((await errorInfoOf(rpc10.body.error.data)).reason).toBe("TASK_NOT_FOUND");
    for (const route of [`/a2a/tasks/${taskId}/governor/history`, `/v1/tasks/${taskId}/governance/history`, `/tasks/${taskId}/governance/history`]) {
      const res = await httpCall(tg.url, route, { auth: false, headers: as(BOB) });
      expect(res.status, route).toBe(404);
      expect(res.text).toContain("TASK_NOT_FOUND");
    }
    expect((await history(tg, ADMIN, taskId)).permissionDecisions).toHaveLength(1);
  });

  it("unknown tasks are not found, tasks.read is required, a missing task_id is invalid params", async () => {
    const unknown = await httpCall(tg.url, "/v1/tasks/nope/governance/history", { auth: false, headers: as(ALICE) });
    expect(unknown.status).toBe(404);
    const noScope = await httpCall(tg.url, `/a2a/tasks/${taskId}/governor/history`, { auth: false, headers: as(CAROL) });
    expect(noScope.status).toBe(403);
    expect(noScope.text).toContain("SCOPE_INSUFFICIENT");
    expect((await rpcAs(tg.url, as(CAROL), "opencode.governance.history", { task_id: taskId })).body.error).toMatchObject({ code: SCOPE_CODE });
    const invalid = await rpcAs(tg.url, as(ALICE), "opencode.governance.history", {});
    expect(invalid.body.error).toMatchObject({ code: -32602 });
    const unauth = await httpCall(tg.url, `/a2a/tasks/${taskId}/governor/history`, { auth: false });
    expect(unauth.status).toBe(401);
  });

  it("the REST paths need the extensions of A2A_REQUIRED_EXTENSIONS like every extension call", async () => {
    const uri = catalog.extensions.find((e) => e.name === "opencode-governance")!.uri;
    const { startGateway } = await import("../support/gateway.js");
    const strict = await startGateway({ A2A_REQUIRED_EXTENSIONS: uri });
    try {
      const refused = await httpCall(strict.url, "/a2a/tasks/t1/governor/history");
      expect(refused.status, refused.text).toBe(400);
      expect(refused.text).toContain("EXTENSION_SUPPORT_REQUIRED");
      const activated = await httpCall(strict.url, "/a2a/tasks/t1/governor/history", { headers: { "A2A-Extensions": uri } });
      expect(activated.status, activated.text).toBe(404);
    } finally {
      await strict.close();
    }
  });

  it("the extended card lists the governance extension with its method", async () => {
    const card = await ok(await rpcAs(tg.url, ADMIN, "agent/getAuthenticatedExtendedCard", {}));
    const ext = (card.capabilities.extensions as Obj[]).find((e) => String(e.uri).endsWith("#opencode-governance-v1"));
    expect(ext, JSON.stringify(card.capabilities.extensions.map((e: Obj) => e.uri))).toBeDefined();
    expect(JSON.stringify(ext)).toContain("opencode.governance.history");
  });
});

describe("the policy file", () => {
  it("is re-read when it changes: new rules apply; an invalid version is logged and the last good rules stay", async () => {
    const file = path.join(dir, "reload.json");
    writePolicies(file, { rules: [{ id: "echo-ok", permission: "bash", patterns: ["echo *"], decision: "approve" }] });
    const { pino } = await import("pino");
    const { Capture } = await import("../support/logs.js");
    const capture = new Capture();
    const own = await startTaskGateway({ A2A_GOVERNANCE_POLICIES_FILE: file }, {}, { logger: pino({ level: "info" }, capture) });
    try {
      expect((await runTool(own, ADMIN, bash("touch a"))).status.state).toBe("input-required");
      writePolicies(file, {
        rules: [
          { id: "echo-ok", permission: "bash", patterns: ["echo *"], decision: "approve" },
          { id: "touch-ok", permission: "bash", patterns: ["touch *"], decision: "approve" },
        ],
      });
      await new Promise((r) => setTimeout(r, 1100));
      const approved = await runTool(own, ADMIN, bash("touch b"));
      expect(approved.status.state).toBe("completed");
      expect((await history(own, ADMIN, approved.id)).permissionDecisions).toMatchObject([{ source: "policy:touch-ok" }]);

      writePolicies(file, { rules: [{ id: "everything", permission: "*", decision: "approve" }] });
      await new Promise((r) => setTimeout(r, 1100));
      expect((await runTool(own, ADMIN, bash("touch c"))).status.state).toBe("completed");
      expect((await runTool(own, ADMIN, bash("cat c"))).status.state).toBe("input-required");
      await until("the reload error in the log", async () => capture.text.includes("cannot be loaded") || undefined);
      expect(capture.text).toContain('rule \\"everything\\" (rules[0])');
    } finally {
      await own.close();
    }
  });

  const bad: [string, unknown, string][] = [
    ["not JSON", "{rules:", "not valid JSON"],
    ["not the schema", { rules: [{ id: "x", permission: "bash", decision: "allow" }] }, "rules.0.decision"],
    ["an unknown field", { rules: [{ id: "x", permission: "bash", patterns: ["echo *"], decision: "approve", patern: "y" }] }, "rules.0"],
    ["a duplicate id", { rules: [RULES.rules[0], { ...RULES.rules[1], id: "echo-ok" }] }, 'rule "echo-ok" (rules[1]): the id is used by an earlier rule'],
    ["an unknown permission", { rules: [{ id: "typo", permission: "bsah", patterns: ["echo *"], decision: "approve" }] }, 'rule "typo" (rules[0]): unknown permission "bsah"'],
    ["approve always on bash", { rules: [{ id: "always-echo", permission: "bash", patterns: ["echo *"], decision: "approve", reply: "always" }] }, 'rule "always-echo" (rules[0]): approve with reply "always" on bash'],
    ["approve of * without opt-in", { rules: [{ id: "all-bash", permission: "bash", patterns: ["*"], decision: "approve" }] }, 'rule "all-bash" (rules[0]): approves every request'],
    ["approve without patterns", { rules: [{ id: "all-read", permission: "read", decision: "approve" }] }, 'rule "all-read" (rules[0]): approves every request'],
    ["approve of every permission", { rules: [{ id: "all", permission: "*", patterns: ["docs/**"], decision: "approve" }] }, 'rule "all" (rules[0]): approves every request of every permission'],
    ["always on a broad rule", { rules: [{ id: "wide", permission: "read", patterns: ["**"], decision: "approve", reply: "always", allow_broad: true }] }, 'rule "wide" (rules[0]): approve with reply "always" on a rule that matches everything'],
    ["reply on reject", { rules: [{ id: "r", permission: "bash", patterns: ["rm *"], decision: "reject", reply: "once" }] }, 'rule "r" (rules[0]): reply is only for approve rules'],
    ["a pointless opt-in", { rules: [{ id: "o", permission: "bash", patterns: ["echo *"], decision: "approve", allow_broad: true }] }, 'rule "o" (rules[0]): allow_broad is only for approve rules that match everything'],
    ["an unknown trust level", { rules: [{ id: "t", permission: "bash", patterns: ["echo *"], decision: "approve", trust_levels: ["root"] }] }, 'rule "t" (rules[0]): unknown trust level "root"'],
  ];
  it.each(bad)("refuses the start with %s", async (_name, content, expected) => {
    const file = path.join(dir, `bad-${randomUUID()}.json`);
    writePolicies(file, content);
    const { startGateway } = await import("../support/gateway.js");
    const started = startGateway({ A2A_GOVERNANCE_POLICIES_FILE: file });
    await expect(started).rejects.toMatchObject({ name: "ConfigError" });
    await expect(started).rejects.toThrow(expected);
  });

  it("refuses a missing file at start; accepts the documented minimal shape and an opted-in broad rule", async () => {
    const { startGateway } = await import("../support/gateway.js");
    await expect(startGateway({ A2A_GOVERNANCE_POLICIES_FILE: path.join(dir, "missing.json") })).rejects.toThrow("cannot read");
    const file = path.join(dir, "minimal.json");
    writePolicies(file, '{"rules":[{"id":"echo-ok","permission":"bash","patterns":["echo *"],"decision":"approve"}]}');
    await (await startGateway({ A2A_GOVERNANCE_POLICIES_FILE: file })).close();
    writePolicies(file, { rules: [{ id: "reads", permission: "read", patterns: ["**"], decision: "approve", allow_broad: true }] });
    await (await startGateway({ A2A_GOVERNANCE_POLICIES_FILE: file })).close();
  });
});

describe("expiry", () => {
  it("a request nobody answers lands in the trail as expired and leaves pendingPermissions", async () => {
    // On SQLite: the expiry and the summary are read back from the trail table.
    const own = await startTaskGateway({
      A2A_INTERRUPT_REQUEST_TTL_SECONDS: "1",
      A2A_TASK_STORE_BACKEND: "database",
      A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(dir, "expiry.db")}`,
    });
    try {
      const task = await runTool(own, ADMIN, bash("cat x"));
      expect(task.status.state).toBe("input-required");
      const requestId = task.metadata.shared.interrupt.request_id;
      expect((await history(own, ADMIN, task.id)).pendingPermissions).toHaveLength(1);
      const trail = await until("the expiry", async () => {
        const t = await history(own, ADMIN, task.id);
        return t.permissionDecisions.length > 0 ? t : undefined;
      });
      expect(trail.pendingPermissions).toEqual([]);
      expect(trail.permissionDecisions).toMatchObject([{ requestId, source: "expired", optionId: "expired", metadata: { via: "ttl" } }]);
      const got = await ok(await rpcAs(own.url, ADMIN, "tasks/get", { id: task.id }));
      expect(got.metadata.opencode.governance).toEqual({ decisions: 1, pending: 0, last_source: "expired" });
    } finally {
      await own.close();
    }
  });
});
