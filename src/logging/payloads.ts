// Payload logging (A2A_LOG_PAYLOADS, A2A_LOG_BODY_LIMIT): request/response bodies of JSON-RPC calls and REST routes,
// and previews of upstream OpenCode events, at debug level.
//
// Off by default, and off unless the logger is at debug: `payloadLog` then returns undefined, once, at start-up, and
// the transports and the event hub only test that value per request or frame (nothing else runs on their hot paths).
//
// What reaches the log is a rendered string, never the live value: secret-bearing keys are redacted at any depth
// (pino's own redact paths in ./index.ts reach one level only), raw file bytes become a length note, then the value
// is serialised and truncated to A2A_LOG_BODY_LIMIT characters with a marker carrying the original length. Bodies of
// `opencode.sessions.*` methods are never rendered at all (privacy guard): their entry says they were suppressed.
import type { Logger } from "pino";
import { REDACT_PATHS } from "./index.js";

export const REDACTED = "[redacted]";
export const SUPPRESSED = "[suppressed: opencode.sessions.*]";
export const STREAM_BODY = "[stream]";

/** A key as compared: lowercased, without `-` / `_` (so `api_key`, `apiKey`, `X-API-Key` and `x_api_key` are one key). */
const normalKey = (key: string): string => key.toLowerCase().replace(/[-_]/g, "");

/**
 * Keys whose values are secrets, at any depth: the last key of every path pino redacts (REDACT_PATHS in ./index.ts:
 * authorization, x-api-key, cookie, token, credentials, password, …) plus their usual relatives. The push
 * notification config's `token` and `authentication.credentials` are covered by `token` and `credentials`.
 */
const SECRET_KEYS = new Set(
  [
    ...REDACT_PATHS.map((path) => path.split(/[.[\]"]+/).filter(Boolean).pop()!),
    "accessToken",
    "refreshToken",
    "idToken",
    "authToken",
    "apiToken",
    "credential",
    "clientSecret",
    "passwd",
  ].map(normalKey),
);

/** Keys that carry base64 file content: FilePart `bytes` (0.3, `file.bytes`) and `raw` (1.0). */
const BYTES_KEYS = new Set(["bytes", "raw"]);

const MAX_DEPTH = 64;

export function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(normalKey(key));
}

/** Methods whose bodies are never logged: `opencode.sessions.*` (any case, as written by the caller). */
export function isPrivateMethod(method: unknown): boolean {
  return typeof method === "string" && method.toLowerCase().startsWith("opencode.sessions.");
}

function bytesNote(length: number, unit: string): string {
  return `[${unit}, ${length} ${unit === "bytes" ? "bytes" : "chars"}]`;
}

/** A `data:…;base64,…` URL (OpenCode file parts) longer than this is replaced by a length note. */
const DATA_URL_KEEP = 64;

function redactString(s: string): string {
  if (s.length > DATA_URL_KEEP && s.startsWith("data:") && s.includes(";base64,")) return `[data URL, ${s.length} chars]`;
  return s;
}

function walk(value: unknown, depth: number, ancestors: Set<object>): unknown {
  if (typeof value === "string") return redactString(value);
  if (typeof value === "bigint") return value.toString();
  if (value === null || typeof value !== "object") return value;
  if (ArrayBuffer.isView(value)) return bytesNote(value.byteLength, "bytes");
  if (value instanceof ArrayBuffer) return bytesNote(value.byteLength, "bytes");
  if (ancestors.has(value)) return "[circular]";
  if (depth >= MAX_DEPTH) return "[too deep]";
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") {
    const plain: unknown = toJSON.call(value);
    if (plain !== value) return walk(plain, depth + 1, ancestors);
  }
  ancestors.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    const list: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) list[i] = walk(value[i], depth + 1, ancestors);
    out = list;
  } else {
    const obj: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const v = (value as Record<string, unknown>)[key];
      if (v === undefined) continue;
      if (isSecretKey(key)) obj[key] = REDACTED;
      else if (BYTES_KEYS.has(key) && typeof v === "string") obj[key] = bytesNote(v.length, "base64");
      else obj[key] = walk(v, depth + 1, ancestors);
    }
    out = obj;
  }
  ancestors.delete(value);
  return out;
}

/** A copy of `value` safe to log: secret-bearing keys redacted at any depth, file bytes replaced by a length note. */
export function redactPayload(value: unknown): unknown {
  return walk(value, 0, new Set());
}

/** `text` cut to `limit` characters (0 = no limit) with a marker naming the original length. */
export function truncate(text: string, limit: number): string {
  if (limit <= 0 || text.length <= limit) return text;
  let end = limit;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--; // never split a surrogate pair
  return `${text.slice(0, end)}…[truncated, ${text.length} chars]`;
}

