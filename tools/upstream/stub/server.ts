/**
 * The stub's HTTP server and test controls: every request is recorded, may meet a test's failNext() rule, passes
 * the real server's CORS preflight and Basic auth, and is then routed by the pinned OpenAPI snapshot to a route
 * group (./routes/). Handler errors become the real server's JSON error answers.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { resolve } from "node:path";
import type { Event } from "../../../generated/opencode/types.gen.js";
import type { Reply } from "../script.js";
import type { BurstOptions, EmitEvent, FailRule, RecordedRequest, RouteMatch, StubStats, StubUpstream, StubUpstreamOptions } from "./api.js";
import { isHttpError, newId, sendJson, undecodable } from "./common.js";
import { EventBus } from "./events.js";
import { Interactions } from "./interactions.js";
import { loadSnapshot, RESPONDED, Router, type Snapshot } from "./openapi.js";
import { registerRoutes } from "./routes/index.js";
import { StubState } from "./state.js";
import { Turns } from "./turns.js";

const MAX_BODY_BYTES = 32 * 1024 * 1024;

export async function startStubUpstream(opts: StubUpstreamOptions = {}): Promise<StubUpstream> {
  const stub = new Stub(opts, await loadSnapshot());
  await stub.listen(opts.port ?? 0);
  return stub;
}

function matchesRoute(match: RouteMatch, method: string, path: string): boolean {
  if (typeof match === "function") return match({ method, path });
  if (match instanceof RegExp) return match.test(`${method} ${path}`);
  const space = match.indexOf(" ");
  const wantMethod = space > 0 ? match.slice(0, space).toUpperCase() : undefined;
  const wantPath = space > 0 ? match.slice(space + 1) : match;
  if (wantMethod !== undefined && wantMethod !== method) return false;
  const a = wantPath.split("/");
  const b = path.split("/");
  return a.length === b.length && a.every((seg, i) => seg === "*" || seg === b[i]);
}

function readBody(req: IncomingMessage): Promise<string> {
  if (req.method === "GET" || req.method === "HEAD") {
    req.resume();
    return Promise.resolve("");
  }
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) reject(new Error("request body too large"));
      else chunks.push(chunk);
    });
    req.on("end", () => resolveBody(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

class Stub implements StubUpstream {
  port = 0;
  readonly directory: string;
  readonly requests: RecordedRequest[] = [];

  private readonly server = createServer((req, res) => void this.handle(req, res));
  private readonly sockets = new Set<Socket>();
  private readonly state: StubState;
  private readonly bus: EventBus;
  private readonly interactions: Interactions;
  private readonly turns: Turns;
  private readonly router: Router;
  private readonly failRules: Array<{ match: RouteMatch; rule: FailRule }> = [];
  private readonly auth: string | undefined;
  private closed = false;

  constructor(opts: StubUpstreamOptions, snapshot: Snapshot) {
    this.state = new StubState(opts);
    this.directory = this.state.directory;
    this.bus = new EventBus(this.state, opts);
    this.interactions = new Interactions(this.state, this.bus);
    this.turns = new Turns(this.state, this.bus, this.interactions);
    this.router = new Router(snapshot.operations);
    registerRoutes(this.router, { state: this.state, bus: this.bus, turns: this.turns, interactions: this.interactions }, this, snapshot.text);
    this.auth =
      opts.password === undefined
        ? undefined
        : `Basic ${Buffer.from(`${opts.username ?? "opencode"}:${opts.password}`).toString("base64")}`;
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  get url(): string {
    return this.state.url;
  }

  listen(port: number): Promise<void> {
    return new Promise((resolveListen, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, "127.0.0.1", () => {
        this.server.off("error", reject);
        this.port = (this.server.address() as AddressInfo).port;
        this.state.url = `http://127.0.0.1:${this.port}`;
        resolveListen();
      });
    });
  }

  // ----- controls ------------------------------------------------------------------------------------------------

  script(...replies: Reply[]): void {
    this.state.globalScript.push(...replies);
  }

  scriptFor(sessionID: string, ...replies: Reply[]): void {
    const rec = this.state.sessions.get(sessionID);
    if (rec === undefined) throw new Error(`stub: no session ${sessionID}`);
    rec.script.push(...replies);
  }

  emit(event: EmitEvent, opts: { directory?: string } = {}): void {
    const payload = { id: event.id ?? newId("evt"), type: event.type, properties: event.properties ?? {} } as Event;
    this.bus.broadcast(payload, resolve(opts.directory ?? this.directory));
  }

  dropEventStreams(): void {
    this.bus.dropAll();
  }

  loseTurns(): void {
    this.turns.loseAll();
    this.bus.dropAll();
  }

  pauseHeartbeats(paused: boolean): void {
    this.bus.pauseHeartbeats(paused);
  }

  failNext(match: RouteMatch, rule: FailRule): void {
    this.failRules.push({ match, rule });
  }

  eventConnections(): number {
    return this.bus.connections;
  }

  stats(): StubStats {
    let busy = 0;
    for (const rec of this.state.sessions.values()) if (rec.loop !== undefined) busy++;
    const { eventsEmitted, framesWritten, bytesWritten, slowReadersDropped } = this.bus.counters;
    return {
      eventConnections: this.bus.connections,
      eventsEmitted,
      framesWritten,
      bytesWritten,
      slowReadersDropped,
      requests: this.requests.length,
      sessions: this.state.sessions.size,
      busySessions: busy,
      unscriptedReplies: this.state.unscripted,
    };
  }

  burst(opts: BurstOptions): Promise<{ events: number; ms: number }> {
    return this.bus.burst(opts);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.bus.close();
    for (const rec of this.state.sessions.values()) this.turns.cancelLoop(rec);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((done) => this.server.close(() => done()));
  }

  // ----- HTTP ------------------------------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = (req.method ?? "GET").toUpperCase();
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname;
    const query = Object.fromEntries(url.searchParams);
    let raw: string;
    try {
      raw = await readBody(req);
    } catch {
      req.socket.destroy();
      return;
    }
    let body: unknown;
    let bodyIsJson = true;
    if (raw !== "") {
      try {
        body = JSON.parse(raw) as unknown;
      } catch {
        body = raw;
        bodyIsJson = false;
      }
    }
    this.requests.push({ method, path, query, body, headers: req.headers });

    const ruleIndex = this.failRules.findIndex((r) => matchesRoute(r.match, method, path));
    const rule = ruleIndex >= 0 ? this.failRules.splice(ruleIndex, 1)[0]?.rule : undefined;
    if (rule !== undefined) {
      if ("destroy" in rule) {
        req.socket.destroy();
        return;
      }
      if ("delayMs" in rule) await new Promise((r) => setTimeout(r, rule.delayMs));
      else {
        const text = typeof rule.body === "string" ? rule.body : rule.body === undefined ? "" : JSON.stringify(rule.body);
        const type = typeof rule.body === "string" || rule.body === undefined ? "text/plain" : "application/json";
        res.writeHead(rule.status, { "content-type": type, "content-length": Buffer.byteLength(text), ...rule.headers });
        res.end(text);
        return;
      }
    }

    if (method === "OPTIONS") {
      res.writeHead(204, {
        "access-control-allow-methods": "GET, HEAD, PUT, PATCH, POST, DELETE",
        "access-control-allow-headers": "",
        "access-control-max-age": "86400",
        vary: "Origin",
      });
      res.end();
      return;
    }
    if (this.auth !== undefined && req.headers.authorization !== this.auth) {
      res.writeHead(401, { "www-authenticate": 'Basic realm="Secure Area"', "content-length": 0, vary: "Origin" });
      res.end();
      return;
    }
    if (!bodyIsJson) {
      const error = undecodable();
      return sendJson(res, error.status, error.body);
    }

    const header = req.headers["x-opencode-directory"];
    const directory = resolve(query.directory ?? (typeof header === "string" ? header : this.directory));
    try {
      const route = this.router.match(method, path);
      // The real server answers unknown paths with its embedded web UI (200 text/html); a 404 is more useful here.
      if (route === undefined) return sendJson(res, 404, { name: "NotFoundError", data: { message: `Route not found: ${method} ${path}` } });
      const result = await route.handler({ req, res, method, path, param: route.param, query, body, directory });
      if (result !== RESPONDED) sendJson(res, 200, result);
    } catch (error) {
      if (isHttpError(error)) return sendJson(res, error.status, error.body);
      const message = error instanceof Error ? error.message : String(error);
      if (!res.headersSent) sendJson(res, 500, { name: "UnknownError", data: { message } });
      else res.destroy();
    }
  }
}
