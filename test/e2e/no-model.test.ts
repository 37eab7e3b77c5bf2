// e2e: a first run without a usable model. The real `opencode serve` is configured with a provider whose endpoint
// does not answer (nothing listens on its port): /health says degraded and names what to configure, and a task is
// refused within seconds with UPSTREAM_MODEL_UNAVAILABLE instead of hanging while OpenCode retries.
import net from "node:net";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { startHermeticOpencode, type HermeticOpencode } from "../../tools/upstream/hermetic.js";
import { call, privateStore, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";

/** A loopback port nothing listens on (bound, then released). */
async function deadPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let oc: HermeticOpencode;
let upstream: Upstream;
let gw: StartedGateway;
let store: ReturnType<typeof privateStore>;
let port: number;
beforeAll(async () => {
  port = await deadPort();
  oc = await startHermeticOpencode({ modelBaseUrl: `http://127.0.0.1:${port}/v1` });
  store = privateStore({});
  const env = { A2A_BEARER_TOKEN: TEST_TOKEN, OPENCODE_BASE_URL: oc.url, OPENCODE_WORKSPACE_ROOT: oc.workspace, ...store.env };
  upstream = await startUpstream(loadConfig(env), pino({ level: "silent" }));
  gw = await startGateway(env, { upstream });
}, 90_000);
afterAll(async () => {
  await gw?.close();
  await upstream?.stop();
  await oc?.stop();
  store?.remove();
});

describe("no usable model", () => {
  it("/health is degraded and names the provider, the model and the dead endpoint", async () => {
    // The first check may find OpenCode still starting (state unknown); /health checks again while it is not ok.
    let health = await call(gw.url, "/health");
    for (let i = 0; i < 30 && health.body.model?.state !== "unavailable"; i++) {
      await new Promise((r) => setTimeout(r, 500));
      health = await call(gw.url, "/health");
    }
    expect(health.status, JSON.stringify(health.body).slice(0, 600)).toBe(503);
    expect(health.body.status).toBe("degraded");
    expect(health.body.model).toMatchObject({ state: "unavailable", provider: "fake", model: "fake-model", endpoint: `http://127.0.0.1:${port}` });
    expect(health.body.model.reason).toMatch(/does not answer/);
  }, 30_000);

  it("a task is refused within seconds with UPSTREAM_MODEL_UNAVAILABLE on both lines", async () => {
    const started = Date.now();
    const v03 = await call(gw.url, "/", {
      method: "POST",
      body: { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { kind: "message", role: "user", messageId: "m1", parts: [{ kind: "text", text: "hello" }] } } },
    });
    expect(v03.body.error.data).toMatchObject({ type: "UPSTREAM_MODEL_UNAVAILABLE", provider: "fake", model: "fake-model" });
    const v10 = await call(gw.url, "/message:send", {
      method: "POST",
      headers: { "A2A-Version": "1.0" },
      body: { message: { role: "ROLE_USER", messageId: "m2", parts: [{ text: "hello" }] } },
    });
    expect(v10.status).toBe(503);
    expect(v10.body.error.details[0].reason).toBe("UPSTREAM_MODEL_UNAVAILABLE");
    expect(Date.now() - started).toBeLessThan(10_000);
    // Nothing was created.
    const list = await call(gw.url, "/tasks", { headers: { "A2A-Version": "1.0" } });
    expect(list.body.tasks).toHaveLength(0);
  }, 30_000);
});
