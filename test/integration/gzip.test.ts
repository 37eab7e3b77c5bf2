// Response compression: gzip above A2A_HTTP_GZIP_MINIMUM_SIZE when the client accepts it, never below.
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, rawRequest, startGateway, type StartedGateway } from "../support/gateway.js";

const THRESHOLD = 4096;
let gw: StartedGateway;
let never: StartedGateway;
beforeAll(async () => {
  [gw, never] = await Promise.all([
    startGateway({ A2A_HTTP_GZIP_MINIMUM_SIZE: String(THRESHOLD) }),
    startGateway({ A2A_HTTP_GZIP_MINIMUM_SIZE: String(1024 * 1024 * 1024) }),
  ]);
});
afterAll(async () => {
  await Promise.all([gw?.close(), never?.close()]);
});

const gzip = { "accept-encoding": "gzip" };

async function identitySize(url: string, path: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await rawRequest(url, path, { headers: { ...headers, "accept-encoding": "identity" } });
  expect(res.status).toBe(200);
  expect(res.headers["content-encoding"]).toBeUndefined();
  return res.raw.length;
}

describe("gzip", () => {
  it.each([
    ["/openapi.json", {}],
    ["/agent/authenticatedExtendedCard", bearer()],
  ])("%s (larger than the threshold) is gzipped when accepted", async (path, headers) => {
    const plainSize = await identitySize(gw.url, path, headers);
    expect(plainSize).toBeGreaterThan(THRESHOLD);
    const res = await rawRequest(gw.url, path, { headers: { ...headers, ...gzip } });
    expect(res.status).toBe(200);
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(String(res.headers.vary).toLowerCase()).toContain("accept-encoding");
    const inflated = gunzipSync(res.raw);
    expect(inflated.length).toBe(plainSize);
    expect(res.raw.length).toBeLessThan(plainSize);
    expect(() => JSON.parse(inflated.toString("utf8"))).not.toThrow();
  });

  it("a response smaller than the threshold is not gzipped", async () => {
    const path = "/.well-known/agent-card.json";
    expect(await identitySize(gw.url, path)).toBeLessThan(THRESHOLD);
    const res = await rawRequest(gw.url, path, { headers: gzip });
    expect(res.status).toBe(200);
    expect(res.headers["content-encoding"]).toBeUndefined();
    expect(() => JSON.parse(res.raw.toString("utf8"))).not.toThrow();
  });

  it("nothing is gzipped when the client does not accept gzip", async () => {
    const res = await rawRequest(gw.url, "/openapi.json", {});
    expect(res.headers["content-encoding"]).toBeUndefined();
    const br = await rawRequest(gw.url, "/openapi.json", { headers: { "accept-encoding": "br" } });
    expect(br.headers["content-encoding"]).not.toBe("gzip");
  });

  it("a client that accepts no coding we have (identity;q=0 without gzip) gets the body uncompressed, not an error", async () => {
    const size = await identitySize(gw.url, "/openapi.json");
    for (const ae of ["identity;q=0", "gzip;q=0, identity;q=0", "br, identity;q=0"]) {
      const res = await rawRequest(gw.url, "/openapi.json", { headers: { "accept-encoding": ae } });
      expect(res.status, ae).toBe(200);
      expect(res.headers["content-encoding"], ae).toBeUndefined();
      expect(res.raw.length, ae).toBe(size);
    }
  });

  it("errors and JSON-RPC answers above the threshold are gzipped too", async () => {
    // An unknown-method error lists every supported method; pad the method name to cross the threshold.
    const name = "x".repeat(THRESHOLD);
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: name });
    const res = await rawRequest(gw.url, "/", { method: "POST", headers: { ...bearer(), ...gzip, "content-type": "application/json" }, body });
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(JSON.parse(gunzipSync(res.raw).toString()).error.data.method).toBe(name);
  });

  it("with a very high threshold nothing is gzipped", async () => {
    for (const [path, headers] of [
      ["/openapi.json", {}],
      ["/openapi.yaml", {}],
      ["/agent/authenticatedExtendedCard", bearer()],
    ] as const) {
      const res = await rawRequest(never.url, path, { headers: { ...headers, ...gzip } });
      expect(res.status).toBe(200);
      expect(res.headers["content-encoding"], path).toBeUndefined();
    }
  });

  it("fetch exposes Content-Encoding while decoding the body", async () => {
    const res = await fetch(`${gw.url}/openapi.json`, { headers: gzip });
    expect(res.headers.get("content-encoding")).toBe("gzip");
    const doc = (await res.json()) as { openapi: string };
    expect(doc.openapi).toMatch(/^3\./);
  });
});
