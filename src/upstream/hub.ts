// EventHub: ONE upstream event subscription per OpenCode server, shared by every task and stream of the
// gateway and demultiplexed by `sessionID` to subscribers.
//
// Which stream: `GET /global/event`, not the per-directory `GET /event`. Session ids are unique across the
// whole OpenCode server, so demultiplexing needs no directory at all, and sessions that run in an overridden
// directory (metadata.opencode.directory) or a workspace arrive on the same connection. With `/event` the
// gateway would need one connection per directory in use. The price is the `sync` frames the global stream also
// carries (event-sourcing copies of the same events), which are dropped before parsing. While no wildcard
// subscriber is attached, frames that name no subscribed session are not parsed either (`mayConcern`), nor those
// of an event type no session subscriber asked for (`frameType`: a task's turn wants only what its mapper reads).
//
// Transport: the stream is read on a node:http connection of its own and parsed by ./sse.ts straight from the
// socket's chunks (no fetch, no web streams: the hub sits on the path of every event of every turn). Its URL and
// headers (Basic auth) come from the generated client's configuration (UpstreamClient.eventStreamRequest).
//
// Guarantees for an attached subscriber:
//   - events of its sessions arrive in upstream order, none dropped while the connection is up;
//   - when the connection breaks it receives `disconnected` (with the typed UpstreamError) once per outage, and
//     `reconnected` when events flow again; events emitted in between cannot be replayed (OpenCode keeps no
//     event log), so a consumer resynchronises from snapshots (GET /session/{id}/message) on `reconnected`;
//   - its buffer is bounded (OPENCODE_EVENT_BUFFER_LIMIT); a subscriber that falls that far behind is ended
//     with UPSTREAM_BACKPRESSURE rather than silently losing events.
// The connection reconnects with exponential backoff and jitter, and is considered dead when neither an
// event nor OpenCode's 10 s `server.heartbeat` arrives within the idle timeout.
import type { IncomingMessage } from "node:http";
import type { Logger } from "pino";
import type { Event as OpencodeEvent } from "../../generated/opencode/types.gen.js";
import type { UpstreamClient } from "./client.js";
import { classifyThrown, UpstreamError } from "./errors.js";
import { SseFrames } from "./sse.js";
import { openStream } from "./transport.js";
import { backoffMs } from "../util/backoff.js";
import { isObject } from "../util/object.js";
import type { PayloadLog } from "../logging/payloads.js";

export type { OpencodeEvent };

export interface HubEvent {
  type: "event";
  event: OpencodeEvent;
  /** Directory (instance) OpenCode tagged the event with. */
  directory: string | undefined;
  /** Hub-wide sequence number, strictly increasing in arrival order. */
  seq: number;
}
export interface HubDisconnected {
  type: "disconnected";
  error: UpstreamError;
}
export interface HubReconnected {
  type: "reconnected";
  downtimeMs: number;
}
export type HubItem = HubEvent | HubDisconnected | HubReconnected;

export interface EventHubOptions {
  upstream: UpstreamClient;
  /** No frame (event or heartbeat) for this long → the connection is treated as dead. */
  idleTimeoutMs: number;
  /** Default per-subscriber buffer limit, in items. */
  bufferLimit: number;
  reconnectInitialMs: number;
  reconnectMaxMs: number;
  /** OPENCODE_MAX_CONCURRENT_STREAMS: subscriptions opened with `stream: true` (0 = unlimited). */
  maxStreams: number;
  log?: Pick<Logger, "info" | "warn" | "debug">;
  /**
   * A2A_LOG_PAYLOADS with the hub's logger at debug: every received frame is logged as a truncated preview (type,
   * session, data). Absent = off (see src/logging/payloads.ts).
   */
  payloads?: PayloadLog | undefined;
  /** For tests: jitter source. */
  random?: () => number;
}

