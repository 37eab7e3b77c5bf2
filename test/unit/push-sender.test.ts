// One webhook POST (src/push/sender.ts) against real node:http servers on 127.0.0.1 that the test controls: the
// verdict per status (delivered / retry with Retry-After / reject, redirects not followed), what the request
// carries, timeouts, refused connections, refused private targets (nothing reaches the server), large response
// bodies, aborts; then retryAfterMs on its own.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { retryAfterMs, WebhookSender, type SendVerdict, type WebhookRequest } from "../../src/push/sender.js";

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface TestServer {
  port: number;
  url: (path?: string) => string;
  received: Received[];
  connections: number;
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

const servers: TestServer[] = [];
const senders: WebhookSender[] = [];

/** An HTTP server on 127.0.0.1 (ephemeral port) recording every request (after its body) and connection. */
async function startServer(handler: Handler): Promise<TestServer> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      handler(req, res, body);
    });
  });
  const ts: TestServer = {
    port: 0,
    url: (p = "/hook") => `http://127.0.0.1:${ts.port}${p}`,
    received,
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on("connection", () => ts.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  ts.port = (server.address() as AddressInfo).port;
  servers.push(ts);
  return ts;
}

const answer =
  (status: number, headers: Record<string, string> = {}, body = ""): Handler =>
  (_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };

function sender(opts: Partial<ConstructorParameters<typeof WebhookSender>[0]> = {}): WebhookSender {
  const s = new WebhookSender({ timeoutMs: 5000, allowPrivateNetworks: true, userAgent: "opencode-a2a-test/1.0", ...opts });
  senders.push(s);
  return s;
}

const request = (url: string, extra: Partial<WebhookRequest> = {}): WebhookRequest => ({
  url,
  body: JSON.stringify({ kind: "task", id: "t1" }),
  headers: { "content-type": "application/json" },
  ...extra,
});

afterEach(async () => {
  for (const s of senders.splice(0)) s.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe("WebhookSender verdicts", () => {
  it.each([200, 201, 202, 204])("HTTP %i → delivered with the status", async (status) => {
    const server = await startServer(answer(status));
    const verdict = await sender().send(request(server.url()));
    expect(verdict).toEqual({ kind: "delivered", status });
    expect(server.received).toHaveLength(1);
  });

  it.each([500, 502, 503, 504, 429, 408, 425])("HTTP %i → retry with the status, no retryAfterMs without Retry-After", async (status) => {
    const server = await startServer(answer(status));
    const verdict = await sender().send(request(server.url()));
    expect(verdict.kind).toBe("retry");
    expect(verdict).toMatchObject({ status, reason: expect.stringContaining(String(status)) });
    expect(verdict).not.toHaveProperty("retryAfterMs");
  });

  it("retry honours Retry-After in delay-seconds", async () => {
    const server = await startServer(answer(503, { "retry-after": "120" }));
    const verdict = await sender().send(request(server.url()));
    expect(verdict).toMatchObject({ kind: "retry", status: 503, retryAfterMs: 120_000 });
  });

  it("retry honours Retry-After as an HTTP date", async () => {
    // Whole seconds in the future; the sender compares with its own clock, so allow for the time the POST takes.
    const at = new Date(Date.now() + 3_600_000);
    const server = await startServer(answer(429, { "retry-after": at.toUTCString() }));
    const verdict = await sender().send(request(server.url()));
    expect(verdict).toMatchObject({ kind: "retry", status: 429 });
    const ms = (verdict as { retryAfterMs?: number }).retryAfterMs;
    expect(ms).toBeGreaterThan(3_500_000);
    expect(ms).toBeLessThanOrEqual(3_600_000);
  });

  it("an unreadable Retry-After leaves retryAfterMs out", async () => {
    const server = await startServer(answer(503, { "retry-after": "soon" }));
    const verdict = await sender().send(request(server.url()));
    expect(verdict.kind).toBe("retry");
    expect(verdict).not.toHaveProperty("retryAfterMs");
  });

  it("Retry-After on a 2xx or a 4xx does not change the verdict", async () => {
    const ok = await startServer(answer(200, { "retry-after": "5" }));
    expect(await sender().send(request(ok.url()))).toEqual({ kind: "delivered", status: 200 });
    const bad = await startServer(answer(400, { "retry-after": "5" }));
    const verdict = await sender().send(request(bad.url()));
    expect(verdict).toMatchObject({ kind: "reject", status: 400 });
    expect(verdict).not.toHaveProperty("retryAfterMs");
  });

  it.each([400, 401, 403, 404, 409, 410, 413, 422])("HTTP %i → reject with the status", async (status) => {
    const server = await startServer(answer(status));
    const verdict = await sender().send(request(server.url()));
    expect(verdict).toMatchObject({ kind: "reject", status, reason: expect.stringContaining(String(status)) });
  });

  it.each([301, 302, 307, 308])("HTTP %i → reject, and the redirect is not followed", async (status) => {
    const target = await startServer(answer(200));
    const server = await startServer(answer(status, { location: target.url("/elsewhere") }));
    const verdict = await sender().send(request(server.url()));
    expect(verdict).toMatchObject({ kind: "reject", status });
    expect(server.received).toHaveLength(1);
    expect(target.received).toHaveLength(0);
    expect(target.connections).toBe(0);
  });
});

describe("WebhookSender request", () => {
  it("POSTs the exact body with the given headers, the user agent and the content length", async () => {
    const server = await startServer(answer(204));
    const body = JSON.stringify({ statusUpdate: { taskId: "t-1", text: "héllo ✓ \u{1F600}" } });
    const verdict = await sender({ userAgent: "opencode-a2a/9.9.9" }).send({
      url: server.url("/a2a/hook?x=1"),
      body,
      headers: { "content-type": "application/a2a+json", "x-a2a-notification-token": "tok-123", authorization: "Bearer secret" },
    });
    expect(verdict).toEqual({ kind: "delivered", status: 204 });
    expect(server.received).toHaveLength(1);
    const got = server.received[0]!;
    expect(got.method).toBe("POST");
    expect(got.url).toBe("/a2a/hook?x=1");
    expect(got.body).toBe(body);
    expect(got.headers["content-type"]).toBe("application/a2a+json");
    expect(got.headers["x-a2a-notification-token"]).toBe("tok-123");
    expect(got.headers.authorization).toBe("Bearer secret");
    expect(got.headers["user-agent"]).toBe("opencode-a2a/9.9.9");
    // Bytes, not characters: the body has multi-byte characters.
    expect(got.headers["content-length"]).toBe(String(Buffer.byteLength(body, "utf8")));
    expect(Number(got.headers["content-length"])).toBeGreaterThan(body.length);
    expect(got.headers["transfer-encoding"]).toBeUndefined();
  });

  it("sends an empty body with content-length 0", async () => {
    const server = await startServer(answer(200));
    await sender().send(request(server.url(), { body: "" }));
    expect(server.received[0]!.body).toBe("");
    expect(server.received[0]!.headers["content-length"]).toBe("0");
  });

  it("sends consecutive requests (connection reuse does not mix them up)", async () => {
    const server = await startServer((_req, res, body) => {
      res.writeHead(JSON.parse(body).n % 2 === 0 ? 200 : 503);
      res.end("ok");
    });
    const s = sender();
    const verdicts: SendVerdict[] = [];
    for (let n = 0; n < 4; n++) verdicts.push(await s.send(request(server.url(), { body: JSON.stringify({ n }) })));
    expect(verdicts.map((v) => v.kind)).toEqual(["delivered", "retry", "delivered", "retry"]);
    expect(server.received.map((r) => JSON.parse(r.body).n)).toEqual([0, 1, 2, 3]);
  });
});

describe("WebhookSender failures", () => {
  it("a receiver that never answers → retry once timeoutMs has passed", async () => {
    const server = await startServer(() => {
      /* never answers */
    });
    const verdict = await sender({ timeoutMs: 200 }).send(request(server.url()));
    expect(verdict.kind).toBe("retry");
    expect(verdict).toMatchObject({ reason: expect.stringMatching(/no answer within 200 ms/) });
    expect(verdict).not.toHaveProperty("status");
    expect(server.received).toHaveLength(1);
  });

  it("a receiver that sends its headers but never finishes the body → retry after timeoutMs", async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { "content-length": "1000" });
      res.write("partial");
    });
    const verdict = await sender({ timeoutMs: 200 }).send(request(server.url()));
    expect(verdict.kind).toBe("retry");
    expect(verdict).toMatchObject({ reason: expect.stringMatching(/no answer within 200 ms/) });
  });

  it("connection refused → retry naming the error", async () => {
    const server = await startServer(answer(200));
    const url = server.url();
    servers.splice(servers.indexOf(server), 1);
    await server.close();
    const verdict = await sender().send(request(url));
    expect(verdict.kind).toBe("retry");
    expect(verdict).toMatchObject({ reason: expect.stringContaining("ECONNREFUSED") });
  });

  it("a connection reset before the answer → retry", async () => {
    const server = await startServer((req) => req.socket.destroy());
    const verdict = await sender().send(request(server.url()));
    expect(verdict.kind).toBe("retry");
    expect(server.received).toHaveLength(1);
  });

  it("an already aborted signal → retry, and nothing is delivered", async () => {
    const server = await startServer(answer(200));
    const verdict = await sender().send(request(server.url()), AbortSignal.abort());
    expect(verdict.kind).toBe("retry");
    expect(verdict).toMatchObject({ reason: expect.stringMatching(/shutting down/) });
    expect(server.received).toHaveLength(0);
  });

  it("an abort while waiting for the answer → retry", async () => {
    let arrived!: () => void;
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve));
    const server = await startServer(() => arrived());
    const controller = new AbortController();
    const pending = sender({ timeoutMs: 10_000 }).send(request(server.url()), controller.signal);
    await requestArrived;
    controller.abort();
    const verdict = await pending;
    expect(verdict.kind).toBe("retry");
    expect(verdict).toMatchObject({ reason: expect.stringMatching(/shutting down/) });
  });

  it("a large response body (> 64 KiB) still yields the status verdict", async () => {
    const big = "x".repeat(1024 * 1024);
    const ok = await startServer(answer(200, { "content-type": "text/plain" }, big));
    expect(await sender().send(request(ok.url()))).toEqual({ kind: "delivered", status: 200 });
    const failing = await startServer(answer(503, { "retry-after": "7" }, big));
    expect(await sender().send(request(failing.url()))).toMatchObject({ kind: "retry", status: 503, retryAfterMs: 7000 });
    const refusing = await startServer(answer(404, {}, big));
    expect(await sender().send(request(refusing.url()))).toMatchObject({ kind: "reject", status: 404 });
  });

  it("a large chunked response body that never ends is cut off and still yields the status", async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(202, { "content-type": "text/plain" });
      const chunk = "y".repeat(16 * 1024);
      // 128 KiB, then the response is left open.
      for (let i = 0; i < 8; i++) res.write(chunk);
    });
    const verdict = await sender({ timeoutMs: 5000 }).send(request(server.url()));
    expect(verdict).toEqual({ kind: "delivered", status: 202 });
  });
});

