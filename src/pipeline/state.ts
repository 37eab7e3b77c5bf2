// What one HTTP request carries from door to answer: set by the pipeline's steps (src/pipeline/steps.ts), read by
// the transports, the audit log, the request log and the request's span. Both doors create it (openRequest).
import type { ProtocolLine, RouteEntry } from "../contract/catalog.js";
import type { Principal } from "../auth/index.js";
import type { AuditCall } from "../observability/audit-request.js";
import type { ExtensionActivation } from "../protocol/extensions.js";
import type { TraceContext } from "../tracing/index.js";

export type { AuditCall };

/** Per-request state shared by the pipeline, the transports and the routes (ctx.state in the Koa app). */
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
  /** The calls the request made, filled by the transports (the audit log, the span's name). */
  calls: AuditCall[];
  /** The reason of the error the request was answered with (set by the door that answered it). */
  errorReason?: string;
  /** Leave the request out of the audit log (a failed authentication beyond its address's sample). */
  auditSkip?: boolean;
  /** The request's W3C trace context (traceparent / tracestate), set first thing by both doors. */
  trace: TraceContext;
}
