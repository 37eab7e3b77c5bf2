/**
 * A fast in-process stand-in for `opencode serve` (OpenCode 1.18.33) for tests and benchmarks.
 *
 * Speaks the subset of the real HTTP API the gateway uses (sessions, sync/async prompting, abort, permissions,
 * questions, `/event` + `/global/event` SSE, Basic auth, and the session routes behind `opencode.sessions.*`:
 * message paging with `X-Next-Cursor`, todo, diff, children, command, shell, fork, share, summarize,
 * revert/unrevert) with the real routes, status codes, JSON shapes and content types. Model turns are driven by
 * the shared Reply vocabulary (./script.ts) and emit the event sequence the real server emits for the same replies
 * (observed against a hermetic 1.18.33, see the reference /work/shared/reference/opencode-upstream.md §6–§8).
 * Ids and timestamps differ; types, order and shapes match.
 *
 * Test controls live on the returned object (script, scriptFor, emit, dropEventStreams, pauseHeartbeats, failNext,
 * burst, stats, requests); the benchmark ones are also served as `POST /__stub/burst`, `GET /__stub/stats` and
 * `POST /__stub/script`.
 *
 * CLI: `npx tsx tools/upstream/stub.ts [--port N] [--heartbeat-ms N] [--password P] [--directory D]` prints
 * `opencode stub listening on http://127.0.0.1:PORT` and stops on SIGTERM/SIGINT.
 *
 * Node built-ins only; listens on 127.0.0.1 only.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type {
  ApiError,
  AssistantMessage,
  Event,
  Message,
  MessageAbortedError,
  Part,
  PermissionRequest,
  PermissionRule,
  QuestionInfo,
  QuestionRequest,
  ReasoningPart,
  Session,
  SessionStatus,
  StepFinishPart,
  TextPart,
  Todo,
  ToolPart,
  UserMessage,
} from "../../generated/opencode/types.gen.js";
import type { Reply, ToolCall } from "./script.js";

// ---------------------------------------------------------------------------------------------------------------
// Public API

export interface StubUpstreamOptions {
  /** default 0 (any free port) */
  port?: number;
  /** enables Basic auth on every route (like OPENCODE_SERVER_PASSWORD) */
  password?: string;
  /** Basic auth user name, default "opencode" */
  username?: string;
  /** `server.heartbeat` interval per SSE connection, default 10000 */
  heartbeatMs?: number;
  /** reported by /global/health and stamped on sessions, default "1.18.33" */
  version?: string;
  /** the default instance directory (the real server's cwd), default process.cwd() */
  directory?: string;
  /** answer when no reply is scripted, default text "ok" */
  defaultReply?: Reply;
  /** model stamped on messages, default fake/fake-model (the hermetic config's) */
  model?: { providerID: string; modelID: string };
  /** answer `POST /session/{id}/share` with a link; default false: 500 like the real server with sharing disabled */
  sharing?: boolean;
  /** emit the `sync` duplicate frames on /global/event like the real server, default true */
  syncFrames?: boolean;
  /** an SSE connection whose unsent output exceeds this is destroyed (slow reader), default 16 MiB */
  maxBufferedBytes?: number;
  /** burst() waits this long for a congested SSE connection to drain before destroying it, default 5000 */
  slowReaderTimeoutMs?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** parsed JSON, the raw text when it is not JSON, undefined when empty */
  body: unknown;
  headers: IncomingHttpHeaders;
}

/** "GET /session/*\/message" (method + path, `*` matches one segment), "/global/health" (any method), a RegExp
 * tested against "METHOD /path", or a predicate. */
export type RouteMatch = string | RegExp | ((req: { method: string; path: string }) => boolean);

export type FailRule =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { destroy: true }
  | { delayMs: number };

/** What `emit()` accepts: any event; `id` is filled in when absent. */
export interface EmitEvent {
  id?: string;
  type: string;
  properties?: unknown;
}

export interface BurstOptions {
  sessions: string[];
  eventsPerSession: number;
  /** size of each delta string, default 16 */
  deltaBytes?: number;
}

export interface StubStats {
  eventConnections: number;
  eventsEmitted: number;
  framesWritten: number;
  /** characters of SSE frames written (bytes for ASCII payloads) */
  bytesWritten: number;
  slowReadersDropped: number;
  requests: number;
  sessions: number;
  busySessions: number;
  unscriptedReplies: number;
}

export interface StubUpstream {
  url: string;
  port: number;
  directory: string;
  /** every request received, in order */
  requests: RecordedRequest[];
  /** queue replies for any session (consumed after the session's own queue) */
  script(...replies: Reply[]): void;
  /** queue replies for one session */
  scriptFor(sessionID: string, ...replies: Reply[]): void;
  /** push an arbitrary event to /event subscribers of `directory` (default: the stub's) and to /global/event */
  emit(event: EmitEvent, opts?: { directory?: string }): void;
  /** destroy every open SSE connection */
  dropEventStreams(): void;
  /**
   * What a killed and restarted OpenCode shows: every running turn stops without another event, its assistant
   * message stays unfinished (no completion, no error), no session is busy, and the event streams are cut.
   */
  loseTurns(): void;
  pauseHeartbeats(paused: boolean): void;
  /** the next request matching `match` gets `rule` instead of (or, for delayMs, before) its normal answer */
  failNext(match: RouteMatch, rule: FailRule): void;
  eventConnections(): number;
  burst(opts: BurstOptions): Promise<{ events: number; ms: number }>;
  stats(): StubStats;
  /** destroys every socket and stops all timers */
  close(): Promise<void>;
}

export async function startStubUpstream(opts: StubUpstreamOptions = {}): Promise<StubUpstream> {
  const stub = new Stub(opts);
  await stub.listen(opts.port ?? 0);
  return stub;
}

// ---------------------------------------------------------------------------------------------------------------
// Ids, small helpers

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
let idTime = 0;
let idCounter = 0;

/** OpenCode-style id: prefix_ + 12 hex (ms * 0x1000 + counter; bit-inverted for sessions) + 14 base62. */
function newId(prefix: "ses" | "msg" | "prt" | "evt" | "per" | "que", descending = false): string {
  const now = Date.now();
  if (now !== idTime) {
    idTime = now;
    idCounter = 0;
  }
  idCounter++;
  let value = BigInt(now) * 0x1000n + BigInt(idCounter);
  if (descending) value = ~value & 0xffffffffffffn;
  let rand = "";
  for (let i = 0; i < 14; i++) rand += BASE62[Math.floor(Math.random() * 62)];
  return `${prefix}_${value.toString(16).padStart(12, "0").slice(-12)}${rand}`;
}

const ADJECTIVES = ["curious", "stellar", "crisp", "jolly", "neon", "shiny", "quiet", "brave", "swift", "lucky"];
const NOUNS = ["mountain", "meadow", "rocket", "tiger", "panda", "wolf", "river", "comet", "falcon", "harbor"];
const pick = (list: string[]): string => list[Math.floor(Math.random() * list.length)] ?? "stub";

type EventType = Event["type"];
type EventOf<K extends EventType> = Extract<Event, { type: K }>;
type Payload = Event | { id: string; type: "server.heartbeat"; properties: Record<string, never> };

/** A typed event: the generated `Event` union checks every payload the stub emits. */
function ev<K extends EventType>(type: K, properties: EventOf<K>["properties"]): EventOf<K> {
  return { id: newId("evt"), type, properties } as EventOf<K>;
}

/** Event types the real server duplicates as `sync` frames on /global/event. */
const SYNC_TYPES = new Set<string>(["session.created", "session.updated", "session.deleted", "message.updated", "message.part.updated"]);

class Aborted extends Error {}

