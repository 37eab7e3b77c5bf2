import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text } from "../../tools/upstream/script.js";
import {
  eventsOf,
  getTask,
  MODES,
  openStream,
  partsOf,
  roleOf,
  sendParams,
  sendTask,
  stateOf,
  textOf,
  until,
  userMessage,
} from "../support/task-wire.js";

// ---- a follow-up message to a task that is still working joins its running OpenCode turn (DECISIONS 6) -------------

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway();
});
afterAll(async () => {
  await g?.close();
});

const prompts = (sessionId: string) => g.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${sessionId}/prompt_async`);
const promptText = (body: any): string => (body?.parts ?? []).map((p: any) => p.text ?? "").join("");

describe.each(MODES)("follow-ups to a working task on $name", (m) => {
  it("a correction sent while the turn runs is prompted into the same session, answered in the same task, and kept in its history", async () => {
    g.stub.script(text(["slow ", "first ", "answer"], { delayMs: 150 }), text("second answer"));
    const started = await sendTask(g.url, m, sendParams(m, userMessage(m, "first question"), { blocking: false }));
    expect(stateOf(started)).toBe("working");
    const sessionId = await until("session bound", async () => (await getTask(g.url, m, started.id)).metadata?.shared?.session?.id as string | undefined);

    const followUp = await sendTask(g.url, m, sendParams(m, userMessage(m, "correction: answer twice", { taskId: started.id, contextId: started.contextId })));
    expect(followUp.id).toBe(started.id);
    expect(stateOf(followUp)).toBe("completed");
    // One session, two prompts: the task's and the follow-up's.
    expect(prompts(sessionId).map((r) => promptText(r.body))).toEqual(["first question", "correction: answer twice"]);
    const final = textOf(followUp.artifacts.find((a: any) => a.artifactId === `${started.id}:text`).parts);
    expect(final).toContain("slow first answer");
    expect(final).toContain("second answer");
    expect(followUp.history.map(roleOf)).toEqual(["user", "user", "agent"]);
    expect(textOf(partsOf(followUp.history[1]))).toBe("correction: answer twice");

    const stored = await getTask(g.url, m, started.id);
    expect(stateOf(stored)).toBe("completed");
    expect(stored.history.map(roleOf)).toEqual(["user", "user", "agent"]);
  });

  it("the task's stream carries the follow-up's answer before its terminal status", async () => {
    g.stub.script(text(["streamed ", "one"], { delayMs: 150 }), text("streamed two"));
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "stream me")));
    const [first] = await eventsOf(m, sse, [await sse.next()]);
    const task = first!.body;
    await until("turn started", async () => ((await getTask(g.url, m, task.id)).metadata?.shared?.session?.id as string | undefined));
    const followUp = await sendTask(g.url, m, sendParams(m, userMessage(m, "and more", { taskId: task.id }), { blocking: false }));
    expect(followUp.id).toBe(task.id);
    expect(["working", "completed"]).toContain(stateOf(followUp));
    const events = await eventsOf(m, sse, await sse.rest());
    const streamed = events
      .filter((e) => e.kind === "artifact" && e.body.artifact.artifactId === `${task.id}:text`)
      .map((e) => textOf(e.body.artifact.parts))
      .join("");
    expect(streamed).toContain("streamed one");
    expect(streamed).toContain("streamed two");
    const last = events.at(-1)!;
    expect(last.kind).toBe("status");
    expect(stateOf(last.body)).toBe("completed");
  });

  it("a follow-up sent right after a non-blocking send waits for the turn to start upstream and joins it", async () => {
    g.stub.script(text(["early ", "bird"], { delayMs: 100 }), text("late answer"));
    const started = await sendTask(g.url, m, sendParams(m, userMessage(m, "opening"), { blocking: false }));
    // No wait: the task's session may not even exist yet.
    const followUp = await sendTask(g.url, m, sendParams(m, userMessage(m, "right away", { taskId: started.id })));
    expect(stateOf(followUp)).toBe("completed");
    const sessionId: string = followUp.metadata.shared.session.id;
    expect(prompts(sessionId).map((r) => promptText(r.body))).toEqual(["opening", "right away"]);
    expect(followUp.history.map(roleOf)).toEqual(["user", "user", "agent"]);
    const final = textOf(followUp.artifacts.find((a: any) => a.artifactId === `${started.id}:text`).parts);
    expect(final).toContain("late answer");
  });
});
