// e2e, managed mode: the gateway runs the real `opencode serve` itself (from opencode-ai). When that process dies
// mid-turn (kill -9), the running task fails at once with UPSTREAM_TURN_LOST — never a truncated "completed" — and
// keeps the output that had arrived, marked partial.
import fs from "node:fs";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { prepareHermeticEnvironment, type HermeticEnvironment } from "../../tools/upstream/hermetic.js";
import { startModelServer, type ModelServer } from "../../tools/upstream/model-server.js";
import { hang } from "../../tools/upstream/script.js";
import { privateStore, rpc, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { until } from "../support/task-wire.js";

let model: ModelServer;
let scratch: HermeticEnvironment;
let upstream: Upstream;
let gw: StartedGateway;
let store: ReturnType<typeof privateStore>;
beforeAll(async () => {
  model = await startModelServer();
  scratch = prepareHermeticEnvironment({ modelBaseUrl: model.baseUrl });
  store = privateStore({});
  // No OPENCODE_BASE_URL: managed mode, with the hermetic environment for the child.
  const env = { A2A_BEARER_TOKEN: TEST_TOKEN, OPENCODE_WORKSPACE_ROOT: scratch.workspace, ...store.env };
  upstream = await startUpstream(loadConfig(env), pino({ level: "silent" }), { env: scratch.env });
  gw = await startGateway(env, { upstream });
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await upstream?.stop();
  await model?.close();
  store?.remove();
  if (scratch) fs.rmSync(scratch.root, { recursive: true, force: true });
});

const send = (id: number, words: string, blocking: boolean) =>
  rpc(gw.url, {
    jsonrpc: "2.0",
    id,
    method: "message/send",
    params: { message: { kind: "message", role: "user", messageId: `m${id}`, parts: [{ kind: "text", text: words }] }, configuration: { blocking } },
  });

describe("managed OpenCode killed mid-turn", () => {
  it("fails the running task with UPSTREAM_TURN_LOST within 5 s, keeps the partial text", async () => {
    model.script(hang({ chunks: ["partial words before the crash"], holdMs: 60_000 }));
    const started = await send(1, "a long answer", false);
    const taskId: string = started.body.result.id;
    await until("partial text streamed", async () => {
      const t = (await rpc(gw.url, { jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: taskId } })).body.result;
      return t?.artifacts?.some((a: any) => JSON.stringify(a.parts).includes("partial words")) ? true : undefined;
    }, 30_000, 100);
    const pid = upstream.managed!.pid!;
    const killedAt = Date.now();
    process.kill(pid, "SIGKILL");
    const failed = await until("task failed", async () => {
      const t = (await rpc(gw.url, { jsonrpc: "2.0", id: 3, method: "tasks/get", params: { id: taskId } })).body.result;
      return t?.status?.state !== "working" ? t : undefined;
    }, 10_000, 50);
    expect(Date.now() - killedAt).toBeLessThan(5_000);
    expect(failed.status.state).toBe("failed");
    expect(failed.metadata.opencode.error.type).toBe("UPSTREAM_TURN_LOST");
    const textArtifact = failed.artifacts.find((a: any) => a.artifactId === `${taskId}:text`);
    expect(JSON.stringify(textArtifact.parts)).toContain("partial words before the crash");
    expect(textArtifact.metadata.opencode.partial).toBe(true);

  }, 60_000);
});
