// Logs never carry the bearer token: request logs of a real gateway, and the logger's own redaction.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logging/index.js";
import { loadConfig } from "../../src/config/index.js";
import { call, rpc, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { Capture } from "../support/logs.js";


let out: Capture;
let gw: StartedGateway;
beforeAll(async () => {
  out = new Capture();
  gw = await startGateway({ A2A_LOG_LEVEL: "trace" }, { logger: createLogger("trace", out) });
});
afterAll(() => gw?.close());

describe("request logging", () => {
  it("logs requests without the token", async () => {
    const before = out.lines.length;
    await call(gw.url, "/health");
    await call(gw.url, "/agent/authenticatedExtendedCard");
    await rpc(gw.url, { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: TEST_TOKEN } });
    await rpc(gw.url, { jsonrpc: "2.0", id: 1, method: "no/such" });
    await call(gw.url, "/health", { auth: false, headers: { authorization: `Bearer ${TEST_TOKEN}-wrong` } });
    await call(gw.url, "/v1/message:send", { method: "POST", body: { token: TEST_TOKEN } });
    const logged = out.lines.slice(before);
    expect(logged.length).toBeGreaterThanOrEqual(6); // the capture works: one line per request at least
    for (const line of logged) expect(() => JSON.parse(line)).not.toThrow();
    const requests = logged.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
    expect(requests.map((r) => r.path)).toEqual(expect.arrayContaining(["/health", "/", "/v1/message:send"]));
    expect(requests.find((r) => r.path === "/health")).toMatchObject({ method: "GET", status: 200 });
    expect(out.text).not.toContain(TEST_TOKEN);
  });
});

describe("createLogger redaction", () => {
  it("redacts tokens wherever the documented paths put them", () => {
    const sink = new Capture();
    const log = createLogger("info", sink);
    const config = loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN });
    log.info({ config }, "config");
    log.info({ req: { headers: { authorization: `Bearer ${TEST_TOKEN}`, "x-api-key": TEST_TOKEN } } }, "req");
    log.info({ headers: { authorization: `Bearer ${TEST_TOKEN}` } }, "headers");
    log.info({ token: TEST_TOKEN, bearerToken: TEST_TOKEN, nested: { token: TEST_TOKEN, secret: TEST_TOKEN } }, "fields");
    expect(sink.lines).toHaveLength(4);
    expect(sink.text).not.toContain(TEST_TOKEN);
    expect(sink.text).toContain("[redacted]");
    expect(JSON.parse(sink.lines[0]!).config.port).toBe(config.port); // the rest of the object is still logged
  });

  it("respects the level", () => {
    const sink = new Capture();
    const log = createLogger("warn", sink);
    log.info("hidden");
    log.warn("shown");
    expect(sink.lines.map((l) => JSON.parse(l).msg)).toEqual(["shown"]);
  });
});
