// Extension activation (A2A extensions): `A2A-Extensions` (1.0) / `X-A2A-Extensions` (0.3) request headers, the
// echo of the activated URIs on JSON-RPC (edge and Koa chain), REST and SSE answers of both lines, unknown URIs
// ignored, and A2A_REQUIRED_EXTENSIONS: the cards mark them required, calls that do not activate them are refused
// with EXTENSION_SUPPORT_REQUIRED (-32008), discovery and operational routes are exempt.
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/index.js";
import type { ProtocolLine } from "../../src/contract/catalog.js";
import { text } from "../../tools/upstream/script.js";
import { catalog, cardExtensions as listed, errorInfoOf, expectRestError, expectRpcError } from "../support/contract.js";
import { TEST_TOKEN } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

const cardExtensions = (card: Record<string, any>) => listed(card) as { uri: string; required?: boolean; params?: Record<string, any> }[];
const uriOf = (suffix: string): string => catalog.extensions.find((e) => e.uri.endsWith(suffix))!.uri;
const SESSION = uriOf("#shared-session-binding-v1"); // public
const WIRE = uriOf("#a2a-wire-contract-v1"); // extended disclosure
const UNKNOWN = "https://example.com/not-an-extension-of-this-gateway";
const HEADER: Record<ProtocolLine, string> = { "1.0": "A2A-Extensions", "0.3": "X-A2A-Extensions" };

let plain: TaskGateway;
let strict: TaskGateway;
let koa: http.Server;
let koaUrl: string;
beforeAll(async () => {
  [plain, strict] = await Promise.all([
    startTaskGateway({ A2A_ALLOWED_ORIGINS: "https://app.example" }),
    startTaskGateway({ A2A_REQUIRED_EXTENSIONS: `${SESSION}, ${WIRE}` }),
  ]);
  koa = http.createServer(plain.gw.gateway.app.callback());
  await new Promise<void>((resolve) => koa.listen(0, "127.0.0.1", resolve));
  koaUrl = `http://127.0.0.1:${(koa.address() as AddressInfo).port}`;
});
afterAll(async () => {
  koa?.closeAllConnections();
  await new Promise((resolve) => koa?.close(resolve));
  await Promise.all([plain?.close(), strict?.close()]);
});

interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  text: string;
}

