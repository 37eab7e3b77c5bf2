// A2A-Version negotiation: Major.Minor only, echoed on every response, unsupported versions answered in the
// default line's error shape (-32009 on JSON-RPC with HTTP 200, HTTP 400 on REST).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProtocolLine } from "../../src/contract/catalog.js";
import { call, rpc, startGateway, type StartedGateway } from "../support/gateway.js";
import { catalog, expectRestError, expectRpcError, fillPath, routesOf } from "../support/contract.js";

const gateways = {} as Record<ProtocolLine, StartedGateway>;
beforeAll(async () => {
  const started = await Promise.all(catalog.protocol_lines.map((l) => startGateway({ A2A_DEFAULT_PROTOCOL_VERSION: l })));
  catalog.protocol_lines.forEach((l, i) => (gateways[l] = started[i]!));
});
afterAll(async () => {
  await Promise.all(Object.values(gateways).map((g) => g.close()));
});

const cardMethod = catalog.methods.find((m) => m.operation === "extended-card" && m.line === "0.3")!.name;
const UNSUPPORTED = ["2.0", "1.0.0", "0.3.0", "1", "v1.0", "0.2", "latest"];

describe.each(catalog.protocol_lines)("default line %s", (dflt) => {
  const gw = () => gateways[dflt];

  it.each(UNSUPPORTED)("JSON-RPC with A2A-Version: %s → -32009 (HTTP 200) in the default line's shape", async (version) => {
    const res = await rpc(gw().url, { jsonrpc: "2.0", id: 1, method: cardMethod }, { "A2A-Version": version });
    const error = await expectRpcError(res, dflt, "VERSION_NOT_SUPPORTED");
    expect(res.headers.get("a2a-version")).toBe(dflt);
    if (dflt === "0.3") {
      expect(error.data.requested_version).toBe(version);
      expect(error.data.supported_protocol_versions).toEqual(catalog.protocol_lines);
    }
  });

  it.each(UNSUPPORTED)("REST with A2A-Version: %s → 400 in the default line's shape (/v1: always 0.3)", async (version) => {
    for (const path of ["/tasks", "/v1/card", "/.well-known/agent-card.json"]) {
      const res = await call(gw().url, path, { headers: { "A2A-Version": version } });
      const line = path.startsWith("/v1/") ? "0.3" : dflt;
      await expectRestError(res, line, "VERSION_NOT_SUPPORTED", 400);
      expect(res.headers.get("a2a-version")).toBe(line);
    }
  });

  it("?A2A-Version=2.0 in the query is rejected too", async () => {
    await expectRestError(await call(gw().url, "/health?A2A-Version=2.0"), dflt, "VERSION_NOT_SUPPORTED", 400);
  });

  it("an unsupported version is rejected even before authentication", async () => {
    await expectRestError(await call(gw().url, "/tasks", { auth: false, headers: { "A2A-Version": "9.9" } }), dflt, "VERSION_NOT_SUPPORTED", 400);
  });

  it("A2A-Version is echoed with the negotiated line", async () => {
    for (const line of catalog.protocol_lines) {
      const res = await call(gw().url, "/health", { headers: { "A2A-Version": line } });
      expect(res.headers.get("a2a-version")).toBe(line);
      const viaQuery = await call(gw().url, `/health?A2A-Version=${line}`);
      expect(viaQuery.headers.get("a2a-version")).toBe(line);
      const rpcRes = await rpc(gw().url, { jsonrpc: "2.0", id: 1, method: "no/such" }, { "A2A-Version": line });
      expect(rpcRes.headers.get("a2a-version")).toBe(line);
    }
    expect((await call(gw().url, "/health")).headers.get("a2a-version")).toBe(dflt);
    expect((await call(gw().url, "/no/such/route")).headers.get("a2a-version")).toBe(dflt);
  });

  it("whitespace around the version is tolerated", async () => {
    const res = await call(gw().url, "/health", { headers: { "A2A-Version": " 1.0 " } });
    expect(res.status).toBe(200);
    expect(res.headers.get("a2a-version")).toBe("1.0");
  });

  it("every /v1 route answers A2A-Version: 0.3 whatever the client asked", async () => {
    const v1 = routesOf("a2a").filter((r) => r.path.startsWith("/v1/"));
    expect(v1.length).toBeGreaterThan(0);
    for (const route of v1)
      for (const asked of [undefined, ...catalog.protocol_lines]) {
        const res = await call(gw().url, fillPath(route.path), {
          method: route.verb,
          headers: asked ? { "A2A-Version": asked } : {},
          ...(route.verb === "POST" ? { body: {} } : {}),
        });
        expect(res.headers.get("a2a-version"), `${route.verb} ${route.path} asked ${asked}`).toBe("0.3");
        if (res.status >= 400) await expectRestError(res, "0.3", res.body.data.type, res.status);
      }
  });
});
