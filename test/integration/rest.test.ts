// HTTP+JSON routes: /v1 speaks 0.3 REST (flat errors), root routes speak the negotiated line (1.0 → AIP-193),
// body validation, 404/405.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTOCOL_LINES, type ProtocolLine } from "../../src/contract/catalog.js";
import { methodForOperation } from "../../src/operations/index.js";
import { call, startGateway, type StartedGateway } from "../support/gateway.js";
import { catalog, expectRestError, expectValid, fillPath, pathPattern, routesOf } from "../support/contract.js";
import { sample } from "../support/samples.js";

let gw: StartedGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw?.close());

const a2a = routesOf("a2a");
const v1 = a2a.filter((r) => r.path.startsWith("/v1/"));
const root = a2a.filter((r) => !r.path.startsWith("/v1/"));
const cardRoutes = a2a.filter((r) => r.operation === "extended-card");
const CARD_SCHEMA: Record<ProtocolLine, string> = { "0.3": "v0_3/AgentCard", "1.0": "v1_0/AgentCard" };

/** The line a route speaks when the client asks for `asked` (undefined = default line 0.3). */
function lineOf(path: string, asked: ProtocolLine | undefined): ProtocolLine {
  return path.startsWith("/v1/") ? "0.3" : (asked ?? "0.3");
}

/** Expected outcome of a route called with a valid body, derived from the catalog entry of its method. */
function expectedReason(route: (typeof a2a)[number], line: ProtocolLine): string | null {
  const method = methodForOperation(catalog, line, route.operation!)!;
  if (method.not_implemented_until) return "NOT_IMPLEMENTED";
  // This gateway runs without an OpenCode upstream: task operations get past routing and validation, then answer
  // UPSTREAM_UNREACHABLE (test/integration/tasks*.test.ts drive them against the stub).
  if (["send", "stream", "get", "list", "cancel", "subscribe"].includes(method.operation ?? "")) return "UPSTREAM_UNREACHABLE";
  if (method.operation?.startsWith("push.")) return "PUSH_NOTIFICATION_NOT_SUPPORTED";
  return null;
}

function bodySchema(route: (typeof a2a)[number], line: ProtocolLine): string | null {
  if (route.line === line) return route.body_schema;
  return a2a.find((r) => r.line === line && r.operation === route.operation && r.verb === route.verb)?.body_schema ?? route.body_schema;
}

describe("every REST route with a valid request", () => {
  it("premises", () => {
    expect(v1.length).toBeGreaterThan(0);
    expect(root.length).toBeGreaterThan(0);
    expect(cardRoutes.length).toBeGreaterThan(0);
  });

  const cases = a2a.flatMap((r) => (r.path.startsWith("/v1/") ? [[r, undefined]] : [[r, undefined], [r, "1.0"]]) as [typeof r, ProtocolLine | undefined][]);
  it.each(cases.map(([r, asked]) => [`${r.verb} ${r.path}`, asked ?? "(default)", r, asked] as const))("%s with A2A-Version %s", async (_, __, route, asked) => {
    const line = lineOf(route.path, asked);
    const schema = bodySchema(route, line);
    const res = await call(gw.url, fillPath(route.path), {
      method: route.verb,
      headers: asked ? { "A2A-Version": asked } : {},
      ...(schema ? { body: sample(schema) } : {}),
    });
    expect(res.headers.get("a2a-version")).toBe(line);
    const reason = expectedReason(route, line);
    if (reason) await expectRestError(res, line, reason);
    else {
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    }
  });
});

describe("extended card routes", () => {
  // A root route asked without A2A-Version answers the card of both lines, as the discovery GET does (DECISIONS 1);
  // `/v1/card` always speaks 0.3.
  it.each(cardRoutes.map((r) => [r.path, r] as const))("%s returns the extended card of the line it speaks", async (path, route) => {
    for (const asked of [undefined, ...PROTOCOL_LINES]) {
      const line = lineOf(route.path, asked);
      const dual = asked === undefined && !route.path.startsWith("/v1/");
      const res = await call(gw.url, path, { headers: asked ? { "A2A-Version": asked } : {} });
      expect(res.status).toBe(200);
      await expectValid(CARD_SCHEMA[line], res.body);
      if (dual) await expectValid(CARD_SCHEMA["1.0"], res.body);
      const discovery = await call(gw.url, "/agent/authenticatedExtendedCard", { headers: dual ? {} : { "A2A-Version": line } });
      expect(res.body).toEqual(discovery.body);
      expect(res.body.supportedInterfaces === undefined).toBe(line === "0.3" && !dual);
    }
  });
});

