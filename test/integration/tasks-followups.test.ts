import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text } from "../../tools/upstream/script.js";
import { errorFields, expectError, getTask, invoke, MODES, partsOf, roleOf, sendParams, sendTask, stateOf, textOf, userMessage } from "../support/task-wire.js";

// ---- follow-up messages: taskId / contextId on a message ------------------------------------------------------------

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway();
});
afterAll(async () => {
  await g?.close();
});

const sessionCreates = (): number => g.stub.requests.filter((r) => r.method === "POST" && r.path === "/session").length;
const prompts = (sessionId: string): number => g.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${sessionId}/prompt_async`).length;

describe.each(MODES)("follow-ups on $name", (m) => {
  it("a message naming an unknown taskId is TaskNotFound", async () => {
    const before = sessionCreates();
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "continue", { taskId: randomUUID() })));
    await expectError(m, res, "TASK_NOT_FOUND");
    expect(sessionCreates()).toBe(before);
  });

  it("a contextId that does not match the task's is InvalidParams", async () => {
    g.stub.script(text("done once"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "first turn")));
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "wrong context", { taskId: task.id, contextId: randomUUID() })));
    const err = await expectError(m, res, "INVALID_PARAMS");
    const { fields, text: detail } = errorFields(m, err);
    expect(fields.some((f) => /contextId|context_id/.test(f)), detail).toBe(true);
  });

  it("a message to a completed task is UnsupportedOperation", async () => {
    g.stub.script(text("finished"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "finish this")));
    expect(stateOf(task)).toBe("completed");
    const promptsBefore = prompts(task.metadata.shared.session.id);
    const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "one more thing", { taskId: task.id, contextId: task.contextId })));
    await expectError(m, res, "UNSUPPORTED_OPERATION");
    const withoutContext = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "one more thing", { taskId: task.id })));
    await expectError(m, withoutContext, "UNSUPPORTED_OPERATION");
    expect(prompts(task.metadata.shared.session.id)).toBe(promptsBefore);
    // The task is unchanged.
    const stored = await getTask(g.url, m, task.id);
    expect(stateOf(stored)).toBe("completed");
    expect(stored.history).toHaveLength(2);
  });

  it("turns on one contextId run in the same OpenCode session; another context gets another session", async () => {
    const creates = sessionCreates();
    g.stub.script(text("turn one"));
    const first = await sendTask(g.url, m, sendParams(m, userMessage(m, "turn 1")));
    const sessionId: string = first.metadata.shared.session.id;
    expect(sessionCreates()).toBe(creates + 1);

    g.stub.script(text("turn two"));
    const second = await sendTask(g.url, m, sendParams(m, userMessage(m, "turn 2", { contextId: first.contextId })));
    expect(second.id).not.toBe(first.id);
    expect(second.contextId).toBe(first.contextId);
    expect(stateOf(second)).toBe("completed");
    expect(second.metadata.shared.session.id).toBe(sessionId);
    expect(sessionCreates()).toBe(creates + 1);
    expect(prompts(sessionId)).toBe(2);
    expect(textOf(second.artifacts.find((a: any) => a.artifactId === `${second.id}:text`).parts)).toBe("turn two");
    // Each task keeps its own turn's history.
    expect(second.history.map(roleOf)).toEqual(["user", "agent"]);
    expect(textOf(partsOf(second.history[0]))).toBe("turn 2");

    g.stub.script(text("elsewhere"));
    const third = await sendTask(g.url, m, sendParams(m, userMessage(m, "turn elsewhere")));
    expect(third.contextId).not.toBe(first.contextId);
    expect(third.metadata.shared.session.id).not.toBe(sessionId);
    expect(sessionCreates()).toBe(creates + 2);
  });

  it("concurrent first messages of one new context share one session", async () => {
    const creates = sessionCreates();
    const contextId = randomUUID();
    g.stub.script(text("a"), text("b"));
    const [a, b] = await Promise.all([
      sendTask(g.url, m, sendParams(m, userMessage(m, "parallel a", { contextId }))),
      sendTask(g.url, m, sendParams(m, userMessage(m, "parallel b", { contextId }))),
    ]);
    expect(sessionCreates()).toBe(creates + 1);
    expect(a.metadata.shared.session.id).toBe(b.metadata.shared.session.id);
    expect([stateOf(a), stateOf(b)]).toEqual(["completed", "completed"]);
  });
});
