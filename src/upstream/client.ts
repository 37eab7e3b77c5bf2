// The thin wrapper every gateway call to OpenCode goes through. It owns one generated hey-api client
// (generated/opencode) and adds what the generated code does not know about: the base URL (which moves when a
// managed OpenCode restarts on another port), Basic auth, `directory` / `workspace` routing, per-call timeouts,
// a fast-fail concurrency budget, and the error taxonomy of ./errors.ts. Hand-written code never builds an
// upstream URL or body: it passes a generated SDK function to `call`.
import type { Client } from "../../generated/opencode/client/index.js";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { GlobalEventData, Session } from "../../generated/opencode/types.gen.js";
import { classifyHttp, classifyThrown, UpstreamError } from "./errors.js";
import { clientOnTransport, type ClientOnTransport } from "./request.js";
import { isObject } from "../util/object.js";
import { beginCall, traceHeaders, type TraceContext } from "../tracing/index.js";

export interface UpstreamClientOptions {
  baseUrl: string;
  /** Basic auth (OPENCODE_SERVER_USERNAME / OPENCODE_SERVER_PASSWORD); no header when password is unset. */
  username?: string;
  password?: string;
  /** Default `directory` query parameter (OPENCODE_WORKSPACE_ROOT); unset → OpenCode's own cwd. */
  directory?: string;
  /** OPENCODE_TIMEOUT in ms (0 = none). */
  timeoutMs: number;
  /** OPENCODE_TIMEOUT_STREAM in ms: calls made on behalf of a streaming request (0 = none). */
  streamTimeoutMs: number;
  /** OPENCODE_MAX_CONCURRENT_REQUESTS (0 = unlimited): calls beyond it wait for a free slot, in arrival order. */
  maxConcurrentRequests: number;
  /**
   * OPENCODE_MAX_QUEUED_REQUESTS: calls that may wait for a slot (default 1024); more fail at once with
   * UPSTREAM_BACKPRESSURE, and so does a call whose timeout passes while it waits.
   */
  maxQueuedRequests?: number;
  /** A fetch for the generated client; unset: calls run on ./transport.ts (node:http with keep-alive, see ./request.ts). */
  fetch?: typeof fetch;
}

/** The body of `POST /session` (title, parentID, agent, permission, ...). */
export type SessionCreateBody = NonNullable<Parameters<typeof sdk.sessionCreate>[0]>["body"];

export interface CallOptions {
  /** Instance routing; `directory` defaults to the configured one. A workspace id wins over the directory. */
  directory?: string;
  workspace?: string;
  /** "default" (OPENCODE_TIMEOUT), "stream" (OPENCODE_TIMEOUT_STREAM), milliseconds, or false for none. */
  timeout?: "default" | "stream" | number | false;
  /** Caller cancellation (e.g. the A2A client went away). */
  signal?: AbortSignal;
  /** The session the call is about: an upstream 404 then becomes SESSION_NOT_FOUND for it. */
  sessionId?: string;
  /** Count the call against OPENCODE_MAX_CONCURRENT_REQUESTS (default true; abort/cancel paths pass false). */
  budget?: boolean;
  /** Shape check of the 2xx body; a body that fails it is an UPSTREAM_PAYLOAD_ERROR. */
  validate?: (data: unknown) => boolean;
  /**
   * The trace context of the request or task the call is made for: sent as `traceparent` / `tracestate` (W3C), and
   * the parent of the call's client span when OpenTelemetry export is on. A task's routing carries it (withTrace).
   */
  trace?: TraceContext;
}

/** What the generated SDK functions are handed: our client, the abort signal, and the routing query. */
export interface CallContext {
  client: Client;
  signal: AbortSignal;
  query: { directory?: string; workspace?: string };
  /** The W3C trace headers of a traced call (the generated SDK functions merge them into the request's headers). */
  headers?: Record<string, string>;
}

/** The `{ data, error, response }` result of a generated SDK function called without throwOnError. */
export interface SdkResult<T> {
  data?: T;
  error?: unknown;
  response?: Response;
}

export interface UpstreamStats {
  inFlight: number;
  maxConcurrentRequests: number;
  calls: number;
  failures: Record<string, number>;
  rejectedByBudget: number;
  /** Calls waiting for a slot. */
  queued: number;
}

