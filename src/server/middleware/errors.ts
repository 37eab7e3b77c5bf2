// Outermost error boundary: every failure leaves as the error shape of the request's line and transport.
import type { Context, Next } from "koa";
import type { Logger } from "pino";
import { A2AError, isExpectedError, toA2AError } from "../../contract/errors.js";
import { jsonRpcError, restError } from "../../protocol/errors.js";
import type { ProtocolLine } from "../../contract/catalog.js";
import type { RequestState } from "../../pipeline/state.js";
import { ClientAbortedError } from "./body.js";

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
 * The answer to a request that failed before (or outside) its calls, in the line's and transport's shape: JSON-RPC
 * answers an error response with id null on HTTP 200, unless the failure is transport-level.
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

export function sendError(ctx: Context, err: A2AError): void {
  const state = ctx.state as RequestState;
  state.errorReason = err.reason;
  const answer = errorAnswer(err, state.line, state.jsonrpc);
  for (const [k, v] of Object.entries(answer.headers)) ctx.set(k, v);
  ctx.status = answer.status;
  ctx.body = answer.body;
}

/**
 * The typed error a failed request is answered with, logged as it deserves (shared by the Koa boundary and the
 * JSON-RPC edge): a client that went away mid-body is no gateway failure (debug, PARSE_ERROR); an unexpected error
 * is logged as one.
 */
export function failureOf(raw: unknown, log: Pick<Logger, "debug" | "error">, path: string): A2AError {
  if (raw instanceof ClientAbortedError) {
    log.debug({ err: raw, path }, "client aborted the request");
    return new A2AError("PARSE_ERROR", "The request body could not be read completely");
  }
  if (!isExpectedError(raw)) log.error({ err: raw, path }, "unhandled error");
  return toA2AError(raw);
}

export function errorBoundary(log: Logger) {
  return async function errors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
    } catch (raw) {
      const err = failureOf(raw, log, ctx.path);
      if (ctx.headerSent || !ctx.writable) return;
      sendError(ctx, err);
    }
  };
}