describe("WebhookSender private targets", () => {
  it.each([
    ["an IPv4 loopback literal", (port: number) => `http://127.0.0.1:${port}/hook`],
    ["localhost", (port: number) => `http://localhost:${port}/hook`],
    ["an IPv4-mapped IPv6 loopback literal", (port: number) => `http://[::ffff:127.0.0.1]:${port}/hook`],
  ])("refuses %s when private networks are not allowed, without reaching the server", async (_name, urlOf) => {
    const server = await startServer(answer(200));
    const verdict = await sender({ allowPrivateNetworks: false }).send(request(urlOf(server.port)));
    expect(verdict.kind).toBe("reject");
    expect(verdict).toMatchObject({ reason: expect.stringMatching(/private or reserved address/) });
    expect(verdict).not.toHaveProperty("status");
    expect(server.received).toHaveLength(0);
    expect(server.connections).toBe(0);
  });

  it("never reaches the server through localhost with a trailing dot (refused, or unresolvable where the resolver knows no \"localhost.\")", async () => {
    const server = await startServer(answer(200));
    const verdict = await sender({ allowPrivateNetworks: false }).send(request(`http://localhost.:${server.port}/hook`));
    expect(verdict.kind).not.toBe("delivered");
    expect(server.received).toHaveLength(0);
    expect(server.connections).toBe(0);
  });

  it("reaches localhost when private networks are allowed", async () => {
    const server = await startServer(answer(200));
    const verdict = await sender({ allowPrivateNetworks: true }).send(request(`http://localhost:${server.port}/hook`));
    expect(verdict).toEqual({ kind: "delivered", status: 200 });
    expect(server.received).toHaveLength(1);
  });
});

