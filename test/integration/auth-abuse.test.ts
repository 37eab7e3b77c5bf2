import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";

// ---- abuse limits before authentication: a failed-auth flood gets 429 per client address and writes almost nothing
// to the audit log; other addresses are not affected ----------------------------------------------------------------

let gw: StartedGateway;
beforeAll(async () => {
  gw = await startGateway({ A2A_AUTH_FAILURE_LIMIT: "10", A2A_AUDIT_AUTH_FAILURE_SAMPLE: "3", A2A_UNAUTHENTICATED_RATE_LIMIT: "30", A2A_AUTH_WINDOW_SECONDS: "60" });
});
afterAll(async () => {
  await gw?.close();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  text: string;
}

/** One request from the loopback address `from` (Linux routes all of 127.0.0.0/8 to lo). */
function request(from: string, path: string, opts: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  const { port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        localAddress: from,
        path,
        method: opts.method ?? "GET",
        agent: false,
        headers: { ...(payload === undefined ? {} : { "content-type": "application/json" }), ...opts.headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          let body: any;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

const admin = { authorization: `Bearer ${TEST_TOKEN}` };
const bad = { authorization: "Bearer not-a-valid-token-123456" };
const anonymousAudit = async () => (await request("127.0.0.9", "/admin/audit?limit=500", { headers: admin })).body.entries.filter((e: any) => e.principal === null && e.client_ip?.endsWith("127.0.0.2"));

describe("failed-authentication flood from one address", () => {
  it("answers 401 up to A2A_AUTH_FAILURE_LIMIT, then 429 with Retry-After on both doors; audits only a sample; other addresses are unaffected", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      const res =
        i % 2 === 0
          ? await request("127.0.0.2", "/", { method: "POST", headers: bad, body: { jsonrpc: "2.0", id: i, method: "tasks/get", params: { id: "x" } } })
          : await request("127.0.0.2", "/tasks/x", { headers: { ...bad, "A2A-Version": "1.0" } });
      statuses.push(res.status);
      if (res.status === 429) expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.slice(10)).toEqual(Array(50).fill(429));
    // While blocked, even a valid credential from that address is refused (nothing is looked up) …
    const blocked = await request("127.0.0.2", "/tasks/x", { headers: { ...admin, "A2A-Version": "1.0" } });
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.details[0].reason).toBe("RATE_LIMITED");
    // … and another address is not affected.
    const other = await request("127.0.0.3", "/tasks/x", { headers: { ...admin, "A2A-Version": "1.0" } });
    expect(other.status).not.toBe(429);
    expect(other.status).not.toBe(401);

    // 61 refused requests, but only the sample (3) and one "blocked" entry reached the audit log.
    await new Promise((r) => setTimeout(r, 300));
    const rows = await anonymousAudit();
    expect(rows).toHaveLength(3 + 1);
    expect(rows.map((r: any) => r.error_reason).sort()).toEqual(["RATE_LIMITED", "UNAUTHENTICATED", "UNAUTHENTICATED", "UNAUTHENTICATED"]);
    const metrics = (await request("127.0.0.9", "/metrics", { headers: admin })).text;
    expect(Number(/a2a_auth_refused_total (\d+)/.exec(metrics)?.[1])).toBe(51);
    expect(Number(/a2a_audit_suppressed_total (\d+)/.exec(metrics)?.[1])).toBe(57);
  });

  it("requests without credentials to public routes are limited per address too (A2A_UNAUTHENTICATED_RATE_LIMIT)", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 35; i++) statuses.push((await request("127.0.0.4", "/.well-known/agent-card.json")).status);
    expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(30).every((s) => s === 429)).toBe(true);
    expect((await request("127.0.0.5", "/.well-known/agent-card.json")).status).toBe(200);
  });
});
