// The JSON-RPC edge (src/server/jsonrpc-edge.ts) answers `POST /` without Koa; the Koa app mounts the same endpoint
// behind its middleware chain. Both must give the same answer to the same request: status, the headers clients
// and caches act on, body (gzipped the same way) and audit entry. Every case is sent to a server running
// `gateway.handler` (the edge) and to one running `gateway.app.callback()` (Koa only), over raw node:http so that
// no header is added or removed on the way.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

function send(port: number, path: string, headers: Record<string, string>, body: string | Buffer, target?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method: "POST", path: target ?? path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        let raw = Buffer.concat(chunks);
        if (res.headers["content-encoding"] === "gzip") raw = gunzipSync(raw);
        const text = raw.toString("utf8");
        let parsed: unknown = text;
        try {
          parsed = text === "" ? undefined : JSON.parse(text);
        } catch {
          /* kept as text */
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** The headers both paths must agree on (rate-limit counters move between the two calls, so only the limit). */
const COMPARED = [
  "content-type",
  "content-encoding",
  "vary",
  "a2a-version",
  "www-authenticate",
  "connection",
  "access-control-allow-origin",
  "access-control-expose-headers",
  "x-ratelimit-limit",
  "retry-after",
  "a2a-extensions",
  "x-a2a-extensions",
];
const pick = (h: http.IncomingHttpHeaders) => Object.fromEntries(COMPARED.map((k) => [k, h[k]]));

let gw: StartedGateway;
let koaServer: http.Server;
let edgePort: number;
let koaPort: number;

beforeAll(async () => {
  gw = await startGateway({ A2A_MAX_REQUEST_BODY_BYTES: "4096", A2A_ALLOWED_ORIGINS: "https://ok.example", A2A_HTTP_GZIP_MINIMUM_SIZE: "512" });
  edgePort = Number(new URL(gw.url).port);
  koaServer = http.createServer(gw.gateway.app.callback());
  await new Promise<void>((resolve) => koaServer.listen(0, "127.0.0.1", resolve));
  koaPort = (koaServer.address() as AddressInfo).port;
});
afterAll(async () => {
  koaServer.closeAllConnections();
  await new Promise((resolve) => koaServer.close(resolve));
  await gw.close();
});

const auth = { authorization: `Bearer ${TEST_TOKEN}` };
const json = { "content-type": "application/json" };
const call = (method: string, params?: unknown, id: number | string = 1) => JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });

const cases: Array<[string, Record<string, string>, string | Buffer, string?]> = [
  ["a call (extended card, 0.3), small answer threshold passed, no Accept-Encoding", { ...auth, ...json }, call("agent/getAuthenticatedExtendedCard")],
  ["the same call with Accept-Encoding: gzip", { ...auth, ...json, "accept-encoding": "gzip, deflate, br" }, call("agent/getAuthenticatedExtendedCard")],
  ["gzip refused with q=0", { ...auth, ...json, "accept-encoding": "gzip;q=0, identity" }, call("agent/getAuthenticatedExtendedCard")],
  ["Accept-Encoding: *", { ...auth, ...json, "accept-encoding": "*" }, call("agent/getAuthenticatedExtendedCard")],
  ["no acceptable coding (identity;q=0)", { ...auth, ...json, "accept-encoding": "gzip;q=0, identity;q=0" }, call("agent/getAuthenticatedExtendedCard")],
  ["1.0 by header", { ...auth, ...json, "a2a-version": "1.0" }, call("GetExtendedAgentCard")],
  ["1.0 by query parameter", { ...auth, ...json }, call("GetExtendedAgentCard"), "/?A2A-Version=1.0"],
  ["a PascalCase method without a version header", { ...auth, ...json }, call("GetTask", { id: "nope" })],
  ["unsupported version", { ...auth, ...json, "a2a-version": "9.9" }, call("tasks/get", { id: "x" })],
  ["no credentials", { ...json }, call("tasks/get", { id: "x" })],
  ["a wrong token", { ...json, authorization: "Bearer not-the-token-at-all" }, call("tasks/get", { id: "x" })],
  ["a refused Host", { ...auth, ...json, host: "evil.example" }, call("tasks/get", { id: "x" })],
  ["a refused Origin", { ...auth, ...json, origin: "https://evil.example" }, call("tasks/get", { id: "x" })],
  ["an allowed Origin", { ...auth, ...json, origin: "https://ok.example" }, call("tasks/get", { id: "x" })],
  ["a text/plain body", { ...auth, "content-type": "text/plain" }, call("tasks/get", { id: "x" })],
  ["a body over the limit (Content-Length)", { ...auth, ...json }, JSON.stringify({ pad: "x".repeat(5000) })],
  ["a body nested too deep", { ...auth, ...json }, "[".repeat(200) + "]".repeat(200)],
  ["invalid JSON", { ...auth, ...json }, "{not json"],
  ["an empty batch", { ...auth, ...json }, "[]"],
  ["a batch with a notification and an unknown method", { ...auth, ...json }, `[${call("tasks/get", { id: "a" })},{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"b"}},${call("no/such", {}, "u")}]`],
  ["invalid params", { ...auth, ...json }, call("tasks/get", { id: 5 })],
  ["an id-less core call alone (answered, id null)", { ...auth, ...json }, '{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"n"}}'],
  ["an id-less call with invalid params (answered, id null)", { ...auth, ...json }, '{"jsonrpc":"2.0","method":"tasks/get","params":{}}'],
  ["an extension notification alone (204)", { ...auth, ...json }, '{"jsonrpc":"2.0","method":"opencode.providers.list","params":{}}'],
  ["an empty body", { ...auth, ...json }, ""],
  [
    "extension headers (1.0 and 0.3 names, one unknown URI): the activated URIs echoed",
    { ...auth, ...json, "a2a-extensions": "https://example.com/unknown, https://github.com/Intelligent-Internet/opencode-a2a/blob/main/docs/extension-specifications.md#shared-session-binding-v1", "x-a2a-extensions": "https://github.com/Intelligent-Internet/opencode-a2a/blob/main/docs/extension-specifications.md#shared-stream-hints-v1" },
    call("tasks/get", { id: "x" }),
  ],
];

