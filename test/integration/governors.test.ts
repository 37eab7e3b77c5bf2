// Post-run governors over the stub OpenCode (A2A_GOVERNANCE_POLICIES_FILE `governors` and `follow_up`): each
// principal of this file has its own governors (their `principals` condition), so every test reads one behaviour:
//   - a command governor reviews a completed turn before the task completes: the stream shows the review (running,
//     then done, the task `working` throughout), the trail keeps the round in the seed's shape, the task's metadata
//     summarizes it; `run_on: changes` governors skip a turn that changed nothing; trust-level conditions hold;
//   - the program gets the diff on stdin, runs in the task's directory, and sees none of the gateway's variables;
//   - follow-ups: a governor's followUpPrompt runs in the task's session within the same task, then the governors
//     review again; rounds are bounded by max_rounds; with follow-ups off the prompt is only recorded;
//   - failing, silent, out-of-shape and slow governors give `needs_attention` with the reason, the task still
//     completes; canceling a task under review kills the program and the task ends canceled;
//   - an agent governor reviews in a read-only child session of the task's session through structured output;
//   - the trail stays owner-scoped.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalog, expectValid } from "../support/contract.js";
import { rpc, TEST_TOKEN, type HttpResult } from "../support/gateway.js";
import { until } from "../support/task-wire.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text, tool } from "../../tools/upstream/script.js";

type Obj = Record<string, any>;
const SCOPES = catalog.scopes.filter((s) => s !== "audit.read");
const cred = (name: string) => ({ id: `${name}-key`, principal: name, scheme: "bearer", secret: `${name}-governors-secret-0123456789`, trust_level: "autonomous", scopes: SCOPES });
const PEOPLE = ["alice", "bob", "carol", "dave", "erin", "frank"] as const;
const CREDS = Object.fromEntries(PEOPLE.map((p) => [p, cred(p)])) as Record<(typeof PEOPLE)[number], ReturnType<typeof cred>>;
const as = (who: (typeof PEOPLE)[number]) => ({ authorization: `Bearer ${CREDS[who].secret}` });

let dir: string;
let policyFile: string;
let tg: TaskGateway;

/** A node program as a command governor: `[node, script]`. */
function program(name: string, source: string): string[] {
  const file = path.join(dir, `${name}.cjs`);
  fs.writeFileSync(file, source);
  return [process.execPath, file];
}
const READ_STDIN = `let input = ""; process.stdin.on("data", (c) => (input += c)); process.stdin.on("end", () => main(input));\n`;

function policies(followUp: Obj | undefined): Obj {
  return {
    governors: [
      // alice: one that always runs, one only for changes, one her trust level never meets
      { id: "lint", kind: "command", run_on: "always", principals: ["alice"], command: program("ok", `${READ_STDIN}function main() { console.log(JSON.stringify({ status: "ok", messages: ["fine"] })); }`) },
      {
        id: "probe",
        kind: "command",
        principals: ["alice"],
        env: { PROBE_EXTRA: "given" },
        command: program(
          "probe",
          `${READ_STDIN}function main(input) { console.log(JSON.stringify({ status: "ok", messages: [input, JSON.stringify(Object.keys(process.env).sort()), process.env.A2A_GOVERNOR_TASK_ID, process.env.A2A_GOVERNOR_SESSION_ID, process.env.A2A_GOVERNOR_ROUND, process.cwd(), process.env.PROBE_EXTRA] })); }`,
        ),
      },
      { id: "admins-only", kind: "command", run_on: "always", principals: ["alice"], trust_levels: ["admin"], command: program("never", `console.log("{}")`) },
      // bob: asks for tests until round 2; carol: never satisfied
      {
        id: "nag",
        kind: "command",
        run_on: "always",
        principals: ["bob", "carol"],
        command: program(
          "nag",
          `${READ_STDIN}function main() { const round = Number(process.env.A2A_GOVERNOR_ROUND); const until = process.env.A2A_GOVERNOR_TASK_ID && process.argv[2] === "forever" ? Infinity : 2;
  if (round < until) console.log(JSON.stringify({ status: "needs_attention", messages: ["add tests"], followUpPrompt: "Please add tests (round " + round + ")." }));
  else console.log(JSON.stringify({ status: "ok", messages: ["tests are there"] })); }`,
        ),
      },
      // dave: three ways of giving no review
      { id: "broken", kind: "command", run_on: "always", principals: ["dave"], command: program("broken", `process.stderr.write("lint crashed"); process.exit(3);`) },
      { id: "odd", kind: "command", run_on: "always", principals: ["dave"], command: program("odd", `console.log(JSON.stringify({ status: "great" }));`) },
      { id: "slow", kind: "command", run_on: "always", principals: ["dave"], timeout_seconds: 1, command: program("slow", `setTimeout(() => console.log("{}"), 30000);`) },
      // erin: an OpenCode agent
      { id: "reviewer", kind: "agent", run_on: "always", principals: ["erin"], prompt: "Review the change for missing tests.", timeout_seconds: 20 },
      // frank: a review that takes long (the task is canceled under it)
      { id: "sleepy", kind: "command", run_on: "always", principals: ["frank"], timeout_seconds: 60, command: program("sleepy", `setTimeout(() => console.log("{}"), 60000);`) },
    ],
    ...(followUp === undefined ? {} : { follow_up: followUp }),
  };
}
// carol's nag never stops: the same program with an argument
function carolForever(p: Obj): Obj {
  const nag = p.governors.find((g: Obj) => g.id === "nag");
  p.governors.push({ ...nag, id: "nag-forever", principals: ["carol"], command: [...nag.command, "forever"] });
  nag.principals = ["bob"];
  return p;
}

