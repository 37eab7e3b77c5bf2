// Test harness: the real gateway in-process behind a real HTTP server on 127.0.0.1, plus small request helpers.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { pino, type Logger } from "pino";
import { loadConfig } from "../../src/config/index.js";
import { createGateway, type Gateway } from "../../src/server/app.js";
import type { Upstream } from "../../src/upstream/index.js";
import type { Storage } from "../../src/storage/index.js";

export const TEST_TOKEN = "test-token-5f1c2a9e7d3b4c6a";

export interface StartedGateway {
  url: string;
  token: string;
  gateway: Gateway;
  server: http.Server;
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** An OpenCode link (src/upstream) for /health and the task runtime. */
  upstream?: Upstream;
  /** The store the gateway uses (default: opened from the environment). */
  storage?: Storage;
  /** The push service's clock (default Date.now). */
  pushClock?: () => number;
  /**
   * A server already listening on 127.0.0.1 (see bindGateway): the gateway takes it over instead of binding one, so
   * its URL could be known before (e.g. by OpenCode's MCP config).
   */
  bound?: BoundServer;
}

/** An HTTP server bound before its gateway exists; requests wait until `attach` gives it a handler. */
export interface BoundServer {
  server: http.Server;
  url: string;
  attach(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): void;
}

export async function bindGateway(): Promise<BoundServer> {
  let attach!: BoundServer["attach"];
  const attached = new Promise<(req: http.IncomingMessage, res: http.ServerResponse) => void>((resolve) => (attach = resolve));
  const server = http.createServer((req, res) => void attached.then((handler) => handler(req, res)));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, attach };
}

/**
 * A SQLite store of its own in a fresh temporary directory, unless `env` names a store: without it the gateway would
 * open the default `./opencode-a2a.db` in the repository, shared by every test file running at the same time (and
 * each gateway's start-up sweep would fail the other files' running tasks).
 */
export function privateStore(env: Record<string, string>): { env: Record<string, string>; remove(): void } {
  if (env.A2A_TASK_STORE_BACKEND !== undefined || env.A2A_TASK_STORE_DATABASE_URL !== undefined) return { env: {}, remove: () => {} };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-test-store-"));
  return {
    env: { A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(dir, "tasks.db")}` },
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Every test request comes from 127.0.0.1: the per-address limits before authentication are off, and every failed
 * authentication is audited, unless a test sets them (test/integration/auth-abuse.test.ts does). Otherwise the
 * suites that send many bad credentials on purpose would get 429s, or unaudited 401s, instead of what they check.
 */
export const ONE_ADDRESS_ENV = { A2A_AUTH_FAILURE_LIMIT: "0", A2A_UNAUTHENTICATED_RATE_LIMIT: "0", A2A_AUDIT_AUTH_FAILURE_SAMPLE: "1000000" } as const;

export async function startGateway(env: Record<string, string> = {}, options: StartOptions = {}): Promise<StartedGateway> {
  // Listen first, so the cards advertise the URL clients can actually reach (A2A_PUBLIC_URL unless given).
  const bound = options.bound ?? (await bindGateway());
  const { server, url } = bound;
  const store = privateStore(env);
  let gateway: Gateway;
  try {
    const config = loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN, A2A_PUBLIC_URL: url, ...ONE_ADDRESS_ENV, ...store.env, ...env });
    gateway = await createGateway(config, options.logger ?? pino({ level: "silent" }), {
      ...(options.upstream === undefined ? {} : { upstream: options.upstream }),
      ...(options.storage === undefined ? {} : { storage: options.storage }),
      ...(options.pushClock === undefined ? {} : { pushClock: options.pushClock }),
    });
  } catch (error) {
    // A configuration the test expects to be refused must not leave its store directory behind.
    store.remove();
    throw error;
  }
  bound.attach(gateway.handler);
  gateway.warm();
  return {
    url,
    token: TEST_TOKEN,
    gateway,
    server,
    close: async () => {
      try {
        await gateway.close();
      } finally {
        store.remove();
      }
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function bearer(token: string = TEST_TOKEN): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  body: T;
}

async function toResult(res: Response): Promise<HttpResult> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

type HeaderInit = Record<string, string | undefined>;

function clean(headers: HeaderInit): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k.toLowerCase()] = v;
  return out;
}

/**
 * JSON-RPC call on `POST /`. Sends the test token and `content-type: application/json` unless the headers override
 * them (a header set to undefined is removed). A string body is sent verbatim, anything else as JSON.
 */
export async function rpc(url: string, body: unknown, headers: HeaderInit = {}): Promise<HttpResult> {
  const res = await fetch(`${url}/`, {
    method: "POST",
    headers: clean({ ...bearer(), "content-type": "application/json", ...lower(headers) }),
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return toResult(res);
}

function lower(headers: HeaderInit): HeaderInit {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

export interface CallOptions {
  method?: string;
  headers?: HeaderInit;
  body?: unknown;
  /** Send the test token (default true). */
  auth?: boolean;
}

/** Any HTTP call through fetch; JSON-encodes non-string bodies. */
export async function call(url: string, path: string, options: CallOptions = {}): Promise<HttpResult> {
  const { method = "GET", body, auth = true } = options;
  const headers: HeaderInit = { ...(auth ? bearer() : {}), ...lower(options.headers ?? {}) };
  if (body !== undefined && !("content-type" in headers)) headers["content-type"] = "application/json";
  const res = await fetch(`${url}${path}`, {
    method,
    headers: clean(headers),
    ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
  });
  return toResult(res);
}

export interface RawResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body bytes exactly as sent on the wire (never decompressed). */
  raw: Buffer;
}

export interface RawOptions {
  method?: string;
  headers?: Record<string, string>;
  /** A single body, or several chunks written one by one (use with `transfer-encoding: chunked`). */
  body?: string | Buffer | (string | Buffer)[];
}

/** A request over node:http that leaves Content-Encoding and framing alone. */
export function rawRequest(url: string, path: string, options: RawOptions = {}): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method: options.method ?? "GET", headers: options.headers ?? {}, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.setTimeout(10_000, () => req.destroy(new Error("raw request timed out")));
    const body = options.body;
    if (Array.isArray(body)) for (const chunk of body) req.write(chunk);
    else if (body !== undefined) req.write(body);
    req.end();
  });
}