/** The logged form of a body: redacted, JSON-serialised, truncated to `limit` characters (0 = no truncation). */
export function renderPayload(value: unknown, limit: number): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(redactPayload(value));
  } catch (err) {
    text = `[unserialisable: ${err instanceof Error ? err.message : String(err)}]`;
  }
  return truncate(text ?? "undefined", limit);
}

export interface PayloadLogConfig {
  /** A2A_LOG_PAYLOADS */
  logPayloads: boolean;
  /** A2A_LOG_BODY_LIMIT */
  logBodyLimit: number;
}

type DebugLogger = Pick<Logger, "debug">;

/** Whether bodies are logged at all: A2A_LOG_PAYLOADS and a logger at debug (or trace). */
export function payloadLoggingActive(config: PayloadLogConfig, log: Pick<Logger, "isLevelEnabled">): boolean {
  return config.logPayloads && log.isLevelEnabled("debug");
}

/** The payload logger of `log`, or undefined when payload logging is not active (decided once, here). */
export function payloadLog(config: PayloadLogConfig, log: Pick<Logger, "debug" | "isLevelEnabled">): PayloadLog | undefined {
  return payloadLoggingActive(config, log) ? new PayloadLog(log, config.logBodyLimit) : undefined;
}

/** A JSON-RPC call's answer as the endpoint built it (null for a notification, `stream` for an SSE answer). */
export type RpcOutcome = { result: unknown } | { error: unknown } | { stream: unknown } | null;

export class PayloadLog {
  constructor(
    readonly log: DebugLogger,
    /** A2A_LOG_BODY_LIMIT (0 = no truncation). */
    readonly limit: number,
  ) {}

  render(value: unknown): string {
    return renderPayload(value, this.limit);
  }

  /** One JSON-RPC call of a request (or of a batch) once answered: method, id, params and result or error. */
  rpcCall(request: unknown, outcome: RpcOutcome): void {
    const req = request !== null && typeof request === "object" && !Array.isArray(request) ? (request as Record<string, unknown>) : undefined;
    if (req === undefined) {
      this.log.debug({ request: this.render(request), ...this.#outcome(outcome) }, "jsonrpc call");
      return;
    }
    const method = typeof req.method === "string" ? req.method.slice(0, 256) : undefined;
    const id = outcome !== null && "id" in outcome ? (outcome as { id: unknown }).id : req.id;
    if (isPrivateMethod(method)) {
      this.log.debug({ method, id, body: SUPPRESSED }, "jsonrpc call");
      return;
    }
    this.log.debug(
      {
        method,
        id,
        ...(outcome === null ? { notification: true } : {}),
        ...(req.params === undefined ? {} : { params: this.render(req.params) }),
        ...this.#outcome(outcome),
      },
      "jsonrpc call",
    );
  }

  /** A JSON-RPC request whose body is not JSON: its size (the text cannot be redacted) and the error answered. */
  rpcUnparsed(size: number, error: unknown): void {
    this.log.debug({ request: `[not JSON, ${size} bytes]`, error: this.render(error) }, "jsonrpc call");
  }

  /** A REST route call: the request body (if any) and the response body, or the error answered, or a stream. */
  restCall(route: string, path: string, method: string | undefined, request: unknown, response: { body: unknown } | { error: unknown } | { stream: true }): void {
    if (isPrivateMethod(method)) {
      this.log.debug({ route, path, method, body: SUPPRESSED }, "rest call");
      return;
    }
    this.log.debug(
      {
        route,
        path,
        ...(method === undefined ? {} : { method }),
        ...(request === undefined ? {} : { request: this.render(request) }),
        ...("stream" in response ? { response: STREAM_BODY } : "error" in response ? { error: this.render(response.error) } : { response: this.render(response.body) }),
      },
      "rest call",
    );
  }

  /** One upstream OpenCode event frame as a preview (its data rendered and truncated like a body; a string: not JSON). */
  event(type: string | undefined, sessionId: string | undefined, directory: string | undefined, data: unknown): void {
    this.log.debug(
      {
        ...(type === undefined ? {} : { type }),
        ...(sessionId === undefined ? {} : { sessionId }),
        ...(directory === undefined ? {} : { directory }),
        // A frame that is not JSON cannot be redacted: only its size is logged.
        preview: typeof data === "string" ? `[not JSON, ${data.length} chars]` : this.render(data),
      },
      "opencode event",
    );
  }

  #outcome(outcome: RpcOutcome): Record<string, string> {
    if (outcome === null) return {};
    if ("stream" in outcome) return { result: STREAM_BODY };
    if ("error" in outcome) return { error: this.render(outcome.error) };
    return { result: this.render(outcome.result) };
  }
}
