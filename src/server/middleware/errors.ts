// Outermost error boundary: every failure leaves as the error shape of the request's line and transport.
import type { Context, Next } from "koa";
import type { Logger } from "pino";
import { A2AError, isExpectedError, toA2AError } from "../../contract/errors.js";
import { jsonRpcError, restError } from "../../protocol/errors.js";
import type { RequestState } from "../state.js";
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

export function sendError(ctx: Context, err: A2AError): void {
  const state = ctx.state as RequestState;
  state.errorReason = err.reason;
  const shaped = restError(state.line, err);
  for (const [k, v] of Object.entries(shaped.headers)) ctx.set(k, v);
  if (state.jsonrpc) {
    ctx.status = TRANSPORT_LEVEL.has(err.reason) ? shaped.status : 200;
    ctx.body = { jsonrpc: "2.0", id: null, error: jsonRpcError(state.line, err) };
  } else {
    ctx.status = shaped.status;
    ctx.body = shaped.body;
  }
}

export function errorBoundary(log: Logger) {
  return async function errors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
    } catch (raw) {
      if (raw instanceof ClientAbortedError) {
        // The client reset the connection mid-body: usually nobody is left to answer, and it is not a gateway failure.
        log.debug({ err: raw, path: ctx.path }, "client aborted the request");
        if (ctx.headerSent || !ctx.writable) return;
        sendError(ctx, new A2AError("PARSE_ERROR", "The request body could not be read completely"));
        return;
      }
      const err = toA2AError(raw);
      if (!isExpectedError(raw)) log.error({ err: raw, path: ctx.path }, "unhandled error");
      if (ctx.headerSent || !ctx.writable) return;
      sendError(ctx, err);
    }
  };
}
