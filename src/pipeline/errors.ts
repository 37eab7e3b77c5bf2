// The answer to a request that failed before (or outside) its calls, in its line's and transport's shape, and the
// logging such a failure deserves. Both doors answer their failures with these.
import type { Logger } from "pino";
import { A2AError, isExpectedError, toA2AError } from "../contract/errors.js";
import { jsonRpcError, restError } from "../protocol/errors.js";
import type { ProtocolLine } from "../contract/catalog.js";
import { ClientAbortedError } from "./body.js";
import type { RequestState } from "./state.js";

/** Errors that keep their HTTP status even on the JSON-RPC endpoint (they happen before JSON-RPC processing). */
const TRANSPORT_LEVEL = new Set([
  "UNAUTHENTICATED",
  "PAYLOAD_TOO_LARGE",
  "RATE_LIMITED",
  "CONTENT_TYPE_NOT_SUPPORTED",
  "HOST_NOT_ALLOWED",
  "ORIGIN_NOT_ALLOWED",
]);

/**
 * The answer to a failed request: JSON-RPC answers an error response with id null on HTTP 200, unless the failure is
 * transport-level; REST answers the line's error shape with the error's status.
 */
export function errorAnswer(err: A2AError, line: ProtocolLine, jsonrpc: boolean): { status: number; headers: Record<string, string>; body: unknown } {
  const shaped = restError(line, err);
  if (!jsonrpc) return shaped;
  return {
    status: TRANSPORT_LEVEL.has(err.reason) ? shaped.status : 200,
    headers: shaped.headers,
    body: { jsonrpc: "2.0", id: null, error: jsonRpcError(line, err) },
  };
}

/** errorAnswer() for the request's line and transport; the error's reason is kept for the audit log and the span. */
export function failureAnswer(err: A2AError, state: RequestState): { status: number; headers: Record<string, string>; body: unknown } {
  state.errorReason = err.reason;
  return errorAnswer(err, state.line, state.jsonrpc);
}

/**
 * The typed error a failed request is answered with, logged as it deserves: a client that went away mid-body is no
 * gateway failure (debug, PARSE_ERROR); an unexpected error is logged as one.
 */
export function failureOf(raw: unknown, log: Pick<Logger, "debug" | "error">, path: string): A2AError {
  if (raw instanceof ClientAbortedError) {
    log.debug({ err: raw, path }, "client aborted the request");
    return new A2AError("PARSE_ERROR", "The request body could not be read completely");
  }
  if (!isExpectedError(raw)) log.error({ err: raw, path }, "unhandled error");
  return toA2AError(raw);
}
