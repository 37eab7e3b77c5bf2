// The generated client's request cycle (generated/opencode/client/client.gen.ts `request`) on ./transport.ts.
//
// Every upstream call still goes through a generated SDK function, which names the route, fills the path, query
// and body, and calls `client.get/post/…` of the client it is given. UpstreamClient gives it the generated client
// with those methods replaced by `request` below: the same steps with the generated helpers (header merge, body
// serializer, URL and query building, content-type based parsing, error bodies, responseStyle, throwOnError), but
// no WHATWG Request, no fetch and no body streams. The result has the generated shape `{ data | error, response }`;
// `response` is a body-less Response carrying the status and headers (the body is already parsed into data/error).
// Anything this path does not cover — request/response/error interceptors, auth (`security`), validators,
// transformers, a per-call `fetch`, a body that is not text or bytes — runs on the generated request unchanged.
// The generated client itself is built only when that happens (LazyClient): createClient merges the headers into a
// WHATWG Headers, and the first Headers of a process loads undici, 50–70 ms of start-up on Node 20.
import { buildUrl, createConfig, getParseAs } from "../../generated/opencode/client/utils.gen.js";
import { createClient, type Client, type Config } from "../../generated/opencode/client/index.js";
import { getValidRequestBody } from "../../generated/opencode/core/utils.gen.js";
import { HttpTransport, type HttpAnswer } from "./transport.js";

type Options = Config & {
  url: string;
  method?: string;
  body?: unknown;
  path?: Record<string, unknown>;
  query?: Record<string, unknown>;
  signal?: AbortSignal | null;
  security?: unknown;
  responseStyle?: "data" | "fields";
  throwOnError?: boolean;
};

const utf8 = new TextDecoder();
const METHODS = ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"] as const;

type HeaderValue = string | number | boolean | (string | number | boolean)[] | null | undefined | Record<string, unknown>;

/** generated mergeHeaders (lower-cased names, null deletes, arrays repeat, objects as JSON) into a plain object. */
function mergeHeaders(into: Record<string, string>, headers: unknown): void {
  if (headers === undefined || headers === null) return;
  const entries: [string, HeaderValue][] = [];
  // The tag, not `instanceof Headers`: reading the global Headers would load undici (see the header).
  if (Object.prototype.toString.call(headers) === "[object Headers]") (headers as Headers).forEach((value, name) => entries.push([name, value]));
  else entries.push(...Object.entries(headers as Record<string, HeaderValue>));
  for (const [name, value] of entries) {
    const key = name.toLowerCase();
    if (value === null) delete into[key];
    else if (Array.isArray(value)) for (const v of value) into[key] = into[key] === undefined ? String(v) : `${into[key]}, ${String(v)}`;
    else if (value !== undefined) into[key] = typeof value === "object" ? JSON.stringify(value) : String(value);
  }
}

function hasInterceptors(client: Client): boolean {
  const { request, response, error } = client.interceptors;
  return request.fns.some(Boolean) || response.fns.some(Boolean) || error.fns.some(Boolean);
}

/**
 * The body-less Response the result carries: status and headers as received, no body (it is already parsed into
 * data/error). It answers like `new Response(null, { status, statusText, headers })` does, but a WHATWG Response and
 * Headers are built only if something asks for them (`headers`, `clone`): undici's constructors cost more per call
 * than the rest of this path, and most callers read only `ok` and `status`.
 */
class BodylessResponse implements Response {
  readonly body = null;
  readonly bodyUsed = false;
  readonly redirected = false;
  readonly type: ResponseType = "default";
  readonly url = "";
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
  readonly #answer: HttpAnswer;
  #headers: Headers | undefined;

  constructor(answer: HttpAnswer) {
    this.status = answer.status;
    this.statusText = answer.statusText;
    this.ok = answer.status >= 200 && answer.status <= 299;
    this.#answer = answer;
  }

