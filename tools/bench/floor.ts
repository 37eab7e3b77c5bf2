// The floor of tools/bench/tasks.ts: what a Node server on node:http costs when it does only the part of the work
// no gateway can skip, with none of the gateway's contract (no authentication, rate limit, validation, protocol
// codec, task model, store, audit or stream mapping). The gateway's figures are read against it: the distance
// between the floor and the gateway is what the gateway's own work costs, and the floor's distance from the
// baseline is what any Node HTTP hop costs on the machine.
//
//   --proxy <stub url>   message/send floor. One shared /global/event connection (node:http, frames split on
//                        "\n\n", only `session.idle` frames parsed). POST / reads the JSON-RPC body, takes a session
//                        for the message's contextId (POST /session once), POSTs prompt_async, waits for the
//                        session's idle and answers a minimal completed task.
//   --get <count>        GetTask floor. Holds <count> tasks (tools/bench/sdk-server.ts gatewayTask, encoded once by
//                        the gateway's 1.0 codec) in a Map; POST / JSON-parses the body, looks the id up and answers
//                        {"jsonrpc","id","result": task} through JSON.stringify.
//
// Prints "floor listening on http://127.0.0.1:<port>" when ready. Only 127.0.0.1.
import http from "node:http";
import { onSseFrames } from "./listening.js";
import { v1_0 } from "../../src/protocol/codec/index.js";
import { benchTaskId, gatewayTask } from "./sdk-server.js";

const mode = process.argv[2];
const arg = process.argv[3];

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function answer(res: http.ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

interface RpcRequest {
  id?: unknown;
  params?: { id?: string; message?: { contextId?: string; parts?: Array<{ text?: string }> } };
}

async function proxy(upstreamUrl: string): Promise<http.RequestListener> {
  const upstream = new URL(upstreamUrl);
  // Free sockets are closed after 2 s, before the stub's 5 s keep-alive timeout can close one under a new call.
  const agent = new http.Agent({ keepAlive: true, timeout: 2_000 });
  const call = (urlPath: string, body: string): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        { host: upstream.hostname, port: upstream.port, path: urlPath, method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });

  const waiters = new Map<string, () => void>();
  await new Promise<void>((connected, failed) => {
    const req = http.get({ host: upstream.hostname, port: upstream.port, path: "/global/event", agent: false }, (res) => {
      connected();
      onSseFrames(res, (frame) => {
        if (!frame.includes('"type":"session.idle"')) return;
        const payload = (JSON.parse(frame.slice(frame.indexOf("{"))) as { payload?: { properties?: { sessionID?: string } } }).payload;
        const id = payload?.properties?.sessionID ?? "";
        const waiter = waiters.get(id);
        if (waiter === undefined) return;
        waiters.delete(id);
        waiter();
      });
    });
    req.on("error", failed);
  });

  const sessions = new Map<string, Promise<string>>();
  const session = (contextId: string): Promise<string> => {
    let id = sessions.get(contextId);
    if (id === undefined) {
      id = call("/session", "{}").then((r) => (JSON.parse(r.text) as { id: string }).id);
      sessions.set(contextId, id);
    }
    return id;
  };

  return (req, res) => {
    void (async () => {
      const rpc = JSON.parse(await readBody(req)) as RpcRequest;
      const message = rpc.params?.message ?? {};
      const contextId = message.contextId ?? "";
      const sessionId = await session(contextId);
      const idle = new Promise<void>((resolve) => waiters.set(sessionId, resolve));
      const prompted = await call(`/session/${sessionId}/prompt_async`, JSON.stringify({ parts: [{ type: "text", text: message.parts?.[0]?.text ?? "" }] }));
      if (prompted.status !== 204) throw new Error(`prompt_async: HTTP ${prompted.status}`);
      await idle;
      answer(res, 200, { jsonrpc: "2.0", id: rpc.id ?? null, result: { kind: "task", id: sessionId, contextId, status: { state: "completed" } } });
    })().catch((error: unknown) => answer(res, 500, { error: String(error) }));
  };
}

function getTask(count: number): http.RequestListener {
  // The gateway's own 1.0 encoding of the bench tasks, done once here: the answers have the gateway's bytes.
  const timestamp = new Date().toISOString();
  const tasks = new Map<string, unknown>();
  for (let i = 0; i < count; i++) tasks.set(benchTaskId(i), v1_0.task(gatewayTask(i, timestamp)));
  return (req, res) => {
    readBody(req).then(
      (text) => {
        const rpc = JSON.parse(text) as RpcRequest;
        const task = tasks.get(rpc.params?.id ?? "");
        if (task === undefined) answer(res, 200, { jsonrpc: "2.0", id: rpc.id ?? null, error: { code: -32001, message: "Task not found" } });
        else answer(res, 200, { jsonrpc: "2.0", id: rpc.id ?? null, result: task });
      },
      (error: unknown) => answer(res, 400, { error: String(error) }),
    );
  };
}

const listener =
  mode === "--proxy" && arg !== undefined
    ? await proxy(arg)
    : mode === "--get" && arg !== undefined && Number.isInteger(Number(arg))
      ? getTask(Number(arg))
      : undefined;
if (listener === undefined) {
  process.stderr.write("usage: floor.ts --proxy <stub url> | --get <task count>\n");
  process.exit(2);
}
const server = http.createServer({ keepAliveTimeout: 60_000 }, listener);
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  process.stdout.write(`floor listening on http://127.0.0.1:${address.port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