/** A request over node:http, so a header can be sent several times (`string[]`). */
function send(base: string, path: string, { method = "GET", headers = {}, body }: { method?: string; headers?: Record<string, string | string[]>; body?: unknown } = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      `${base}${path}`,
      {
        method,
        agent: false,
        headers: { authorization: `Bearer ${TEST_TOKEN}`, ...(payload === undefined ? {} : { "content-type": "application/json" }), ...headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          let parsed: unknown;
          try {
            parsed = text && !text.startsWith("data:") ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, text });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

const asHttpResult = (r: Res) => ({ status: r.status, headers: new Headers(Object.entries(r.headers).map(([k, v]) => [k, String(v)] as [string, string])), text: r.text, body: r.body });
const getTask = (line: ProtocolLine) => (line === "1.0" ? "GetTask" : "tasks/get");
const rpcCall = (_line: ProtocolLine, method: string, params: unknown, id: number = 1) => ({ jsonrpc: "2.0", id, method, params });

describe("activation and echo", () => {
  it.each(["1.0", "0.3"] as const)("JSON-RPC %s on the edge and on the Koa chain: supported URIs are echoed in the header used, unknown ones ignored", async (line) => {
    for (const base of [plain.url, koaUrl]) {
      const res = await send(base, "/", {
        method: "POST",
        headers: { "A2A-Version": line, [HEADER[line]]: `${UNKNOWN}, ${SESSION}` },
        body: rpcCall(line, getTask(line), { id: randomUUID() }),
      });
      await expectRpcError(asHttpResult(res), line, "TASK_NOT_FOUND", { id: 1 });
      expect(res.headers[HEADER[line].toLowerCase()]).toBe(SESSION);
      const other = line === "1.0" ? "0.3" : "1.0";
      expect(res.headers[HEADER[other].toLowerCase()]).toBeUndefined();
    }
  });

  it("the header may repeat, and both header names are read; each one used is echoed", async () => {
    const res = await send(plain.url, "/", {
      method: "POST",
      headers: { "A2A-Version": "1.0", "A2A-Extensions": [SESSION, WIRE], "X-A2A-Extensions": UNKNOWN },
      body: rpcCall("1.0", "GetTask", { id: randomUUID() }),
    });
    expect(res.headers["a2a-extensions"]).toBe(`${SESSION}, ${WIRE}`);
    expect(res.headers["x-a2a-extensions"]).toBe(`${SESSION}, ${WIRE}`);
  });

  it("only unknown URIs: nothing activated, no echo, the call runs", async () => {
    const res = await send(plain.url, "/", { method: "POST", headers: { "A2A-Extensions": UNKNOWN }, body: rpcCall("1.0", "GetTask", { id: randomUUID() }) });
    await expectRpcError(asHttpResult(res), "1.0", "TASK_NOT_FOUND", { id: 1 });
    expect(res.headers["a2a-extensions"]).toBeUndefined();
  });

  it.each([
    ["0.3", "/v1/tasks/"],
    ["1.0", "/tasks/"],
  ] as const)("REST %s echoes too (errors included)", async (line, prefix) => {
    const res = await send(plain.url, `${prefix}${randomUUID()}`, { headers: { "A2A-Version": line, [HEADER[line]]: SESSION } });
    await expectRestError(asHttpResult(res), line, "TASK_NOT_FOUND");
    expect(res.headers[HEADER[line].toLowerCase()]).toBe(SESSION);
  });

  it("SSE answers carry the echo (REST 1.0 and JSON-RPC 0.3 streams)", async () => {
    plain.stub.script(text("streamed"));
    const rest = await send(plain.url, "/message:stream", {
      method: "POST",
      headers: { "A2A-Version": "1.0", "A2A-Extensions": SESSION },
      body: { message: { role: "ROLE_USER", messageId: randomUUID(), parts: [{ text: "hi" }] } },
    });
    expect(rest.status).toBe(200);
    expect(rest.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(rest.headers["a2a-extensions"]).toBe(SESSION);
    expect(rest.text).toContain("TASK_STATE_COMPLETED");
    plain.stub.script(text("streamed"));
    const rpc = await send(plain.url, "/", {
      method: "POST",
      headers: { "A2A-Version": "0.3", "X-A2A-Extensions": SESSION },
      body: rpcCall("0.3", "message/stream", { message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text: "hi" }] } }),
    });
    expect(rpc.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(rpc.headers["x-a2a-extensions"]).toBe(SESSION);
    expect(rpc.text).toContain('"final":true');
  });

  it("extension methods work without the header when nothing is required", async () => {
    const res = await send(plain.url, "/", { method: "POST", body: rpcCall("0.3", "opencode.providers.list", {}) });
    expect(res.status).toBe(200);
    expect(res.body.error?.data?.type).not.toBe("EXTENSION_SUPPORT_REQUIRED");
  });

  it("CORS allows and exposes both extension headers", async () => {
    const preflight = await send(plain.url, "/", {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "a2a-extensions" },
    });
    expect(preflight.status).toBe(204);
    const allowed = String(preflight.headers["access-control-allow-headers"]).split(/,\s*/);
    expect(allowed).toEqual(expect.arrayContaining(["A2A-Extensions", "X-A2A-Extensions"]));
    for (const base of [plain.url, koaUrl]) {
      const res = await send(base, "/", { method: "POST", headers: { origin: "https://app.example", "A2A-Extensions": SESSION }, body: rpcCall("1.0", "GetTask", { id: "x" }) });
      expect(String(res.headers["access-control-expose-headers"]).split(/,\s*/)).toEqual(expect.arrayContaining(["A2A-Extensions", "X-A2A-Extensions"]));
    }
  });
});

