// bench:tasks (./tasks.ts), its HTTP side: node:http requests and SSE with keep-alive, the lean GetTask connection,
// and the clients of one turn (direct against a stub, and the gateway's JSON-RPC message/send and message/stream).
import { randomUUID } from "node:crypto";
import http from "node:http";
import net from "node:net";
import { onSseFrames } from "./listening.js";
import { hr, msSince } from "./tasks-measure.js";

// ---------------------------------------------------------------------------------------------------------------
// HTTP: node:http with keep-alive (less client CPU than fetch on a 2-core machine, where the client shares the cores)

export interface Target {
  host: string;
  port: number;
  agent: http.Agent;
}

export function target(url: string): Target {
  const u = new URL(url);
  // `timeout` (2 s) makes the agent close a free socket well before a server's keep-alive timeout (5 s by default)
  // does: a socket left idle while the other targets run is otherwise reused just as the server closes it ("socket
  // hang up"). A call in flight is bounded by its own request timeout instead.
  return { host: u.hostname, port: Number(u.port), agent: new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 2_000 }) };
}

export function timeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms))),
  ]);
}

export function request(t: Target, method: string, urlPath: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: t.host,
        port: t.port,
        method,
        path: urlPath,
        agent: t.agent,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.setTimeout(15_000, () => req.destroy(new Error(`${method} ${urlPath}: timeout`)));
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * POST with an SSE answer: calls onEvent with each parsed `data:` JSON (only those `wanted` says are worth parsing,
 * default all); resolves at the end of the body.
 */
function streamRequest(
  t: Target,
  urlPath: string,
  headers: Record<string, string>,
  body: string | undefined,
  onEvent: (data: unknown) => void,
  method = "POST",
  wanted: (data: string) => boolean = () => true,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: t.host,
        port: t.port,
        method,
        path: urlPath,
        agent: t.agent,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        onSseFrames(res, (frame) => {
          for (const line of frame.split("\n")) if (line.startsWith("data:") && wanted(line)) onEvent(JSON.parse(line.slice(5)));
        });
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}


// ---------------------------------------------------------------------------------------------------------------
// Clients of one turn

/**
 * Direct: prompt_async + session.idle on a shared /global/event connection (what the gateway does per turn). It
 * JSON-parses only the frames it acts on (the first one, and `session.idle`), as a lean direct caller would: parsing
 * all ~40 frames of a turn put ~0.2 ms of avoidable client work into the baseline, which flattered the gateway's
 * added latency.
 */
export class DirectClient {
  readonly #waiters = new Map<string, () => void>();
  readonly #events: Target;
  constructor(readonly t: Target) {
    this.#events = { ...t, agent: new http.Agent({ keepAlive: false }) };
  }

  connect(): Promise<void> {
    return new Promise((connected, failed) => {
      let first = true;
      streamRequest(this.#events, "/global/event", { accept: "text/event-stream" }, undefined, (data) => {
        if (first) {
          first = false;
          connected();
        }
        const payload = (data as { payload?: { type?: string; properties?: { sessionID?: string } } }).payload;
        if (payload?.type !== "session.idle") return;
        const id = payload.properties?.sessionID ?? "";
        const waiter = this.#waiters.get(id);
        if (waiter === undefined) return;
        this.#waiters.delete(id);
        waiter();
      }, "GET", (line) => first || line.includes('"type":"session.idle"')).catch(failed);
    });
  }

  async createSession(): Promise<string> {
    const res = await request(this.t, "POST", "/session", {}, "{}");
    if (res.status !== 200) throw new Error(`POST /session: HTTP ${res.status}`);
    return (JSON.parse(res.text) as { id: string }).id;
  }

  async turn(sessionId: string): Promise<void> {
    const idle = new Promise<void>((r) => this.#waiters.set(sessionId, r));
    const res = await request(this.t, "POST", `/session/${sessionId}/prompt_async`, {}, JSON.stringify({ parts: [{ type: "text", text: "hi" }] }));
    if (res.status !== 204) throw new Error(`prompt_async: HTTP ${res.status} ${res.text}`);
    await timeout(idle, 10_000, "session.idle");
  }

  destroy(): void {
    this.#events.agent.destroy();
    this.t.agent.destroy();
  }
}

/** The gateway: JSON-RPC 0.3 message/send (blocking) and message/stream, one context per worker. */
export class GatewayClient {
  readonly taskIds: string[] = [];
  #rpcId = 0;
  readonly #headers: Record<string, string>;
  constructor(
    readonly name: string,
    readonly t: Target,
    readonly keepIds: boolean,
    token: string,
  ) {
    this.#headers = { authorization: `Bearer ${token}`, "a2a-version": "0.3" };
  }

  #body(method: string, contextId: string): string {
    return JSON.stringify({
      jsonrpc: "2.0",
      id: ++this.#rpcId,
      method,
      params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hi" }], contextId } },
    });
  }

  async send(contextId: string): Promise<void> {
    const res = await request(this.t, "POST", "/", this.#headers, this.#body("message/send", contextId));
    const task = (JSON.parse(res.text) as { result?: { id: string; status: { state: string } } }).result;
    if (res.status !== 200 || task?.status.state !== "completed") throw new Error(`${this.name} message/send: HTTP ${res.status} ${res.text.slice(0, 300)}`);
    if (this.keepIds) this.taskIds.push(task.id);
  }

  /** Resolves with the ms to the final event (the stream's end is awaited too). */
  async stream(contextId: string): Promise<number> {
    const start = hr();
    let final = -1;
    let id = "";
    const status = await streamRequest(this.t, "/", { ...this.#headers, accept: "text/event-stream" }, this.#body("message/stream", contextId), (data) => {
      const result = (data as { result?: { kind: string; id?: string; final?: boolean; status?: { state: string } } }).result;
      if (result?.kind === "task") id = result.id ?? "";
      else if (result?.kind === "status-update" && result.final === true && result.status?.state === "completed") final = msSince(start);
    });
    if (status !== 200 || final < 0) throw new Error(`${this.name} message/stream: HTTP ${status}, no completed final event`);
    if (this.keepIds) this.taskIds.push(id);
    return final;
  }

  destroy(): void {
    this.t.agent.destroy();
  }
}


/**
 * The GetTask load generator's connection: one bare keep-alive socket, one request at a time (no pipelining), the
 * request head built once, each answer framed by its Content-Length (both servers send one for JSON). The load
 * client shares the cores with the server it measures: CPU node:http's client spends per call is lost by both
 * servers alike and caps the faster one's rate the most. This one spends less (the report prints the client's CPU
 * per call either way; BENCH_GET_CLIENT=node measures with node:http).
 */
export class LeanConnection {
  #socket: net.Socket | undefined;
  readonly #head: string;
  #buf: Buffer = Buffer.alloc(0);
  #waiter: { resolve: (r: { status: number; text: string }) => void; reject: (e: Error) => void } | undefined;
  #lastUsed = 0;

  constructor(
    readonly t: Target,
    urlPath: string,
    headers: Record<string, string>,
  ) {
    const lines = [`POST ${urlPath} HTTP/1.1`, `Host: ${t.host}:${t.port}`, "Content-Type: application/json", ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    this.#head = `${lines.join("\r\n")}\r\nContent-Length: `;
  }

  /**
   * The connection, opened when there is none. Servers close keep-alive connections that sit idle (5 s by default)
   * while the other targets run, and one closing just as a call is written fails that call: a connection idle for
   * 2 s is closed here and a new one opened. One that a server closed while idle is replaced the same way; one that
   * closes under a call fails that call.
   */
  #connection(): net.Socket {
    if (this.#socket !== undefined && performance.now() - this.#lastUsed > 2_000) this.close();
    this.#lastUsed = performance.now();
    if (this.#socket !== undefined) return this.#socket;
    const socket = net.connect(this.t.port, this.t.host);
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
      this.#parse();
    });
    const fail = (error: Error): void => {
      if (this.#socket === socket) this.#socket = undefined;
      this.#buf = Buffer.alloc(0);
      this.#waiter?.reject(error);
      this.#waiter = undefined;
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("connection closed")));
    this.#socket = socket;
    return socket;
  }

  call(body: string): Promise<{ status: number; text: string }> {
    if (this.#waiter !== undefined) return Promise.reject(new Error("one call at a time"));
    const socket = this.#connection();
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
      socket.write(`${this.#head}${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  #parse(): void {
    const end = this.#buf.indexOf("\r\n\r\n");
    if (end < 0 || this.#waiter === undefined) return;
    const head = this.#buf.toString("latin1", 0, end);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (length === null) {
      this.#waiter.reject(new Error(`answer without Content-Length: ${head.slice(0, 200)}`));
      this.#waiter = undefined;
      this.#socket?.destroy();
      return;
    }
    const total = end + 4 + Number(length[1]);
    if (this.#buf.length < total) return;
    const text = this.#buf.toString("utf8", end + 4, total);
    this.#buf = this.#buf.length === total ? Buffer.alloc(0) : this.#buf.subarray(total);
    const waiter = this.#waiter;
    this.#waiter = undefined;
    this.#lastUsed = performance.now();
    waiter.resolve({ status: Number(head.slice(9, 12)), text });
  }

  close(): void {
    this.#socket?.removeAllListeners("close");
    this.#socket?.destroy();
    this.#socket = undefined;
  }
}

