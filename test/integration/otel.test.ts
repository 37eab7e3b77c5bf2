// Issue 16, optional OpenTelemetry export: with OTEL_EXPORTER_OTLP_ENDPOINT set, the gateway sends its spans over
// OTLP/HTTP (JSON) — a server span per request, a client span per OpenCode call and per push delivery — in the trace
// the request's traceparent named. The receiver below is a tiny OTLP/HTTP endpoint (POST /v1/traces) on 127.0.0.1,
// which also takes the push notification (any other path).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpc } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { until } from "../support/task-wire.js";
import { text } from "../../tools/upstream/script.js";
import { spanExport } from "../../src/tracing/index.js";

type Obj = Record<string, any>;

const spans: Obj[] = [];
const contentTypes: string[] = [];
const webhooks: http.IncomingHttpHeaders[] = [];
let receiver: http.Server;
let base: string;

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/v1/traces") {
        contentTypes.push(String(req.headers["content-type"]));
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Obj;
        for (const rs of body.resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? []) for (const span of ss.spans ?? []) spans.push({ ...span, resource: rs.resource });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
        return;
      }
      webhooks.push(req.headers);
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", () => resolve()));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

const attr = (span: Obj, key: string): unknown => {
  const v = (span.attributes as Obj[] | undefined)?.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : (v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue);
};

describe("OpenTelemetry export (OTLP/HTTP JSON)", () => {
  let g: TaskGateway | undefined;
  afterAll(() => g?.close());

  it("exports a server span per request and client spans per OpenCode call and push delivery, in the traceparent's trace", async () => {
    g = await startTaskGateway({ OTEL_EXPORTER_OTLP_ENDPOINT: base, A2A_PUSH_ALLOW_PRIVATE_NETWORKS: "true" });
    expect(spanExport(), "the SDK is on").toBeDefined();
    const traceId = randomBytes(16).toString("hex");
    const callerSpan = randomBytes(8).toString("hex");
    g.stub.script(text("exported"));
    const res = await rpc(
      g.url,
      {
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "span me" }] },
          configuration: { pushNotificationConfig: { url: `${base}/hook` } },
        },
      },
      { traceparent: `00-${traceId}-${callerSpan}-01` },
    );
    expect(res.body.error, res.text).toBeUndefined();
    await until("push delivered", () => (webhooks.length > 0 ? true : undefined));
    const stub = g.stub;
    // Closing the gateway shuts the SDK down, which sends what is still batched.
    await g.close();
    g = undefined;
    expect(spanExport(), "export removed at close").toBeUndefined();

    expect(contentTypes.every((t) => t.startsWith("application/json"))).toBe(true);
    const ours = spans.filter((s) => s.traceId === traceId);
    const server = ours.find((s) => s.kind === 2);
    expect(server, JSON.stringify(spans.map((s) => [s.name, s.kind, s.traceId]))).toBeDefined();
    expect(server).toMatchObject({ name: "message/send", parentSpanId: callerSpan });
    expect(attr(server!, "rpc.system")).toBe("jsonrpc");
    expect(attr(server!, "rpc.method")).toBe("message/send");
    expect(attr(server!, "a2a.protocol.version")).toBe("0.3");
    expect(Number(attr(server!, "http.response.status_code"))).toBe(200);
    const service = (server!.resource.attributes as Obj[]).find((a) => a.key === "service.name");
    expect(service?.value.stringValue).toBe("opencode-a2a");

    // Client spans: children of the server span; the traceparent OpenCode got names the client span.
    const clients = ours.filter((s) => s.kind === 3);
    const prompt = clients.find((s) => s.name === "opencode sessionPromptAsync");
    expect(prompt, JSON.stringify(clients.map((s) => s.name))).toBeDefined();
    expect(prompt!.parentSpanId).toBe(server!.spanId);
    const promptCall = stub.requests.find((r) => r.path.endsWith("/prompt_async"));
    expect(promptCall!.headers.traceparent).toBe(`00-${traceId}-${prompt!.spanId}-01`);
    expect(clients.map((s) => s.name)).toContain("opencode sessionCreate");

    const push = clients.find((s) => s.name === "push notification");
    expect(push).toBeDefined();
    expect(webhooks[0]!.traceparent).toBe(`00-${traceId}-${push!.spanId}-01`);
  });
});