  /** `headers.get(name)` without building Headers (`name` lower-case). */
  header(name: string): string | null {
    return headerOf(this.#answer, name);
  }

  get headers(): Headers {
    if (this.#headers === undefined) {
      const headers = new Headers();
      const raw = this.#answer.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
      this.#headers = headers;
    }
    return this.#headers;
  }

  #real(): Response {
    return new Response(null, { status: this.status, statusText: this.statusText, headers: this.headers });
  }

  clone(): Response {
    return this.#real();
  }
  arrayBuffer(): Promise<ArrayBuffer> {
    return this.#real().arrayBuffer();
  }
  blob(): Promise<Blob> {
    return this.#real().blob();
  }
  bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return this.#real().arrayBuffer().then((b) => new Uint8Array(b));
  }
  formData(): Promise<FormData> {
    return this.#real().formData();
  }
  json(): Promise<unknown> {
    return this.#real().json();
  }
  text(): Promise<string> {
    return this.#real().text();
  }
}

/** `response.headers.get(name)` (`name` lower-case), without building Headers for the responses of onTransport. */
export function responseHeader(response: Response, name: string): string | null {
  return response instanceof BodylessResponse ? response.header(name) : response.headers.get(name);
}

/** A header of the answer as `Headers.get` gives it (case-insensitive, repeats joined with ", "), or null. */
function headerOf(answer: HttpAnswer, name: string): string | null {
  let value: string | null = null;
  for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2)
    if (answer.rawHeaders[i]!.toLowerCase() === name) value = value === null ? answer.rawHeaders[i + 1]! : `${value}, ${answer.rawHeaders[i + 1]!}`;
  return value;
}

/** The answer's body as `parseAs` (generated semantics; the rare kinds go through a Response that holds the bytes). */
async function parse(answer: HttpAnswer, response: Response, parseAs: string): Promise<unknown> {
  const empty = answer.status === 204 || headerOf(answer, "content-length") === "0";
  if (parseAs === "json") {
    if (empty) return {};
    const text = utf8.decode(answer.body);
    return text ? JSON.parse(text) : {};
  }
  if (parseAs === "text") return empty ? "" : utf8.decode(answer.body);
  if (parseAs === "formData" && empty) return new FormData();
  const nullBody = answer.status === 204 || answer.status === 205 || answer.status === 304;
  // A 204 without Content-Type (prompt_async, abort…) reads as "stream": the generated client answers with the
  // Response's body, which is null for a null-body status. No Response needs to be built to say so.
  if (parseAs === "stream" && nullBody) return null;
  const withBody = new Response(nullBody ? null : new Uint8Array(answer.body), { status: answer.status, headers: response.headers });
  switch (parseAs) {
    case "arrayBuffer":
      return withBody.arrayBuffer();
    case "blob":
      return withBody.blob();
    case "formData":
      return withBody.formData();
    case "stream":
      return withBody.body;
    default:
      return undefined;
  }
}

/**
 * The configuration a generated client would hold (createConfig's defaults under `config`, header names lower-cased,
 * no trailing slash on the base URL, as createClient's mergeConfigs leaves them) and the generated client itself, built
 * on first use from that configuration.
 */
export class LazyClient {
  #config: Config;
  #client: Client | undefined;

  constructor(config: Config) {
    this.#config = LazyClient.#merge(createConfig(), config);
  }

