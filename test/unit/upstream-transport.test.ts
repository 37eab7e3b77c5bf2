// src/upstream/request.ts + transport.ts: the generated client's request cycle on node:http must answer exactly as
// the generated client on fetch does (data / error / status / headers), for every content type and status class;
// plus the transport's own duties: decoding compressed answers, no retries, aborts and connection failures shaped
// like fetch's.
import { execFile } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../generated/opencode/client/index.js";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import { clientOnTransport } from "../../src/upstream/request.js";
import { HttpTransport } from "../../src/upstream/transport.js";

type Answer = { status: number; type?: string; body?: string | Buffer; headers?: Record<string, string> };
const answers = new Map<string, Answer>();
const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
let server: http.Server;
let base: string;
/** Sockets on which the next request is answered by closing the connection (a stale keep-alive socket). */
const dropNextOn = new Set<unknown>();
const requestsOn = new WeakMap<object, number>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const count = (requestsOn.get(req.socket) ?? 0) + 1;
      requestsOn.set(req.socket, count);
      if (count > 1 && dropNextOn.has("all")) {
        req.socket.destroy();
        return;
      }
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString() });
      const a = answers.get(`${req.method} ${(req.url ?? "").split("?")[0]}`) ?? { status: 404, type: "application/json", body: '{"name":"NotFoundError","data":{"message":"no"}}' };
      res.statusCode = a.status;
      if (a.type !== undefined) res.setHeader("content-type", a.type);
      for (const [k, v] of Object.entries(a.headers ?? {})) res.setHeader(k, v);
      res.end(a.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function clients() {
  const config = { baseUrl: `${base}/`, headers: { accept: "application/json", authorization: "Basic eDp5" } };
  const generated = createClient(config);
  const { lazy, client: lean, close } = clientOnTransport(config);
  return { generated, lazy, lean, transport: { close } };
}

/** What a caller can observe of a result. */
async function observe(p: Promise<unknown>) {
  const r = (await p) as { data?: unknown; error?: unknown; response?: Response };
  return {
    data:
      r.data instanceof Blob
        ? `blob:${r.data.type}:${await r.data.text()}`
        : r.data instanceof ReadableStream
          ? `stream:${await new Response(r.data).text()}`
          : r.data,
    error: r.error,
    status: r.response?.status,
    ok: r.response?.ok,
    cursor: r.response?.headers.get("x-next-cursor"),
    type: r.response?.headers.get("content-type"),
    statusText: r.response?.statusText,
    redirected: r.response?.redirected,
  };
}

describe("the generated request cycle on node:http", () => {
  const cases: [string, string, Answer, (c: ReturnType<typeof createClient>) => Promise<unknown>][] = [
    ["JSON object", "GET /session/ses_1", { status: 200, type: "application/json", body: '{"id":"ses_1","title":"t"}' }, (c) => sdk.sessionGet({ client: c, path: { sessionID: "ses_1" }, query: { directory: "/w x/ü" } })],
    ["JSON with charset and a paging header", "GET /session/ses_1/message", { status: 200, type: "application/json; charset=utf-8", body: "[1,2]", headers: { "x-next-cursor": "abc" } }, (c) => sdk.sessionMessages({ client: c, path: { sessionID: "ses_1" }, query: { limit: 2 } })],
    ["204", "POST /session/ses_1/prompt_async", { status: 204 }, (c) => sdk.sessionPromptAsync({ client: c, path: { sessionID: "ses_1" }, body: { parts: [{ type: "text", text: "hi ✓" }] } })],
    ["200 with Content-Length 0", "POST /session/ses_1/abort", { status: 200, type: "application/json", body: "" }, (c) => sdk.sessionAbort({ client: c, path: { sessionID: "ses_1" } })],
    ["empty chunked JSON body", "GET /session/status", { status: 200, type: "application/json", body: "", headers: { "transfer-encoding": "chunked" } }, (c) => sdk.sessionStatus({ client: c })],
    ["text", "GET /global/health", { status: 200, type: "text/plain", body: "hello" }, (c) => sdk.globalHealth({ client: c })],
    ["no content type (stream)", "GET /command", { status: 200, body: "raw" }, (c) => sdk.commandList({ client: c })],
    ["blob", "GET /project", { status: 200, type: "application/octet-stream", body: "bytes" }, (c) => sdk.projectList({ client: c })],
    ["UTF-8 BOM in JSON", "GET /project/current", { status: 200, type: "application/json", body: '\uFEFF{"a":"é"}' }, (c) => sdk.projectCurrent({ client: c })],
    ["JSON error", "POST /session", { status: 400, type: "application/json", body: '{"name":"BadRequest","data":{"message":"bad"}}' }, (c) => sdk.sessionCreate({ client: c, body: { title: "x" } })],
    ["text error", "GET /session/ses_1/children", { status: 502, type: "text/html", body: "<html>proxy</html>" }, (c) => sdk.sessionChildren({ client: c, path: { sessionID: "ses_1" } })],
    ["empty error", "GET /session/ses_1/todo", { status: 500 }, (c) => sdk.sessionTodo({ client: c, path: { sessionID: "ses_1" } })],
    ["JSON null error", "GET /session/ses_1/diff", { status: 409, type: "application/json", body: "null" }, (c) => sdk.sessionDiff({ client: c, path: { sessionID: "ses_1" } })],
  ];

  it.each(cases)("%s: same data, error, status and headers as the generated client on fetch", async (_label, route, answer, call) => {
    const { generated, lean, transport } = clients();
    answers.set(route, answer);
    const onFetch = await observe(call(generated));
    const sentOnFetch = seen.at(-1)!;
    const onNode = await observe(call(lean));
    const sentOnNode = seen.at(-1)!;
    expect(`${sentOnFetch.method} ${sentOnFetch.url.split("?")[0]}`).toBe(route);
    expect(onNode).toEqual(onFetch);
    // The same request: method, URL (path and query), body and the headers that matter.
    expect(sentOnNode.method).toBe(sentOnFetch.method);
    expect(sentOnNode.url).toBe(sentOnFetch.url);
    expect(sentOnNode.body).toBe(sentOnFetch.body);
    for (const h of ["authorization", "accept", "content-type"]) expect(sentOnNode.headers[h]).toEqual(sentOnFetch.headers[h]);
    // …and it really went through node:http (fetch adds its own request headers).
    expect(sentOnFetch.headers["sec-fetch-mode"]).toBe("cors");
    expect(sentOnNode.headers["sec-fetch-mode"]).toBeUndefined();
    transport.close();
  });

  it("throwOnError and responseStyle behave as in the generated client", async () => {
    const { generated, lean, transport } = clients();
    answers.set("GET /session/ses_2", { status: 404, type: "application/json", body: '{"name":"NotFoundError"}' });
    await expect(sdk.sessionGet({ client: lean, path: { sessionID: "ses_2" }, throwOnError: true })).rejects.toEqual({ name: "NotFoundError" });
    answers.set("GET /session/ses_3", { status: 200, type: "application/json", body: '{"id":"ses_3"}' });
    const data = await lean.get({ url: "/session/{sessionID}", path: { sessionID: "ses_3" }, responseStyle: "data" });
    expect(data).toEqual(await generated.get({ url: "/session/{sessionID}", path: { sessionID: "ses_3" }, responseStyle: "data" }));
    transport.close();
  });

  it("the result's response is body-less and reads like new Response(null, …) with the answer's status and headers", async () => {
    const { lean, transport } = clients();
    answers.set("GET /session/ses_4", { status: 201, type: "application/json", body: '{"id":"ses_4"}', headers: { "x-next-cursor": "c1" } });
    const r = (await lean.get({ url: "/session/{sessionID}", path: { sessionID: "ses_4" } })) as { data: unknown; response: Response };
    expect(r.data).toEqual({ id: "ses_4" });
    const like = new Response(null, { status: r.response.status, statusText: r.response.statusText, headers: r.response.headers });
    const surface = async (x: Response) => ({
      status: x.status,
      ok: x.ok,
      type: x.headers.get("content-type"),
      cursor: x.headers.get("x-next-cursor"),
      body: x.body,
      bodyUsed: x.bodyUsed,
      redirected: x.redirected,
      url: x.url,
      clone: [x.clone().status, x.clone().headers.get("x-next-cursor")],
      text: await x.clone().text(),
      bytes: (await x.clone().arrayBuffer()).byteLength,
      json: await x.clone().json().then(
        () => "resolved",
        (e: Error) => e.name,
      ),
    });
    expect(await surface(r.response)).toEqual(await surface(like));
    expect(r.response.status).toBe(201);
    expect(r.response.headers.get("x-next-cursor")).toBe("c1");
    transport.close();
  });
});

describe("the generated client, built only when needed", () => {
  it("the fast path builds none; interceptors, once set, build it and every later call goes through them", async () => {
    const { generated, lazy, lean, transport } = clients();
    answers.set("GET /session/ses_5", { status: 200, type: "application/json", body: '{"id":"ses_5"}' });
    expect((await sdk.sessionGet({ client: lean, path: { sessionID: "ses_5" } })).data).toEqual({ id: "ses_5" });
    expect(lazy.built).toBeUndefined();
    expect(lean.buildUrl({ url: "/session/{sessionID}", path: { sessionID: "ses_5" }, query: { directory: "/a b" } })).toBe(
      generated.buildUrl({ url: "/session/{sessionID}", path: { sessionID: "ses_5" }, query: { directory: "/a b" } }),
    );
    expect(lean.getConfig().baseUrl).toBe(base);
    lean.interceptors.request.use((request) => {
      request.headers.set("x-intercepted", "yes");
      return request;
    });
    expect(lazy.built).toBeDefined();
    await sdk.sessionGet({ client: lean, path: { sessionID: "ses_5" } });
    expect(seen.at(-1)!.headers["x-intercepted"]).toBe("yes");
    transport.close();
  });

  it("setConfig moves later calls to the new base URL, built or not", async () => {
    const { lazy, lean, transport } = clients();
    answers.set("GET /global/health", { status: 200, type: "application/json", body: '{"healthy":true}' });
    lazy.setConfig({ baseUrl: "http://127.0.0.1:1/" });
    expect(lean.getConfig().baseUrl).toBe("http://127.0.0.1:1");
    const refused = (await sdk.globalHealth({ client: lean })) as { error?: unknown };
    expect(refused.error).toBeInstanceOf(TypeError);
    lean.setConfig({ baseUrl: base });
    expect((await sdk.globalHealth({ client: lean })).data).toEqual({ healthy: true });
    expect(lazy.built).toBeUndefined();
    transport.close();
  });

  it("an UpstreamClient's calls never read the WHATWG fetch globals (which load undici) in a fresh process", async () => {
    const root = path.resolve(import.meta.dirname, "../..");
    // Every read of the globals is recorded (Node defines them as lazy getters; the first read loads undici).
    const script = `
      const read = [];
      for (const name of ["fetch", "Headers", "Request", "Response", "FormData"]) {
        const d = Object.getOwnPropertyDescriptor(globalThis, name);
        if (d === undefined) continue;
        Object.defineProperty(globalThis, name, { configurable: true, get() { read.push(name); return d.get ? d.get.call(globalThis) : d.value; } });
      }
      const http = await import("node:http");
      const { UpstreamClient } = await import(${JSON.stringify(path.join(root, "src/upstream/client.ts"))});
      const sdk = await import(${JSON.stringify(path.join(root, "generated/opencode/sdk.gen.ts"))});
      const server = http.createServer((_q, r) => { r.setHeader("content-type", "application/json"); r.statusCode = _q.url.startsWith("/session/") ? 429 : 200; r.setHeader("retry-after", "3"); r.end('{"healthy":true}'); });
      await new Promise((res) => server.listen(0, "127.0.0.1", res));
      const client = new UpstreamClient({ baseUrl: "http://127.0.0.1:" + server.address().port });
      const data = await client.call("globalHealth", (c) => sdk.globalHealth({ client: c.client, signal: c.signal }));
      // A refused call reads its Retry-After header without building Headers.
      const refused = await client.call("sessionGet", (c) => sdk.sessionGet({ client: c.client, signal: c.signal, path: { sessionID: "ses_1" } })).catch((e) => e.retryAfterSeconds);
      process.stdout.write(JSON.stringify({ read, data, refused }));
      client.close();
      server.close();
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root });
    expect(JSON.parse(stdout)).toEqual({ read: [], data: { healthy: true }, refused: 3 });
  });
});

describe("HttpTransport", () => {
  it("decodes gzip, deflate and br answers", async () => {
    const transport = new HttpTransport();
    const json = '{"ok":true}';
    for (const [encoding, body] of [["gzip", zlib.gzipSync(json)], ["deflate", zlib.deflateSync(json)], ["br", zlib.brotliCompressSync(json)]] as const) {
      answers.set("GET /enc", { status: 200, type: "application/json", body, headers: { "content-encoding": encoding } });
      const answer = await transport.request(`${base}/enc`, "GET", {}, undefined);
      expect(answer.body.toString()).toBe(json);
    }
    transport.close();
  });

  it("fails like fetch: refused connections carry the code, aborts reject with the signal's reason", async () => {
    const transport = new HttpTransport();
    const refused = await transport.request("http://127.0.0.1:1/x", "GET", {}, undefined).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TypeError);
    expect((refused as TypeError).message).toBe("fetch failed");
    expect(((refused as TypeError).cause as { code?: string }).code).toBe("ECONNREFUSED");
    const controller = new AbortController();
    const reason = new DOMException("upstream call timed out", "TimeoutError");
    controller.abort(reason);
    await expect(transport.request(`${base}/x`, "GET", {}, undefined, controller.signal)).rejects.toBe(reason);
    transport.close();
  });

  it("never retries: a connection dropped before the answer fails the call, even on a reused socket", async () => {
    const transport = new HttpTransport();
    answers.set("GET /ka", { status: 200, type: "application/json", body: "1" });
    expect((await transport.request(`${base}/ka`, "GET", {}, undefined)).status).toBe(200);
    dropNextOn.add("all"); // the server now drops every later request on a connection
    try {
      const dropped = await transport.request(`${base}/ka`, "GET", {}, undefined).catch((e: unknown) => e);
      expect(dropped).toBeInstanceOf(TypeError);
      expect(((dropped as TypeError).cause as { code?: string }).code).toBe("ECONNRESET");
    } finally {
      dropNextOn.clear();
      transport.close();
    }
  });
});
