// e2e: a post-run governor against the real `opencode serve` (hermetic, driven by the scripted model server). The
// policy file (A2A_GOVERNANCE_POLICIES_FILE) holds one agent governor with follow-ups on (one round):
//   - the task's turn writes a file and completes; the governor (an OpenCode agent in a child session of the task's
//     session) reviews the diff through OpenCode's structured output and asks for more work;
//   - its follow-up prompt runs as a new turn in the task's session, within the same task; the governor reviews
//     again (ok) and the task completes with both rounds in its trail;
//   - the reviewer's session is a child of the task's, could only read (no bash, no write among its tools), and
//     was asked for the GovernorAnswer schema.
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

let stack: RealStack;
let model: ModelServer;
let gw: StartedGateway;
let scratch: string;

beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-governors-"));
  const policies = path.join(scratch, "policies.json");
  fs.writeFileSync(
    policies,
    JSON.stringify({
      governors: [{ id: "code-reviewer", kind: "agent", prompt: "Check that every new file ends with a second line.", timeout_seconds: 60 }],
      follow_up: { enabled: true, max_rounds: 1 },
    }),
  );
  stack = await startRealStack({ env: { A2A_GOVERNANCE_POLICIES_FILE: policies, A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(scratch, "tasks.db")}` } });
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
const message = (value: string) => ({ kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: value }] });
const toolNames = (req: { body: { tools?: unknown[] } }): string[] => (req.body.tools ?? []).map((t) => String((t as { function?: { name?: string } }).function?.name ?? "")).sort();

describe("a post-run governor against the real OpenCode", () => {
  it("an agent governor reviews the finished turn, its follow-up runs as a new turn of the task, and both rounds are in the trail", async () => {
    model.script(
      tool("write", { filePath: "hello.txt", content: "hello\n" }),
      text("Wrote hello.txt."),
      // the reviewer (child session): asks for more
      tool("StructuredOutput", { status: "needs_attention", messages: ["hello.txt has one line"], followUpPrompt: "Add a second line to hello.txt." }),
      // the follow-up turn in the task's session
      tool("write", { filePath: "hello.txt", content: "hello\nworld\n" }),
      text("Added a second line."),
      // the second review
      tool("StructuredOutput", { status: "ok", messages: ["two lines now"] }),
    );
    const task = await call("message/send", { message: message("create hello.txt") });
    expect(task.status.state, JSON.stringify(task.status)).toBe("completed");
    expect(model.pending()).toBe(0);
    expect(fs.readFileSync(path.join(stack.oc.workspace, "hello.txt"), "utf8")).toBe("hello\nworld\n");

    // the trail: two rounds in the seed's shape
    const history = await call("opencode.governance.history", { task_id: task.id });
    await expectValid("extensions/GovernanceHistory", history);
    const seed = await httpCall(gw.url, `/a2a/tasks/${task.id}/governor/history`);
    expect(seed.body).toEqual(history);
    expect(history.governorFeedback).toMatchObject([
      {
        phase: "post_run",
        round: 1,
        followUpSent: true,
        summary: ["[code-reviewer] Needs attention: hello.txt has one line"],
        results: [{ governorId: "code-reviewer", status: "needs_attention", messages: ["hello.txt has one line"], followUpPrompt: "Add a second line to hello.txt." }],
      },
      { phase: "post_run", round: 2, followUpSent: false, results: [{ governorId: "code-reviewer", status: "ok", messages: ["two lines now"] }] },
    ]);
    expect(task.metadata.opencode.governance).toMatchObject({ reviews: 2, last_review: "ok" });

    // the follow-up: a user message of the task's history, sent to OpenCode in the task's session
    const sessionId = task.metadata.shared.session.id as string;
    expect(task.history.filter((m: any) => m.role === "user").map((m: any) => m.parts[0].text)).toEqual(["create hello.txt", "Add a second line to hello.txt."]);
    const taskRequests = model.chatRequests().filter((r) => r.sessionID === sessionId);
    expect(model.lastUserText(taskRequests.at(-1)!)).toContain("Add a second line to hello.txt.");
    // the `changes` artifact covers both turns' work
    const changes = task.artifacts.find((a: any) => a.name === "changes");
    const patches = changes.parts.map((p: any) => Buffer.from(p.file.bytes, "base64").toString("utf8")).join("");
    expect(patches).toContain("+hello");
    expect(patches).toContain("+world");

    // the reviewer: a child session of the task's, read-only tools plus StructuredOutput, given the diff
    const childId = history.governorFeedback[0].results[0].details.session_id as string;
    const child = (await (await fetch(`${stack.oc.url}/session/${childId}`)).json()) as { parentID?: string };
    expect(child.parentID).toBe(sessionId);
    const review = model.chatRequests().find((r) => r.sessionID === childId)!;
    const tools = toolNames(review);
    expect(tools).toContain("StructuredOutput");
    expect(tools).toContain("read");
    for (const forbidden of ["bash", "write", "edit"]) expect(tools).not.toContain(forbidden);
    const prompt = model.lastUserText(review);
    expect(prompt).toContain("Check that every new file ends with a second line.");
    expect(prompt).toContain("hello.txt");
    expect(prompt).toContain("Wrote hello.txt.");
  }, 90_000);
});
