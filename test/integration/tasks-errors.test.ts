import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { failure, text } from "../../tools/upstream/script.js";
import { errorFields, eventsOf, expectError, expectOk, getTask, invoke, Mode, MODES, openStream, partsOf, Reply, sendParams, sendTask, stateOf, taskOfSend, textOf, userMessage } from "../support/task-wire.js";

// ---- errors of the bridge: parts, directory boundary, explicit sessions, upstream failures during a turn ----------

let g: TaskGateway;
let root: string;
let outside: string;
beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "tasks-errors-root-"));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), "tasks-errors-outside-"));
  fs.mkdirSync(path.join(root, "inside"));
  fs.symlinkSync(outside, path.join(root, "escape"));
  fs.symlinkSync(path.join(root, "inside"), path.join(root, "alias"));
  fs.writeFileSync(path.join(root, "file.txt"), "not a directory");
  g = await startTaskGateway({ OPENCODE_WORKSPACE_ROOT: root });
});
afterAll(async () => {
  await g?.close();
  for (const dir of [root, outside]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const sessionCreates = (): number => g.stub.requests.filter((r) => r.method === "POST" && r.path === "/session").length;
const promptCount = (): number => g.stub.requests.filter((r) => r.method === "POST" && /^\/session\/[^/]+\/prompt_async$/.test(r.path)).length;
const directoryOf = (r: { query: Record<string, string>; headers: Record<string, unknown> }): unknown => r.query.directory ?? r.headers["x-opencode-directory"];

/** Refused before anything happens upstream: no session created, no prompt sent. */
async function expectRefused(m: Mode, res: Reply, reason: string, before: { creates: number; prompts: number }): Promise<{ fields: string[]; text: string }> {
  const err = await expectError(m, res, reason);
  expect(sessionCreates()).toBe(before.creates);
  expect(promptCount()).toBe(before.prompts);
  return errorFields(m, err);
}
const snapshot = () => ({ creates: sessionCreates(), prompts: promptCount() });

/**
 * Where a failed task says why: `metadata.opencode.error {type, upstream_status?}` (spec/extensions/opencode/metadata.tsp,
 * OpenCodeErrorMetadata: "`metadata.opencode.error` on a task that ended `failed` or `auth-required`").
 */
const failureOf = (task: any): any => task.metadata?.opencode?.error;
/** The recorded failure wherever the runtime put it (the contract location is checked by its own test below). */
const anyFailureOf = (task: any): any => task.metadata?.opencode?.error ?? task.metadata?.shared?.error ?? task.metadata?.error;

describe.each(MODES)("input errors on $name", (m) => {
  it("a data part whose value is not an object is InvalidParams naming the part on 0.3 (1.0 takes any JSON value)", async () => {
    // Data parts are accepted (DECISIONS 15; test/integration/data-parts.test.ts); 0.3 requires an object.
    if (m.line === "1.0") return;
    const before = snapshot();
    const message = userMessage(m, "see the attached data");
    const parts = m.transport === "rest" ? "content" : "parts";
    const bad = m.transport === "rest" ? { data: { data: [42] } } : { kind: "data", data: [42] };
    (message[parts] as unknown[]).push(bad);
    const { fields, text: detail } = await expectRefused(m, await invoke(g.url, m, "send", sendParams(m, message)), "INVALID_PARAMS", before);
    expect(fields.some((f) => /(parts|content)(\[1\]|\.1)/.test(f)), `${JSON.stringify(fields)} ${detail}`).toBe(true);
  });

  it("metadata.opencode.directory outside the root, through an escaping symlink, or not a directory is InvalidParams", async () => {
    const before = snapshot();
    for (const directory of [outside, "escape", path.join(root, "escape"), "../", path.join(root, "missing"), "file.txt", "/"]) {
      const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, `go to ${directory}`), {}, { opencode: { directory } }));
      const { fields, text: detail } = await expectRefused(m, res, "INVALID_PARAMS", before);
      expect(fields, `${directory}: ${detail}`).toContain("metadata.opencode.directory");
    }
    // The same on the message's own metadata.
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "escape via message", { metadata: { opencode: { directory: "escape" } } })));
    await expectRefused(m, res, "INVALID_PARAMS", before);
  });

  it("a directory inside the root (also through an inside symlink) routes the turn there", async () => {
    const inside = fs.realpathSync(path.join(root, "inside"));
    for (const directory of ["inside", path.join(root, "alias")]) {
      g.stub.script(text(`working in ${directory}`));
      const from = g.stub.requests.length;
      const task = await sendTask(g.url, m, sendParams(m, userMessage(m, `work in ${directory}`, { metadata: { opencode: { directory } } })));
      expect(stateOf(task)).toBe("completed");
      const calls = g.stub.requests.slice(from);
      const create = calls.find((r) => r.method === "POST" && r.path === "/session");
      const prompt = calls.find((r) => r.method === "POST" && r.path === `/session/${task.metadata.shared.session.id}/prompt_async`);
      expect(create, "a session for the directory").toBeDefined();
      expect(directoryOf(create!)).toBe(inside);
      expect(directoryOf(prompt!)).toBe(inside);
    }
  });

  it("an explicit metadata.shared.session.id unknown upstream is SESSION_NOT_FOUND", async () => {
    const before = snapshot();
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "use my session"), {}, { shared: { session: { id: "ses_doesnotexist0001" } } }));
    await expectRefused(m, res, "SESSION_NOT_FOUND", before);
  });

  it("a malformed metadata.shared.session.id is InvalidParams", async () => {
    const before = snapshot();
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "use my session"), {}, { shared: { session: { id: "not a session" } } }));
    const { fields } = await expectRefused(m, res, "INVALID_PARAMS", before);
    expect(fields).toContain("metadata.shared.session.id");
  });

  it("an explicit session that exists upstream is used as is", async () => {
    const created = await fetch(`${g.stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "mine" }) });
    const session = (await created.json()) as { id: string };
    const creates = sessionCreates();
    g.stub.script(text("in your session"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "use it"), {}, { shared: { session: { id: session.id } } }));
    expect(stateOf(task)).toBe("completed");
    expect(task.metadata.shared.session.id).toBe(session.id);
    expect(sessionCreates()).toBe(creates);
    expect(g.stub.requests.some((r) => r.method === "POST" && r.path === `/session/${session.id}/prompt_async`)).toBe(true);
  });
});

describe.each(MODES)("upstream failures during a turn on $name", (m) => {
  it("a model error (4xx) fails the task, saying why", async () => {
    g.stub.script(failure(400, "the model refused the request"));
    const started = Date.now();
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "provoke a model error")));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(stateOf(task)).toBe("failed");
    expect(anyFailureOf(task), JSON.stringify(task.metadata)).toMatchObject({ type: "UPSTREAM_HTTP_ERROR", upstream_status: 400 });
    expect(textOf(partsOf(task.status.message))).toMatch(/the model refused the request/);
    expect(stateOf(await getTask(g.url, m, task.id))).toBe("failed");
  });

  it("a failed task carries its failure at metadata.opencode.error (OpenCodeErrorMetadata)", async () => {
    g.stub.script(failure(400, "classified failure"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "fail for the record")));
    expect(stateOf(task)).toBe("failed");
    expect(failureOf(task), `spec/extensions/opencode/metadata.tsp puts it at metadata.opencode.error; got ${JSON.stringify(task.metadata)}`).toMatchObject({
      type: "UPSTREAM_HTTP_ERROR",
      upstream_status: 400,
    });
    expect(failureOf(await getTask(g.url, m, task.id))).toMatchObject({ type: "UPSTREAM_HTTP_ERROR" });
  });

  it("prompt_async answered 500 fails the task with UPSTREAM_HTTP_ERROR, and the context keeps working", async () => {
    g.stub.failNext("POST /session/*/prompt_async", { status: 500, body: { name: "UnknownError", data: { message: "boom" } } });
    const started = Date.now();
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "prompt fails")));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(stateOf(task)).toBe("failed");
    expect(anyFailureOf(task), JSON.stringify(task.metadata)).toMatchObject({ type: "UPSTREAM_HTTP_ERROR", upstream_status: 500 });

    g.stub.script(text("recovered"));
    const next = await sendTask(g.url, m, sendParams(m, userMessage(m, "try again", { contextId: task.contextId })));
    expect(stateOf(next)).toBe("completed");
    expect(next.metadata.shared.session.id).toBe(task.metadata.shared.session.id);
  });

  it("session creation failing ends in a failed task or a typed error, never a hang", async () => {
    g.stub.failNext("POST /session", { status: 500, body: { name: "UnknownError", data: { message: "no sessions today" } } });
    const started = Date.now();
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "needs a session")));
    expect(Date.now() - started).toBeLessThan(3000);
    const failed = m.transport === "jsonrpc" ? res.body?.error === undefined : res.status < 300;
    if (failed) {
      const task = taskOfSend(m, await expectOk(m, res, "send"));
      expect(stateOf(task)).toBe("failed");
      expect(anyFailureOf(task), JSON.stringify(task.metadata)).toMatchObject({ type: "UPSTREAM_HTTP_ERROR", upstream_status: 500 });
    } else {
      await expectError(m, res, "UPSTREAM_HTTP_ERROR");
    }
  });
});

describe.each([MODES[0]!, MODES[3]!])("upstream failures while streaming on $name", (m) => {
  it("a model error ends the stream with a failed terminal status carrying the error", async () => {
    g.stub.script(failure(400, "streaming model failure"));
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "stream into an error")));
    const events = await eventsOf(m, sse, await sse.rest(3000));
    expect(events[0]!.kind).toBe("task");
    const last = events.at(-1)!;
    expect(last.kind).toBe("status");
    expect(stateOf(last.body)).toBe("failed");
    if (m.line === "0.3") expect(last.body.final).toBe(true);
    expect(JSON.stringify(last.body.metadata ?? {})).toMatch(/UPSTREAM_HTTP_ERROR/);
    expect(textOf(partsOf(last.body.status.message))).toMatch(/streaming model failure/);
    const stored = await getTask(g.url, m, events[0]!.body.id);
    expect(stateOf(stored)).toBe("failed");
    expect(anyFailureOf(stored), JSON.stringify(stored.metadata)).toMatchObject({ type: "UPSTREAM_HTTP_ERROR", upstream_status: 400 });
  });

  it("prompt_async failing ends the stream with a failed status, never a hang", async () => {
    g.stub.failNext("POST /session/*/prompt_async", { status: 500 });
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "stream, prompt fails")));
    const events = await eventsOf(m, sse, await sse.rest(3000));
    const last = events.at(-1)!;
    expect(stateOf(last.body)).toBe("failed");
  });
});