/** Resolves after ms; rejects with Aborted when signal aborts first. ms = Infinity waits for the abort. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(new Aborted());
  return new Promise((resolveSleep, reject) => {
    const onAbort = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      reject(new Aborted());
    };
    const timer = Number.isFinite(ms)
      ? setTimeout(() => {
          signal.removeEventListener("abort", onAbort);
          resolveSleep();
        }, ms)
      : undefined;
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Waits for promise; rejects with Aborted when signal aborts first. */
function until<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Aborted());
  return new Promise((resolveUntil, reject) => {
    const onAbort = (): void => reject(new Aborted());
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolveUntil(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function waitDrain(res: ServerResponse): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((done) => {
    const finish = (): void => {
      res.off("drain", finish);
      res.off("close", finish);
      done();
    };
    res.on("drain", finish);
    res.on("close", finish);
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** OpenCode-like wildcard: `*` any run, `?` one char; "cmd *" also matches plain "cmd". */
function wildcard(text: string, pattern: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  const tail = source.endsWith(" .*") ? `${source.slice(0, -3)}( .*)?` : source;
  return new RegExp(`^${tail}$`, "s").test(text);
}

/** Shell-ish split of a bash command into its simple commands (the patterns of a bash permission). */
function bashCommands(command: string): string[] {
  return command
    .split(/\s*(?:&&|\|\||;|\|)\s*/)
    .map((c) => c.trim())
    .filter((c) => c !== "");
}

/** Echo-ish bash output: `echo X` prints X; nothing is executed. */
function fakeBashOutput(command: string): string {
  let out = "";
  for (const cmd of bashCommands(command)) {
    const match = /^echo(?:\s+(-n\s+)?(.*))?$/s.exec(cmd);
    if (match === null) continue;
    const text = (match[2] ?? "").replace(/^(['"])(.*)\1$/s, "$2");
    out += match[1] === undefined ? `${text}\n` : text;
  }
  return out;
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

// ---------------------------------------------------------------------------------------------------------------
// State

interface Subscriber {
  res: ServerResponse;
  global: boolean;
  directory: string;
  heartbeat: NodeJS.Timeout;
}

interface MessageRecord {
  info: Message;
  parts: Part[];
}

interface SessionRecord {
  info: Session;
  messages: MessageRecord[];
  script: Reply[];
  prompted: boolean;
  seq: number;
  loop: Loop | undefined;
  /** `${permission}\0${pattern}` approved with reply "always" */
  approved: string[];
  deleted: boolean;
  /** the last list written by the todowrite tool (GET /session/{id}/todo) */
  todos: Todo[];
  /** forks made of this session (the fork title counts them) */
  forks: number;
}

interface Loop {
  user: UserMessage;
  queued: UserMessage[];
  controller: AbortController;
  current: MessageRecord | undefined;
  waiters: Array<(result: MessageRecord) => void>;
  silent: boolean;
  /** loseTurns(): the turn vanished with the process; its messages stay as they were. */
  lost?: boolean;
}

type PermissionDecision = { reply: "once" | "always" | "reject"; message?: string };
type QuestionDecision = { answers: string[][] } | { rejected: true };

interface PendingPermission {
  request: PermissionRequest;
  directory: string;
  resolve: ((decision: PermissionDecision) => void) | undefined;
}

interface PendingQuestion {
  request: QuestionRequest;
  directory: string;
  resolve: ((decision: QuestionDecision) => void) | undefined;
}

type StepResult = "stop" | "tool-calls" | "blocked" | { error: ApiError };
type ToolResult = "ok" | "blocked";
type Ask =
  | { kind: "permission"; promise: Promise<PermissionDecision> }
  | { kind: "question"; promise: Promise<QuestionDecision>; questions: QuestionInfo[] }
  | { kind: "denied"; rules: PermissionRule[] };

interface HttpError {
  status: number;
  body: unknown;
}

const MAX_BODY_BYTES = 32 * 1024 * 1024;
const DEFAULT_HANG_CHUNKS = ["partial"];
const PROMPT_TOKENS = 10;
const here = dirname(fileURLToPath(import.meta.url));
const DOC_FILE = resolve(here, "..", "..", "spec", "upstream", "opencode.openapi.json");

/** The commands of `GET /command` (1.18.33 ships `init` and the sub-agent command `review`). */
const COMMANDS: { name: string; description: string; template: string; subtask?: boolean }[] = [
  { name: "init", description: "guided AGENTS.md setup", template: "Create or update `AGENTS.md` for this repository.\n\nUser-provided focus or constraints (honor these):\n$ARGUMENTS" },
  { name: "review", description: "review changes [commit|branch|pr], defaults to uncommitted", template: "Review the code changes.\n\n$ARGUMENTS", subtask: true },
];

/** The agents of `GET /agent`: [name, mode]. */
const AGENTS: [string, string][] = [
  ["build", "primary"],
  ["compaction", "primary"],
  ["explore", "subagent"],
  ["general", "subagent"],
  ["plan", "primary"],
  ["summary", "primary"],
  ["title", "primary"],
];

const notFound = (message: string): HttpError => ({ status: 404, body: { name: "NotFoundError", data: { message } } });
const badRequest = (message: string): HttpError => ({
  status: 400,
  body: { name: "BadRequest", data: { message, kind: "Payload" } },
});

// ---------------------------------------------------------------------------------------------------------------
// The stub

class Stub implements StubUpstream {
  url = "";
  port = 0;
  readonly directory: string;
  readonly requests: RecordedRequest[] = [];

  private readonly server = createServer((req, res) => void this.handle(req, res));
  private readonly sockets = new Set<Socket>();
  private readonly subscribers = new Set<Subscriber>();
  private readonly sessions = new Map<string, SessionRecord>();
  /** What write/edit tool calls left in each file (absolute path → content): GET /file/content reads it. */
  private readonly files = new Map<string, string>();
  private readonly permissions = new Map<string, PendingPermission>();
  private readonly questions = new Map<string, PendingQuestion>();
  private readonly globalScript: Reply[] = [];
  private readonly failRules: Array<{ match: RouteMatch; rule: FailRule }> = [];
  private readonly version: string;
  private readonly heartbeatMs: number;
  private readonly auth: string | undefined;
  private readonly defaultReply: Reply;
  private readonly model: { providerID: string; modelID: string };
  private readonly syncFrames: boolean;
  private readonly sharing: boolean;
  private readonly maxBufferedBytes: number;
  private readonly slowReaderTimeoutMs: number;
  private heartbeatsPaused = false;
  private closed = false;
  private callCounter = 0;
  private counters = { eventsEmitted: 0, framesWritten: 0, bytesWritten: 0, slowReadersDropped: 0, unscripted: 0 };

  constructor(opts: StubUpstreamOptions) {
    this.directory = resolve(opts.directory ?? process.cwd());
    this.version = opts.version ?? "1.18.33";
    this.heartbeatMs = opts.heartbeatMs ?? 10_000;
    this.auth =
      opts.password === undefined
        ? undefined
        : `Basic ${Buffer.from(`${opts.username ?? "opencode"}:${opts.password}`).toString("base64")}`;
    this.defaultReply = opts.defaultReply ?? { kind: "text", chunks: ["ok"] };
    this.model = opts.model ?? { providerID: "fake", modelID: "fake-model" };
    this.syncFrames = opts.syncFrames ?? true;
    this.sharing = opts.sharing ?? false;
    this.maxBufferedBytes = opts.maxBufferedBytes ?? 16 * 1024 * 1024;
    this.slowReaderTimeoutMs = opts.slowReaderTimeoutMs ?? 5000;
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  listen(port: number): Promise<void> {
    return new Promise((resolveListen, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, "127.0.0.1", () => {
        this.server.off("error", reject);
        this.port = (this.server.address() as AddressInfo).port;
        this.url = `http://127.0.0.1:${this.port}`;
        resolveListen();
      });
    });
  }

  // ----- controls ------------------------------------------------------------------------------------------------

  script(...replies: Reply[]): void {
    this.globalScript.push(...replies);
  }

  scriptFor(sessionID: string, ...replies: Reply[]): void {
    const rec = this.sessions.get(sessionID);
    if (rec === undefined) throw new Error(`stub: no session ${sessionID}`);
    rec.script.push(...replies);
  }

  emit(event: EmitEvent, opts: { directory?: string } = {}): void {
    const payload = { id: event.id ?? newId("evt"), type: event.type, properties: event.properties ?? {} } as Event;
    this.broadcast(payload, resolve(opts.directory ?? this.directory));
  }

  dropEventStreams(): void {
    for (const sub of [...this.subscribers]) this.dropSubscriber(sub, true);
  }

  loseTurns(): void {
    for (const rec of this.sessions.values()) {
      if (rec.loop === undefined) continue;
      rec.loop.lost = true;
      this.cancelLoop(rec);
      rec.loop = undefined;
    }
    this.dropEventStreams();
  }

  pauseHeartbeats(paused: boolean): void {
    this.heartbeatsPaused = paused;
  }

  failNext(match: RouteMatch, rule: FailRule): void {
    this.failRules.push({ match, rule });
  }

  eventConnections(): number {
    return this.subscribers.size;
  }

  stats(): StubStats {
    let busy = 0;
    for (const rec of this.sessions.values()) if (rec.loop !== undefined) busy++;
    return {
      eventConnections: this.subscribers.size,
      eventsEmitted: this.counters.eventsEmitted,
      framesWritten: this.counters.framesWritten,
      bytesWritten: this.counters.bytesWritten,
      slowReadersDropped: this.counters.slowReadersDropped,
      requests: this.requests.length,
      sessions: this.sessions.size,
      busySessions: busy,
      unscriptedReplies: this.counters.unscripted,
    };
  }

  async burst(opts: BurstOptions): Promise<{ events: number; ms: number }> {
    const started = performance.now();
    const delta = "x".repeat(Math.max(0, opts.deltaBytes ?? 16));
    const targets = opts.sessions.map((sessionID) => ({
      sessionID,
      messageID: newId("msg"),
      partID: newId("prt"),
      directory: this.sessions.get(sessionID)?.info.directory ?? this.directory,
    }));
    let events = 0;
    for (let i = 0; i < opts.eventsPerSession && !this.closed; i++) {
      for (const t of targets) {
        const blocked = this.broadcast(
          ev("message.part.delta", { sessionID: t.sessionID, messageID: t.messageID, partID: t.partID, field: "text", delta }),
          t.directory,
        );
        events++;
        if (blocked.length > 0) await Promise.all(blocked.map((sub) => this.drainOrDrop(sub)));
        else if (events % 512 === 0) await new Promise((r) => setImmediate(r));
      }
    }
    return { events, ms: performance.now() - started };
  }

  /** Waits for 'drain'; a reader that stays congested for slowReaderTimeoutMs is dropped. */
  private async drainOrDrop(sub: Subscriber): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<boolean>((r) => (timer = setTimeout(() => r(true), this.slowReaderTimeoutMs)));
    const isStalled = await Promise.race([waitDrain(sub.res).then(() => false), stalled]);
    clearTimeout(timer);
    if (isStalled && this.subscribers.has(sub)) {
      this.counters.slowReadersDropped++;
      this.dropSubscriber(sub, true);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const rec of this.sessions.values()) this.cancelLoop(rec);
    for (const sub of [...this.subscribers]) this.dropSubscriber(sub, true);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((done) => this.server.close(() => done()));
  }

  // ----- SSE -------------------------------------------------------------------------------------------------------

  private openStream(req: IncomingMessage, res: ServerResponse, global: boolean, directory: string): void {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
      "x-content-type-options": "nosniff",
      vary: "Origin",
    });
    res.flushHeaders();
    const sub: Subscriber = {
      res,
      global,
      directory,
      heartbeat: setInterval(() => {
        if (this.heartbeatsPaused) return;
        this.write(sub, this.frame(sub, { id: newId("evt"), type: "server.heartbeat", properties: {} }));
      }, this.heartbeatMs),
    };
    sub.heartbeat.unref();
    this.subscribers.add(sub);
    res.on("close", () => this.dropSubscriber(sub, false));
    req.socket.setNoDelay(true);
    this.write(sub, this.frame(sub, ev("server.connected", {})));
  }

  /** connected/heartbeat frames carry only `payload` on /global/event */
  private frame(sub: Subscriber, payload: Payload): string {
    return sub.global ? `data: ${JSON.stringify({ payload })}\n\n` : `data: ${JSON.stringify(payload)}\n\n`;
  }

  private dropSubscriber(sub: Subscriber, destroy: boolean): void {
    clearInterval(sub.heartbeat);
    this.subscribers.delete(sub);
    if (destroy) sub.res.destroy();
  }

  /** false when the connection is over its buffer (the caller may wait for 'drain') */
  private write(sub: Subscriber, frame: string): boolean {
    if (sub.res.destroyed) return true;
    const ok = sub.res.write(frame);
    this.counters.framesWritten++;
    this.counters.bytesWritten += frame.length;
    if (!ok && sub.res.writableLength > this.maxBufferedBytes) {
      this.counters.slowReadersDropped++;
      this.dropSubscriber(sub, true);
      return true;
    }
    return ok;
  }

  /** Sends one event to the matching subscribers; returns those that asked for backpressure. */
  private broadcast(payload: Event, directory: string): Subscriber[] {
    if (this.closed) return [];
    this.counters.eventsEmitted++;
    const blocked: Subscriber[] = [];
    if (this.subscribers.size === 0) return blocked;
    const json = JSON.stringify(payload);
    const local = `data: ${json}\n\n`;
    const project = this.projectOf(directory);
    const head = `data: {"directory":${JSON.stringify(directory)},"project":${JSON.stringify(project)},"payload":`;
    const globalFrame = `${head}${json}}\n\n`;
    let syncFrame: string | undefined;
    if (this.syncFrames && SYNC_TYPES.has(payload.type)) {
      const props = payload.properties as { sessionID?: string };
      const rec = props.sessionID === undefined ? undefined : this.sessions.get(props.sessionID);
      const seq = rec === undefined ? 0 : rec.seq++;
      const sync = { type: "sync", syncEvent: { id: payload.id, type: `${payload.type}.1`, seq, aggregateID: props.sessionID ?? "", data: payload.properties }, id: payload.id };
      syncFrame = `${head}${JSON.stringify(sync)}}\n\n`;
    }
    for (const sub of this.subscribers) {
      if (!sub.global && sub.directory !== directory) continue;
      let ok = this.write(sub, sub.global ? globalFrame : local);
      if (sub.global && syncFrame !== undefined) ok = this.write(sub, syncFrame) && ok;
      if (!ok) blocked.push(sub);
    }
    return blocked;
  }

  private projectOf(directory: string): string {
    return directory === this.directory ? createHash("sha1").update(directory).digest("hex") : "global";
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
    if (!bodyIsJson) return sendJson(res, 400, { _tag: "BadRequest" });

    const header = req.headers["x-opencode-directory"];
    const directory = resolve(query.directory ?? (typeof header === "string" ? header : this.directory));
    try {
      await this.route(req, res, method, path, query, body, directory);
    } catch (error) {
      if (isHttpError(error)) return sendJson(res, error.status, error.body);
      const message = error instanceof Error ? error.message : String(error);
      if (!res.headersSent) sendJson(res, 500, { name: "UnknownError", data: { message } });
      else res.destroy();
    }
  }

  private async route(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    path: string,
    query: Record<string, string>,
    body: unknown,
    directory: string,
  ): Promise<void> {
    const seg = path.split("/").slice(1);
    const key = `${method} /${seg.map((s, i) => (i > 0 && isParam(seg, i) ? ":" : s)).join("/")}`;
    const p1 = seg[1] ?? "";
    const p3 = seg[3] ?? "";
    switch (key) {
      case "GET /global/health":
        return sendJson(res, 200, { healthy: true, version: this.version });
      case "GET /file/content":
        // The real server reads the file in the instance's directory; the stub knows what its tools wrote.
        return sendJson(res, 200, { type: "text", content: this.files.get(resolve(directory, query.path ?? "")) ?? "" });
      case "GET /event":
        return this.openStream(req, res, false, directory);
      case "GET /global/event":
        return this.openStream(req, res, true, directory);
      case "GET /doc":
        return this.sendDoc(res);
      case "GET /session":
        return sendJson(res, 200, this.listSessions(directory, query));
      case "POST /session":
        return sendJson(res, 200, this.createSession(body, directory));
      case "GET /session/status":
        return sendJson(res, 200, this.statuses(directory));
      case "GET /session/:":
        return sendJson(res, 200, this.session(p1).info);
      case "PATCH /session/:":
        return sendJson(res, 200, this.updateSession(p1, body));
      case "DELETE /session/:":
        return sendJson(res, 200, this.deleteSession(p1));
      case "GET /session/:/children":
        this.session(p1);
        return sendJson(res, 200, [...this.sessions.values()].filter((s) => s.info.parentID === p1).map((s) => s.info));
      case "GET /session/:/message": {
        const page = this.listMessages(p1, query);
        if (page.next === undefined) return sendJson(res, 200, page.messages);
        const link = new URL(`${this.url}${path}`);
        for (const [k, v] of Object.entries(query)) if (k !== "before") link.searchParams.set(k, v);
        link.searchParams.set("before", page.next);
        return sendJson(res, 200, page.messages, {
          "access-control-expose-headers": "Link, X-Next-Cursor",
          link: `<${link.toString()}>; rel="next"`,
          "x-next-cursor": page.next,
        });
      }
      case "GET /session/:/todo":
        return sendJson(res, 200, this.session(p1).todos);
      case "GET /session/:/diff":
        return sendJson(res, 200, this.diff(p1, query.messageID));
      case "POST /session/:/command":
        return sendJson(res, 200, await this.command(p1, body));
      case "POST /session/:/shell":
        return sendJson(res, 200, this.shell(p1, body));
      case "POST /session/:/fork":
        return sendJson(res, 200, this.fork(p1, body));
      case "POST /session/:/share": {
        const rec = this.session(p1);
        if (!this.sharing) throw { status: 500, body: { name: "UnknownError", data: { message: "Unexpected server error. Check server logs for details.", ref: "err_stub" } } } satisfies HttpError;
        rec.info.share = { url: `${this.url}/share/${rec.info.slug}` };
        this.touch(rec);
        this.emitSession(rec);
        return sendJson(res, 200, rec.info);
      }
      case "DELETE /session/:/share": {
        const rec = this.session(p1);
        delete rec.info.share;
        this.touch(rec);
        this.emitSession(rec);
        return sendJson(res, 200, rec.info);
      }
      case "POST /session/:/summarize":
        return sendJson(res, 200, this.summarize(p1, body));
      case "POST /session/:/revert":
        return sendJson(res, 200, this.revert(p1, body));
      case "POST /session/:/unrevert": {
        const rec = this.session(p1);
        this.notBusy(rec);
        delete rec.info.revert;
        this.touch(rec);
        this.emitSession(rec);
        return sendJson(res, 200, rec.info);
      }
      case "GET /command":
        return sendJson(res, 200, COMMANDS.map(({ name, description, template, subtask }) => ({ name, description, source: "command", template, hints: ["$ARGUMENTS"], ...(subtask ? { subtask } : {}) })));
      case "GET /agent":
        return sendJson(res, 200, AGENTS.map(([name, mode]) => ({ name, mode, native: true, permission: [], options: {} })));
      case "GET /session/:/message/:": {
        const found = this.session(p1).messages.find((m) => m.info.id === p3);
        if (found === undefined) throw notFound(`Message not found: ${p3}`);
        return sendJson(res, 200, found);
      }
      case "POST /session/:/message": {
        const result = await this.prompt(p1, body);
        return sendJson(res, 200, result);
      }
      case "POST /session/:/prompt_async": {
        const rec = this.session(p1);
        const input = parsePrompt(body);
        res.writeHead(204, { vary: "Origin" });
        res.end();
        setImmediate(() => void this.prompt(rec.info.id, input).catch(() => undefined));
        return;
      }
      case "POST /session/:/abort":
        return sendJson(res, 200, this.abort(p1));
      case "GET /permission":
        return sendJson(res, 200, [...this.permissions.values()].filter((p) => p.directory === directory).map((p) => p.request));
      case "POST /permission/:/reply": {
        const reply = isObject(body) ? body.reply : undefined;
        if (reply !== "once" && reply !== "always" && reply !== "reject") throw badRequest('Expected "once" | "always" | "reject"\n  at ["reply"]');
        const message = isObject(body) && typeof body.message === "string" ? body.message : undefined;
        return sendJson(res, 200, this.replyPermission(p1, { reply, ...(message === undefined ? {} : { message }) }));
      }
      case "POST /session/:/permissions/:": {
        const response = isObject(body) ? body.response : undefined;
        if (response !== "once" && response !== "always" && response !== "reject") throw badRequest('Expected "once" | "always" | "reject"\n  at ["response"]');
        return sendJson(res, 200, this.replyPermission(p3, { reply: response }));
      }
      case "GET /question":
        return sendJson(res, 200, [...this.questions.values()].filter((q) => q.directory === directory).map((q) => q.request));
      case "POST /question/:/reply": {
        const answers = isObject(body) ? body.answers : undefined;
        if (!Array.isArray(answers) || !answers.every((a) => Array.isArray(a) && a.every((s) => typeof s === "string"))) {
          throw badRequest('Missing key\n  at ["answers"]');
        }
        return sendJson(res, 200, this.answerQuestion(p1, { answers: answers as string[][] }));
      }
      case "POST /question/:/reject":
        return sendJson(res, 200, this.answerQuestion(p1, { rejected: true }));
      case "POST /__stub/burst": {
        if (!isObject(body) || !Array.isArray(body.sessions) || typeof body.eventsPerSession !== "number") {
          throw badRequest("expected {sessions: string[], eventsPerSession: number, deltaBytes?: number}");
        }
        const deltaBytes = typeof body.deltaBytes === "number" ? body.deltaBytes : undefined;
        const sessions = body.sessions.filter((s): s is string => typeof s === "string");
        return sendJson(res, 200, await this.burst({ sessions, eventsPerSession: body.eventsPerSession, ...(deltaBytes === undefined ? {} : { deltaBytes }) }));
      }
      case "GET /__stub/stats":
        return sendJson(res, 200, this.stats());
      case "POST /__stub/script": {
        const replies = isObject(body) && Array.isArray(body.replies) ? (body.replies as Reply[]) : undefined;
        if (replies === undefined) throw badRequest("expected {replies: Reply[], sessionID?: string}");
        if (isObject(body) && typeof body.sessionID === "string") this.session(body.sessionID).script.push(...replies);
        else this.globalScript.push(...replies);
        return sendJson(res, 200, true);
      }
      default:
        // The real server answers unknown paths with its embedded web UI (200 text/html); a 404 is more useful here.
        return sendJson(res, 404, { name: "NotFoundError", data: { message: `Route not found: ${method} ${path}` } });
    }
  }

  private async sendDoc(res: ServerResponse): Promise<void> {
    let text: string;
    try {
      text = await readFile(DOC_FILE, "utf8");
    } catch {
      throw notFound("no OpenAPI snapshot at spec/upstream/opencode.openapi.json");
    }
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text), vary: "Origin" });
    res.end(text);
  }

  // ----- sessions ----------------------------------------------------------------------------------------------------

  private session(id: string): SessionRecord {
    const rec = this.sessions.get(id);
    if (rec === undefined || rec.deleted) throw notFound(`Session not found: ${id}`);
    return rec;
  }

  private listSessions(directory: string, query: Record<string, string>): Session[] {
    let list = [...this.sessions.values()].filter((s) => s.info.directory === directory).map((s) => s.info);
    if (query.roots === "true") list = list.filter((s) => s.parentID === undefined);
    if (query.search !== undefined) {
      const needle = query.search.toLowerCase();
      list = list.filter((s) => s.title.toLowerCase().includes(needle));
    }
    list.sort((a, b) => b.time.updated - a.time.updated);
    const limit = Number(query.limit);
    return Number.isInteger(limit) && limit > 0 ? list.slice(0, limit) : list;
  }

  private createSession(body: unknown, directory: string): Session {
    const input = body === undefined ? {} : body;
    if (!isObject(input)) throw badRequest("Expected an object");
    const now = Date.now();
    const info: Session = {
      id: newId("ses", true),
      slug: `${pick(ADJECTIVES)}-${pick(NOUNS)}`,
      projectID: this.projectOf(directory),
      directory,
      path: directory === this.directory ? "" : relative("/", directory),
      cost: 0,
      tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
      title: typeof input.title === "string" ? input.title : `New session - ${new Date(now).toISOString()}`,
      version: this.version,
      time: { created: now, updated: now },
    };
    if (typeof input.parentID === "string") info.parentID = input.parentID;
    if (Array.isArray(input.permission)) info.permission = input.permission as PermissionRule[];
    if (isObject(input.metadata)) info.metadata = input.metadata;
    if (typeof input.workspaceID === "string") info.workspaceID = input.workspaceID;
    const rec: SessionRecord = { info, messages: [], script: [], prompted: false, seq: 0, loop: undefined, approved: [], deleted: false, todos: [], forks: 0 };
    this.sessions.set(info.id, rec);
    this.broadcast(ev("session.created", { sessionID: info.id, info }), directory);
    return info;
  }

  private updateSession(id: string, body: unknown): Session {
    const rec = this.session(id);
    if (isObject(body)) {
      if (typeof body.title === "string") rec.info.title = body.title;
      if (Array.isArray(body.permission)) rec.info.permission = body.permission as PermissionRule[];
      if (isObject(body.metadata)) rec.info.metadata = body.metadata;
      if (isObject(body.time) && typeof body.time.archived === "number") rec.info.time.archived = body.time.archived;
    }
    this.touch(rec);
    this.emitSession(rec);
    return rec.info;
  }

  private deleteSession(id: string): boolean {
    const rec = this.session(id);
    // The real server keeps a busy session's turn (and its "busy" status) running; the stub ends it silently.
    this.cancelLoop(rec);
    rec.deleted = true;
    this.sessions.delete(id);
    for (const [pid, p] of this.permissions) if (p.request.sessionID === id) this.permissions.delete(pid);
    for (const [qid, q] of this.questions) if (q.request.sessionID === id) this.questions.delete(qid);
    this.broadcast(ev("session.deleted", { sessionID: id, info: rec.info }), rec.info.directory);
    return true;
  }

  private statuses(directory: string): Record<string, SessionStatus> {
    const out: Record<string, SessionStatus> = {};
    for (const rec of this.sessions.values()) {
      if (rec.loop !== undefined && rec.info.directory === directory) out[rec.info.id] = { type: "busy" };
    }
    return out;
  }

  /** Newest `limit` messages (before the `before` cursor), oldest first; `next` when older ones remain. */
  private listMessages(id: string, query: Record<string, string>): { messages: MessageRecord[]; next?: string } {
    let messages = this.session(id).messages;
    if (query.before !== undefined) {
      let cursor: unknown;
      try {
        cursor = JSON.parse(Buffer.from(query.before, "base64url").toString("utf8"));
      } catch {
        cursor = undefined;
      }
      if (!isObject(cursor) || typeof cursor.id !== "string") throw { status: 400, body: { _tag: "BadRequest" } } satisfies HttpError;
      const cut = messages.findIndex((m) => m.info.id === cursor.id);
      messages = cut < 0 ? [] : messages.slice(0, cut);
    }
    const limit = Number(query.limit);
    if (!Number.isInteger(limit) || limit <= 0 || messages.length <= limit) return { messages };
    const page = messages.slice(-limit);
    const first = page[0]!.info;
    return { messages: page, next: Buffer.from(JSON.stringify({ id: first.id, time: first.time.created })).toString("base64url") };
  }

  /** `?messageID=` → that message's `summary.diffs`; without it `[]`, also for unknown sessions (as the real server). */
  private diff(id: string, messageID: string | undefined): unknown[] {
    if (messageID === undefined) return [];
    const found = this.sessions.get(id)?.messages.find((m) => m.info.id === messageID);
    return found?.info.role === "user" ? (found.info.summary?.diffs ?? []) : [];
  }

  private notBusy(rec: SessionRecord): void {
    if (rec.loop === undefined) return;
    const sessionID = rec.info.id;
    throw { status: 409, body: { _tag: "SessionBusyError", sessionID, message: `Session is busy: ${sessionID}` } } satisfies HttpError;
  }

  /** §7.7: a sub-agent command runs in a child session first; every command then answers like a prompt. */
  private async command(sessionID: string, body: unknown): Promise<MessageRecord> {
    const rec = this.session(sessionID);
    if (!isObject(body) || typeof body.command !== "string") throw badRequest('Missing key\n  at ["command"]');
    if (typeof body.arguments !== "string") throw badRequest('Missing key\n  at ["arguments"]');
    const spec = COMMANDS.find((c) => c.name === body.command);
    if (spec === undefined) throw { status: 500, body: { name: "UnknownError", data: { message: "Unexpected server error. Check server logs for details.", ref: "err_stub" } } } satisfies HttpError;
    const model = typeof body.model === "string" && body.model.includes("/") ? { providerID: body.model.split("/")[0]!, modelID: body.model.split("/").slice(1).join("/") } : undefined;
    const agent = typeof body.agent === "string" ? body.agent : undefined;
    const text = spec.template.replace("$ARGUMENTS", body.arguments);
    const input = { ...(model === undefined ? {} : { model }), ...(agent === undefined ? {} : { agent }) };
    if (spec.subtask === true) {
      const child = this.createSession({ parentID: sessionID, title: `${spec.description} (@${agent ?? "build"} subagent)` }, rec.info.directory);
      child.permission = [
        { permission: "todowrite", pattern: "*", action: "deny" },
        { permission: "task", pattern: "*", action: "deny" },
      ];
      const sub = this.sessions.get(child.id)!;
      const reply = rec.script.shift();
      if (reply !== undefined) sub.script.push(reply);
      await this.prompt(child.id, { parts: [{ type: "text", text }], ...input });
      const subtask = { type: "subtask", prompt: text, description: spec.description, agent: agent ?? "build", command: spec.name };
      return this.prompt(sessionID, { parts: [subtask], ...input });
    }
    return this.prompt(sessionID, { parts: [{ type: "text", text }], ...input });
  }

  /** §7.6: no model request; a user message and an assistant message holding one completed bash tool part. */
  private shell(sessionID: string, body: unknown): MessageRecord {
    const rec = this.session(sessionID);
    if (!isObject(body) || typeof body.agent !== "string") throw badRequest('Missing key\n  at ["agent"]');
    if (typeof body.command !== "string") throw badRequest('Missing key\n  at ["command"]');
    if (!AGENTS.some(([name]) => name === body.agent)) throw { status: 500, body: { name: "UnknownError", data: { message: "Unexpected server error. Check server logs for details.", ref: "err_stub" } } } satisfies HttpError;
    this.notBusy(rec);
    const model = isObject(body.model) && typeof body.model.providerID === "string" && typeof body.model.modelID === "string"
      ? { providerID: body.model.providerID, modelID: body.model.modelID }
      : { ...this.model };
    const now = Date.now();
    const user: UserMessage = { id: newId("msg"), sessionID, role: "user", time: { created: now }, agent: body.agent, model };
    const userText: TextPart = { id: newId("prt"), sessionID, messageID: user.id, type: "text", text: "The following tool was executed by the user", synthetic: true };
    rec.messages.push({ info: user, parts: [userText] });
    this.emitMessage(rec, user);
    this.emitPart(rec, userText);
    const info: AssistantMessage = {
      id: newId("msg"),
      sessionID,
      role: "assistant",
      time: { created: Date.now() },
      parentID: user.id,
      modelID: model.modelID,
      providerID: model.providerID,
      mode: body.agent,
      agent: body.agent,
      path: { cwd: rec.info.directory, root: rec.info.directory },
      cost: 0,
      tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
    };
    const output = fakeBashOutput(body.command);
    const start = Date.now();
    const part: ToolPart = {
      id: newId("prt"),
      sessionID,
      messageID: info.id,
      type: "tool",
      callID: newId("prt").slice(4, 30).toUpperCase(),
      tool: "bash",
      state: { status: "completed", input: { command: body.command }, output, title: "", metadata: { output }, time: { start, end: Date.now() } },
    };
    info.time.completed = Date.now();
    const record: MessageRecord = { info, parts: [part] };
    rec.messages.push(record);
    this.emitMessage(rec, info);
    this.emitPart(rec, part);
    this.touch(rec);
    this.emitSession(rec);
    return record;
  }

  /** §7.8: a new root session with the messages before `messageID` (all without it), titled "<title> (fork #n)". */
  private fork(sessionID: string, body: unknown): Session {
    const rec = this.session(sessionID);
    const messageID = isObject(body) && typeof body.messageID === "string" ? body.messageID : undefined;
    const cut = messageID === undefined ? -1 : rec.messages.findIndex((m) => m.info.id === messageID);
    const copied = cut < 0 ? rec.messages : rec.messages.slice(0, cut);
    rec.forks++;
    const info = this.createSession({ title: `${rec.info.title} (fork #${rec.forks})` }, rec.info.directory);
    const fork = this.sessions.get(info.id)!;
    const ids = new Map<string, string>();
    for (const m of copied) ids.set(m.info.id, newId("msg"));
    for (const m of copied) {
      const copy = structuredClone(m);
      copy.info.id = ids.get(m.info.id)!;
      copy.info.sessionID = info.id;
      if (copy.info.role === "assistant") copy.info.parentID = ids.get(copy.info.parentID) ?? copy.info.parentID;
      for (const part of copy.parts) {
        part.id = newId("prt");
        part.sessionID = info.id;
        part.messageID = copy.info.id;
      }
      fork.messages.push(copy);
    }
    return info;
  }

  /** §7.10: a user message with a compaction part, then an assistant summary (the next scripted reply's text). */
  private summarize(sessionID: string, body: unknown): boolean {
    const rec = this.session(sessionID);
    if (!isObject(body) || typeof body.providerID !== "string") throw badRequest('Missing key\n  at ["providerID"]');
    if (typeof body.modelID !== "string") throw badRequest('Missing key\n  at ["modelID"]');
    const model = { providerID: body.providerID, modelID: body.modelID };
    const now = Date.now();
    const user: UserMessage = { id: newId("msg"), sessionID, role: "user", time: { created: now }, agent: "build", model };
    const compaction = { id: newId("prt"), sessionID, messageID: user.id, type: "compaction", auto: body.auto === true } as Part;
    rec.messages.push({ info: user, parts: [compaction] });
    this.emitMessage(rec, user);
    this.emitPart(rec, compaction);
    const reply = this.nextReply(rec);
    const summaryText = reply.kind === "text" ? reply.chunks.join("") : "Summary of the conversation.";
    const info: AssistantMessage = {
      id: newId("msg"),
      sessionID,
      role: "assistant",
      time: { created: Date.now(), completed: Date.now() },
      parentID: user.id,
      modelID: model.modelID,
      providerID: model.providerID,
      mode: "compaction",
      agent: "compaction",
      path: { cwd: rec.info.directory, root: rec.info.directory },
      summary: true,
      cost: 0,
      tokens: { input: PROMPT_TOKENS, output: 1, reasoning: 0, cache: { read: 0, write: 0 } },
      finish: "stop",
    };
    const part: TextPart = { id: newId("prt"), sessionID, messageID: info.id, type: "text", text: summaryText, time: { start: now, end: Date.now() } };
    rec.messages.push({ info, parts: [part] });
    this.emitMessage(rec, info);
    this.emitPart(rec, part);
    this.send(rec, ev("session.compacted", { sessionID }));
    this.touch(rec);
    this.emitSession(rec);
    return true;
  }

  /** §7.9: marks the revert (the stub touches no files); 409 while busy. */
  private revert(sessionID: string, body: unknown): Session {
    const rec = this.session(sessionID);
    if (!isObject(body) || typeof body.messageID !== "string") throw badRequest('Missing key\n  at ["messageID"]');
    this.notBusy(rec);
    const from = rec.messages.findIndex((m) => m.info.id === body.messageID);
    if (from >= 0) {
      const diffs = rec.messages.slice(from).flatMap((m) => (m.info.role === "user" ? (m.info.summary?.diffs ?? []) : []));
      const diff = diffs.map((d) => `diff --git a/${d.file} b/${d.file}\ndeleted file mode 100644\n--- a/${d.file}\n+++ /dev/null`).join("\n");
      rec.info.revert = { messageID: body.messageID, snapshot: this.snapshot(rec), diff };
      if (typeof body.partID === "string") rec.info.revert.partID = body.partID;
      this.touch(rec);
      this.emitSession(rec);
    }
    return rec.info;
  }

  private touch(rec: SessionRecord): void {
    rec.info.time.updated = Math.max(Date.now(), rec.info.time.updated);
  }

  // ----- events of a session -----------------------------------------------------------------------------------------

  private send(rec: SessionRecord, payload: Event): void {
    if (rec.loop?.silent === true || rec.deleted) return;
    this.broadcast(payload, rec.info.directory);
  }

  private emitSession(rec: SessionRecord): void {
    this.send(rec, ev("session.updated", { sessionID: rec.info.id, info: rec.info }));
  }

  private emitMessage(rec: SessionRecord, info: Message): void {
    this.send(rec, ev("message.updated", { sessionID: rec.info.id, info }));
  }

  private emitPart(rec: SessionRecord, part: Part): void {
    this.send(rec, ev("message.part.updated", { sessionID: rec.info.id, part, time: Date.now() }));
  }

  private emitStatus(rec: SessionRecord, status: SessionStatus): void {
    this.send(rec, ev("session.status", { sessionID: rec.info.id, status }));
  }

  private emitIdle(rec: SessionRecord): void {
    this.emitStatus(rec, { type: "idle" });
    this.send(rec, ev("session.idle", { sessionID: rec.info.id }));
  }

  private emitDiff(rec: SessionRecord): void {
    this.send(rec, ev("session.diff", { sessionID: rec.info.id, diff: [] }));
  }

  /** the user message re-sent with `summary: {diffs: []}` (the real server does this around every step) */
  private emitUserSummary(rec: SessionRecord, user: UserMessage): void {
    user.summary ??= { diffs: [] };
    this.emitMessage(rec, user);
  }

  // ----- prompting ---------------------------------------------------------------------------------------------------

  private async prompt(sessionID: string, body: unknown): Promise<MessageRecord> {
    const rec = this.session(sessionID);
    const input = parsePrompt(body);
    const now = Date.now();
    if (!rec.prompted) {
      rec.prompted = true;
      rec.info.agent = input.agent ?? "build";
      rec.info.model = { id: input.model?.modelID ?? this.model.modelID, providerID: input.model?.providerID ?? this.model.providerID, variant: "default" };
      this.touch(rec);
      this.emitSession(rec);
    }
    const user: UserMessage = {
      id: input.messageID ?? newId("msg"),
      sessionID,
      role: "user",
      time: { created: now },
      agent: input.agent ?? "build",
      model: input.model ?? { ...this.model },
    };
    if (input.system !== undefined) user.system = input.system;
    if (input.tools !== undefined) user.tools = input.tools;
    const record: MessageRecord = { info: user, parts: [] };
    rec.messages.push(record);
    this.emitMessage(rec, user);
    for (const part of input.parts) {
      const stored = { ...part, id: typeof part.id === "string" ? part.id : newId("prt"), sessionID, messageID: user.id } as Part;
      record.parts.push(stored);
      this.emitPart(rec, stored);
    }
    this.touch(rec);
    this.emitSession(rec);
    if (input.noReply === true) return record;

    this.emitStatus(rec, { type: "busy" });
    return new Promise<MessageRecord>((resolveTurn) => {
      if (rec.loop !== undefined) {
        // Busy: queued; the running loop answers it after its current reply, without an idle in between.
        rec.loop.queued.push(user);
        rec.loop.waiters.push(resolveTurn);
        return;
      }
      const loop: Loop = { user, queued: [], controller: new AbortController(), current: undefined, waiters: [resolveTurn], silent: false };
      rec.loop = loop;
      this.runLoop(rec, loop).catch((error: unknown) => {
        process.stderr.write(`opencode stub: turn of ${sessionID} failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      });
    });
  }

  private nextReply(rec: SessionRecord): Reply {
    const reply = rec.script.shift() ?? this.globalScript.shift();
    if (reply !== undefined) return reply;
    this.counters.unscripted++;
    return this.defaultReply;
  }

  private async runLoop(rec: SessionRecord, loop: Loop): Promise<void> {
    const sessionID = rec.info.id;
    try {
      for (;;) {
        const user = loop.user;
        const info: AssistantMessage = {
          id: newId("msg"),
          sessionID,
          role: "assistant",
          time: { created: Date.now() },
          parentID: user.id,
          modelID: user.model.modelID,
          providerID: user.model.providerID,
          mode: user.agent,
          agent: user.agent,
          path: { cwd: rec.info.directory, root: rec.info.directory },
          cost: 0,
          tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
        };
        const current: MessageRecord = { info, parts: [] };
        loop.current = current;
        rec.messages.push(current);
        this.emitMessage(rec, info);
        rec.info.summary ??= { additions: 0, deletions: 0, files: 0 };
        this.touch(rec);
        this.emitSession(rec);
        this.emitDiff(rec);
        // (the real server re-sends the user message with its summary at a racy point of the step; this is one
        // of the observed positions)
        this.emitUserSummary(rec, user);
        this.emitStatus(rec, { type: "busy" });

        const reply = this.nextReply(rec);
        const result = await this.runStep(rec, loop, current, reply);
        if (typeof result === "object") {
          info.error = result.error;
          this.send(rec, ev("session.error", { sessionID, error: result.error }));
          this.emitIdle(rec);
          info.time.completed = Date.now();
          this.emitMessage(rec, info);
          this.emitIdle(rec);
          return;
        }
        this.finishStep(rec, current, result === "stop" ? "stop" : "tool-calls", reply);
        if (result === "tool-calls") {
          this.emitStatus(rec, { type: "busy" });
          continue;
        }
        if (result === "stop" && loop.queued.length > 0) {
          // One model request answers every queued prompt; its parent is the newest of them.
          loop.user = loop.queued[loop.queued.length - 1] ?? user;
          loop.queued = [];
          this.emitStatus(rec, { type: "busy" });
          continue;
        }
        if (result === "stop") this.emitStatus(rec, { type: "busy" });
        this.emitIdle(rec);
        this.touch(rec);
        this.emitSession(rec);
        this.emitDiff(rec);
        this.emitUserSummary(rec, loop.user);
        return;
      }
    } catch (error) {
      if (!(error instanceof Aborted)) throw error;
      if (loop.lost !== true) this.abortEvents(rec, loop);
    } finally {
      if (rec.loop === loop) rec.loop = undefined;
      const last = loop.current ?? { info: loop.user, parts: [] };
      for (const resolveTurn of loop.waiters) resolveTurn(last);
    }
  }

  /** §7.2: session.error, idle, the kept partial parts, the errored assistant message, idle again. */
  private abortEvents(rec: SessionRecord, loop: Loop): void {
    const sessionID = rec.info.id;
    const error: MessageAbortedError = { name: "MessageAbortedError", data: { message: "Aborted" } };
    this.send(rec, ev("session.error", { sessionID, error }));
    this.emitIdle(rec);
    const current = loop.current;
    if (current === undefined) return;
    const now = Date.now();
    for (const part of current.parts) {
      if ((part.type === "text" || part.type === "reasoning") && part.time !== undefined && part.time.end === undefined) {
        part.time.end = now;
        this.emitPart(rec, part);
      } else if (part.type === "tool" && (part.state.status === "pending" || part.state.status === "running")) {
        const start = part.state.status === "running" ? part.state.time.start : now;
        part.state = { status: "error", input: part.state.input, time: { start, end: now }, error: "Tool execution aborted", metadata: { interrupted: true } };
        this.emitPart(rec, part);
      }
    }
    const info = current.info as AssistantMessage;
    info.error = error;
    info.time.completed = now;
    this.emitMessage(rec, info);
    this.emitIdle(rec);
  }

  private finishStep(rec: SessionRecord, current: MessageRecord, reason: "stop" | "tool-calls", reply: Reply): void {
    const usage = usageOf(reply);
    const tokens = { total: usage.total, input: usage.input, output: usage.output, reasoning: 0, cache: { write: 0, read: 0 } };
    const part: StepFinishPart = {
      id: newId("prt"),
      sessionID: rec.info.id,
      messageID: current.info.id,
      type: "step-finish",
      reason,
      snapshot: this.snapshot(rec),
      cost: 0,
      tokens,
    };
    current.parts.push(part);
    this.emitPart(rec, part);
    const info = current.info as AssistantMessage;
    info.tokens = { ...tokens, cache: { ...tokens.cache } };
    info.finish = reason;
    this.emitMessage(rec, info);
    info.time.completed = Date.now();
    this.emitMessage(rec, info);
    const total = rec.info.tokens ?? { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } };
    rec.info.tokens = { ...total, input: total.input + usage.input, output: total.output + usage.output };
  }

  private snapshot(rec: SessionRecord): string {
    return createHash("sha1").update(`snapshot:${rec.info.directory}`).digest("hex");
  }

  private async runStep(rec: SessionRecord, loop: Loop, current: MessageRecord, reply: Reply): Promise<StepResult> {
    const signal = loop.controller.signal;
    const base = { sessionID: rec.info.id, messageID: current.info.id };
    if (reply.kind === "error") {
      const error: ApiError = {
        name: "APIError",
        data: {
          message: reply.message,
          statusCode: reply.status,
          isRetryable: reply.status === 429 || reply.status >= 500,
          responseHeaders: {
            connection: "keep-alive",
            "content-type": "application/json",
            date: new Date().toUTCString(),
            "keep-alive": "timeout=5",
            "transfer-encoding": "chunked",
          },
          responseBody: JSON.stringify({ error: { message: reply.message } }),
          metadata: { url: "http://127.0.0.1/v1/chat/completions" },
        },
      };
      return { error };
    }
    if (reply.kind === "tool" && reply.delayMs !== undefined && reply.delayMs > 0) await sleep(reply.delayMs, signal);
    const stepStart: Part = { id: newId("prt"), ...base, type: "step-start", snapshot: this.snapshot(rec) };
    current.parts.push(stepStart);
    this.emitPart(rec, stepStart);

    if (reply.kind === "tool") return this.runTools(rec, loop, current, reply.calls);

    const delayMs = reply.kind === "text" ? (reply.delayMs ?? 0) : 0;
    const stream = async (part: TextPart | ReasoningPart, chunks: string[]): Promise<void> => {
      current.parts.push(part);
      this.emitPart(rec, part);
      for (const chunk of chunks) {
        if (delayMs > 0) await sleep(delayMs, signal);
        part.text += chunk;
        this.send(rec, ev("message.part.delta", { ...base, partID: part.id, field: "text", delta: chunk }));
      }
    };
    const close = (part: TextPart | ReasoningPart): void => {
      if (part.time !== undefined) part.time.end = Date.now();
      this.emitPart(rec, part);
    };
    if (reply.kind === "text" && reply.reasoning !== undefined && reply.reasoning.length > 0) {
      const reasoning: ReasoningPart = { id: newId("prt"), ...base, type: "reasoning", text: "", time: { start: Date.now() } };
      await stream(reasoning, reply.reasoning);
      close(reasoning);
    }
    const chunks = reply.kind === "text" ? reply.chunks : (reply.chunks ?? DEFAULT_HANG_CHUNKS);
    const text: TextPart = { id: newId("prt"), ...base, type: "text", text: "", time: { start: Date.now() } };
    if (chunks.length > 0) await stream(text, chunks);
    if (reply.kind === "hang") await sleep(reply.holdMs ?? Infinity, signal);
    if (chunks.length > 0) close(text);
    return "stop";
  }

  // ----- tools ---------------------------------------------------------------------------------------------------------

  /**
   * Observed order per call: pending; [question.asked | bash rule permission.asked]; running;
   * [external_directory / other rule permission.asked]; then completion once answered. Calls run concurrently.
   */
  private async runTools(rec: SessionRecord, loop: Loop, current: MessageRecord, calls: ToolCall[]): Promise<StepResult> {
    const signal = loop.controller.signal;
    const jobs: Array<Promise<ToolResult>> = [];
    for (const call of calls) {
      const part: ToolPart = {
        id: newId("prt"),
        sessionID: rec.info.id,
        messageID: current.info.id,
        type: "tool",
        callID: call.id ?? `call_${++this.callCounter}`,
        tool: call.name,
        state: { status: "pending", input: {}, raw: "" },
      };
      current.parts.push(part);
      this.emitPart(rec, part);
      let ask: Ask | undefined;
      if (call.name === "question") ask = this.askQuestion(rec, part, call.args);
      else if (call.name === "bash") {
        const command = String(call.args.command ?? "");
        ask = this.checkRules(rec, part, "bash", bashCommands(command), { command });
      } else if (call.name === "todowrite") {
        // observed: todo.updated comes before the running state
        this.send(rec, ev("todo.updated", { sessionID: rec.info.id, todos: todosOf(call.args) }));
      }
      const start = Date.now();
      part.state = { status: "running", input: call.args, time: { start } };
      this.emitPart(rec, part);
      if (ask === undefined && call.name !== "question" && call.name !== "bash") ask = this.checkFileAccess(rec, part, call);
      jobs.push(this.completeTool(rec, part, call, start, ask, signal));
    }
    const results = await Promise.all(jobs);
    return results.includes("blocked") ? "blocked" : "tool-calls";
  }

  private async completeTool(rec: SessionRecord, part: ToolPart, call: ToolCall, start: number, ask: Ask | undefined, signal: AbortSignal): Promise<ToolResult> {
    const input = call.args;
    // Let every call of the step reach "running" first, as the real (concurrent) tool runner does.
    await until(new Promise((r) => setImmediate(r)), signal);
    const fail = (error: string): void => {
      part.state = { status: "error", input, error, time: { start, end: Date.now() } };
      this.emitPart(rec, part);
    };
    let answers: string[][] | undefined;
    if (ask?.kind === "denied") {
      fail(`The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules ${JSON.stringify(ask.rules)}`);
      return "ok";
    }
    if (ask?.kind === "permission") {
      const decision = await until(ask.promise, signal);
      if (decision.reply === "reject") {
        if (decision.message === undefined) {
          fail("The user rejected permission to use this specific tool call.");
          return "blocked";
        }
        fail(`The user rejected permission to use this specific tool call with the following feedback: ${decision.message}`);
        return "ok";
      }
    }
    if (ask?.kind === "question") {
      const decision = await until(ask.promise, signal);
      if ("rejected" in decision) {
        fail("The user dismissed this question");
        return "blocked";
      }
      answers = decision.answers;
    }

    const end = (): { start: number; end: number } => ({ start, end: Date.now() });
    const rel = (file: string): string => relative(rec.info.directory, resolve(rec.info.directory, file));
    switch (call.name) {
      case "bash": {
        const command = String(input.command ?? "");
        const output = fakeBashOutput(command);
        // running with metadata.output "" and then once per output line (cumulative), like the real bash tool
        let shown = "";
        for (const line of ["", ...(output.match(/[^\n]*\n|[^\n]+$/g) ?? [])]) {
          shown += line;
          part.state = { status: "running", input, time: { start }, metadata: { output: shown } };
          this.emitPart(rec, part);
        }
        part.state = { status: "completed", input, output, metadata: { output, exit: 0, truncated: false }, title: command, time: end() };
        break;
      }
      case "question": {
        const questions = ask?.kind === "question" ? ask.questions : [];
        const given = answers ?? [];
        const pairs = questions.map((q, i) => `"${q.question}"="${(given[i] ?? []).join(", ") || "Unanswered"}"`).join(", ");
        const output = `User has answered your questions: ${pairs}. You can now continue with the user's answers in mind.`;
        const title = `Asked ${questions.length} question${questions.length === 1 ? "" : "s"}`;
        part.state = { status: "completed", input, output, metadata: { answers: given, truncated: false }, title, time: end() };
        break;
      }
      case "read": {
        const file = resolve(rec.info.directory, String(input.filePath ?? ""));
        const text = "(stub: file contents are not read)";
        const output = `<path>${file}</path>\n<type>file</type>\n<content>\n1: ${text}\n\n(End of file - total 1 lines)\n</content>`;
        const display = { type: "file", path: file, text, lineStart: 1, lineEnd: 1, totalLines: 1, truncated: false };
        part.state = { status: "completed", input, output, metadata: { preview: text, truncated: false, loaded: [], display }, title: rel(file), time: end() };
        break;
      }
      case "write":
      case "edit": {
        const file = resolve(rec.info.directory, String(input.filePath ?? ""));
        this.send(rec, ev("file.edited", { file }));
        const output = call.name === "write" ? "Wrote file successfully." : "Edit applied successfully.";
        const before = this.files.get(file) ?? "";
        this.files.set(file, call.name === "write" ? String(input.content ?? "") : before.replace(String(input.oldString ?? ""), String(input.newString ?? "")));
        part.state = { status: "completed", input, output, metadata: {}, title: rel(file), time: end() };
        this.recordDiff(rec, part.messageID, rel(file), call.name, input);
        break;
      }
      case "todowrite": {
        const todos = todosOf(input);
        rec.todos = todos;
        const pendingCount = todos.filter((t) => t.status !== "completed").length;
        part.state = { status: "completed", input, output: JSON.stringify(todos, null, 2), metadata: { todos, truncated: false }, title: `${pendingCount} todos`, time: end() };
        break;
      }
      default:
        part.state = { status: "completed", input, output: "", metadata: {}, title: call.name, time: end() };
    }
    this.emitPart(rec, part);
    return "ok";
  }

  /** A write/edit becomes a `summary.diffs` entry of the turn's user message (what `GET …/diff?messageID=` returns). */
  private recordDiff(rec: SessionRecord, assistantID: string, file: string, tool: string, input: Record<string, unknown>): void {
    const assistant = rec.messages.find((m) => m.info.id === assistantID)?.info;
    const parentID = assistant?.role === "assistant" ? assistant.parentID : undefined;
    const user = rec.messages.find((m) => m.info.id === parentID)?.info;
    if (user?.role !== "user") return;
    const lines = (v: unknown): string[] => (typeof v === "string" && v !== "" ? v.replace(/\n$/, "").split("\n") : []);
    const added = lines(tool === "write" ? input.content : input.newString);
    const removed = tool === "write" ? [] : lines(input.oldString);
    const patch =
      `Index: ${file}\n===================================================================\n--- ${file}\t\n+++ ${file}\t\n` +
      `@@ -${removed.length === 0 ? 0 : 1},${removed.length} +1,${added.length} @@\n` +
      [...removed.map((l) => `-${l}`), ...added.map((l) => `+${l}`)].join("\n") +
      "\n";
    user.summary ??= { diffs: [] };
    user.summary.diffs = user.summary.diffs.filter((d) => d.file !== file);
    user.summary.diffs.push({ file, patch, additions: added.length, deletions: removed.length, status: tool === "write" ? "added" : "modified" });
  }

  private askQuestion(rec: SessionRecord, part: ToolPart, args: Record<string, unknown>): Ask {
    const questions = Array.isArray(args.questions) ? (args.questions as QuestionInfo[]) : [];
    const request: QuestionRequest = { id: newId("que"), sessionID: rec.info.id, questions, tool: { messageID: part.messageID, callID: part.callID } };
    const pending: PendingQuestion = { request, directory: rec.info.directory, resolve: undefined };
    const promise = new Promise<QuestionDecision>((r) => (pending.resolve = r));
    this.questions.set(request.id, pending);
    this.send(rec, ev("question.asked", request));
    return { kind: "question", promise, questions };
  }

  /** read/write/edit/glob/grep/list outside the session's directory → external_directory; then the session rules. */
  private checkFileAccess(rec: SessionRecord, part: ToolPart, call: ToolCall): Ask | undefined {
    const target = call.args.filePath ?? call.args.path;
    if (typeof target !== "string" || target === "") return this.checkRules(rec, part, permissionName(call.name), ["*"], {});
    const abs = resolve(rec.info.directory, target);
    const inside = (dir: string): boolean => abs === dir || abs.startsWith(dir.endsWith(sep) ? dir : dir + sep);
    if (!inside(rec.info.directory) && !inside(resolve(tmpdir(), "opencode"))) {
      const parentDir = "filePath" in call.args ? dirname(abs) : abs;
      const pattern = `${parentDir}/*`;
      const ask = this.checkRules(rec, part, "external_directory", [pattern], { filepath: abs, parentDir }, [pattern]);
      if (ask !== undefined) return ask;
    }
    const pattern = isAbsolute(target) ? relative(rec.info.directory, abs) : target;
    return this.checkRules(rec, part, permissionName(call.name), [pattern], { filepath: abs });
  }

  /** Last matching session rule wins per pattern; default allow (ask for external_directory). Any deny denies. */
  private checkRules(
    rec: SessionRecord,
    part: ToolPart,
    permission: string,
    patterns: string[],
    metadata: Record<string, unknown>,
    always: string[] = patterns.map((p) => (permission === "bash" ? `${p.split(/\s+/)[0] ?? p} *` : "*")),
  ): Ask | undefined {
    const rules = rec.info.permission ?? [];
    let needAsk = false;
    const relevant: PermissionRule[] = [];
    for (const pattern of patterns) {
      const rule = rules.findLast((r) => wildcard(permission, r.permission) && wildcard(pattern, r.pattern));
      if (rule !== undefined) relevant.push(rule);
      const action = rule?.action ?? (permission === "external_directory" ? "ask" : "allow");
      if (action === "deny") return { kind: "denied", rules: relevant };
      if (action === "ask" && !rec.approved.some((a) => a.startsWith(`${permission}\0`) && wildcard(pattern, a.slice(permission.length + 1)))) {
        needAsk = true;
      }
    }
    if (!needAsk) return undefined;
    const request: PermissionRequest = {
      id: newId("per"),
      sessionID: rec.info.id,
      permission,
      patterns,
      metadata,
      always,
      tool: { messageID: part.messageID, callID: part.callID },
    };
    const pending: PendingPermission = { request, directory: rec.info.directory, resolve: undefined };
    const promise = new Promise<PermissionDecision>((r) => (pending.resolve = r));
    this.permissions.set(request.id, pending);
    this.send(rec, ev("permission.asked", request));
    return { kind: "permission", promise };
  }

  private replyPermission(requestID: string, decision: PermissionDecision): boolean {
    const pending = this.permissions.get(requestID);
    if (pending === undefined) {
      throw { status: 404, body: { _tag: "PermissionNotFoundError", requestID, message: `Permission request not found: ${requestID}` } } satisfies HttpError;
    }
    this.permissions.delete(requestID);
    const { sessionID } = pending.request;
    const rec = this.sessions.get(sessionID);
    if (decision.reply === "always" && rec !== undefined) {
      for (const pattern of pending.request.always) rec.approved.push(`${pending.request.permission}\0${pattern}`);
    }
    this.broadcast(ev("permission.replied", { sessionID, requestID, reply: decision.reply }), pending.directory);
    pending.resolve?.(decision);
    return true;
  }

  private answerQuestion(requestID: string, decision: QuestionDecision): boolean {
    const pending = this.questions.get(requestID);
    if (pending === undefined) {
      throw { status: 404, body: { _tag: "QuestionNotFoundError", requestID, message: `Question request not found: ${requestID}` } } satisfies HttpError;
    }
    this.questions.delete(requestID);
    const { sessionID } = pending.request;
    const payload =
      "rejected" in decision
        ? ev("question.rejected", { sessionID, requestID })
        : ev("question.replied", { sessionID, requestID, answers: decision.answers });
    this.broadcast(payload, pending.directory);
    pending.resolve?.(decision);
    return true;
  }

  // ----- abort -------------------------------------------------------------------------------------------------------

  /** Always `true`. An idle (or unknown) session still gets `session.status idle` + `session.idle`, like the real one.
   * Pending questions/permissions of an aborted turn stay listed (as on the real server); answering them later
   * only emits the replied event. */
  private abort(sessionID: string): boolean {
    const rec = this.sessions.get(sessionID);
    if (rec?.loop !== undefined) {
      this.detachRequests(sessionID);
      rec.loop.controller.abort();
      return true;
    }
    const directory = rec?.info.directory ?? this.directory;
    this.broadcast(ev("session.status", { sessionID, status: { type: "idle" } }), directory);
    this.broadcast(ev("session.idle", { sessionID }), directory);
    return true;
  }

  private detachRequests(sessionID: string): void {
    for (const p of this.permissions.values()) if (p.request.sessionID === sessionID) p.resolve = undefined;
    for (const q of this.questions.values()) if (q.request.sessionID === sessionID) q.resolve = undefined;
  }

  /** Ends a running loop without emitting anything (delete, close). */
  private cancelLoop(rec: SessionRecord): void {
    if (rec.loop === undefined) return;
    rec.loop.silent = true;
    this.detachRequests(rec.info.id);
    rec.loop.controller.abort();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Request parsing helpers

interface PromptInput {
  messageID?: string;
  model?: { providerID: string; modelID: string };
  agent?: string;
  noReply?: boolean;
  system?: string;
  tools?: Record<string, boolean>;
  parts: Array<Record<string, unknown> & { type: string }>;
}

function parsePrompt(body: unknown): PromptInput {
  if (!isObject(body)) throw badRequest('Missing key\n  at ["parts"]');
  if (!Array.isArray(body.parts)) throw badRequest('Missing key\n  at ["parts"]');
  const parts: PromptInput["parts"] = [];
  for (const [i, part] of body.parts.entries()) {
    if (!isObject(part) || typeof part.type !== "string" || !["text", "file", "agent", "subtask"].includes(part.type)) {
      throw badRequest(`Expected a valid part\n  at ["parts"][${i}]`);
    }
    if (part.type === "text" && typeof part.text !== "string") throw badRequest(`Missing key\n  at ["parts"][${i}]["text"]`);
    parts.push(part as PromptInput["parts"][number]);
  }
  const input: PromptInput = { parts };
  if (body.messageID !== undefined) {
    if (typeof body.messageID !== "string" || !body.messageID.startsWith("msg")) {
      throw badRequest(`Expected a string starting with "msg", got ${JSON.stringify(body.messageID)}\n  at ["messageID"]`);
    }
    input.messageID = body.messageID;
  }
  if (isObject(body.model) && typeof body.model.providerID === "string" && typeof body.model.modelID === "string") {
    input.model = { providerID: body.model.providerID, modelID: body.model.modelID };
  }
  if (typeof body.agent === "string") input.agent = body.agent;
  if (body.noReply === true) input.noReply = true;
  if (typeof body.system === "string") input.system = body.system;
  if (isObject(body.tools)) input.tools = body.tools as Record<string, boolean>;
  return input;
}

/** Token counts as the scripted model server reports them (prompt 10; completion = chunks / calls). */
function usageOf(reply: Reply): { input: number; output: number; total: number } {
  if (reply.kind === "text" && reply.usage !== undefined) {
    const { prompt_tokens: input, completion_tokens: output } = reply.usage;
    return { input, output, total: reply.usage.total_tokens ?? input + output };
  }
  const output =
    reply.kind === "text"
      ? reply.chunks.length + (reply.reasoning?.length ?? 0)
      : reply.kind === "tool"
        ? reply.calls.length
        : reply.kind === "hang"
          ? (reply.chunks ?? DEFAULT_HANG_CHUNKS).length
          : 0;
  return { input: PROMPT_TOKENS, output, total: PROMPT_TOKENS + output };
}

function todosOf(args: Record<string, unknown>): Todo[] {
  return Array.isArray(args.todos) ? (args.todos as Todo[]) : [];
}

function permissionName(tool: string): string {
  return tool === "write" || tool === "edit" ? "edit" : tool;
}

/** `:` marks an id segment in the route key: /session/:id, /permission/:id, /question/:id, …/message/:id. */
function isParam(seg: string[], i: number): boolean {
  const prev = seg[i - 1];
  if (i === 1) return (prev === "session" && seg[1] !== "status") || prev === "permission" || prev === "question";
  return i === 3 && (prev === "message" || prev === "permissions");
}

function isHttpError(value: unknown): value is HttpError {
  return isObject(value) && typeof value.status === "number" && "body" in value;
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), vary: "Origin", ...headers });
  res.end(text);
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

// ---------------------------------------------------------------------------------------------------------------
// CLI

function parseArgs(argv: string[]): StubUpstreamOptions {
  const opts: StubUpstreamOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    const need = (): string => {
      if (value === undefined) throw new Error(`${arg} needs a value`);
      i++;
      return value;
    };
    const int = (): number => {
      const n = Number(need());
      if (!Number.isInteger(n) || n < 0) throw new Error(`${arg}: expected a non-negative integer`);
      return n;
    };
    if (arg === "--port") opts.port = int();
    else if (arg === "--heartbeat-ms") opts.heartbeatMs = int();
    else if (arg === "--password") opts.password = need();
    else if (arg === "--username") opts.username = need();
    else if (arg === "--directory") opts.directory = need();
    else throw new Error(`unknown argument ${arg ?? ""}`);
  }
  return opts;
}

async function main(): Promise<void> {
  let opts: StubUpstreamOptions;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`opencode stub: ${(error as Error).message}\nusage: stub.ts [--port N] [--heartbeat-ms N] [--password P] [--username U] [--directory D]\n`);
    process.exit(2);
  }
  const stub = await startStubUpstream(opts);
  process.stdout.write(`opencode stub listening on ${stub.url}\n`);
  const stop = (): void => {
    void stub.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`opencode stub: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