let rpcId = 0;
async function rpcAs(who: Record<string, string>, method: string, params: unknown): Promise<HttpResult> {
  return rpc(tg.url, { jsonrpc: "2.0", id: ++rpcId, method, params }, { ...who, "A2A-Version": "0.3" });
}
async function ok(res: HttpResult): Promise<any> {
  expect(res.status, res.text).toBe(200);
  expect(res.body?.error, res.text).toBeUndefined();
  return res.body.result;
}
const message = (value: string) => ({ kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: value }] });

/** A 0.3 message/stream of `who`, read to its end: every event's result. */
async function streamed(who: (typeof PEOPLE)[number], prompt: string): Promise<Obj[]> {
  const res = await fetch(`${tg.url}/`, {
    method: "POST",
    headers: { ...as(who), "content-type": "application/json", accept: "text/event-stream", "A2A-Version": "0.3" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method: "message/stream", params: { message: message(prompt) } }),
  });
  expect(res.status).toBe(200);
  return (await res.text())
    .split("\n")
    .filter((l) => l.startsWith("data:"))
    .map((l) => JSON.parse(l.slice(5)).result);
}
const reviewEvents = (events: Obj[]): Obj[] => events.filter((e) => e.kind === "status-update" && e.metadata?.opencode?.governance?.review !== undefined);

async function trail(who: Record<string, string>, taskId: string): Promise<Obj> {
  const history = await ok(await rpcAs(who, "opencode.governance.history", { task_id: taskId }));
  await expectValid("extensions/GovernanceHistory", history);
  return history;
}
const getTask = async (who: Record<string, string>, id: string): Promise<Obj> => ok(await rpcAs(who, "tasks/get", { id }));
const textOf = (task: Obj): string =>
  (task.artifacts ?? [])
    .flatMap((a: Obj) => a.parts)
    .filter((p: Obj) => p.kind === "text")
    .map((p: Obj) => p.text)
    .join("");

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-governors-"));
  policyFile = path.join(dir, "policies.json");
  fs.writeFileSync(policyFile, JSON.stringify(carolForever(policies({ enabled: true, max_rounds: 2 }))));
  tg = await startTaskGateway({
    A2A_CREDENTIALS: JSON.stringify(Object.values(CREDS)),
    A2A_GOVERNANCE_POLICIES_FILE: policyFile,
    A2A_RATE_LIMIT_MAX_REQUESTS: "0",
    A2A_BEARER_TOKEN: TEST_TOKEN,
    A2A_SECRET_CANARY: "must-not-reach-governors",
  });
}, 30_000);

