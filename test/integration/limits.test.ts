// Request bodies: 413 above A2A_MAX_REQUEST_BODY_BYTES (declared or streamed), 415 for non-JSON bodies.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, call, rawRequest, rpc, startGateway, type StartedGateway } from "../support/gateway.js";
import { catalog, expectRestError, expectRpcError, fillPath, routesOf } from "../support/contract.js";

const LIMIT = 1024;
let gw: StartedGateway;
beforeAll(async () => {
  gw = await startGateway({ A2A_MAX_REQUEST_BODY_BYTES: String(LIMIT) });
});
afterAll(() => gw?.close());

const restPost = routesOf("a2a").find((r) => r.verb === "POST" && r.body_schema && r.path.startsWith("/v1/"))!;
const rootPost = routesOf("a2a").find((r) => r.verb === "POST" && r.body_schema && !r.path.startsWith("/v1/"))!;
const cardMethod = catalog.methods.find((m) => m.operation === "extended-card" && m.line === "0.3")!.name;

/** A JSON-RPC request padded (in metadata-free whitespace) to exactly `size` bytes. */
function paddedRpc(size: number): string {
  const base = JSON.stringify({ jsonrpc: "2.0", id: 1, method: cardMethod });
  return base.slice(0, -1) + " ".repeat(size - base.length) + "}";
}

function asResult(r: Awaited<ReturnType<typeof rawRequest>>) {
  const text = r.raw.toString("utf8");
  return { status: r.status, headers: new Headers(r.headers as Record<string, string>), text, body: text ? JSON.parse(text) : undefined };
}

describe("413 Payload Too Large", () => {
  it("premise: a body of exactly the limit is accepted", async () => {
    const body = paddedRpc(LIMIT);
    expect(Buffer.byteLength(body)).toBe(LIMIT);
    const res = await rpc(gw.url, body);
    expect(res.status).toBe(200);
    expect(res.body.result).toBeDefined();
  });

  it("POST / with a declared body over the limit → 413 (JSON-RPC error body, HTTP status kept)", async () => {
    const res = await rpc(gw.url, paddedRpc(LIMIT + 1));
    await expectRpcError(res, "0.3", "PAYLOAD_TOO_LARGE", { httpStatus: 413, id: null });
    expect(res.body.error.data.limit_bytes).toBe(LIMIT);
  });

  it("a REST route with a body over the limit → 413 before routing and validation", async () => {
    const big = JSON.stringify({ junk: "x".repeat(LIMIT * 4) });
    await expectRestError(await call(gw.url, fillPath(restPost.path), { method: "POST", body: big }), "0.3", "PAYLOAD_TOO_LARGE", 413);
    const res = await call(gw.url, fillPath(rootPost.path), { method: "POST", body: big, headers: { "A2A-Version": "1.0" } });
    await expectRestError(res, "1.0", "PAYLOAD_TOO_LARGE", 413);
    // Before routing: even a path that does not exist answers 413, not 404.
    await expectRestError(await call(gw.url, "/v1/no-such-route", { method: "POST", body: big }), "0.3", "PAYLOAD_TOO_LARGE", 413);
  });

  it("a large body is refused even with a non-JSON content type (size is checked first)", async () => {
    const res = await call(gw.url, fillPath(restPost.path), { method: "POST", body: "x".repeat(LIMIT * 2), headers: { "content-type": "text/plain" } });
    await expectRestError(res, "0.3", "PAYLOAD_TOO_LARGE", 413);
  });

  // Regression: the body check (now src/pipeline/body.ts) used to `ctx.req.destroy()` a chunked body over the limit,
  // which destroyed the socket before the 413 could be written (the client saw "socket hang up").
  it.each([
    ["POST /", "/"],
    [`POST ${restPost.path}`, fillPath(restPost.path)],
  ])("%s with a chunked body (no Content-Length) over the limit → 413", async (_, path) => {
    const chunks = Array.from({ length: 8 }, () => "x".repeat(LIMIT / 2));
    const res = await rawRequest(gw.url, path, {
      method: "POST",
      headers: { ...bearer(), "content-type": "application/json", "transfer-encoding": "chunked" },
      body: chunks,
    }).catch((err: Error) => ({ error: err.message }));
    expect(res, "the gateway answers instead of dropping the connection").not.toHaveProperty("error");
    const result = asResult(res as Awaited<ReturnType<typeof rawRequest>>);
    if (path === "/") await expectRpcError(result, "0.3", "PAYLOAD_TOO_LARGE", { httpStatus: 413 });
    else await expectRestError(result, "0.3", "PAYLOAD_TOO_LARGE", 413);
  });

  it("a chunked body under the limit is read and processed", async () => {
    const body = paddedRpc(LIMIT - 10);
    const res = await rawRequest(gw.url, "/", {
      method: "POST",
      headers: { ...bearer(), "content-type": "application/json", "transfer-encoding": "chunked" },
      body: [body.slice(0, 100), body.slice(100, 600), body.slice(600)],
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.raw.toString()).result).toBeDefined();
  });

  it("the gateway keeps serving after a 413", async () => {
    await rpc(gw.url, paddedRpc(LIMIT * 3));
    const res = await call(gw.url, "/health");
    expect(res.status).toBe(200);
  });
});

describe("415 Unsupported Media Type", () => {
  it.each(["text/plain", "application/x-www-form-urlencoded", "application/xml"])("REST POST with content-type %s → 415", async (type) => {
    const res = await call(gw.url, fillPath(restPost.path), { method: "POST", body: "{}", headers: { "content-type": type } });
    const body = await expectRestError(res, "0.3", "CONTENT_TYPE_NOT_SUPPORTED", 415);
    expect(body.data.content_type).toBe(type);
  });

  it("root route with A2A-Version: 1.0 → 415 in the 1.0 shape", async () => {
    const res = await call(gw.url, fillPath(rootPost.path), { method: "POST", body: "{}", headers: { "content-type": "text/plain", "A2A-Version": "1.0" } });
    await expectRestError(res, "1.0", "CONTENT_TYPE_NOT_SUPPORTED", 415);
  });

  it("POST / with text/plain → 415 carrying a JSON-RPC error", async () => {
    const res = await rpc(gw.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: cardMethod }), { "content-type": "text/plain" });
    await expectRpcError(res, "0.3", "CONTENT_TYPE_NOT_SUPPORTED", { httpStatus: 415 });
  });

  it.each(["application/json; charset=utf-8", "application/a2a+json", "APPLICATION/JSON"])("content-type %s is accepted", async (type) => {
    const res = await rpc(gw.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: cardMethod }), { "content-type": type });
    expect(res.status).toBe(200);
    expect(res.body.result).toBeDefined();
  });

  it("a body without content type → 415", async () => {
    const res = await rawRequest(gw.url, fillPath(restPost.path), { method: "POST", headers: bearer(), body: "{}" });
    expect(res.status).toBe(415);
  });

  it("an empty POST body needs no content type", async () => {
    const cancel = routesOf("a2a").find((r) => r.verb === "POST" && !r.body_schema && r.path.startsWith("/v1/"))!;
    const res = await rawRequest(gw.url, fillPath(cancel.path), { method: "POST", headers: bearer() });
    expect([400, 415]).not.toContain(res.status);
  });
});
