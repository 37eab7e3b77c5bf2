import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hang, text } from "../../tools/upstream/script.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { eventsOf, getTask, MODES, openStream, partsOf, sendParams, sendTask, stateOf, textOf, until, userMessage } from "../support/task-wire.js";

// ---- an OpenCode that dies or restarts mid-turn: the task fails with UPSTREAM_TURN_LOST and keeps its partial
// output, marked partial; never a truncated "completed" -------------------------------------------------------------

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway();
});
afterAll(async () => {
  await g?.close();
});

describe.each(MODES)("a lost turn on $name", (m) => {
  it("a blocking send whose turn OpenCode lost fails with UPSTREAM_TURN_LOST, the partial text kept and marked", async () => {
    g.stub.script(hang({ chunks: ["partial answer so far"], holdMs: 30_000 }));
    const pending = sendTask(g.url, m, sendParams(m, userMessage(m, "a long job")));
    await until("partial output streamed", async () => {
      const list = g.stub.requests.filter((r) => r.path.endsWith("/prompt_async"));
      return list.length > 0 ? true : undefined;
    });
    // Let the first chunk arrive, then the process "dies" and comes back without the turn.
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    g.stub.loseTurns();
    const task = await pending;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(stateOf(task)).toBe("failed");
    expect(task.metadata.opencode.error.type).toBe("UPSTREAM_TURN_LOST");
    const textArtifact = task.artifacts.find((a: any) => a.artifactId === `${task.id}:text`);
    expect(textOf(textArtifact.parts)).toBe("partial answer so far");
    expect(textArtifact.metadata.opencode.partial).toBe(true);
    expect(textOf(partsOf(task.status.message))).toMatch(/partial/);
    // The stored task says the same; no zero usage is invented.
    const stored = await getTask(g.url, m, task.id);
    expect(stateOf(stored)).toBe("failed");
    expect(stored.metadata?.shared?.usage).toBeUndefined();
  }, 20_000);

  it("a stream ends with the failed status, not completed", async () => {
    g.stub.script(hang({ chunks: ["streamed part"], holdMs: 30_000 }));
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "stream a long job")));
    const first = await eventsOf(m, sse, [await sse.next()]);
    const taskId = first[0]!.body.id;
    await until("chunk streamed", async () => ((await getTask(g.url, m, taskId)).artifacts?.length ? true : undefined));
    g.stub.loseTurns();
    const events = await eventsOf(m, sse, await sse.rest(10_000));
    const last = events.at(-1)!;
    expect(last.kind).toBe("status");
    expect(stateOf(last.body)).toBe("failed");
    expect(events.some((e) => e.kind === "status" && stateOf(e.body) === "completed")).toBe(false);
  }, 20_000);

  it("a turn that really finished while the event stream was down still completes", async () => {
    g.stub.script(text(["finished ", "while away"], { delayMs: 200 }));
    const pending = sendTask(g.url, m, sendParams(m, userMessage(m, "finish without me")));
    await until("prompted", () => (g.stub.requests.some((r) => r.path.endsWith("/prompt_async")) ? true : undefined));
    g.stub.dropEventStreams();
    const task = await pending;
    expect(stateOf(task)).toBe("completed");
    expect(textOf(task.artifacts.find((a: any) => a.artifactId === `${task.id}:text`).parts)).toBe("finished while away");
  }, 20_000);
});