describe("JSON-RPC edge ↔ Koa chain parity", () => {
  it.each(cases)("%s", async (_, headers, body, target) => {
    const viaEdge = await send(edgePort, "/", headers, body, target);
    const viaKoa = await send(koaPort, "/", headers, body, target);
    expect(viaEdge.status).toBe(viaKoa.status);
    expect(pick(viaEdge.headers)).toEqual(pick(viaKoa.headers));
    expect(viaEdge.body).toEqual(viaKoa.body);
    if (viaEdge.status !== 204 && viaEdge.status < 500) expect(viaEdge.headers["content-type"]).toMatch(/^application\/json/);
  });

  it("gzips only at or above the threshold and when accepted", async () => {
    const big = await send(edgePort, "/", { ...auth, ...json, "accept-encoding": "gzip" }, call("agent/getAuthenticatedExtendedCard"));
    expect(big.headers["content-encoding"]).toBe("gzip");
    const small = await send(edgePort, "/", { ...auth, ...json, "accept-encoding": "gzip" }, call("tasks/get", { id: "x" }));
    expect(small.headers["content-encoding"]).toBeUndefined();
  });

  it("records the same audit entries on both paths", async () => {
    const marker = `parity-${Date.now()}`;
    await send(edgePort, "/", { ...auth, ...json }, call("tasks/get", { id: marker }));
    await send(koaPort, "/", { ...auth, ...json }, call("tasks/get", { id: marker }));
    await send(edgePort, "/", { ...json }, call("tasks/get", { id: marker }));
    await send(koaPort, "/", { ...json }, call("tasks/get", { id: marker }));
    const listed = await fetch(`${gw.url}/admin/audit?task_id=${marker}`, { headers: auth }).then((r) => r.json() as Promise<{ entries: Array<Record<string, unknown>> }>);
    // Each request has a trace of its own (no traceparent sent: a new one each).
    const strip = ({ id: _id, at: _at, duration_ms: _d, trace_id: _t, ...rest }: Record<string, unknown>) => rest;
    expect(listed.entries).toHaveLength(2);
    expect(listed.entries[0]!.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(listed.entries[0]!.trace_id).not.toBe(listed.entries[1]!.trace_id);
    expect(strip(listed.entries[0]!)).toEqual(strip(listed.entries[1]!));
    expect(listed.entries[0]).toMatchObject({ method: "tasks/get", transport: "jsonrpc", principal: "admin" });
    // The 401s reached no call: one entry each for the request, the same on both paths.
    const refused = await fetch(`${gw.url}/admin/audit?outcome=error&method=${encodeURIComponent("POST /")}`, { headers: auth }).then(
      (r) => r.json() as Promise<{ entries: Array<Record<string, unknown>> }>,
    );
    const [a, b] = refused.entries;
    expect(a && b && strip(a)).toEqual(b && strip(b));
    expect(a).toMatchObject({ principal: null, error_reason: "UNAUTHENTICATED", status: 401 });
  });

  it("leaves request targets that are not plain `/` to the Koa app (absolute form still answers JSON-RPC)", async () => {
    const res = await send(edgePort, "/", { ...auth, ...json }, call("tasks/get", { id: "abs" }), `http://127.0.0.1:${edgePort}/`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: expect.any(Number) } });
  });
});
