// Agent cards over HTTP: cache validators (weak ETag, Last-Modified, Cache-Control, Vary), 304s per shape, aliases, the
// header-less card of both lines (DECISIONS 1) and the line cards.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startGateway, type StartedGateway } from "../support/gateway.js";
import { expectValid, routesOf } from "../support/contract.js";

const PUBLIC_CARD = "/.well-known/agent-card.json";
const EXTENDED_CARD = "/agent/authenticatedExtendedCard";

let gw: StartedGateway;
let def10: StartedGateway;
beforeAll(async () => {
  [gw, def10] = await Promise.all([startGateway({ A2A_CARD_MAX_AGE_SECONDS: "123" }), startGateway({ A2A_DEFAULT_PROTOCOL_VERSION: "1.0" })]);
});
afterAll(async () => {
  await Promise.all([gw?.close(), def10?.close()]);
});

function varyOf(h: Headers): string[] {
  return (h.get("vary") ?? "").split(",").map((v) => v.trim().toLowerCase());
}

describe.each([
  { path: PUBLIC_CARD, auth: false, visibility: "public" },
  { path: EXTENDED_CARD, auth: true, visibility: "private" },
])("$path", ({ path, auth, visibility }) => {
  it("has a weak ETag, Cache-Control, Last-Modified and Vary: A2A-Version", async () => {
    const res = await call(gw.url, path, { auth });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toMatch(/^W\/"[^"]+"$/);
    expect(res.headers.get("cache-control")).toBe(`${visibility}, max-age=123`);
    const lastModified = res.headers.get("last-modified");
    expect(lastModified).toBeTruthy();
    expect(Number.isNaN(Date.parse(lastModified!))).toBe(false);
    expect(Date.parse(lastModified!)).toBeLessThanOrEqual(Date.now());
    expect(varyOf(res.headers)).toContain("a2a-version");
    if (auth) expect(varyOf(res.headers)).toContain("authorization");
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("If-None-Match with the ETag → 304 without body; a different tag → 200", async () => {
    const first = await call(gw.url, path, { auth });
    const etag = first.headers.get("etag")!;
    const again = await call(gw.url, path, { auth, headers: { "If-None-Match": etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    expect(again.headers.get("etag")).toBe(etag);
    const strong = await call(gw.url, path, { auth, headers: { "If-None-Match": etag.replace(/^W\//, "") } });
    expect(strong.status).toBe(304); // weak comparison (RFC 9110 §13.1.2)
    const listed = await call(gw.url, path, { auth, headers: { "If-None-Match": `W/"other", ${etag}` } });
    expect(listed.status).toBe(304);
    const wrong = await call(gw.url, path, { auth, headers: { "If-None-Match": 'W/"not-the-etag"' } });
    expect(wrong.status).toBe(200);
    expect(wrong.body).toEqual(first.body);
  });

  it("the ETag is stable and differs between 0.3, 1.0 and the header-less card of both lines", async () => {
    const a = await call(gw.url, path, { auth, headers: { "A2A-Version": "0.3" } });
    const b = await call(gw.url, path, { auth, headers: { "A2A-Version": "1.0" } });
    const d = await call(gw.url, path, { auth });
    const a2 = await call(gw.url, path, { auth, headers: { "A2A-Version": "0.3" } });
    const d2 = await call(gw.url, path, { auth });
    expect(a.headers.get("etag")).toBe(a2.headers.get("etag"));
    expect(d.headers.get("etag")).toBe(d2.headers.get("etag"));
    expect(new Set([a, b, d].map((r) => r.headers.get("etag"))).size).toBe(3);
    // A 1.0 ETag does not validate the 0.3 representation, nor the dual one; each validates its own.
    const cross = await call(gw.url, path, { auth, headers: { "A2A-Version": "0.3", "If-None-Match": b.headers.get("etag")! } });
    expect(cross.status).toBe(200);
    const crossDual = await call(gw.url, path, { auth, headers: { "If-None-Match": b.headers.get("etag")! } });
    expect(crossDual.status).toBe(200);
    for (const [res, headers] of [
      [a, { "A2A-Version": "0.3" }],
      [b, { "A2A-Version": "1.0" }],
      [d, {}],
    ] as const) {
      const again = await call(gw.url, path, { auth, headers: { ...headers, "If-None-Match": res.headers.get("etag")! } });
      expect(again.status).toBe(304);
      expect(varyOf(again.headers)).toContain("a2a-version");
    }
  });
});

describe("aliases and negotiation", () => {
  it("every public discovery route serves the same card", async () => {
    const paths = routesOf("discovery").filter((r) => r.public && r.verb === "GET").map((r) => r.path);
    expect(paths).toContain("/.well-known/agent.json");
    for (const line of ["0.3", "1.0"]) {
      const results = await Promise.all(paths.map((p) => call(gw.url, p, { auth: false, headers: { "A2A-Version": line } })));
      for (const r of results) {
        expect(r.status).toBe(200);
        expect(r.body).toEqual(results[0]!.body);
        expect(r.headers.get("etag")).toBe(results[0]!.headers.get("etag"));
      }
    }
  });

  it("?A2A-Version=1.0 selects the 1.0 card", async () => {
    const res = await call(gw.url, `${PUBLIC_CARD}?A2A-Version=1.0`, { auth: false });
    expect(res.status).toBe(200);
    expect(res.headers.get("a2a-version")).toBe("1.0");
    await expectValid("v1_0/AgentCard", res.body);
    expect(res.body.supportedInterfaces).toBeDefined();
    expect(res.body).not.toHaveProperty("protocolVersion");
  });

  it("the header wins over the query parameter", async () => {
    const res = await call(gw.url, `${PUBLIC_CARD}?A2A-Version=1.0`, { auth: false, headers: { "A2A-Version": "0.3" } });
    expect(res.headers.get("a2a-version")).toBe("0.3");
    expect(res.body.protocolVersion).toBeDefined();
  });

  it("without A2A-Version (header or query) the card serves both lines, whatever A2A_DEFAULT_PROTOCOL_VERSION says", async () => {
    for (const g of [gw, def10]) {
      const dual = await call(g.url, PUBLIC_CARD, { auth: false });
      expect(dual.status).toBe(200);
      await expectValid("v0_3/AgentCard", dual.body);
      await expectValid("v1_0/AgentCard", dual.body);
      expect(dual.body).toMatchObject({ protocolVersion: "0.3.0", url: g.url, preferredTransport: "HTTP+JSON", supportsAuthenticatedExtendedCard: true });
      const v03 = await call(g.url, PUBLIC_CARD, { auth: false, headers: { "A2A-Version": "0.3" } });
      const v10 = await call(g.url, PUBLIC_CARD, { auth: false, headers: { "A2A-Version": "1.0" } });
      // The 0.3 discovery fields are the 0.3 card's, the interfaces the 1.0 card's (1.0 first, then 0.3).
      for (const k of ["url", "preferredTransport", "additionalInterfaces", "security", "skills", "defaultInputModes"]) expect(dual.body[k]).toEqual(v03.body[k]);
      for (const k of ["supportedInterfaces", "securityRequirements"]) expect(dual.body[k]).toEqual(v10.body[k]);
      expect(dual.body.capabilities).toEqual({ ...v03.body.capabilities, ...v10.body.capabilities });
      for (const [name, scheme] of Object.entries(dual.body.securitySchemes)) expect(scheme).toEqual({ ...v03.body.securitySchemes[name], ...v10.body.securitySchemes[name] });
    }
    // The response still names the line the request negotiated (its default).
    expect((await call(def10.url, PUBLIC_CARD, { auth: false })).headers.get("a2a-version")).toBe("1.0");
    expect((await call(gw.url, PUBLIC_CARD, { auth: false })).headers.get("a2a-version")).toBe("0.3");
  });

  it("with A2A-Version the card is that line's alone, on either default", async () => {
    for (const g of [gw, def10]) {
      const v10 = await call(g.url, PUBLIC_CARD, { auth: false, headers: { "A2A-Version": "1.0" } });
      await expectValid("v1_0/AgentCard", v10.body);
      expect(v10.body).not.toHaveProperty("url");
      expect(v10.body).not.toHaveProperty("protocolVersion");
      const v03 = await call(g.url, `${PUBLIC_CARD}?A2A-Version=0.3`, { auth: false });
      await expectValid("v0_3/AgentCard", v03.body);
      expect(v03.body).not.toHaveProperty("supportedInterfaces");
      expect(v03.body).not.toHaveProperty("securityRequirements");
    }
  });

  it("the extended card follows the same rule on its REST GETs; /v1/card is always 0.3; JSON-RPC calls have a line", async () => {
    const dual = await call(gw.url, EXTENDED_CARD);
    await expectValid("v0_3/AgentCard", dual.body);
    await expectValid("v1_0/AgentCard", dual.body);
    expect(dual.body.supportedInterfaces.map((i: { protocolVersion: string }) => i.protocolVersion)).toEqual(["1.0", "1.0", "0.3", "0.3"]);
    expect(dual.body).toMatchObject({ protocolVersion: "0.3.0", url: gw.url });
    // Its line-specific extension params (the wire contract) are the default line's.
    const wire = (card: { capabilities: { extensions: { params?: { all_jsonrpc_methods?: unknown; protocol_version?: string } }[] } }) =>
      card.capabilities.extensions.find((e) => e.params?.all_jsonrpc_methods)!.params!;
    expect(wire(dual.body).protocol_version).toBe("0.3");
    expect(wire((await call(def10.url, EXTENDED_CARD)).body).protocol_version).toBe("1.0");
    const root = await call(gw.url, "/extendedAgentCard");
    expect(root.status).toBe(200);
    expect(root.body).toEqual(dual.body);
    const root10 = await call(gw.url, "/extendedAgentCard", { headers: { "A2A-Version": "1.0" } });
    await expectValid("v1_0/AgentCard", root10.body);
    expect(root10.body).not.toHaveProperty("url");
    const v1 = await call(gw.url, "/v1/card");
    await expectValid("v0_3/AgentCard", v1.body);
    expect(v1.body).not.toHaveProperty("supportedInterfaces");
    const explicit = await call(gw.url, EXTENDED_CARD, { headers: { "A2A-Version": "1.0" } });
    expect(explicit.body).not.toHaveProperty("protocolVersion");
  });

  it("the 1.0 card lists 1.0 interfaces first and stamps every interface with its version", async () => {
    const res = await call(gw.url, PUBLIC_CARD, { auth: false, headers: { "A2A-Version": "1.0" } });
    const interfaces = res.body.supportedInterfaces as { protocolVersion: string; protocolBinding: string }[];
    expect(interfaces.length).toBeGreaterThan(0);
    const firstOld = interfaces.findIndex((i) => i.protocolVersion !== "1.0");
    if (firstOld >= 0) expect(interfaces.slice(firstOld).every((i) => i.protocolVersion === "0.3")).toBe(true);
    expect(interfaces[0]!.protocolVersion).toBe("1.0");
  });

  it("the 0.3 card lists only 0.3 interfaces", async () => {
    const res = await call(gw.url, PUBLIC_CARD, { auth: false, headers: { "A2A-Version": "0.3" } });
    for (const i of res.body.additionalInterfaces as { transport: string }[]) expect(["JSONRPC", "HTTP+JSON", "GRPC"]).toContain(i.transport);
    expect(res.body.supportedInterfaces).toBeUndefined();
  });
});