/** `Authorization: Basic` value for OpenCode's OPENCODE_SERVER_USERNAME / OPENCODE_SERVER_PASSWORD. */
export const basicAuthHeader = (username: string, password: string): string =>
  `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;

export const isSession = (v: unknown): v is Session => isObject(v) && typeof v.id === "string" && v.id.startsWith("ses");

export class UpstreamClient {
  /** The client `call` hands the SDK functions: on ./transport.ts unless options.fetch is given (./request.ts). */
  readonly #client: ClientOnTransport;
  #baseUrl: string;
  readonly #headers: Record<string, string>;
  #inFlight = 0;
  #calls = 0;
  #rejected = 0;
  readonly #failures: Record<string, number> = {};

  constructor(readonly options: UpstreamClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    const headers: Record<string, string> = { accept: "application/json" };
    if (options.password !== undefined && options.password !== "") {
      headers.authorization = basicAuthHeader(options.username ?? "opencode", options.password);
    }
    this.#headers = headers;
    this.#client = clientOnTransport({ baseUrl: this.#baseUrl, headers, ...(options.fetch === undefined ? {} : { fetch: options.fetch }) });
  }

  /** Closes idle keep-alive connections to OpenCode. */
  close(): void {
    this.#client.close();
  }

  /** URL and headers of OpenCode's `GET /global/event` (the EventHub reads it on a connection of its own). */
  eventStreamRequest(): { url: string; headers: Record<string, string> } {
    return { url: this.#client.client.buildUrl<GlobalEventData>({ url: "/global/event" }), headers: { ...this.#headers, accept: "text/event-stream" } };
  }

  get baseUrl(): string {
    return this.#baseUrl;
  }

  /** Points the client at a new URL (a managed OpenCode restarted on another port). */
  setBaseUrl(url: string): void {
    this.#baseUrl = url.replace(/\/+$/, "");
    this.#client.lazy.setConfig({ baseUrl: this.#baseUrl });
  }

  /** Calls waiting for a budget slot, oldest first. */
  readonly #waiting: (() => void)[] = [];

  stats(): UpstreamStats {
    return {
      inFlight: this.#inFlight,
      maxConcurrentRequests: this.options.maxConcurrentRequests,
      calls: this.#calls,
      failures: { ...this.#failures },
      rejectedByBudget: this.#rejected,
      queued: this.#waiting.length,
    };
  }

  /** The routing query for a call: a workspace id wins over a directory (reference §6.1). */
  route(opts: Pick<CallOptions, "directory" | "workspace"> = {}): { directory?: string; workspace?: string } {
    if (opts.workspace !== undefined) return { workspace: opts.workspace };
    const directory = opts.directory ?? this.options.directory;
    return directory === undefined ? {} : { directory };
  }

  /**
   * Runs one generated SDK call with routing, timeout, budget and error mapping. Resolves with the 2xx body;
   * rejects with an UpstreamError.
   *
   *   const session = await upstream.call("sessionCreate", (c) => sdk.sessionCreate({ ...c, body: { title } }));
   */
  async call<T>(operation: string, invoke: (ctx: CallContext) => Promise<SdkResult<T>>, opts: CallOptions = {}): Promise<T> {
    const max = this.options.maxConcurrentRequests;
    const budgeted = opts.budget !== false;
    const timeoutMs =
      opts.timeout === false
        ? 0
        : typeof opts.timeout === "number"
          ? opts.timeout
          : opts.timeout === "stream"
            ? this.options.streamTimeoutMs
            : this.options.timeoutMs;
    const controller = new AbortController();
    let timedOut = false;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            timedOut = true;
            controller.abort(new DOMException("upstream call timed out", "TimeoutError"));
          }, timeoutMs)
        : undefined;
    const onCallerAbort = (): void => controller.abort(opts.signal?.reason);
    if (opts.signal?.aborted) controller.abort(opts.signal.reason);
    else opts.signal?.addEventListener("abort", onCallerAbort, { once: true });

    const context = {
      ...(opts.sessionId === undefined ? {} : { sessionId: opts.sessionId }),
      timedOut: false,
      ...(timeoutMs > 0 ? { timeoutSeconds: timeoutMs / 1000 } : {}),
    };
    if (budgeted && max > 0 && this.#inFlight >= max) {
      // Every slot is taken: wait for one (FIFO) instead of failing; a full queue, the call's timeout or the
      // caller's abort ends the wait.
      try {
        await this.#slot(operation, max, controller.signal);
      } catch (error) {
        if (timer !== undefined) clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onCallerAbort);
        throw this.#count(error instanceof UpstreamError ? error : classifyThrown(error, operation, { ...context, timedOut }));
      }
    }
    if (budgeted) this.#inFlight++;
    this.#calls++;
    const trace = opts.trace;
    const span = trace === undefined ? undefined : beginCall(trace, `opencode ${operation}`, { "rpc.system": "opencode", "rpc.method": operation, "server.address": this.#baseUrl });
    let failure: string | undefined;
    try {
      let result: SdkResult<T>;
      try {
        const call: CallContext = { client: this.#client.client, signal: controller.signal, query: this.route(opts) };
        if (trace !== undefined) call.headers = traceHeaders(trace, span);
        result = await invoke(call);
      } catch (error) {
        throw classifyThrown(error, operation, { ...context, timedOut });
      }
      const response = result.response;
      if (response === undefined) {
        // The generated client swallowed a fetch failure into `error` (no response at all).
        throw classifyThrown(result.error, operation, { ...context, timedOut });
      }
      if (!response.ok) throw classifyHttp(response, result.error, operation, opts.sessionId);
      const data = result.data;
      if (opts.validate !== undefined && !opts.validate(data)) {
        const type = typeof data === "string" ? `text (${response.headers.get("content-type") ?? "no content-type"})` : typeof data;
        throw new UpstreamError({ kind: "payload", operation, detail: `unexpected ${type} body`, status: response.status });
      }
      return data as T;
    } catch (error) {
      const failed = this.#count(error instanceof UpstreamError ? error : classifyThrown(error, operation, { ...context, timedOut }));
      failure = failed.kind;
      throw failed;
    } finally {
      span?.end(failure);
      if (timer !== undefined) clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onCallerAbort);
      if (budgeted) {
        this.#inFlight--;
        this.#waiting.shift()?.();
      }
    }
  }

  /** Resolves when a budget slot is free (the finishing call hands it over); rejects as described at call(). */
  #slot(operation: string, max: number, signal: AbortSignal): Promise<void> {
    const limit = this.options.maxQueuedRequests ?? 1024;
    const busy = (detail: string): UpstreamError => {
      this.#rejected++;
      return new UpstreamError({ kind: "backpressure", operation, detail, limit: max, retryAfterSeconds: 1 });
    };
    if (this.#waiting.length >= limit) {
      return Promise.reject(busy(`${this.#inFlight} upstream calls in flight (OPENCODE_MAX_CONCURRENT_REQUESTS=${max}) and ${this.#waiting.length} waiting (OPENCODE_MAX_QUEUED_REQUESTS=${limit})`));
    }
    return new Promise<void>((resolve, reject) => {
      const wake = (): void => {
        signal.removeEventListener("abort", onAbort);
        // The slot was freed for this call: it runs now (call() counts it in flight).
        resolve();
      };
      const onAbort = (): void => {
        const index = this.#waiting.indexOf(wake);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(signal.reason instanceof DOMException && signal.reason.name === "TimeoutError"
          ? busy(`no upstream call slot became free before the call's timeout (OPENCODE_MAX_CONCURRENT_REQUESTS=${max})`)
          : signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(wake);
    });
  }

  #count(error: UpstreamError): UpstreamError {
    this.#failures[error.kind] = (this.#failures[error.kind] ?? 0) + 1;
    return error;
  }

  // The handful of calls the runtime makes everywhere; everything else goes through `call` directly.

  /** GET /global/health → OpenCode's version (throws UpstreamError when unhealthy). */
  async health(opts: CallOptions = {}): Promise<{ healthy: boolean; version: string }> {
    return this.call("globalHealth", (c) => sdk.globalHealth({ client: c.client, signal: c.signal }), {
      timeout: 5_000,
      budget: false,
      ...opts,
      validate: (d) => isObject(d) && d.healthy === true && typeof d.version === "string",
    });
  }

  async createSession(body: SessionCreateBody, opts: CallOptions = {}): Promise<Session> {
    return this.call("sessionCreate", (c) => sdk.sessionCreate({ ...c, ...(body === undefined ? {} : { body }) }), {
      ...opts,
      validate: isSession,
    });
  }

  async getSession(sessionId: string, opts: CallOptions = {}): Promise<Session> {
    return this.call("sessionGet", (c) => sdk.sessionGet({ ...c, path: { sessionID: sessionId } }), {
      ...opts,
      sessionId,
      validate: isSession,
    });
  }

  /** POST /session/{id}/abort; never counted against the budget (cancel must work under load). */
  async abort(sessionId: string, opts: CallOptions = {}): Promise<boolean> {
    return this.call("sessionAbort", (c) => sdk.sessionAbort({ ...c, path: { sessionID: sessionId } }), {
      budget: false,
      ...opts,
      sessionId,
      validate: (d) => typeof d === "boolean",
    });
  }
}