describe("A2A_REQUIRED_EXTENSIONS", () => {
  const both = `${SESSION}, ${WIRE}`;

  it.each(["1.0", "0.3"] as const)("JSON-RPC %s: a core call without every required extension → EXTENSION_SUPPORT_REQUIRED (-32008)", async (line) => {
    for (const header of [undefined, SESSION, UNKNOWN]) {
      const res = await send(strict.url, "/", {
        method: "POST",
        headers: { "A2A-Version": line, ...(header === undefined ? {} : { [HEADER[line]]: header }) },
        body: rpcCall(line, getTask(line), { id: randomUUID() }),
      });
      const error = await expectRpcError(asHttpResult(res), line, "EXTENSION_SUPPORT_REQUIRED", { id: 1 });
      expect(error.code).toBe(-32008);
      const data = line === "0.3" ? error.data : (await errorInfoOf(error.data)).metadata;
      if (line === "0.3") {
        expect(data).toMatchObject({ type: "EXTENSION_SUPPORT_REQUIRED", method: "tasks/get", required_extensions: [SESSION, WIRE], header: "X-A2A-Extensions" });
        expect(data.requested_extensions).toEqual(header === undefined ? [] : [header]);
      } else {
        expect(data).toMatchObject({ method: "GetTask", header: "A2A-Extensions" });
        expect(JSON.parse(data.requiredExtensions)).toEqual([SESSION, WIRE]);
      }
    }
  });

  it("the check covers extension methods and id-less calls (answered, id null) and each call of a batch", async () => {
    await expectRpcError(asHttpResult(await send(strict.url, "/", { method: "POST", body: rpcCall("0.3", "opencode.providers.list", {}) })), "0.3", "EXTENSION_SUPPORT_REQUIRED", { id: 1 });
    await expectRpcError(
      asHttpResult(await send(strict.url, "/", { method: "POST", body: { jsonrpc: "2.0", method: "opencode.providers.list", params: {} } })),
      "0.3",
      "EXTENSION_SUPPORT_REQUIRED",
      { id: null },
    );
    const batch = await send(strict.url, "/", { method: "POST", body: [rpcCall("0.3", "tasks/get", { id: "a" }, 1), rpcCall("0.3", "agent/getAuthenticatedExtendedCard", {}, 2)] });
    expect(batch.body[0].error.data.type).toBe("EXTENSION_SUPPORT_REQUIRED");
    expect(batch.body[1].result.capabilities).toBeDefined(); // discovery is exempt
  });

  it.each([
    ["0.3", "/v1/tasks/"],
    ["1.0", "/tasks/"],
  ] as const)("REST %s: refused with HTTP 400 EXTENSION_SUPPORT_REQUIRED; with the extensions it runs", async (line, prefix) => {
    const path = `${prefix}${randomUUID()}`;
    const refused = await send(strict.url, path, { headers: { "A2A-Version": line, [HEADER[line]]: SESSION } });
    const body = await expectRestError(asHttpResult(refused), line, "EXTENSION_SUPPORT_REQUIRED");
    expect(refused.status).toBe(400);
    if (line === "0.3") expect(body).toMatchObject({ code: -32008, data: { type: "EXTENSION_SUPPORT_REQUIRED", header: "X-A2A-Extensions" } });
    else expect(body.error).toMatchObject({ code: 400, status: "FAILED_PRECONDITION" });
    const ok = await send(strict.url, path, { headers: { "A2A-Version": line, [HEADER[line]]: both } });
    await expectRestError(asHttpResult(ok), line, "TASK_NOT_FOUND");
    expect(ok.headers[HEADER[line].toLowerCase()]).toBe(both);
  });

  it.each(["1.0", "0.3"] as const)("JSON-RPC %s with every required extension runs, and a send completes", async (line) => {
    const res = await send(strict.url, "/", {
      method: "POST",
      headers: { "A2A-Version": line, [HEADER[line]]: [SESSION, `${WIRE}, ${UNKNOWN}`] },
      body: rpcCall(line, getTask(line), { id: randomUUID() }),
    });
    await expectRpcError(asHttpResult(res), line, "TASK_NOT_FOUND", { id: 1 });
    expect(res.headers[HEADER[line].toLowerCase()]).toBe(both);
    strict.stub.script(text("done"));
    const sent = await send(strict.url, "/", {
      method: "POST",
      headers: { "A2A-Version": line, [HEADER[line]]: both },
      body:
        line === "1.0"
          ? rpcCall(line, "SendMessage", { message: { role: "ROLE_USER", messageId: randomUUID(), parts: [{ text: "hi" }] } })
          : rpcCall(line, "message/send", { message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text: "hi" }] } }),
    });
    expect(JSON.stringify(sent.body.result)).toMatch(/"(completed|TASK_STATE_COMPLETED)"/);
  });

  it("the cards mark the required extensions (the public card lists them even when they are otherwise extended-only)", async () => {
    for (const version of [undefined, "0.3", "1.0"]) {
      const headers: Record<string, string> = version === undefined ? {} : { "A2A-Version": version };
      const card = await send(strict.url, "/.well-known/agent-card.json", { headers: { ...headers, authorization: "" } });
      expect(card.status).toBe(200);
      const exts = cardExtensions(card.body);
      for (const uri of [SESSION, WIRE]) expect(exts.find((e) => e.uri === uri)?.required, `${uri} (${version})`).toBe(true);
      expect(exts.filter((e) => e.required).map((e) => e.uri).sort()).toEqual([SESSION, WIRE].sort());
      const extended = await send(strict.url, "/agent/authenticatedExtendedCard", { headers });
      expect(extended.status).toBe(200);
      expect(cardExtensions(extended.body).filter((e) => e.required).map((e) => e.uri).sort()).toEqual([SESSION, WIRE].sort());
    }
    const plainCard = await send(plain.url, "/.well-known/agent-card.json");
    expect(cardExtensions(plainCard.body).every((e) => e.required === false)).toBe(true);
    expect(cardExtensions(plainCard.body).some((e) => e.uri === WIRE)).toBe(false);
  });

  it("discovery and operational routes never need them; the wire contract names them", async () => {
    for (const path of ["/extendedAgentCard", "/v1/card", "/health", "/openapi.json"]) {
      const res = await send(strict.url, path);
      expect(res.status, path).toBe(200);
    }
    const rpc = await send(strict.url, "/", { method: "POST", headers: { "A2A-Version": "1.0" }, body: rpcCall("1.0", "GetExtendedAgentCard", {}) });
    const wire = cardExtensions(rpc.body.result).find((e) => e.uri === WIRE)!.params as Record<string, any>;
    expect(wire.extensions.required_extensions).toEqual([SESSION, WIRE]);
    expect(wire.service_behaviors.extension_activation.required_extensions).toEqual([SESSION, WIRE]);
  });

  it("an unknown URI in A2A_REQUIRED_EXTENSIONS is a configuration error naming the variable", () => {
    let error: unknown;
    try {
      loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN, A2A_REQUIRED_EXTENSIONS: `${SESSION},${UNKNOWN}` });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^A2A_REQUIRED_EXTENSIONS: unknown extension URI "https:\/\/example\.com\/not-an-extension-of-this-gateway"/)]);
    expect(loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN, A2A_REQUIRED_EXTENSIONS: `${SESSION}, ${SESSION}` }).requiredExtensions).toEqual([SESSION]);
    expect(loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN }).requiredExtensions).toEqual([]);
  });
});