export interface SubscribeOptions {
  /** Session ids to receive events of (more can be added later). */
  sessions?: Iterable<string>;
  /** Receive every event, including those without a session (file.*, project.*, …). */
  all?: boolean;
  /** With `all`: only events tagged with this directory. */
  directory?: string;
  /** Counts against OPENCODE_MAX_CONCURRENT_STREAMS (an A2A stream); throws UPSTREAM_BACKPRESSURE when full. */
  stream?: boolean;
  bufferLimit?: number;
  /**
   * Session subscribers only: the event types to receive (default all). Frames of other types are not delivered,
   * and while no subscriber wants them and no wildcard subscriber is attached they are not even parsed.
   */
  types?: ReadonlySet<string>;
}

export type HubState = "idle" | "connecting" | "open" | "backoff" | "stopped";

export interface HubStatus {
  state: HubState;
  connections: number;
  reconnects: number;
  lastError: string | undefined;
  lastFrameAt: number | undefined;
  subscribers: number;
  streams: number;
  maxStreams: number;
  framesIn: number;
  eventsDelivered: number;
  overflows: number;
  malformed: number;
  /** Frames left unparsed: no wildcard subscriber, and they name no subscribed session or no wanted type. */
  unparsed: number;
}

/** OpenCode's `sync` frames on /global/event carry this; they are dropped before parsing (see ./sse.ts). */
const SYNC_MARKER = '"payload":{"type":"sync"';

const SESSION_KEY = '"sessionID"';
const PAYLOAD_KEY = '"payload":{';
const ID_KEY = '"id":"';
const TYPE_KEY = '"type":"';

/**
 * Whether a raw frame may concern one of `sessions`: it names one of them as a `"sessionID"` value, or names one in a
 * way a plain scan cannot read (escapes, odd spacing). A frame that names none of them cannot be routed to a
 * session subscriber (sessionIdOf reads one of its `sessionID` members), so it need not be parsed when no wildcard
 * subscriber is attached.
 */
export function mayConcern(data: string, sessions: ReadonlyMap<string, unknown>): boolean {
  for (let at = data.indexOf(SESSION_KEY); at >= 0; at = data.indexOf(SESSION_KEY, at + SESSION_KEY.length)) {
    const open = at + SESSION_KEY.length;
    if (data.charCodeAt(open) !== 58 /* : */ || data.charCodeAt(open + 1) !== 34 /* " */) return true;
    const close = data.indexOf('"', open + 2);
    if (close < 0) return true;
    const id = data.slice(open + 2, close);
    if (id.includes("\\") || sessions.has(id)) return true;
  }
  return false;
}

/**
 * The event type of a raw /global/event frame when it can be read without parsing: the payload object opens with
 * its `type`, or with an `id` string and then its `type` (OpenCode's key order). Anything else → undefined (the
 * caller parses the frame).
 */
export function frameType(data: string): string | undefined {
  let at = data.indexOf(PAYLOAD_KEY);
  if (at < 0) return undefined;
  at += PAYLOAD_KEY.length;
  if (data.startsWith(ID_KEY, at)) {
    const close = data.indexOf('"', at + ID_KEY.length);
    if (close < 0 || data.charCodeAt(close - 1) === 92 /* \ */) return undefined;
    at = close + 1;
    if (data.charCodeAt(at) !== 44 /* , */) return undefined;
    at++;
  }
  if (!data.startsWith(TYPE_KEY, at)) return undefined;
  const start = at + TYPE_KEY.length;
  const close = data.indexOf('"', start);
  if (close < 0) return undefined;
  const type = data.slice(start, close);
  return type.includes("\\") ? undefined : type;
}

/** The session an OpenCode event belongs to (properties.sessionID | info.sessionID | part.sessionID). */
export function sessionIdOf(event: { properties?: unknown }): string | undefined {
  const p = event.properties;
  if (!isObject(p)) return undefined;
  if (typeof p.sessionID === "string") return p.sessionID;
  if (isObject(p.info) && typeof p.info.sessionID === "string") return p.info.sessionID;
  if (isObject(p.part) && typeof p.part.sessionID === "string") return p.part.sessionID;
  return undefined;
}

