// e2e, issue 22: two gateways on one PostgreSQL database in front of the real `opencode serve` (driven by the scripted
// model server). A turn is started as a stream on gateway A with the real @a2a-js/sdk client and followed on gateway B
// with another SDK client (resubscribe): B serves A's live events, in order, to the end of the turn.
import { TaskState } from "@a2a-js/sdk";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { text } from "../../tools/upstream/script.js";
import { startGateway, type StartedGateway } from "../support/gateway.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";
import { client, message, send, textOf, type Binding, type Line } from "../support/sdk-client.js";
import { startRealStack, type RealStack } from "../support/stack.js";

let database: Awaited<ReturnType<typeof freshDatabase>>;
let stack: RealStack;
let upstreamB: Upstream;
let b: StartedGateway;

/** The text a client assembles from a stream: the task's text artifact, then each text update (appended or not). */
function assembled(events: any[]): string {
  let out = "";
  for (const e of events) {
    if (e.$case === "task") out = textOf(e.value.artifacts?.find((a: any) => a.artifactId.endsWith(":text"))?.parts);
    if (e.$case === "artifactUpdate" && e.value.artifact.artifactId.endsWith(":text")) out = (e.value.append ? out : "") + textOf(e.value.artifact.parts);
  }
  return out;
}

describe.skipIf(postgresUrl === undefined)("two gateways, one PostgreSQL, the real OpenCode", () => {
  beforeAll(async () => {
    database = await freshDatabase();
    stack = await startRealStack({ env: { A2A_TASK_STORE_DATABASE_URL: database.url, A2A_INSTANCE_ID: "e2e-gateway-a" } });
    // B: a gateway of its own, with its own link to the same OpenCode.
    const env = { ...stack.env, A2A_INSTANCE_ID: "e2e-gateway-b" };
    upstreamB = await startUpstream(loadConfig(env), pino({ level: "silent" }));
    b = await startGateway(env, { upstream: upstreamB });
  }, 120_000);
  afterAll(async () => {
    await b?.close();
    await upstreamB?.stop();
    await stack?.close();
    await database?.drop();
  }, 30_000);

  // Not 0.3 over HTTP+JSON: the SDK's 0.3 REST client drops `append` from artifact updates (its
  // FromProto.taskArtifactUpdateEvent in @a2a-js/sdk 1.3.0), so a client cannot assemble a stream on it.
  const configs: [Line, Binding][] = [
    ["1.0", "JSONRPC"],
    ["1.0", "HTTP+JSON"],
    ["0.3", "JSONRPC"],
  ];
  it.each(configs)("A2A %s over %s: a streamed turn started on A is followed on B to its end", async (line, binding) => {
    const words = ["Streamed ", "on ", "A, ", "followed ", "on ", "B."];
    stack.model.script(text(words, { delayMs: 250 }));
    const onA = await client(stack.gw.url, line, binding);
    const onB = await client(b.url, line, binding);
    const stream = onA.sendMessageStream(send(message("tell me slowly")));
    const first = await stream.next();
    const head = (first.value as any).payload;
    expect(head.$case).toBe("task");
    const taskId: string = head.value.id;
    const fromA: any[] = [head];
    const readingA = (async () => {
      for await (const ev of stream as AsyncIterable<any>) fromA.push(ev.payload);
    })();
    // Attach on B once the model has started answering (mid-turn).
    await expect.poll(() => stack.model.requests.filter((r) => r.kind === "chat").length, { timeout: 30_000 }).toBeGreaterThan(0);
    const fromB: any[] = [];
    for await (const ev of onB.resubscribeTask({ tenant: "", id: taskId })) fromB.push(ev.payload);
    await readingA;
    expect(fromB[0].$case).toBe("task");
    expect(fromB[0].value.id).toBe(taskId);
    expect(fromB.at(-1).value.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(fromA.at(-1).value.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // Nothing missing between B's snapshot and the live events: both clients end with the whole answer.
    expect(assembled(fromB)).toBe(words.join(""));
    expect(assembled(fromA)).toBe(words.join(""));
    // The stored task, read on B, is the finished one.
    const stored: any = await onB.getTask({ tenant: "", id: taskId, historyLength: undefined } as never);
    expect(stored.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(stored.artifacts.find((a: any) => a.artifactId.endsWith(":text")).parts)).toBe(words.join(""));
  }, 90_000);
});
