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
//
// This file is the connection's lifecycle; the frame filter is ./frames.ts, the routing to subscribers ./demux.ts,
// a subscriber ./subscription.ts.
import type { IncomingMessage } from "node:http";
import type { Logger } from "pino";
import type { UpstreamClient } from "./client.js";
import { Demux } from "./demux.js";
import { classifyThrown, UpstreamError } from "./errors.js";
import { previewFrame, SYNC_MARKER } from "./frames.js";
import { SseFrames } from "./sse.js";
import type { HubDisconnected, HubReconnected, Subscription } from "./subscription.js";
import { openStream } from "./transport.js";
import { backoffMs } from "../util/backoff.js";
import type { PayloadLog } from "../logging/payloads.js";

export type { Event as OpencodeEvent } from "../../generated/opencode/types.gen.js";
export { frameType, mayConcern, sessionIdOf } from "./frames.js";
export { Subscription, type HubDisconnected, type HubEvent, type HubItem, type HubReconnected } from "./subscription.js";

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

export class EventHub {
  readonly #opts: EventHubOptions;
  readonly #demux = new Demux((timeoutMs) => this.ready(timeoutMs));
  #state: HubState = "idle";
  #stopped = false;
  #running: Promise<void> | undefined;
  #connection: AbortController | undefined;
  #wake: (() => void) | undefined;
  #readyWaiters = new Set<() => void>();
  #downSince: number | undefined;
  #everOpen = false;
  #connections = 0;
  #reconnects = 0;
  #lastError: UpstreamError | undefined;
  #lastFrameAt: number | undefined;

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
    this.#demux.closeAll();
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
      subscribers: this.#demux.subscribers,
      streams: this.#demux.streams,
      maxStreams: this.#opts.maxStreams,
      ...this.#demux.counters(),
    };
  }

  subscribe(opts: SubscribeOptions = {}): Subscription {
    if (this.#stopped) throw new UpstreamError({ kind: "unreachable", operation: "event-subscription", detail: "event hub stopped" });
    const stream = opts.stream === true;
    const max = this.#opts.maxStreams;
    if (stream && max > 0 && this.#demux.streams >= max) {
      throw new UpstreamError({
        kind: "backpressure",
        operation: "event-subscription",
        detail: `${this.#demux.streams} streams open (OPENCODE_MAX_CONCURRENT_STREAMS=${max})`,
        limit: max,
        retryAfterSeconds: 1,
      });
    }
    const all = opts.all === true;
    const sub = this.#demux.add(
      { all, directory: opts.directory, stream, bufferLimit: opts.bufferLimit ?? this.#opts.bufferLimit, types: all ? undefined : opts.types },
      opts.sessions ?? [],
    );
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
          this.#demux.frame(data);
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
      this.#demux.broadcast(item);
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
    this.#demux.broadcast(item);
  }
}
