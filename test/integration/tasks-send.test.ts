import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text, tool } from "../../tools/upstream/script.js";
import { dataOf, expectError, getTask, invoke, isDataPart, MODES, partsOf, roleOf, sendParams, sendTask, stateOf, TERMINAL, textOf, until, userMessage } from "../support/task-wire.js";

// ---- message/send, SendMessage, POST /v1/message:send, POST /message:send ------------------------------------------

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway();
});
afterAll(async () => {
  await g?.close();
});

const count = (route: RegExp): number => g.stub.requests.filter((r) => route.test(`${r.method} ${r.path}`)).length;

describe.each(MODES)("send on $name", (m) => {
  it("blocking: answers the completed task with the response artifact, history, usage and session", async () => {
    g.stub.script(text(["Hel", "lo there"], { usage: { prompt_tokens: 7, completion_tokens: 5 } }));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, `greet me (${m.name})`)));
    expect(stateOf(task)).toBe("completed");
    expect(typeof task.id).toBe("string");
    expect(typeof task.contextId).toBe("string");

    const response = task.artifacts.find((a: any) => a.artifactId === `${task.id}:text`);
    expect(response, JSON.stringify(task.artifacts)).toBeDefined();
    expect(textOf(response.parts)).toBe("Hello there");
    expect(response.metadata?.shared?.stream?.block_type).toBe("text");

    expect(task.history.map(roleOf)).toEqual(["user", "agent"]);
    expect(textOf(partsOf(task.history[0]))).toBe(`greet me (${m.name})`);
    expect(textOf(partsOf(task.history[1]))).toBe("Hello there");
    for (const message of task.history) {
      expect(message.taskId).toBe(task.id);
      expect(message.contextId).toBe(task.contextId);
    }

    const usage = task.metadata?.shared?.usage;
    expect(usage, JSON.stringify(task.metadata)).toMatchObject({ input_tokens: 7, output_tokens: 5, total_tokens: 12 });

    const sessionId: string = task.metadata?.shared?.session?.id;
    expect(sessionId).toMatch(/^ses_/);
    expect(g.stub.requests.some((r) => r.method === "POST" && r.path === `/session/${sessionId}/prompt_async`)).toBe(true);

    // GetTask agrees with what send answered.
    const again = await getTask(g.url, m, task.id);
    expect(stateOf(again)).toBe("completed");
    expect(textOf(again.artifacts.find((a: any) => a.artifactId === `${task.id}:text`).parts)).toBe("Hello there");
    expect(again.metadata.shared.session.id).toBe(sessionId);
  });

  it("non-blocking: answers at once with a submitted/working task that completes later", async () => {
    g.stub.script(text(["slow ", "and ", "steady"], { delayMs: 150 }));
    const started = Date.now();
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "take your time"), { blocking: false }));
    expect(Date.now() - started).toBeLessThan(400);
    expect(["submitted", "working"]).toContain(stateOf(task));
    const done = await until("the non-blocking task to complete", async () => {
      const t = await getTask(g.url, m, task.id);
      return TERMINAL.has(stateOf(t)) ? t : undefined;
    });
    expect(stateOf(done)).toBe("completed");
    expect(textOf(done.artifacts.find((a: any) => a.artifactId === `${task.id}:text`).parts)).toBe("slow and steady");
    expect(done.history.map(roleOf)).toEqual(["user", "agent"]);
  });

  it("historyLength: 0 omits the history, n keeps the n most recent messages, absent keeps all (send and get)", async () => {
    g.stub.script(text("first answer"));
    const zero = await sendTask(g.url, m, sendParams(m, userMessage(m, "history zero"), { historyLength: 0 }));
    expect(stateOf(zero)).toBe("completed");
    expect(zero.history ?? []).toEqual([]);

    g.stub.script(text("second answer"));
    const one = await sendTask(g.url, m, sendParams(m, userMessage(m, "history one"), { historyLength: 1 }));
    expect(one.history).toHaveLength(1);
    expect(roleOf(one.history[0])).toBe("agent");
    expect(textOf(partsOf(one.history[0]))).toBe("second answer");

    g.stub.script(text("third answer"));
    const all = await sendTask(g.url, m, sendParams(m, userMessage(m, "history all")));
    expect(all.history.map(roleOf)).toEqual(["user", "agent"]);

    expect((await getTask(g.url, m, all.id, 0)).history ?? []).toEqual([]);
    const last = await getTask(g.url, m, all.id, 1);
    expect(last.history).toHaveLength(1);
    expect(textOf(partsOf(last.history[0]))).toBe("third answer");
    expect((await getTask(g.url, m, all.id)).history).toHaveLength(2);
    // The stored task keeps its whole history whatever the send asked to see.
    expect((await getTask(g.url, m, zero.id)).history).toHaveLength(2);
  });

  it("acceptedOutputModes without text/plain is ContentTypeNotSupported, before any session is created", async () => {
    const sessionsBefore = count(/^POST \/session$/);
    for (const modes of [["application/json"], ["image/png", "application/pdf"]]) {
      const res = await invoke(g.url, m, "send", sendParams(m, userMessage(m, "json only please"), { acceptedOutputModes: modes }));
      await expectError(m, res, "CONTENT_TYPE_NOT_SUPPORTED");
    }
    expect(count(/^POST \/session$/)).toBe(sessionsBefore);
  });

  it('acceptedOutputModes ["text/plain"]: tool_call blocks are downgraded to JSON text, and the modes are stored', async () => {
    g.stub.script(tool("bash", { command: "echo hi" }), text("ran it"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "run echo (text only)"), { acceptedOutputModes: ["text/plain"] }));
    expect(stateOf(task)).toBe("completed");
    expect(task.metadata?.opencode?.output_negotiation?.accepted_output_modes).toEqual(["text/plain"]);
    const tools = task.artifacts.filter((a: any) => a.artifactId.startsWith(`${task.id}:tool:`));
    expect(tools, JSON.stringify(task.artifacts)).toHaveLength(1);
    const [part] = tools[0].parts;
    expect(isDataPart(m, part)).toBe(false);
    expect(typeof part.text).toBe("string");
    expect(JSON.parse(part.text)).toMatchObject({ tool: "bash", status: "completed", input: { command: "echo hi" } });
    expect(tools[0].metadata?.shared?.stream?.block_type).toBe("tool_call");
    expect(textOf(task.artifacts.find((a: any) => a.artifactId === `${task.id}:text`).parts)).toBe("ran it");

    // What is stored (GetTask) is the downgraded form too.
    const stored = await getTask(g.url, m, task.id);
    const storedTool = stored.artifacts.find((a: any) => a.artifactId === tools[0].artifactId);
    expect(isDataPart(m, storedTool.parts[0])).toBe(false);
    expect(stored.metadata.opencode.output_negotiation.accepted_output_modes).toEqual(["text/plain"]);
  });

  it("default output modes keep tool_call blocks as data parts", async () => {
    g.stub.script(tool("bash", { command: "echo data" }), text("ran it as data"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "run echo (any mode)")));
    expect(stateOf(task)).toBe("completed");
    const modes: string[] = task.metadata?.opencode?.output_negotiation?.accepted_output_modes;
    expect(modes).toContain("text/plain");
    const tools = task.artifacts.filter((a: any) => a.artifactId.startsWith(`${task.id}:tool:`));
    expect(tools).toHaveLength(1);
    expect(isDataPart(m, tools[0].parts[0]), JSON.stringify(tools[0])).toBe(true);
    expect(dataOf(m, tools[0].parts[0])).toMatchObject({ tool: "bash", status: "completed", input: { command: "echo data" } });
  });
});
