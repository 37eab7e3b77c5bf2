// The answer to a request that failed before (or outside) its calls, in its line's and transport's shape, and the
// logging such a failure deserves. Both doors answer their failures with these.
import type { Logger } from "pino";
import { A2AError, isExpectedError, toA2AError } from "../contract/errors.js";
import { jsonRpcError, restError } from "../protocol/errors.js";
import type { ProtocolLine } from "../contract/catalog.js";
import { ClientAbortedError } from "./body.js";
import type { RequestState } from "./state.js";

/**
 * The HTTP statuses that refuse the HTTP request itself rather than answer a call: 401 (no valid credentials), 403
 * (here: a refused Origin), 413 (body too large), 415 (not a JSON body), 421 (a Host not served here), 429 (an
 * address or credential over its rate). The contract has no "transport-level" flag on its errors, so this is read
 * from what it does declare: every error's HTTP status (generated/contract/catalog.json `errors[line][].http`, or the
 * status the error was raised with, as the body check raises CONTENT_TYPE_NOT_SUPPORTED with 415). A failure that
 * reaches the JSON-RPC endpoint's door with one of these keeps it; every other one there — a refused A2A-Version, a
 * body nested too deep, an unreadable body, an internal failure (400 and 500 in the contract) — is a JSON-RPC error
 * with id null on HTTP 200. (The 403 and 429 of a call — scope, stream slots — are answered by the endpoint per call
 * and never reach the door.)
 */
const HTTP_REFUSALS = new Set([401, 403, 413, 415, 421, 429]);

/** What a door writes for a failed request. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * The answer to a failed request: JSON-RPC answers an error response with id null on HTTP 200, unless the failure
 * refused the HTTP request itself (HTTP_REFUSALS); REST answers the line's error shape with the error's status.
 */
export function errorAnswer(err: A2AError, line: ProtocolLine, jsonrpc: boolean): ErrorAnswer {
  const shaped = restError(line, err);
  if (!jsonrpc) return shaped;
  return {
    status: HTTP_REFUSALS.has(shaped.status) ? shaped.status : 200,
    headers: shaped.headers,
    body: { jsonrpc: "2.0", id: null, error: jsonRpcError(line, err) },
  };
}

/** errorAnswer() for the request's line and transport; the error's reason is kept for the audit log and the span. */
export function failureAnswer(err: A2AError, state: RequestState): ErrorAnswer {
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
