// Authentication at the edge: every non-public catalog route needs the bearer token; public artifacts do not.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, rpc, startGateway, TEST_TOKEN, type HttpResult, type StartedGateway } from "../support/gateway.js";
import { catalog, expectRestError, expectRpcError, fillPath } from "../support/contract.js";

let gw: StartedGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw?.close());

const privateRoutes = catalog.routes.filter((r) => !r.public);
const publicRoutes = catalog.routes.filter((r) => r.public);

function expectChallenge(res: HttpResult): void {
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate") ?? "").toMatch(/\bBearer\b/);
}

async function hit(route: (typeof catalog.routes)[number], headers: Record<string, string>, auth = false): Promise<HttpResult> {
  const body = route.verb === "POST" ? (route.path === "/" ? { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "x" } } : {}) : undefined;
  return call(gw.url, fillPath(route.path), { method: route.verb, auth, headers, ...(body ? { body } : {}) });
}

describe("credentials required", () => {
  it("the catalog has private and public routes (premise)", () => {
    expect(privateRoutes.length).toBeGreaterThan(0);
    expect(publicRoutes.length).toBeGreaterThan(0);
    expect(privateRoutes.some((r) => r.path === "/" && r.verb === "POST")).toBe(true);
  });

  it.each(privateRoutes.map((r) => [`${r.verb} ${r.path}`, r] as const))("%s without credentials → 401 Bearer challenge", async (_, route) => {
    const res = await hit(route, {});
    expectChallenge(res);
    if (route.path === "/") await expectRpcError(res, "0.3", "UNAUTHENTICATED", { httpStatus: 401, id: null });
    else await expectRestError(res, "0.3", "UNAUTHENTICATED");
  });

  it.each(privateRoutes.map((r) => [`${r.verb} ${r.path}`, r] as const))("%s with a wrong token → 401", async (_, route) => {
    const res = await hit(route, { authorization: `Bearer ${TEST_TOKEN}x` });
    expectChallenge(res);
  });

  it.each([
    ["another scheme", `Basic ${Buffer.from(`admin:${TEST_TOKEN}`).toString("base64")}`],
    ["no scheme", TEST_TOKEN],
    ["empty bearer", "Bearer "],
    ["token prefix", `Bearer ${TEST_TOKEN.slice(0, -1)}`],
  ])("%s → 401", async (_, authorization) => {
    expectChallenge(await call(gw.url, "/health", { auth: false, headers: { authorization } }));
    expectChallenge(await rpc(gw.url, { jsonrpc: "2.0", id: 1, method: "agent/getAuthenticatedExtendedCard" }, { authorization }));
  });

  it("the 1.0 error shape is used when the client speaks 1.0", async () => {
    const res = await call(gw.url, "/tasks", { auth: false, headers: { "A2A-Version": "1.0" } });
    expectChallenge(res);
    await expectRestError(res, "1.0", "UNAUTHENTICATED");
  });

  it("the right token is accepted (scheme name case-insensitive)", async () => {
    for (const scheme of ["Bearer", "bearer"]) {
      const res = await call(gw.url, "/health", { auth: false, headers: { authorization: `${scheme} ${TEST_TOKEN}` } });
      expect(res.status).toBe(200);
    }
  });

  it("POST to a public path still needs credentials (only GET/HEAD are public)", async () => {
    const res = await call(gw.url, "/.well-known/agent-card.json", { method: "POST", auth: false, body: {} });
    expectChallenge(res);
  });
});

describe("public surface", () => {
  it.each(publicRoutes.map((r) => [`${r.verb} ${r.path}`, r] as const))("%s without credentials → 200", async (_, route) => {
    let path = fillPath(route.path);
    if (route.path.includes("{")) {
      const index = await call(gw.url, "/schemas", { auth: false });
      path = index.body.schemas[0];
    }
    const res = await call(gw.url, path, { auth: false });
    expect(res.status, `${path}: ${res.text.slice(0, 200)}`).toBe(200);
    expect(res.headers.get("www-authenticate")).toBeNull();
  });

  it("HEAD on a public route is public too", async () => {
    const res = await call(gw.url, "/openapi.json", { method: "HEAD", auth: false });
    expect(res.status).toBe(200);
  });

  it("/openapi.json, /openapi.yaml and /schemas serve the contract", async () => {
    const json = await call(gw.url, "/openapi.json", { auth: false });
    expect(json.body.openapi).toMatch(/^3\./);
    expect(Object.keys(json.body["x-opencode-a2a-wire-contract"]).sort()).toEqual([...catalog.protocol_lines].sort());
    const yaml = await call(gw.url, "/openapi.yaml", { auth: false });
    expect(yaml.headers.get("content-type")).toMatch(/yaml/);
    expect(yaml.text).toMatch(/^openapi: /m);
    const index = await call(gw.url, "/schemas", { auth: false });
    expect(index.body.schemas.length).toBeGreaterThan(0);
    for (const group of catalog.schema_groups) expect(index.body.schemas.some((s: string) => s.startsWith(`/schemas/${group}/`)), group).toBe(true);
    const card = await call(gw.url, "/schemas/v1_0/AgentCard.json", { auth: false });
    expect(card.status).toBe(200);
    expect(card.headers.get("content-type")).toMatch(/^application\/schema\+json/);
    expect(card.body.$id).toBe("AgentCard.json");
  });

  it("a schema that does not exist (or escapes the folder) → 404", async () => {
    for (const path of ["/schemas/v1_0/Nope.json", "/schemas/nope/AgentCard.json", "/schemas/v1_0/..%2F..%2Fcontract%2Fcatalog.json"]) {
      const res = await call(gw.url, path, { auth: false });
      expect(res.status, path).toBe(404);
    }
  });
});

describe("/health", () => {
  it("needs credentials", async () => {
    expectChallenge(await call(gw.url, "/health", { auth: false }));
  });

  it("answers status ok with the runtime profile and the wire contract of the line", async () => {
    for (const line of catalog.protocol_lines) {
      const res = await call(gw.url, "/health", { headers: { "A2A-Version": line } });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe("ok");
      expect(res.body.profile).toBeTypeOf("object");
      expect(res.body.profile.profile_id).toBeTypeOf("string");
      expect(res.body.wire_contract.protocol_version).toBe(line);
      expect(Array.isArray(res.body.wire_contract.all_jsonrpc_methods)).toBe(true);
      const ext = await call(gw.url, "/agent/authenticatedExtendedCard", { headers: { "A2A-Version": line } });
      const wc = ext.body.capabilities.extensions.find((e: { params?: { all_jsonrpc_methods?: unknown } }) => e.params?.all_jsonrpc_methods);
      expect(res.body.wire_contract).toEqual(wc.params);
    }
  });
});