describe("error shapes", () => {
  it("/v1 errors are flat 0.3 {code, message, data:{type}}", async () => {
    const route = v1.find((r) => r.body_schema)!;
    const res = await call(gw.url, fillPath(route.path), { method: route.verb, body: { nope: true } });
    const body = await expectRestError(res, "0.3", "INVALID_PARAMS");
    expect(Object.keys(body).sort()).toEqual(["code", "data", "message"]);
    expect(body.data.field).toBeTypeOf("string");
  });

  it("root routes with A2A-Version: 1.0 answer AIP-193 {error:{code,status,message,details:[ErrorInfo]}}", async () => {
    const route = root.find((r) => r.body_schema)!;
    const res = await call(gw.url, fillPath(route.path), { method: route.verb, headers: { "A2A-Version": "1.0" }, body: { nope: true } });
    const body = await expectRestError(res, "1.0", "INVALID_PARAMS");
    expect(Object.keys(body)).toEqual(["error"]);
    const badRequest = body.error.details.find((d: Record<string, string>) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest");
    await expectValid("v1_0/BadRequest", badRequest);
  });

  it("root routes without A2A-Version speak the default line (0.3) and validate against the /v1 twin's body", async () => {
    const route = root.find((r) => r.body_schema)!;
    const twinSchema = bodySchema(route, "0.3")!;
    expect(twinSchema).not.toBe(route.body_schema);
    const ok = await call(gw.url, fillPath(route.path), { method: route.verb, body: sample(twinSchema) });
    expect(ok.headers.get("a2a-version")).toBe("0.3");
    await expectRestError(ok, "0.3", expectedReason(route, "0.3")!);
    const wrongLine = await call(gw.url, fillPath(route.path), { method: route.verb, body: sample(route.body_schema!) });
    await expectRestError(wrongLine, "0.3", "INVALID_PARAMS");
  });

  it.each(a2a.filter((r) => r.body_schema).map((r) => [`${r.verb} ${r.path}`, r] as const))("%s: missing, invalid and non-JSON bodies → 400", async (_, route) => {
    const path = fillPath(route.path);
    await expectRestError(await call(gw.url, path, { method: route.verb }), "0.3", "INVALID_PARAMS");
    await expectRestError(await call(gw.url, path, { method: route.verb, body: [] }), "0.3", "INVALID_PARAMS");
    await expectRestError(await call(gw.url, path, { method: route.verb, body: "{not json" }), "0.3", "PARSE_ERROR");
  });

  it("unknown route → 404 ROUTE_NOT_FOUND in the line's shape", async () => {
    await expectRestError(await call(gw.url, "/v1/nope"), "0.3", "ROUTE_NOT_FOUND", 404);
    await expectRestError(await call(gw.url, "/nope", { headers: { "A2A-Version": "1.0" } }), "1.0", "ROUTE_NOT_FOUND", 404);
    await expectRestError(await call(gw.url, "/tasks/a/b/c/d"), "0.3", "ROUTE_NOT_FOUND", 404);
  });
});

describe("405 Method Not Allowed", () => {
  const VERBS = ["GET", "POST", "PUT", "PATCH", "DELETE"];
  const paths = [...new Set(catalog.routes.map((r) => r.path))];
  /** Verbs some catalog route accepts on a concrete path (any template that matches it). */
  const acceptedOn = (concrete: string) => new Set(catalog.routes.filter((r) => pathPattern(r.path).test(concrete)).map((r) => r.verb));

  const cases = paths.flatMap((p) => {
    const concrete = fillPath(p);
    const accepted = acceptedOn(concrete);
    return VERBS.filter((v) => !accepted.has(v)).map((v) => [v, p, concrete] as const);
  });

  it.each(cases)("%s %s → 405 with Allow", async (verb, path, concrete) => {
    const res = await call(gw.url, concrete, { method: verb, ...(verb === "GET" ? {} : { body: {} }) });
    await expectRestError(res, "0.3", "HTTP_METHOD_NOT_ALLOWED", 405);
    const allow = (res.headers.get("allow") ?? "").split(",").map((s) => s.trim());
    for (const r of catalog.routes.filter((x) => x.path === path)) expect(allow).toContain(r.verb);
    expect(allow).not.toContain(verb);
  });

  // Regression: the `{id}` placeholder of `/tasks/{id}` used to swallow `abc:cancel`, so a GET to the cancel URL
  // read a task named "abc:cancel" instead of answering 405 (in gRPC transcoding the `:verb` suffix is not part of
  // the `{id}` segment).
  const postOnlySuffixRoutes = catalog.routes.filter(
    (r) => r.path.includes("}:") && !catalog.routes.some((o) => o.path === r.path && o.verb === "GET"),
  );
  it("premise: the catalog has POST-only `{id}:verb` routes", () => {
    expect(postOnlySuffixRoutes.length).toBeGreaterThan(0);
  });
  it.each(postOnlySuffixRoutes.map((r) => [r.path] as const))("GET %s (a POST-only `{id}:verb` route) → 405 with Allow", async (path) => {
    const res = await call(gw.url, fillPath(path));
    await expectRestError(res, "0.3", "HTTP_METHOD_NOT_ALLOWED", 405);
    for (const r of catalog.routes.filter((x) => x.path === path)) expect(res.headers.get("allow")).toContain(r.verb);
  });
});

// Regression: the negotiated line used to apply to /v1 paths before routing, so errors raised before the /v1 handler
// (401, 415, 405) came back in the 1.0 shape with `A2A-Version: 1.0`, although /v1 always speaks 0.3 REST
// (DECISIONS #8).
describe("/v1 errors raised before routing still speak 0.3", () => {
  const route = v1.find((r) => r.verb === "POST" && r.body_schema)!;
  it.each([
    ["401 without credentials", { auth: false, body: {} }, "UNAUTHENTICATED", 401],
    ["415 for a text/plain body", { body: "hello", headers: { "content-type": "text/plain" } }, "CONTENT_TYPE_NOT_SUPPORTED", 415],
    ["405 for a wrong verb", { method: "PUT", body: {} }, "HTTP_METHOD_NOT_ALLOWED", 405],
  ] as const)("%s with A2A-Version: 1.0", async (_, opts, reason, status) => {
    const res = await call(gw.url, fillPath(route.path), {
      method: "POST",
      ...opts,
      headers: { ...("headers" in opts ? opts.headers : {}), "A2A-Version": "1.0" },
    });
    expect(res.headers.get("a2a-version")).toBe("0.3");
    await expectRestError(res, "0.3", reason, status);
  });
});