describe("retryAfterMs", () => {
  const now = Date.UTC(2025, 0, 1, 12, 0, 0);

  it.each([
    ["0", 0],
    ["1", 1000],
    ["120", 120_000],
    [" 30 ", 30_000],
    ["007", 7000],
  ])("delay-seconds %j → %i ms", (value, ms) => {
    expect(retryAfterMs(value, now)).toBe(ms);
  });

  it("an HTTP date in the future → the time until then", () => {
    expect(retryAfterMs(new Date(now + 90_000).toUTCString(), now)).toBe(90_000);
    expect(retryAfterMs("Wed, 01 Jan 2025 12:01:00 GMT", now)).toBe(60_000);
  });

  it("an HTTP date in the past → 0", () => {
    expect(retryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT", now)).toBe(0);
    expect(retryAfterMs(new Date(now - 1000).toUTCString(), now)).toBe(0);
  });

  it("the obsolete RFC 850 date form is read too", () => {
    expect(retryAfterMs("Wednesday, 01-Jan-25 12:00:10 GMT", now)).toBe(10_000);
  });

  it.each([undefined, "", "   ", "garbage", "soon", "5s", "1e3", "1.5", "-1", "+5", "0x10"])("unreadable %j → undefined", (value) => {
    expect(retryAfterMs(value, now)).toBeUndefined();
  });
});