/** The payload log's preview of one raw frame (debug only: parses the frame a second time). */
function previewFrame(log: PayloadLog, data: string): void {
  let frame: unknown;
  try {
    frame = JSON.parse(data);
  } catch {
    log.event(undefined, undefined, undefined, data);
    return;
  }
  const payload = isObject(frame) ? frame.payload : undefined;
  if (!isObject(payload)) {
    log.event(undefined, undefined, undefined, frame);
    return;
  }
  const directory = isObject(frame) && typeof frame.directory === "string" ? frame.directory : undefined;
  log.event(
    typeof payload.type === "string" ? payload.type : undefined,
    sessionIdOf(payload),
    directory,
    payload.properties === undefined ? payload : payload.properties,
  );
}

export class Subscription implements AsyncIterable<HubItem> {
  readonly sessions = new Set<string>();
  #queue: HubItem[] = [];
  #head = 0;
  #waiter: { resolve: (r: IteratorResult<HubItem>) => void; reject: (e: unknown) => void } | undefined;
  #closed = false;
  #failure: UpstreamError | undefined;
  #failureDelivered = false;

  constructor(
    private readonly hub: EventHub,
    readonly all: boolean,
    readonly directory: string | undefined,
    readonly stream: boolean,
    readonly bufferLimit: number,
    readonly types: ReadonlySet<string> | undefined,
  ) {}

  get closed(): boolean {
    return this.#closed;
  }

  /** Items buffered and not yet consumed. */
  get buffered(): number {
    return this.#queue.length - this.#head;
  }

  /** The error that ended the subscription (overflow), if any. */
  get failure(): UpstreamError | undefined {
    return this.#failure;
  }

