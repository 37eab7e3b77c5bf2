// Request bodies: size limit (413, checked on Content-Length and on the bytes actually read), media type (415) and
// JSON nesting depth (PARSE_ERROR) before any routing; the raw bytes are kept on the request's state (rawBody).
import type { Readable } from "node:stream";
import { A2AError } from "../contract/errors.js";
import type { Exchange, Step } from "./exchange.js";

const JSON_TYPES = /^application\/(json|a2a\+json|[\w.-]+\+json)$/i;

/**
 * Deepest array/object nesting a JSON body may have. JSON.parse copes with any depth, but everything after it
 * (key normalization, validators, JSON.stringify of stored metadata and of error data) recurses, and a body of a
 * few KiB of `[` reaches the stack limit: INTERNAL_ERROR instead of a typed 4xx. Real A2A payloads nest < 20 deep.
 */
export const MAX_JSON_DEPTH = 128;

/** True when the JSON text nests arrays/objects deeper than `max` (brackets inside strings do not count). */
export function nestsDeeperThan(raw: Buffer, max: number): boolean {
  if (raw.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next byte is escaped (UTF-8 continuation bytes are never ASCII)
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * The client went away while its body was being read (reset, aborted upload). Nothing can be answered on that
 * connection; the door that answers failures drops it quietly instead of logging an internal failure.
 */
export class ClientAbortedError extends Error {
  constructor(cause: Error) {
    super(`client aborted the request body: ${cause.message}`, { cause });
    this.name = "ClientAbortedError";
  }
}

/** 413; the connection closes after the answer (the rest of the body is not read). */
function tooLarge(limit: number): A2AError {
  return new A2AError("PAYLOAD_TOO_LARGE", `Request body exceeds ${limit} bytes`, { limit_bytes: limit }, { headers: { Connection: "close" } });
}

function readLimited(req: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      // Stop reading (nothing more is buffered) and answer 413; the connection closes after the response.
      cleanup();
      req.pause();
      reject(tooLarge(limit));
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new ClientAbortedError(err));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

const WITH_BODY = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * The body step: the body of a request whose method has one (POST, PUT, PATCH, DELETE), checked — size (on
 * Content-Length and on the bytes read), JSON media type, nesting depth — and kept as `state.rawBody`.
 */
export function readBody(limit: number): Step {
  return (ex) => (WITH_BODY.has(ex.method) ? readRequestBody(ex, limit) : undefined);
}

async function readRequestBody(ex: Exchange, limit: number): Promise<void> {
  const headers = ex.headers;
  const declared = Number(headers["content-length"] || "NaN");
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const raw = await readLimited(ex.body, limit);
  if (raw.length > 0) {
    const type = ((headers["content-type"] ?? "").split(";")[0] ?? "").trim();
    if (!JSON_TYPES.test(type))
      throw new A2AError(
        "CONTENT_TYPE_NOT_SUPPORTED",
        `Request bodies must be JSON (application/json), not ${JSON.stringify(type || "(none)")}`,
        { content_type: type || null, supported: ["application/json", "application/a2a+json"] },
        { httpStatus: 415 },
      );
    if (nestsDeeperThan(raw, MAX_JSON_DEPTH))
      throw new A2AError("PARSE_ERROR", `Request body nests arrays/objects deeper than ${MAX_JSON_DEPTH} levels`, {
        max_depth: MAX_JSON_DEPTH,
      });
  }
  ex.state.rawBody = raw;
}
