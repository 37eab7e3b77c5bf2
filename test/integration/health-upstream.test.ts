// /health reports the OpenCode link: with OPENCODE_BASE_URL the gateway uses that server (nothing is spawned),
// says so, and turns `degraded` (HTTP 503) when it goes away.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { startStubUpstream, type StubUpstream } from "../../tools/upstream/stub.js";
import { call, startGateway, type StartedGateway, TEST_TOKEN } from "../support/gateway.js";

let stub: StubUpstream;
let upstream: Upstream;
let gw: StartedGateway;

beforeAll(async () => {
  stub = await startStubUpstream({ password: "stub-password-1", heartbeatMs: 200 });
  const env = {
    A2A_BEARER_TOKEN: TEST_TOKEN,
    OPENCODE_BASE_URL: stub.url,
    OPENCODE_SERVER_PASSWORD: "stub-password-1",
    OPENCODE_EVENT_IDLE_TIMEOUT_SECONDS: "1",
    OPENCODE_EVENT_RECONNECT_MAX_SECONDS: "0.2",
  };
  upstream = await startUpstream(loadConfig(env), pino({ level: "silent" }));
  gw = await startGateway(env, { upstream });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.stop();
  await stub?.close();
});

describe("/health with an external upstream", () => {
  it("spawns nothing and reports the link as healthy", async () => {
    expect(upstream.mode).toBe("external");
    expect(upstream.managed).toBeUndefined();
    await upstream.hub.ready(5_000);
    const res = await call(gw.url, "/health");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.body).toMatchObject({
      status: "ok",
      upstream: { mode: "external", healthy: true, version: "1.18.33", events: { state: "open", max_streams: 512 } },
    });
    // The upstream's address and password are not published.
    expect(res.text).not.toContain(stub.url);
    expect(res.text).not.toContain("stub-password-1");
    // The health probe used Basic auth through the generated client.
    expect(stub.requests.some((r) => r.path === "/global/health" && r.headers.authorization?.startsWith("Basic "))).toBe(true);
  });

  it("turns degraded (503) while OpenCode answers errors, and recovers", async () => {
    stub.failNext("GET /global/health", { status: 500, body: { name: "UnknownError", data: { message: "down" } } });
    const down = await call(gw.url, "/health");
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ status: "degraded", upstream: { healthy: false, error: expect.stringContaining("HTTP 500") } });
    const up = await call(gw.url, "/health");
    expect(up.status).toBe(200);
  });

  it("turns degraded when the event stream is down", async () => {
    // The next connection attempt hangs for 2.5 s, so the outage after the idle timeout lasts long enough to see.
    stub.failNext("GET /global/event", { delayMs: 2_500 });
    stub.pauseHeartbeats(true);
    try {
      await expect
        .poll(
          async () => {
            const res = await call(gw.url, "/health");
            return { status: res.status, state: res.body?.upstream?.events?.state };
          },
          { timeout: 5_000, interval: 50 },
        )
        .toMatchObject({ status: 503, state: expect.not.stringMatching(/^open$/) });
    } finally {
      stub.pauseHeartbeats(false);
    }
    await expect.poll(async () => (await call(gw.url, "/health")).status, { timeout: 8_000 }).toBe(200);
  });
});
