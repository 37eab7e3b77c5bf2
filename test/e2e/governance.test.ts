// e2e: governance policies against the real `opencode serve` (hermetic, driven by the scripted model server), with
// an OpenCode config that makes bash ask (`permission: { bash: "ask" }`, reference opencode-upstream.md §7.3) and a
// policy file (A2A_GOVERNANCE_POLICIES_FILE) that approves `echo *` and rejects `rm *`, on a SQLite store:
//   - an approved bash call runs without the task ever turning input-required (the whole stream), OpenCode ran the
//     command, and the trail shows `policy:echo-ok`;
//   - a rejected one fails in OpenCode with the rejection the model sees, the trail shows `policy:no-rm`;
//   - a request no rule matches still turns the task input-required, and once the admin answers, the trail shows
//     `principal:admin`.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelServer } from "../../tools/upstream/model-server.js";
import { text, tool } from "../../tools/upstream/script.js";
import { expectValid } from "../support/contract.js";
import { call as httpCall, rpc, type StartedGateway } from "../support/gateway.js";
import { startRealStack, type RealStack } from "../support/stack.js";
import { until } from "../support/task-wire.js";

let stack: RealStack;
let model: ModelServer;
let gw: StartedGateway;
let scratch: string;

beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-governance-"));
  const policies = path.join(scratch, "policies.json");
  fs.writeFileSync(
    policies,
    JSON.stringify({
      rules: [
        { id: "echo-ok", permission: "bash", patterns: ["echo *"], decision: "approve" },
        { id: "no-rm", permission: "bash", patterns: ["rm *"], decision: "reject" },
      ],
    }),
  );
  stack = await startRealStack({
    env: { A2A_GOVERNANCE_POLICIES_FILE: policies, A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(scratch, "tasks.db")}` },
    opencode: { config: { permission: { bash: "ask" } } },
  });
  ({ model, gw } = stack);
}, 90_000);

afterAll(async () => {
  await stack?.close();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
}, 30_000);

let rpcId = 0;
async function call(method: string, params: unknown): Promise<any> {
  const res = await rpc(gw.url, { jsonrpc: "2.0", id: ++rpcId, method, params }, { "A2A-Version": "0.3" });
  expect(res.status, res.text).toBe(200);
  expect(res.body.error, res.text).toBeUndefined();
  return res.body.result;
}
const message = (value: string, extra: Record<string, unknown> = {}) => ({ kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: value }], ...extra });
const bash = (command: string) => tool("bash", { command, description: "scripted command" });

/** A 0.3 message/stream read to its end: every event's result. */
async function streamed(prompt: string): Promise<any[]> {
  const res = await fetch(`${gw.url}/`, {
    method: "POST",
    headers: { authorization: `Bearer ${gw.token}`, "content-type": "application/json", accept: "text/event-stream", "A2A-Version": "0.3" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method: "message/stream", params: { message: message(prompt) } }),
  });
  expect(res.status).toBe(200);
  return (await res.text())
    .split("\n")
    .filter((l) => l.startsWith("data:"))
    .map((l) => JSON.parse(l.slice(5)).result);
}
const statesOf = (events: any[]): string[] => events.flatMap((e) => (e.kind === "status-update" || e.kind === "task" ? [e.status.state] : []));

async function trail(taskId: string): Promise<any> {
  const history = await call("opencode.governance.history", { task_id: taskId });
  await expectValid("extensions/GovernanceHistory", history);
  // the seed's path answers the same
  const seed = await httpCall(gw.url, `/a2a/tasks/${taskId}/governor/history`);
  expect(seed.status, seed.text).toBe(200);
  expect(seed.body).toEqual(history);
  return history;
}

describe("governance policies against the real OpenCode", () => {
  it("an approve rule: OpenCode runs the command, the task never turns input-required, the trail shows the rule", async () => {
    model.script(bash("echo governed-output"), text("Echoed."));
    const events = await streamed("echo something");
    const states = statesOf(events);
    expect(states).not.toContain("input-required");
    expect(states.at(-1)).toBe("completed");
    const taskId = events[0].id as string;
    // the command really ran: its output went back to the model
    expect(JSON.stringify(model.toolResults(model.chatRequests().at(-1)!))).toContain("governed-output");
    const history = await trail(taskId);
    expect(history.permissionDecisions).toMatchObject([
      { source: "policy:echo-ok", optionId: "once", governorsInvolved: [], metadata: { permission: "bash", patterns: ["echo governed-output"] } },
    ]);
    expect(history.pendingPermissions).toEqual([]);
    const task = await call("tasks/get", { id: taskId });
    expect(task.metadata.opencode.governance).toEqual({ decisions: 1, pending: 0, last_source: "policy:echo-ok" });
  }, 60_000);

  it("a reject rule: OpenCode sees the rejection (the tool call fails), the task completes, the trail shows the rule", async () => {
    model.script(bash("rm -f nothing.txt"), text("Could not remove it."));
    const events = await streamed("remove a file");
    expect(statesOf(events)).not.toContain("input-required");
    expect(statesOf(events).at(-1)).toBe("completed");
    const results = JSON.stringify(model.toolResults(model.chatRequests().at(-1)!));
    expect(results).toContain("rejected permission");
    expect(results).toContain("no-rm");
    const history = await trail(events[0].id);
    expect(history.permissionDecisions).toMatchObject([{ source: "policy:no-rm", optionId: "reject" }]);
  }, 60_000);

  it("a request no rule matches turns the task input-required; the principal's answer is in the trail", async () => {
    model.script(bash("ls"), text("Listed."));
    const task = await call("message/send", { message: message("list the files") });
    expect(task.status.state, JSON.stringify(task.status)).toBe("input-required");
    const interrupt = task.metadata.shared.interrupt;
    expect(interrupt).toMatchObject({ type: "permission", details: { permission: "bash" } });
    expect((await trail(task.id)).pendingPermissions).toMatchObject([{ requestId: interrupt.request_id, permission: "bash" }]);

    await call("a2a.interrupt.permission.reply", { request_id: interrupt.request_id, reply: "once" });
    await until("the task to complete", async () => ((await call("tasks/get", { id: task.id })).status.state === "completed" ? true : undefined), 30_000);
    const history = await trail(task.id);
    expect(history.pendingPermissions).toEqual([]);
    expect(history.permissionDecisions).toMatchObject([
      { requestId: interrupt.request_id, source: "principal:admin", optionId: "once", metadata: { via: "a2a.interrupt.permission.reply" } },
    ]);
  }, 60_000);
});
