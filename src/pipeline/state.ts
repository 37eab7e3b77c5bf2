import type { ProtocolLine, RouteEntry } from "../contract/catalog.js";
import type { Principal } from "../auth/index.js";
import type { ExtensionActivation } from "../protocol/extensions.js";
import type { TraceContext } from "../tracing/index.js";

/** One call the audit log records: a JSON-RPC call (several per batch) or the REST route's operation. */
export interface AuditCall {
  method: string;
  params: unknown;
  result?: unknown;
  /** The error's reason when the call failed. */
  error?: string;
}

/** Per-request state shared by the middleware chain (ctx.state). */
export interface RequestState {
  line: ProtocolLine;
  explicitVersion: boolean;
  /** True for the JSON-RPC endpoint: errors are shaped as JSON-RPC responses. */
  jsonrpc: boolean;
  /** The catalog route this request matched (undefined: no route, the answer is 404/405). */
  route?: RouteEntry | undefined;
  principal?: Principal;
  rawBody?: Buffer;
  /** The extensions the request asked for and activated (A2A-Extensions / X-A2A-Extensions). */
  extensions?: ExtensionActivation;
  /** Filled by the transports for the audit log. */
  calls?: AuditCall[];
  /** The reason of the error the request was answered with (set by the error boundary). */
  errorReason?: string;
  /** Leave the request out of the audit log (a failed authentication beyond its address's sample). */
  auditSkip?: boolean;
  /** The request's W3C trace context (traceparent / tracestate), set first thing by both doors. */
  trace?: TraceContext;
}
