// e2e: interactive interrupts against the real `opencode serve` (hermetic, driven by the scripted model server).
// A read outside the workspace makes OpenCode ask for `external_directory` permission: the task turns input-required,
// the request is listed by opencode.permissions.list and answered with a2a.interrupt.permission.reply; the tool then
// reads the file and the turn completes. OpenCode's question tool is answered the A2A way: a follow-up message with
// the task's id. Both on a SQLite store, over JSON-RPC (0.3 and 1.0).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelServer } from "../../tools/upstream/model-server.js";
import { text, tool } from "../../tools/upstream/script.js";
import { expectValid } from "../support/contract.js";
import { rpc, type StartedGateway } from "../support/gateway.js";
import { startRealStack, type RealStack } from "../support/stack.js";

let stack: RealStack;
let model: ModelServer;
let gw: StartedGateway;
let scratch: string;
let outsideFile: string;

beforeAll(async () => {
  // Outside the OpenCode workspace (and outside <tmpdir>/opencode, which OpenCode exempts).
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-interrupts-"));
  outsideFile = path.join(scratch, "secret.txt");
  fs.writeFileSync(outsideFile, "the outside secret is 4242\n");
  stack = await startRealStack({ env: { A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(scratch, "tasks.db")}` } });
  ({ model, gw } = stack);
}, 90_000);

afterAll(async () => {
  await stack?.close();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
}, 30_000);

type Line = "0.3" | "1.0";
const SEND = { "0.3": "message/send", "1.0": "SendMessage" } as const;
const GET = { "0.3": "tasks/get", "1.0": "GetTask" } as const;

let rpcId = 0;
async function call(line: Line, method: string, params: unknown): Promise<any> {
  const id = ++rpcId;
  const res = await rpc(gw.url, { jsonrpc: "2.0", id, method, params }, { "A2A-Version": line });
  expect(res.status, res.text).toBe(200);
  expect(res.body.error, res.text).toBeUndefined();
  return res.body.result;
}

function userMessage(line: Line, value: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  if (line === "1.0") return { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text: value }], ...extra };
  return { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: value }], ...extra };
}
const taskOf = (line: Line, result: any): any => (line === "0.3" ? result : result.task);
const stateOf = (task: any): string => String(task.status.state).replace(/^TASK_STATE_/, "").toLowerCase().replace(/_/g, "-");
const textOf = (message: any): string => (message?.parts ?? []).map((p: any) => p.text ?? "").join("");

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each(["0.3", "1.0"] as const)("interrupts against the real OpenCode (%s)", (line) => {
  it("a permission (reading a file outside the workspace) is answered with a2a.interrupt.permission.reply", async () => {
    model.script(tool("read", { filePath: outsideFile }), text("I read the file."));
    const task = taskOf(line, await call(line, SEND[line], { message: userMessage(line, "read the secret file") }));
    expect(stateOf(task), JSON.stringify(task.status)).toBe("input-required");
    const interrupt = task.metadata.shared.interrupt;
    await expectValid("extensions/InterruptHint", interrupt);
    expect(interrupt).toMatchObject({ type: "permission", phase: "asked", details: { permission: "external_directory" } });
    expect(interrupt.details.patterns.join(" ")).toContain(scratch);

    const listed = await call(line, "opencode.permissions.list", {});
    await expectValid("extensions/InterruptRecoveryResult", listed);
    expect(listed.items.map((i: any) => [i.request_id, i.task_id, i.session_id])).toEqual([
      [interrupt.request_id, task.id, task.metadata.shared.session.id],
    ]);
    // the wrong callback is refused without touching OpenCode
    const mismatch = await rpc(gw.url, { jsonrpc: "2.0", id: 1, method: "a2a.interrupt.question.reject", params: { request_id: interrupt.request_id } }, { "A2A-Version": line });
    expect(mismatch.body.error.code).toBeDefined();
    expect(JSON.stringify(mismatch.body.error)).toContain("INTERRUPT_TYPE_MISMATCH");

    const ok = await call(line, "a2a.interrupt.permission.reply", { request_id: interrupt.request_id, reply: "once" });
    expect(ok).toEqual({ ok: true, request_id: interrupt.request_id });

    const done = await until("the task to complete", async () => {
      const t = await call(line, GET[line], { id: task.id });
      return stateOf(t) === "completed" ? t : undefined;
    });
    expect(textOf(done.history.at(-1))).toContain("I read the file.");
    // the tool really ran: OpenCode sent the file's content back to the model
    const lastChat = model.chatRequests().at(-1)!;
    expect(JSON.stringify(model.toolResults(lastChat))).toContain("the outside secret is 4242");
    expect((await call(line, "opencode.permissions.list", {})).items).toEqual([]);
    // answered: a second reply is not found
    const again = await rpc(gw.url, { jsonrpc: "2.0", id: 2, method: "a2a.interrupt.permission.reply", params: { request_id: interrupt.request_id, reply: "once" } }, { "A2A-Version": line });
    expect(JSON.stringify(again.body.error)).toContain("INTERRUPT_REQUEST_NOT_FOUND");
  }, 60_000);

  it("a question is answered with a follow-up message to the input-required task", async () => {
    const questions = [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }];
    model.script(tool("question", { questions }), text("Blue is a fine choice."));
    const task = taskOf(line, await call(line, SEND[line], { message: userMessage(line, "ask me for a color") }));
    expect(stateOf(task), JSON.stringify(task.status)).toBe("input-required");
    const interrupt = task.metadata.shared.interrupt;
    await expectValid("extensions/InterruptHint", interrupt);
    expect(interrupt).toMatchObject({ type: "question", phase: "asked" });
    expect(interrupt.details.questions[0]).toMatchObject({ question: "Pick a color?", options: [{ label: "blue" }, { label: "red" }] });
    const listed = await call(line, "opencode.questions.list", {});
    expect(listed.items.map((i: any) => i.request_id)).toEqual([interrupt.request_id]);

    const continued = taskOf(line, await call(line, SEND[line], { message: userMessage(line, "blue", { taskId: task.id, contextId: task.contextId }) }));
    expect(continued.id).toBe(task.id);
    expect(stateOf(continued)).toBe("completed");
    expect(textOf(continued.history.at(-1))).toContain("Blue is a fine choice.");
    // OpenCode recorded the answer in the question tool's result
    const lastChat = model.chatRequests().at(-1)!;
    expect(JSON.stringify(model.toolResults(lastChat))).toContain("blue");
    expect((await call(line, "opencode.questions.list", {})).items).toEqual([]);
  }, 60_000);
});
