import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { hang, text } from "../../tools/upstream/script.js";
import { Ev, eventOf, eventsOf, expectError, expectOk, getTask, invoke, Mode, MODES, openStream, openSubscribe, sendParams, sendTask, Sse, stateOf, textOf, userMessage } from "../support/task-wire.js";

// ---- cancel (tasks/cancel, CancelTask, POST …/tasks/{id}:cancel) and subscribe (tasks/resubscribe, SubscribeToTask,
// GET|POST …/tasks/{id}:subscribe) ------------------------------------------------------------------------------------

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway({ A2A_CANCEL_ABORT_TIMEOUT_SECONDS: "2" });
});
afterAll(async () => {
  await g?.close();
});

/** Reads a stream until `stop` matches an event; returns every event read (the match last). */
async function readUntil(m: Mode, sse: Sse, stop: (ev: Ev) => boolean, ms = 5000): Promise<Ev[]> {
  const deadline = Date.now() + ms;
  const out: Ev[] = [];
  for (;;) {
    const frame = await sse.next(Math.max(deadline - Date.now(), 1));
    if (frame === undefined) throw new Error(`stream ended before the awaited event; got ${JSON.stringify(out.map((e) => e.kind))}`);
    const ev = await eventOf(m, sse, frame);
    out.push(ev);
    if (stop(ev)) return out;
  }
}

