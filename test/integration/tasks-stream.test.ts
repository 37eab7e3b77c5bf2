import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text, tool } from "../../tools/upstream/script.js";
import { dataOf, Ev, eventOf, eventsOf, expectError, getTask, isDataPart, Mode, MODES, openStream, partsOf, roleOf, sendParams, sequenceOf, stateOf, TERMINAL, textOf, until, userMessage } from "../support/task-wire.js";

// ---- message/stream, SendStreamingMessage, POST /v1/message:stream, POST /message:stream ---------------------------

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway();
});
afterAll(async () => {
  await g?.close();
});

/** Rebuilds each artifact lane from the streamed updates (append = concatenate, otherwise replace). */
function lanes(m: Mode, events: Ev[]): Map<string, { name: string; block: string; parts: any[] }> {
  const out = new Map<string, { name: string; block: string; parts: any[] }>();
  for (const ev of events) {
    if (ev.kind !== "artifact") continue;
    const a = ev.body.artifact;
    const current = out.get(a.artifactId);
    const block = a.metadata?.shared?.stream?.block_type;
    if (current !== undefined && ev.body.append === true) {
      const last = current.parts.at(-1);
      for (const p of a.parts) {
        if (last !== undefined && typeof last.text === "string" && typeof p.text === "string" && !isDataPart(m, p)) last.text += p.text;
        else current.parts.push(structuredClone(p));
      }
    } else {
      out.set(a.artifactId, { name: a.name, block, parts: structuredClone(a.parts) });
    }
  }
  return out;
}