afterAll(async () => {
  await tg?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe("post-run governors (command)", () => {
  it("review a completed turn before the task completes: stream, trail in the seed's shape, summary", async () => {
    tg.stub.script(text("Nothing to change."));
    const events = await streamed("alice", "look around");
    const taskId = events[0]!.id as string;
    const states = events.flatMap((e) => (e.kind === "status-update" || e.kind === "task" ? [e.status.state] : []));
    expect(states.at(-1)).toBe("completed");
    expect(states.slice(0, -1).every((s) => s === "working")).toBe(true);
    // the review in the stream: running (who), then done (the verdict), both before the final status
    const reviews = reviewEvents(events);
    expect(reviews.map((e) => e.metadata.opencode.governance.review)).toEqual([
      { phase: "post_run", round: 1, state: "running", governors: ["lint"] },
      { phase: "post_run", round: 1, state: "done", status: "ok", governors: ["lint"], follow_up: false },
    ]);
    expect(reviews.every((e) => e.status.state === "working" && e.final === false)).toBe(true);
    expect(reviews[1]!.status.message.parts[0].text).toContain("[lint] Ok: fine");
    expect(events.indexOf(reviews[1]!)).toBeLessThan(events.length - 1);
    // the trail: one round, `lint` only (`probe` waits for changes, `admins-only` for another trust level)
    const history = await trail(as("alice"), taskId);
    expect(history.governorFeedback).toHaveLength(1);
    const [entry] = history.governorFeedback;
    expect(entry).toMatchObject({ phase: "post_run", round: 1, followUpSent: false, summary: ["[lint] Ok: fine"] });
    expect(Date.parse(entry.timestamp)).not.toBeNaN();
    expect(entry.results).toEqual([{ governorId: "lint", status: "ok", messages: ["fine"], details: { kind: "command", exit_code: 0, duration_ms: expect.any(Number) } }]);
    const task = await getTask(as("alice"), taskId);
    expect(task.metadata.opencode.governance).toEqual({ decisions: 0, pending: 0, reviews: 1, last_review: "ok" });
    // the admin reads it too; another principal does not
    expect((await trail({ authorization: `Bearer ${TEST_TOKEN}` }, taskId)).governorFeedback).toHaveLength(1);
    const other = await rpcAs(as("bob"), "opencode.governance.history", { task_id: taskId });
    expect(other.body.error?.code, other.text).toBe(-32001);
  });

  it("a turn that changed files: the program gets the diff on stdin, the task's ids, its directory, and none of the gateway's variables", async () => {
    tg.stub.script(tool("write", { filePath: "notes/todo.md", content: "one\ntwo\n" }), text("Wrote it."));
    const task = await ok(await rpcAs(as("alice"), "message/send", { message: message("write notes") }));
    expect(task.status.state).toBe("completed");
    const history = await trail(as("alice"), task.id);
    const results = history.governorFeedback[0].results;
    expect(results.map((r: Obj) => r.governorId)).toEqual(["lint", "probe"]);
    const [stdin, envKeys, taskId, sessionId, round, cwd, extra] = results[1].messages;
    expect(stdin).toContain("notes/todo.md");
    expect(stdin).toContain("+one");
    expect(taskId).toBe(task.id);
    expect(sessionId).toBe(task.metadata.shared.session.id);
    expect(round).toBe("1");
    expect(fs.realpathSync(cwd)).toBe(fs.realpathSync(process.cwd()));
    expect(extra).toBe("given");
    const keys = JSON.parse(envKeys) as string[];
    expect(keys).toEqual(expect.arrayContaining(["A2A_GOVERNOR_ID", "A2A_GOVERNOR_ROUND", "A2A_GOVERNOR_TASK_ID", "A2A_GOVERNOR_CONTEXT_ID", "A2A_GOVERNOR_SESSION_ID", "A2A_GOVERNOR_DIRECTORY", "PATH"]));
    expect(keys.filter((k) => !k.startsWith("A2A_GOVERNOR_") && !["PATH", "HOME", "LANG", "PROBE_EXTRA"].includes(k))).toEqual([]);
    expect(JSON.stringify(results)).not.toContain("must-not-reach-governors");
    expect(JSON.stringify(results)).not.toContain(TEST_TOKEN);
    // the `changes` artifact is still there, read once for the review and the task
    expect(task.artifacts.some((a: Obj) => a.name === "changes")).toBe(true);
  });
});

describe("follow-ups", () => {
  it("a governor's followUpPrompt runs in the task's session within the same task; the governors review again", async () => {
    tg.stub.script(text("First try."), text("Added the tests."));
    const events = await streamed("bob", "implement it");
    const taskId = events[0]!.id as string;
    const states = events.flatMap((e) => (e.kind === "status-update" || e.kind === "task" ? [e.status.state] : []));
    expect(states.at(-1)).toBe("completed");
    expect(states.filter((s) => s === "completed")).toHaveLength(1);
    expect(reviewEvents(events).map((e) => [e.metadata.opencode.governance.review.round, e.metadata.opencode.governance.review.state, e.metadata.opencode.governance.review.follow_up])).toEqual([
      [1, "running", undefined],
      [1, "done", true],
      [2, "running", undefined],
      [2, "done", false],
    ]);
    const task = await getTask(as("bob"), taskId);
    // the follow-up prompt went to OpenCode in the task's own session, and is in the task's history
    const sessionId = task.metadata.shared.session.id as string;
    const prompts = tg.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${sessionId}/prompt_async`);
    expect(prompts.map((r) => (r.body as Obj).parts[0].text)).toEqual(["implement it", "Please add tests (round 1)."]);
    const followUp = task.history.find((m: Obj) => m.metadata?.opencode?.governance?.follow_up !== undefined);
    expect(followUp).toMatchObject({ role: "user", parts: [{ kind: "text", text: "Please add tests (round 1)." }], metadata: { opencode: { governance: { follow_up: { round: 1, governors: ["nag"] } } } } });
    expect(textOf(task)).toContain("Added the tests.");
    const history = await trail(as("bob"), taskId);
    expect(history.governorFeedback.map((f: Obj) => [f.round, f.followUpSent, f.results[0].status])).toEqual([
      [1, true, "needs_attention"],
      [2, false, "ok"],
    ]);
    expect(history.governorFeedback[0].results[0].followUpPrompt).toBe("Please add tests (round 1).");
    expect(history.governorFeedback[0].summary).toEqual(["[nag] Needs attention: add tests"]);
    expect(task.metadata.opencode.governance).toMatchObject({ reviews: 2, last_review: "ok" });
  });

  it("rounds are bounded by max_rounds: the last review is recorded and sends nothing", async () => {
    tg.stub.script(text("v1"), text("v2"), text("v3"));
    const task = await ok(await rpcAs(as("carol"), "message/send", { message: message("build it") }));
    expect(task.status.state).toBe("completed");
    const history = await trail(as("carol"), task.id);
    expect(history.governorFeedback.map((f: Obj) => [f.round, f.followUpSent])).toEqual([
      [1, true],
      [2, true],
      [3, false],
    ]);
    expect(task.history.filter((m: Obj) => m.metadata?.opencode?.governance?.follow_up !== undefined)).toHaveLength(2);
    const stored = await getTask(as("carol"), task.id);
    expect(stored.metadata.opencode.governance).toMatchObject({ reviews: 3, last_review: "needs_attention" });
  });
});

describe("governors that give no review", () => {
  it("a crash, an answer out of shape and a timeout are needs_attention with the reason; the task still completes", async () => {
    tg.stub.script(text("Done."));
    const started = Date.now();
    const task = await ok(await rpcAs(as("dave"), "message/send", { message: message("go") }));
    expect(task.status.state).toBe("completed");
    // the slow one was stopped at its 1 s budget (not its 30 s)
    expect(Date.now() - started).toBeLessThan(15_000);
    const [entry] = (await trail(as("dave"), task.id)).governorFeedback;
    const byId = Object.fromEntries(entry.results.map((r: Obj) => [r.governorId, r]));
    expect(byId.broken).toMatchObject({ status: "needs_attention", details: { exit_code: 3, stderr: "lint crashed", error: "it exited with code 3 and printed no JSON object" } });
    expect(byId.broken.messages[0]).toContain("it exited with code 3");
    expect(byId.odd).toMatchObject({ status: "needs_attention", details: { exit_code: 0 } });
    expect(byId.odd.details.error).toContain("is not {status, messages, followUpPrompt?}");
    expect(byId.slow).toMatchObject({ status: "needs_attention", details: { error: "no answer within 1 s" } });
    expect(entry.summary).toHaveLength(3);
    expect((await getTask(as("dave"), task.id)).metadata.opencode.governance.last_review).toBe("needs_attention");
  });

  it("canceling a task under review stops its governor and the task ends canceled", async () => {
    tg.stub.script(text("Done."));
    const task = await ok(await rpcAs(as("frank"), "message/send", { message: message("go"), configuration: { blocking: false } }));
    await until("the review runs", async () => {
      const t = await getTask(as("frank"), task.id);
      return t.status.message?.parts?.[0]?.text?.startsWith("Governors reviewing") ? t : undefined;
    });
    const canceled = await ok(await rpcAs(as("frank"), "tasks/cancel", { id: task.id }));
    expect(canceled.status.state).toBe("canceled");
    const entry = await until("the review is recorded", async () => (await trail(as("frank"), task.id)).governorFeedback[0]);
    expect(entry.results[0]).toMatchObject({ governorId: "sleepy", status: "needs_attention", details: { error: "the task was canceled", signal: "SIGTERM" } });
    expect(entry.followUpSent).toBe(false);
    expect((await getTask(as("frank"), task.id)).status.state).toBe("canceled");
  });
});

describe("post-run governors (agent)", () => {
  it("reviews in a read-only child session of the task's session through structured output", async () => {
    tg.stub.script(
      tool("write", { filePath: "src/app.ts", content: "export const x = 1;\n" }),
      text("Implemented."),
      // the reviewer's turn (its child session)
      tool("StructuredOutput", { status: "needs_attention", messages: ["no tests for x"], followUpPrompt: "Add a test for x." }),
      // the follow-up the reviewer asked for, then its second review
      text("Test added."),
      tool("StructuredOutput", { status: "ok", messages: ["covered"] }),
    );
    const task = await ok(await rpcAs(as("erin"), "message/send", { message: message("add x") }));
    expect(task.status.state).toBe("completed");
    const history = await trail(as("erin"), task.id);
    expect(history.governorFeedback.map((f: Obj) => [f.round, f.followUpSent, f.results[0].status])).toEqual([
      [1, true, "needs_attention"],
      [2, false, "ok"],
    ]);
    const first = history.governorFeedback[0].results[0];
    expect(first).toMatchObject({ governorId: "reviewer", messages: ["no tests for x"], followUpPrompt: "Add a test for x.", details: { kind: "agent" } });
    // the child session: the task's session is its parent, it may only read, and the prompt asked for structured output
    const sessionId = task.metadata.shared.session.id as string;
    const childId = first.details.session_id as string;
    const created = tg.stub.requests.filter((r) => r.method === "POST" && r.path === "/session" && (r.body as Obj)?.parentID === sessionId);
    expect(created.length).toBe(2);
    expect((created[0]!.body as Obj).permission[0]).toEqual({ permission: "*", pattern: "*", action: "deny" });
    const prompt = tg.stub.requests.find((r) => r.method === "POST" && r.path === `/session/${childId}/message`)!.body as Obj;
    expect(prompt.format.type).toBe("json_schema");
    expect(prompt.format.schema.required).toEqual(["status", "messages"]);
    expect(prompt.parts[0].text).toContain("Review the change for missing tests.");
    expect(prompt.parts[0].text).toContain("src/app.ts");
    expect(prompt.parts[0].text).toContain("Implemented.");
    // the child session is the task owner's (opencode.sessions reads it)
    const owned = await rpcAs(as("erin"), "opencode.sessions.get", { session_id: childId });
    expect(owned.body.error, owned.text).toBeUndefined();
  });
});

describe("follow-ups off", () => {
  it("with follow_up disabled (the file reloaded), the prompt is recorded and not sent", async () => {
    fs.writeFileSync(policyFile, JSON.stringify(carolForever(policies({ enabled: false }))));
    const later = new Date(Date.now() + 5_000);
    fs.utimesSync(policyFile, later, later);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    tg.stub.script(text("Only once."));
    const task = await ok(await rpcAs(as("bob"), "message/send", { message: message("do it") }));
    expect(task.status.state).toBe("completed");
    const history = await trail(as("bob"), task.id);
    expect(history.governorFeedback.map((f: Obj) => [f.round, f.followUpSent, f.results[0].followUpPrompt])).toEqual([[1, false, "Please add tests (round 1)."]]);
    expect(task.history.some((m: Obj) => m.metadata?.opencode?.governance?.follow_up !== undefined)).toBe(false);
  });
});
