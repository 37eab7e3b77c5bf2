// The HTTP transport to OpenCode: node:http(s) with a keep-alive agent, no fetch and no web streams.
//
// Why not the global fetch (undici): every gateway turn makes one `prompt_async` call and reads every event of the
// shared event stream, and undici's fetch of a `Request` (what the generated client builds) costs ~0.6 ms of CPU
// per call in WHATWG bookkeeping (Request, AbortSignal, Headers, body streams), more than the rest of the
// gateway's work on the call. ./request.ts runs the generated client's requests on `HttpTransport.request`;
// ./hub.ts reads the event stream through `openStream`. What they keep from fetch:
//   - transport failures reject with `TypeError("fetch failed", { cause })`, the innermost `code` (ECONNREFUSED,
//     ECONNRESET, …) on the cause, as undici does (./errors.ts classifies them); an aborted signal rejects with
//     the signal's reason;
//   - gzip / deflate / br answers are decoded (none is asked for: no `accept-encoding` is sent);
//   - redirects are not followed (OpenCode's API has none; a redirect is answered as the 3xx it is);
//   - nothing is retried (a connection dropped mid-call is UPSTREAM_UNREACHABLE, as before); to keep the stale
//     keep-alive race rare, free sockets are closed after `keepAliveMs` (4 s, like undici) and a second before the
//     server's own `Keep-Alive: timeout` hint.
import http from "node:http";
import https from "node:https";
import zlib from "node:zlib";

export interface HttpTransportOptions {
  /** Free keep-alive sockets are closed after this long (default 4000 ms; earlier when the server hints less). */
  keepAliveMs?: number;
}

/** A complete answer: status, headers as received (rawHeaders: name, value, name, value, …) and the decoded body. */
export interface HttpAnswer {
  status: number;
  statusText: string;
  rawHeaders: string[];
  body: Buffer;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

function fetchFailed(cause: unknown): TypeError {
  return new TypeError("fetch failed", { cause });
}

function decoded(body: Buffer, encoding: string | undefined): Buffer {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return zlib.gunzipSync(body);
    case "deflate":
      return zlib.inflateSync(body);
    case "br":
      return zlib.brotliDecompressSync(body);
    default:
      return body;
  }
}

interface Origin {
  /** `protocol//host` as it starts every URL of this origin (credentials included when present). */
  prefix: string;
  protocol: string;
  hostname: string;
  port: string;
  auth: string | undefined;
  agent: http.Agent | undefined;
}

export class HttpTransport {
  readonly #agents: { "http:": http.Agent; "https:": https.Agent };
  /** The origin of the last call: OpenCode's URLs all share it, so a call's path is a slice, not a URL parse. */
  #origin: Origin | undefined;

  constructor(options: HttpTransportOptions = {}) {
    const keepAliveMs = options.keepAliveMs ?? 4_000;
    // An agent's `timeout` only closes free sockets (in-flight calls are bounded by the caller's signal).
    this.#agents = {
      "http:": new http.Agent({ keepAlive: true, timeout: keepAliveMs, scheduling: "lifo" }),
      "https:": new https.Agent({ keepAlive: true, timeout: keepAliveMs, scheduling: "lifo" }),
    };
  }

  #originOf(url: URL): Origin {
    const auth = url.username !== "" || url.password !== "" ? `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` : undefined;
    const credentials = url.username !== "" || url.password !== "" ? `${url.username}${url.password === "" ? "" : `:${url.password}`}@` : "";
    return {
      prefix: `${url.protocol}//${credentials}${url.host}`,
      protocol: url.protocol,
      hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port,
      auth,
      agent: url.protocol === "http:" || url.protocol === "https:" ? this.#agents[url.protocol] : undefined,
    };
  }

  /** Closes the free keep-alive sockets (calls in flight finish). */
  close(): void {
    this.#agents["http:"].destroy();
    this.#agents["https:"].destroy();
  }

  /** One call, its answer read completely. `headers` are sent as given (lower-case names); a body gets its length. */
  request(url: string, method: string, headers: Record<string, string>, body: string | Uint8Array | undefined, signal?: AbortSignal): Promise<HttpAnswer> {
    let origin = this.#origin;
    let path: string;
    if (origin !== undefined && url.startsWith(origin.prefix) && url.charCodeAt(origin.prefix.length) === 47 /* / */) {
      path = url.slice(origin.prefix.length);
    } else {
      try {
        const parsed = new URL(url);
        origin = this.#origin = this.#originOf(parsed);
        path = `${parsed.pathname}${parsed.search}`;
      } catch (error) {
        return Promise.reject(fetchFailed(error));
      }
      if (origin.agent === undefined) return Promise.reject(fetchFailed(new Error(`unsupported protocol ${origin.protocol}`)));
    }
    // A text body stays a string: node:http then sends the head and the body in one write (a Buffer body goes out
    // as a second chunk of a writev).
    const options: http.RequestOptions = {
      protocol: origin.protocol,
      hostname: origin.hostname,
      port: origin.port,
      path,
      method,
      headers: body === undefined ? headers : { ...headers, "content-length": String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength) },
      agent: origin.agent,
      ...(origin.auth === undefined ? {} : { auth: origin.auth }),
    };
    return this.#send(options, body, signal);
  }

  #send(options: http.RequestOptions, payload: string | Uint8Array | undefined, signal: AbortSignal | undefined): Promise<HttpAnswer> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<HttpAnswer>((resolve, reject) => {
      let settled = false;
      let request: http.ClientRequest;
      try {
        request = (options.protocol === "https:" ? https : http).request(options);
      } catch (error) {
        // Invalid header value or path: refused before anything is sent.
        reject(fetchFailed(error));
        return;
      }
      const onAbort = (): void => {
        if (settled) return;
        settled = true;
        request.destroy();
        reject(abortReason(signal!));
      };
      const done = (): boolean => {
        if (settled) return false;
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        return true;
      };
      const fail = (error: unknown): void => {
        if (done()) reject(fetchFailed(error));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      request.on("error", fail);
      request.on("response", (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", fail);
        response.on("close", () => {
          if (!response.complete) fail(Object.assign(new Error("the connection closed before the response ended"), { code: "UND_ERR_SOCKET" }));
        });
        response.on("end", () => {
          if (!done()) return;
          try {
            const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
            const body = decoded(raw, response.headers["content-encoding"]);
            resolve({ status: response.statusCode ?? 0, statusText: response.statusMessage ?? "", rawHeaders: response.rawHeaders, body });
          } catch (error) {
            reject(fetchFailed(error));
          }
        });
      });
      request.end(payload);
    });
  }
}

/**
 * Opens a long-lived GET (the event stream) on a connection of its own, outside the keep-alive pool. Resolves with
 * the response as soon as its headers arrive (any status); rejects like the fetch above. Aborting `signal` later
 * destroys the connection: the response then ends with `close` (and `complete` false).
 */
export function openStream(url: string, headers: Record<string, string>, signal: AbortSignal): Promise<http.IncomingMessage> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    let answered = false;
    const request = (target.protocol === "https:" ? https : http).request(target, { method: "GET", headers, agent: false });
    const onAbort = (): void => {
      request.destroy();
      if (!answered) reject(abortReason(signal));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    request.on("error", (error) => {
      if (!answered) {
        signal.removeEventListener("abort", onAbort);
        reject(fetchFailed(error));
      }
    });
    request.on("response", (response) => {
      answered = true;
      response.on("close", () => signal.removeEventListener("abort", onAbort));
      resolve(response);
    });
    request.end();
  });
}