describe.each(MODES)("stream on $name", (m) => {
  it("Task first, then ordered artifact/status updates (text, reasoning, tool_call) and a terminal status with usage", async () => {
    g.stub.script(
      tool("bash", { command: "echo streamed" }),
      text(["Hel", "lo ", "world"], { reasoning: ["think", "ing"], usage: { prompt_tokens: 11, completion_tokens: 4 } }),
    );
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, `stream please (${m.name})`)));
    expect(sse.status).toBe(200);
    expect(sse.headers.get("content-type") ?? "").toMatch(/^text\/event-stream/);
    expect(sse.headers.get("cache-control") ?? "").toMatch(/no-cache/);
    const events = await eventsOf(m, sse, await sse.rest(5000));
    expect(events.length).toBeGreaterThan(3);

    const [first, ...updates] = events;
    expect(first!.kind).toBe("task");
    const task = first!.body;
    expect(["submitted", "working"]).toContain(stateOf(task));
    for (const ev of updates) {
      expect(["status", "artifact"], JSON.stringify(ev.body)).toContain(ev.kind);
      expect(ev.body.taskId).toBe(task.id);
      expect(ev.body.contextId).toBe(task.contextId);
    }

    // Every artifact update carries shared.stream; sequences are strictly increasing over the whole stream.
    const sequences: number[] = [];
    for (const ev of updates) {
      const seq = sequenceOf(ev);
      if (ev.kind === "artifact") {
        expect(seq, JSON.stringify(ev.body.artifact.metadata)).toBeTypeOf("number");
        const stream = ev.body.artifact.metadata.shared.stream;
        expect(stream.event_id).toBe(`${task.id}:${task.contextId}:${stream.sequence}`);
        expect(stream.role).toBe("agent");
      }
      if (seq !== undefined) sequences.push(seq);
    }
    for (let i = 1; i < sequences.length; i++) expect(sequences[i]!, `sequence ${sequences.join(",")}`).toBeGreaterThan(sequences[i - 1]!);

    const built = lanes(m, updates);
    const textLane = built.get(`${task.id}:text`);
    const reasoning = built.get(`${task.id}:reasoning`);
    expect(textLane?.block).toBe("text");
    expect(textOf(textLane!.parts)).toBe("Hello world");
    expect(reasoning?.block).toBe("reasoning");
    expect(textOf(reasoning!.parts)).toBe("thinking");
    const tools = [...built.entries()].filter(([id]) => id.startsWith(`${task.id}:tool:`));
    expect(tools).toHaveLength(1);
    expect(tools[0]![1].block).toBe("tool_call");
    expect(isDataPart(m, tools[0]![1].parts[0])).toBe(true);
    expect(dataOf(m, tools[0]![1].parts[0])).toMatchObject({ tool: "bash", status: "completed", input: { command: "echo streamed" } });
    // The reasoning comes before the text of the same step.
    const firstOf = (id: string): number => updates.findIndex((e) => e.kind === "artifact" && e.body.artifact.artifactId === id);
    expect(firstOf(`${task.id}:tool:${tools[0]![0].split(":tool:")[1]}`)).toBeLessThan(firstOf(`${task.id}:reasoning`));
    expect(firstOf(`${task.id}:reasoning`)).toBeLessThan(firstOf(`${task.id}:text`));

    // The last event is the terminal status; nothing is terminal before it.
    const last = updates.at(-1)!;
    expect(last.kind).toBe("status");
    expect(stateOf(last.body)).toBe("completed");
    for (const ev of updates.slice(0, -1)) if (ev.kind === "status") expect(TERMINAL.has(stateOf(ev.body))).toBe(false);
    const statuses = updates.filter((e) => e.kind === "status");
    if (m.line === "0.3") {
      expect(last.body.final).toBe(true);
      for (const ev of statuses.slice(0, -1)) expect(ev.body.final).toBe(false);
    } else {
      for (const ev of statuses) expect("final" in ev.body, JSON.stringify(ev.body)).toBe(false);
    }
    // Usage is summed over the turn: the tool step (the stub's default 10 in / 1 out) plus the scripted text step.
    expect(last.body.metadata?.shared?.usage, JSON.stringify(last.body.metadata)).toMatchObject({ input_tokens: 21, output_tokens: 5, total_tokens: 26 });
    const sessionId = last.body.metadata?.shared?.session?.id;
    expect(sessionId).toMatch(/^ses_/);

    // What was streamed is what is stored.
    const stored = await getTask(g.url, m, task.id);
    expect(stateOf(stored)).toBe("completed");
    expect(textOf(stored.artifacts.find((a: any) => a.artifactId === `${task.id}:text`).parts)).toBe("Hello world");
    expect(textOf(stored.artifacts.find((a: any) => a.artifactId === `${task.id}:reasoning`).parts)).toBe("thinking");
    expect(stored.metadata.shared.session.id).toBe(sessionId);
    expect(stored.history.map(roleOf)).toEqual(["user", "agent"]);
    expect(textOf(partsOf(stored.history[1]))).toBe("Hello world");
  });

  it('acceptedOutputModes ["text/plain"] streams tool_call blocks as JSON text', async () => {
    g.stub.script(tool("bash", { command: "echo plain" }), text("plain done"));
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "stream text only"), { acceptedOutputModes: ["text/plain"] }));
    const events = await eventsOf(m, sse, await sse.rest(5000));
    const toolUpdates = events.filter((e) => e.kind === "artifact" && e.body.artifact.metadata?.shared?.stream?.block_type === "tool_call");
    expect(toolUpdates.length).toBeGreaterThan(0);
    for (const ev of toolUpdates) {
      const [part] = ev.body.artifact.parts;
      expect(isDataPart(m, part)).toBe(false);
      expect(JSON.parse(part.text)).toMatchObject({ tool: "bash" });
    }
    expect(JSON.parse(toolUpdates.at(-1)!.body.artifact.parts[0].text)).toMatchObject({ status: "completed" });
    expect(stateOf(events.at(-1)!.body)).toBe("completed");
  });

  it("a refused stream request is a plain error answer, not an event stream", async () => {
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "no text"), { acceptedOutputModes: ["application/json"] }));
    expect(sse.headers.get("content-type") ?? "").toMatch(/application\/json/);
    const res = { status: sse.status, headers: sse.headers, text: JSON.stringify(sse.body), body: sse.body, rpcId: sse.rpcId };
    await expectError(m, res, "CONTENT_TYPE_NOT_SUPPORTED");
  });

  it("a client that goes away does not stop the task: it completes and is stored", async () => {
    g.stub.script(text(["after ", "you ", "left"], { delayMs: 60 }));
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "i will hang up")));
    const first = await eventOf(m, sse, await sse.next(3000));
    expect(first.kind).toBe("task");
    sse.close();
    const done = await until("the abandoned task to finish", async () => {
      const t = await getTask(g.url, m, first.body.id);
      return TERMINAL.has(stateOf(t)) ? t : undefined;
    });
    expect(stateOf(done)).toBe("completed");
    expect(textOf(done.artifacts.find((a: any) => a.artifactId === `${first.body.id}:text`).parts)).toBe("after you left");
  });
});