const aborts = (sessionId: string): number => g.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${sessionId}/abort`).length;

/** Starts a turn that streams one chunk and then hangs upstream; resolves once that chunk arrived. */
async function hangingTask(m: Mode): Promise<{ sse: Sse; task: any; seen: Ev[] }> {
  g.stub.script(hang({ chunks: ["partial output"] }));
  const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "work forever")));
  const seen = await readUntil(m, sse, (ev) => ev.kind === "artifact");
  expect(seen[0]!.kind).toBe("task");
  return { sse, task: seen[0]!.body, seen };
}

describe.each(MODES)("cancel on $name", (m) => {
  it("cancels a hanging turn at once, idempotently, and aborts the OpenCode session", async () => {
    const { sse, task } = await hangingTask(m);
    const working = await getTask(g.url, m, task.id);
    expect(stateOf(working)).toBe("working");
    const sessionId: string = working.metadata.shared.session.id;
    expect(sessionId).toMatch(/^ses_/);

    const started = Date.now();
    const canceled = await expectOk(m, await invoke(g.url, m, "cancel", { id: task.id }), "task");
    expect(Date.now() - started).toBeLessThan(1500);
    expect(canceled.id).toBe(task.id);
    expect(stateOf(canceled)).toBe("canceled");
    expect(aborts(sessionId)).toBe(1);

    // Idempotent: a second cancel answers the same canceled task, no error.
    const again = await expectOk(m, await invoke(g.url, m, "cancel", { id: task.id }), "task");
    expect(stateOf(again)).toBe("canceled");
    expect(again.status.timestamp).toBe(canceled.status.timestamp);

    // The open stream ends with the canceled status.
    const rest = await eventsOf(m, sse, await sse.rest(3000));
    const last = rest.at(-1)!;
    expect(last.kind).toBe("status");
    expect(stateOf(last.body)).toBe("canceled");
    if (m.line === "0.3") expect(last.body.final).toBe(true);

    const stored = await getTask(g.url, m, task.id);
    expect(stateOf(stored)).toBe("canceled");
    // The partial output streamed before the cancel is kept.
    expect(textOf(stored.artifacts?.find((a: any) => a.artifactId === `${task.id}:text`)?.parts ?? [])).toBe("partial output");
    // Nothing changes it later (the upstream abort's own idle/error events must not overwrite the terminal state).
    await new Promise((r) => setTimeout(r, 150));
    expect(stateOf(await getTask(g.url, m, task.id))).toBe("canceled");
  });

  it("a completed task is TaskNotCancelable; an unknown one TaskNotFound", async () => {
    g.stub.script(text("already done"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "quick one")));
    expect(stateOf(task)).toBe("completed");
    const refused = await invoke(g.url, m, "cancel", { id: task.id });
    await expectError(m, refused, "TASK_NOT_CANCELABLE");
    // REST: 409 Conflict on both lines (/v1 and root), as A2A 1.0.0's HTTP mapping says; JSON-RPC: HTTP 200, -32002.
    expect(refused.status).toBe(m.transport === "rest" ? 409 : 200);
    if (m.transport === "rest" && m.line === "1.0") expect(refused.body.error).toMatchObject({ code: 409, status: "FAILED_PRECONDITION" });
    expect(stateOf(await getTask(g.url, m, task.id))).toBe("completed");
    await expectError(m, await invoke(g.url, m, "cancel", { id: randomUUID() }), "TASK_NOT_FOUND");
  });
});

describe("cancel metrics", () => {
  it("GET /metrics counts cancel requests and their duration by abort outcome", async () => {
    const res = await call(g.url, "/metrics");
    expect(res.status).toBe(200);
    const value = (name: string): number => {
      const line = res.text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
      expect(line, `${name} in /metrics`).toBeDefined();
      return Number(line!.split(" ").at(-1));
    };
    // 4 modes x (2 cancels of a hanging task + 2 refused cancels) so far.
    expect(value("a2a_cancel_requests_total")).toBeGreaterThanOrEqual(16);
    expect(res.text).toMatch(/^a2a_cancel_duration_ms_count\{abort_outcome="success"\} ([4-9]|\d\d+)$/m);
    expect(res.text).toMatch(/^a2a_cancel_duration_ms_bucket\{le="[^"]+",abort_outcome="success"\} \d+$/m);
    expect(value("a2a_cancel_abort_success_total")).toBeGreaterThanOrEqual(4);
  });
});

describe.each(MODES)("subscribe on $name", (m) => {
  it("two clients subscribing mid-stream get the current Task first, then the same events in the same order", async () => {
    g.stub.script(text(["one ", "two ", "three"], { delayMs: 250 }));
    const origin = await openStream(g.url, m, sendParams(m, userMessage(m, "count slowly")));
    // Wait for the step to start; the first chunk only comes 250 ms later, so both subscribe in a quiet window.
    const before = await readUntil(m, origin, (ev) => ev.kind === "status" && ev.body.metadata?.shared?.progress?.type === "step-start");
    const taskId: string = before[0]!.body.id;
    const [b, c] = await Promise.all([openSubscribe(g.url, m, taskId, "GET"), openSubscribe(g.url, m, taskId, "POST")]);
    for (const sse of [b, c]) {
      expect(sse.status).toBe(200);
      expect(sse.headers.get("content-type") ?? "").toMatch(/^text\/event-stream/);
    }
    const [bEvents, cEvents, originRest] = await Promise.all([
      b.rest(5000).then((f) => eventsOf(m, b, f)),
      c.rest(5000).then((f) => eventsOf(m, c, f)),
      origin.rest(5000).then((f) => eventsOf(m, origin, f)),
    ]);
    for (const events of [bEvents, cEvents]) {
      expect(events[0]!.kind).toBe("task");
      expect(events[0]!.body.id).toBe(taskId);
      expect(stateOf(events[0]!.body)).toBe("working");
    }
    const bAfter = bEvents.slice(1).map((e) => JSON.stringify(e.body));
    const cAfter = cEvents.slice(1).map((e) => JSON.stringify(e.body));
    expect(bAfter.length).toBeGreaterThanOrEqual(4);
    expect(cAfter).toEqual(bAfter);
    // Exactly what the original stream received after that point.
    expect(originRest.map((e) => JSON.stringify(e.body))).toEqual(bAfter);
    const last = bEvents.at(-1)!;
    expect(last.kind).toBe("status");
    expect(stateOf(last.body)).toBe("completed");
  });

  it("a terminal task: 0.3 replays the Task once and closes, 1.0 is UnsupportedOperation", async () => {
    g.stub.script(text("over and out"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "finish first")));
    for (const verb of m.transport === "rest" ? (["GET", "POST"] as const) : (["POST"] as const)) {
      const sse = await openSubscribe(g.url, m, task.id, verb);
      if (m.line === "0.3") {
        expect(sse.status).toBe(200);
        expect(sse.headers.get("content-type") ?? "").toMatch(/^text\/event-stream/);
        const events = await eventsOf(m, sse, await sse.rest(3000));
        expect(events).toHaveLength(1);
        expect(events[0]!.kind).toBe("task");
        expect(events[0]!.body.id).toBe(task.id);
        expect(stateOf(events[0]!.body)).toBe("completed");
        expect(textOf(events[0]!.body.artifacts.find((a: any) => a.artifactId === `${task.id}:text`).parts)).toBe("over and out");
      } else {
        const res = { status: sse.status, headers: sse.headers, text: JSON.stringify(sse.body), body: sse.body, rpcId: sse.rpcId };
        await expectError(m, res, "UNSUPPORTED_OPERATION");
      }
    }
  });

  it("an unknown task is TaskNotFound", async () => {
    const sse = await openSubscribe(g.url, m, randomUUID());
    const res = { status: sse.status, headers: sse.headers, text: JSON.stringify(sse.body), body: sse.body, rpcId: sse.rpcId };
    await expectError(m, res, "TASK_NOT_FOUND");
  });

  it("a subscriber of a canceled task sees the canceled status and the stream closes", async () => {
    const { sse, task } = await hangingTask(m);
    const sub = await openSubscribe(g.url, m, task.id);
    const first = await eventOf(m, sub, await sub.next(3000));
    expect(first.kind).toBe("task");
    expect(stateOf(first.body)).toBe("working");
    await expectOk(m, await invoke(g.url, m, "cancel", { id: task.id }), "task");
    const events = await eventsOf(m, sub, await sub.rest(3000));
    expect(stateOf(events.at(-1)!.body)).toBe("canceled");
    await sse.rest(3000);
  });
});