  static #merge(a: Config, b: Config): Config {
    const headers: Record<string, string> = {};
    mergeHeaders(headers, a.headers);
    mergeHeaders(headers, b.headers);
    const out: Config = { ...a, ...b, headers };
    if (out.baseUrl?.endsWith("/")) out.baseUrl = out.baseUrl.slice(0, -1);
    return out;
  }

  get config(): Config {
    return this.#config;
  }

  /** The generated client if something built it (its interceptors can only be set then). */
  get built(): Client | undefined {
    return this.#client;
  }

  get client(): Client {
    return (this.#client ??= createClient(this.#config));
  }

  setConfig(config: Config): Config {
    this.#config = LazyClient.#merge(this.#config, config);
    this.#client?.setConfig(config);
    return { ...this.#config };
  }
}

/** A generated client for `config`, and how to end its connections (UpstreamClient and the managed health probe). */
export interface ClientOnTransport {
  /** What the client is built from (setConfig changes both). */
  lazy: LazyClient;
  client: Client;
  /** Closes the idle keep-alive connections of the transport (nothing with `config.fetch`). */
  close(): void;
}

/**
 * The generated client of `config` on a node:http transport of its own (see the header); with `config.fetch`, the
 * generated client itself on that fetch (a caller's fetch is always used as given).
 */
export function clientOnTransport(config: Config): ClientOnTransport {
  const lazy = new LazyClient(config);
  if (config.fetch !== undefined) return { lazy, client: lazy.client, close: () => {} };
  const transport = new HttpTransport();
  return { lazy, client: onTransport(lazy, transport), close: () => transport.close() };
}

/** The generated client of `lazy` with its request methods running on `transport` (see the header). */
function onTransport(lazy: LazyClient, transport: HttpTransport): Client {
  const generated = (options: Options): Promise<unknown> => lazy.client.request(options as never);
  const request = async (options: Options): Promise<unknown> => {
    const built = lazy.built;
    if (options.fetch !== undefined || (built !== undefined && hasInterceptors(built))) return generated(options);
    const config = lazy.config;
    const opts: Options = { ...config, ...options };
    if (opts.security !== undefined || opts.requestValidator !== undefined || opts.responseValidator !== undefined || opts.responseTransformer !== undefined) {
      return generated(options);
    }
    const headers: Record<string, string> = {};
    mergeHeaders(headers, config.headers);
    mergeHeaders(headers, options.headers);
    let serializedBody: unknown;
    if (opts.body !== undefined && opts.bodySerializer) serializedBody = opts.bodySerializer(opts.body);
    if (opts.body === undefined || serializedBody === "") delete headers["content-type"];
    const body = getValidRequestBody({ body: opts.body, bodySerializer: opts.bodySerializer ?? null, serializedBody });
    if (body !== undefined && body !== null && typeof body !== "string" && !(body instanceof Uint8Array)) return generated(options);
    const url = buildUrl(opts as never);
    const method = (opts.method ?? "GET").toUpperCase();

    let answer: HttpAnswer;
    let response: Response;
    try {
      answer = await transport.request(url, method, headers, body ?? undefined, opts.signal ?? undefined);
      response = new BodylessResponse(answer);
    } catch (error) {
      const failure = error || {};
      if (opts.throwOnError) throw failure;
      return opts.responseStyle === "data" ? undefined : { error: failure, response: undefined };
    }

    if (response.ok) {
      const parseAs = (opts.parseAs === "auto" ? getParseAs(headerOf(answer, "content-type")) : opts.parseAs) ?? "json";
      const data = await parse(answer, response, parseAs);
      return opts.responseStyle === "data" ? data : { data, response };
    }
    const textError = utf8.decode(answer.body);
    let jsonError: unknown;
    try {
      jsonError = JSON.parse(textError);
    } catch {
      // not JSON: the text is the error
    }
    const failure = (jsonError ?? textError) || {};
    if (opts.throwOnError) throw failure;
    return opts.responseStyle === "data" ? undefined : { error: failure, response };
  };
  const methods = Object.fromEntries(METHODS.map((m) => [m.toLowerCase(), (options: Options) => request({ ...options, method: m })]));
  return {
    ...methods,
    request,
    buildUrl: (options: Options) => buildUrl({ ...lazy.config, ...options } as never),
    getConfig: () => ({ ...lazy.config }),
    setConfig: (config: Config) => lazy.setConfig(config),
    // What the fast path has no use for comes from the generated client (built then).
    get interceptors() {
      return lazy.client.interceptors;
    },
    get sse() {
      return lazy.client.sse;
    },
  } as unknown as Client;
}