  addSession(sessionId: string): void {
    if (this.#closed || this.sessions.has(sessionId)) return;
    this.sessions.add(sessionId);
    this.hub._index(this, sessionId);
  }

  removeSession(sessionId: string): void {
    if (!this.sessions.delete(sessionId)) return;
    this.hub._unindex(this, sessionId);
  }

  /** Resolves once the hub's upstream connection is open (at once if it already is). */
  ready(timeoutMs?: number): Promise<void> {
    return this.hub.ready(timeoutMs);
  }

  /** @internal called by the hub for every item routed to this subscriber. */
  _push(item: HubItem): void {
    if (this.#closed) return;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter.resolve({ value: item, done: false });
      return;
    }
    if (this.buffered >= this.bufferLimit) {
      this._fail(
        new UpstreamError({
          kind: "backpressure",
          operation: "event-subscription",
          detail: `subscriber fell ${this.bufferLimit} events behind (OPENCODE_EVENT_BUFFER_LIMIT); subscription ended`,
          limit: this.bufferLimit,
        }),
      );
      return;
    }
    this.#queue.push(item);
  }

  /** @internal ends the subscription with an error: buffered items are dropped, the next read rejects. */
  _fail(error: UpstreamError): void {
    if (this.#closed) return;
    this.#failure = error;
    this.#queue = [];
    this.#head = 0;
    this.#finish();
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      this.#failureDelivered = true;
      waiter.reject(error);
    }
  }

  next(): Promise<IteratorResult<HubItem>> {
    if (this.#head < this.#queue.length) {
      const value = this.#queue[this.#head++] as HubItem;
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.#failure !== undefined && !this.#failureDelivered) {
      this.#failureDelivered = true;
      return Promise.reject(this.#failure);
    }
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  /** Ends the subscription; a pending read resolves as done. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#queue = [];
    this.#head = 0;
    this.#finish();
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.resolve({ value: undefined, done: true });
  }

  #finish(): void {
    this.#closed = true;
    this.hub._detach(this);
  }

  return(): Promise<IteratorResult<HubItem>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<HubItem> {
    return this;
  }
}

export class EventHub {
  readonly #opts: EventHubOptions;
  readonly #bySession = new Map<string, Set<Subscription>>();
  readonly #wildcards = new Set<Subscription>();
  readonly #subscribers = new Set<Subscription>();
  /** Session subscribers without a type filter; while there are none (and no wildcard), #wanted decides parsing. */
  #allTypes = 0;
  /** How many filtered session subscribers want each type. */
  readonly #wanted = new Map<string, number>();
  #streams = 0;
  #state: HubState = "idle";
  #stopped = false;
  #running: Promise<void> | undefined;
  #connection: AbortController | undefined;
  #wake: (() => void) | undefined;
  #readyWaiters = new Set<() => void>();
  #seq = 0;
  #downSince: number | undefined;
  #everOpen = false;
  #connections = 0;
  #reconnects = 0;
  #lastError: UpstreamError | undefined;
  #lastFrameAt: number | undefined;
  #framesIn = 0;
  #delivered = 0;
  #overflows = 0;
  #malformed = 0;
  #unparsed = 0;

  constructor(opts: EventHubOptions) {
    this.#opts = opts;
  }

  /** Opens the upstream connection (idempotent). */
  start(): void {
    if (this.#running !== undefined || this.#stopped) return;
    this.#running = this.#run();
  }

  /** Closes the connection and every subscription. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#state = "stopped";
    this.#connection?.abort();
    this.#wake?.();
    for (const sub of [...this.#subscribers]) sub.close();
    for (const resolve of this.#readyWaiters) resolve();
    this.#readyWaiters.clear();
    await this.#running;
  }

  /** Cuts the current connection (or the backoff wait) short and connects again now. */
  reconnectNow(): void {
    if (this.#state === "backoff") this.#wake?.();
    else if (this.#state === "open" || this.#state === "connecting") this.#connection?.abort();
  }

  get state(): HubState {
    return this.#state;
  }

  status(): HubStatus {
    return {
      state: this.#state,
      connections: this.#connections,
      reconnects: this.#reconnects,
      lastError: this.#lastError?.message,
      lastFrameAt: this.#lastFrameAt,
      subscribers: this.#subscribers.size,
      streams: this.#streams,
      maxStreams: this.#opts.maxStreams,
      framesIn: this.#framesIn,
      eventsDelivered: this.#delivered,
      overflows: this.#overflows,
      malformed: this.#malformed,
      unparsed: this.#unparsed,
    };
  }

  subscribe(opts: SubscribeOptions = {}): Subscription {
    if (this.#stopped) throw new UpstreamError({ kind: "unreachable", operation: "event-subscription", detail: "event hub stopped" });
    const stream = opts.stream === true;
    const max = this.#opts.maxStreams;
    if (stream && max > 0 && this.#streams >= max) {
      throw new UpstreamError({
        kind: "backpressure",
        operation: "event-subscription",
        detail: `${this.#streams} streams open (OPENCODE_MAX_CONCURRENT_STREAMS=${max})`,
        limit: max,
        retryAfterSeconds: 1,
      });
    }
    const types = opts.all === true ? undefined : opts.types;
    const sub = new Subscription(this, opts.all === true, opts.directory, stream, opts.bufferLimit ?? this.#opts.bufferLimit, types);
    this.#subscribers.add(sub);
    if (types === undefined) this.#allTypes++;
    else for (const t of types) this.#wanted.set(t, (this.#wanted.get(t) ?? 0) + 1);
    if (stream) this.#streams++;
    if (sub.all) this.#wildcards.add(sub);
    for (const id of opts.sessions ?? []) sub.addSession(id);
    this.start();
    return sub;
  }

  /** Resolves when the upstream connection is open; rejects with the last error after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void> {
    if (this.#state === "open" || this.#stopped) return Promise.resolve();
    this.start();
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        if (timer !== undefined) clearTimeout(timer);
        resolve();
      };
      this.#readyWaiters.add(done);
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          this.#readyWaiters.delete(done);
          reject(
            this.#lastError ??
              new UpstreamError({
                kind: "timeout",
                operation: "event-subscription",
                detail: `event stream not connected within ${timeoutMs} ms`,
                timeoutSeconds: timeoutMs / 1000,
              }),
          );
        }, timeoutMs);
      }
    });
  }

  /** @internal */
  _index(sub: Subscription, sessionId: string): void {
    let set = this.#bySession.get(sessionId);
    if (set === undefined) this.#bySession.set(sessionId, (set = new Set()));
    set.add(sub);
  }

  /** @internal */
  _unindex(sub: Subscription, sessionId: string): void {
    const set = this.#bySession.get(sessionId);
    if (set === undefined) return;
    set.delete(sub);
    if (set.size === 0) this.#bySession.delete(sessionId);
  }

  /** @internal a subscription closed or failed. */
  _detach(sub: Subscription): void {
    if (!this.#subscribers.delete(sub)) return;
    if (sub.failure !== undefined) this.#overflows++;
    if (sub.stream) this.#streams--;
    if (sub.types === undefined) this.#allTypes--;
    else
      for (const t of sub.types) {
        const n = (this.#wanted.get(t) ?? 0) - 1;
        if (n > 0) this.#wanted.set(t, n);
        else this.#wanted.delete(t);
      }
    this.#wildcards.delete(sub);
    for (const id of sub.sessions) this._unindex(sub, id);
  }

  async #run(): Promise<void> {
    let attempt = 0;
    while (!this.#stopped) {
      const controller = new AbortController();
      this.#connection = controller;
      this.#state = "connecting";
      let opened = false;
      let idleFired = false;
      // Idle detection without touching a timer per frame: frames only stamp `lastFrame`; when the timer fires early
      // (frames came in meanwhile) it is set again for the rest of the period.
      const idleMs = this.#opts.idleTimeoutMs;
      let lastFrame = performance.now();
      let idleTimer: NodeJS.Timeout;
      const onIdle = (): void => {
        const quiet = performance.now() - lastFrame;
        if (quiet < idleMs) {
          idleTimer = setTimeout(onIdle, Math.max(1, Math.ceil(idleMs - quiet)));
          return;
        }
        idleFired = true;
        controller.abort();
      };
      idleTimer = setTimeout(onIdle, idleMs);
      const payloads = this.#opts.payloads;
      let failure: UpstreamError;
      try {
        const { url, headers } = this.#opts.upstream.eventStreamRequest();
        const response = await openStream(url, headers, controller.signal);
        const status = response.statusCode ?? 0;
        if (status < 200 || status > 299) {
          response.destroy();
          throw new UpstreamError({ kind: "http", operation: "event-stream", status, detail: `SSE failed: ${status} ${response.statusMessage ?? ""}` });
        }
        const ended = this.#read(response, controller.signal, (data) => {
          lastFrame = performance.now();
          this.#lastFrameAt = Date.now();
          if (!opened) {
            opened = true;
            this.#connections++;
            attempt = 0;
            this.#onOpen();
          }
          if (payloads !== undefined) previewFrame(payloads, data);
          if (this.#wildcards.size === 0 && (!mayConcern(data, this.#bySession) || (this.#allTypes === 0 && !this.#wants(data)))) {
            this.#framesIn++;
            this.#unparsed++;
            return;
          }
          let frame: unknown;
          try {
            frame = JSON.parse(data);
          } catch {
            frame = data; // counted as malformed by #dispatch
          }
          this.#dispatch(frame);
        });
        failure = this.#streamFailure(await ended, idleFired, opened);
      } catch (error) {
        failure = this.#streamFailure(error, idleFired, opened);
      } finally {
        clearTimeout(idleTimer);
      }
      if (this.#stopped) break;
      this.#onDown(failure);
      // Equal jitter: gateways reconnecting to a restarted OpenCode spread out.
      const delay = backoffMs(attempt, this.#opts.reconnectInitialMs, this.#opts.reconnectMaxMs, this.#opts.random);
      attempt++;
      this.#state = "backoff";
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
      if (!this.#stopped) this.#reconnects++;
    }
    this.#state = "stopped";
  }

  /**
   * Reads the event stream until it ends: the data of every frame but the `sync` ones goes to `onData`. Resolves
   * with the error that ended the stream, or undefined when OpenCode (or our own abort) closed it.
   */
  #read(response: IncomingMessage, signal: AbortSignal, onData: (data: string) => void): Promise<unknown> {
    const frames = new SseFrames(onData, SYNC_MARKER);
    return new Promise((resolve) => {
      response.on("data", (chunk: Buffer) => frames.push(chunk));
      response.on("end", () => resolve(undefined));
      response.on("error", (error) => resolve(signal.aborted ? undefined : error));
      response.on("close", () =>
        resolve(response.complete || signal.aborted ? undefined : Object.assign(new Error("the event stream connection closed"), { code: "UND_ERR_SOCKET" })),
      );
    });
  }

  #streamFailure(error: unknown, idleFired: boolean, opened: boolean): UpstreamError {
    if (idleFired) {
      return new UpstreamError({
        kind: "timeout",
        operation: "event-stream",
        detail: opened
          ? `no event or heartbeat for ${this.#opts.idleTimeoutMs} ms`
          : `event stream did not open within ${this.#opts.idleTimeoutMs} ms`,
        timeoutSeconds: this.#opts.idleTimeoutMs / 1000,
      });
    }
    if (error === undefined) {
      return new UpstreamError({ kind: "unreachable", operation: "event-stream", detail: "OpenCode closed the event stream" });
    }
    return classifyThrown(error, "event-stream");
  }

  #onOpen(): void {
    this.#state = "open";
    this.#lastError = undefined;
    if (this.#downSince !== undefined && this.#everOpen) {
      const item: HubReconnected = { type: "reconnected", downtimeMs: Date.now() - this.#downSince };
      for (const sub of [...this.#subscribers]) sub._push(item);
      this.#opts.log?.info({ downtimeMs: item.downtimeMs }, "opencode event stream reconnected");
    } else {
      this.#opts.log?.debug({}, "opencode event stream open");
    }
    this.#downSince = undefined;
    this.#everOpen = true;
    for (const resolve of this.#readyWaiters) resolve();
    this.#readyWaiters.clear();
  }

  #onDown(error: UpstreamError): void {
    this.#lastError = error;
    if (this.#downSince !== undefined) return; // one `disconnected` per outage
    this.#downSince = Date.now();
    this.#opts.log?.warn({ err: error.message, kind: error.kind }, "opencode event stream lost; reconnecting");
    const item: HubDisconnected = { type: "disconnected", error };
    for (const sub of [...this.#subscribers]) sub._push(item);
  }

  /** A frame some filtered subscriber may want: its type is wanted, or cannot be read without parsing. */
  #wants(data: string): boolean {
    const type = frameType(data);
    return type === undefined || this.#wanted.has(type);
  }

  #dispatch(frame: unknown): void {
    this.#framesIn++;
    // /global/event frames: { directory?, project?, payload: { id, type, properties } }
    const payload = isObject(frame) ? frame.payload : undefined;
    if (!isObject(payload) || typeof payload.type !== "string") {
      this.#malformed++;
      return;
    }
    const type = payload.type;
    if (type === "sync" || type === "server.heartbeat" || type === "server.connected") return;
    const directory = isObject(frame) && typeof frame.directory === "string" ? frame.directory : undefined;
    const item: HubEvent = { type: "event", event: payload as unknown as OpencodeEvent, directory, seq: ++this.#seq };
    const sessionId = sessionIdOf(payload);
    if (sessionId !== undefined) {
      const subs = this.#bySession.get(sessionId);
      if (subs !== undefined) {
        for (const sub of subs) {
          if (sub.types !== undefined && !sub.types.has(type)) continue;
          sub._push(item);
          this.#delivered++;
        }
      }
    }
    for (const sub of this.#wildcards) {
      if (sub.directory !== undefined && sub.directory !== directory) continue;
      if (sessionId !== undefined && sub.sessions.has(sessionId)) continue; // already delivered above
      sub._push(item);
      this.#delivered++;
    }
  }
}
