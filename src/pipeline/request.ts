// A request's beginning and end, the same at both doors: openRequest() gives it its state and trace context before
// the first step; closeRequest(), once it is answered, hands it to the audit log (one entry per call, built off the
// request's latency), ends its span and writes its request log line.
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";
import type { ProtocolLine } from "../contract/catalog.js";
import type { AuditRecorder } from "../observability/audit.js";
import { recordAudit } from "../observability/audit-request.js";
import { beginRequest } from "../tracing/index.js";
import type { RequestState } from "./state.js";
import { endRequestSpan } from "./trace.js";

/** The state of a request that just arrived: the deployment's default line until the version step negotiates one. */
export function openRequest(method: string, path: string, headers: IncomingHttpHeaders, defaultLine: ProtocolLine): RequestState {
  return {
    line: defaultLine,
    explicitVersion: false,
    jsonrpc: method === "POST" && path === "/",
    calls: [],
    trace: beginRequest(headers.traceparent, headers.tracestate, { "http.request.method": method, "url.path": path }),
  };
}

/** Where answered requests go. */
export interface RequestRecords {
  /** Absent when the audit log is off (A2A_AUDIT_ENABLED=false). */
  recorder: AuditRecorder | undefined;
  log: Logger;
}

/** How a request was answered. */
export interface Answered {
  method: string;
  path: string;
  status: number;
  /** The client's address (the connection's peer). */
  address: string;
  /** From the request's arrival to its answer (to its first byte, for a stream). */
  durationMs: number;
}

/**
 * Records an answered request: its audit entries (not for public routes, nor for a refusal the address guard leaves
 * out), its span, its log line (info).
 */
export function closeRequest(records: RequestRecords, state: RequestState, answered: Answered): void {
  const { method, path, status, durationMs } = answered;
  if (records.recorder !== undefined && state.route?.public !== true && state.auditSkip !== true)
    recordAudit(records.recorder, {
      principal: state.principal,
      jsonrpc: state.jsonrpc,
      line: state.line,
      status,
      durationMs,
      clientIp: answered.address,
      requestMethod: state.route ? `${state.route.verb} ${state.route.path}` : `${method} ${path}`,
      errorReason: state.errorReason,
      calls: state.calls,
      traceId: state.trace.traceId,
    });
  endRequestSpan(state, method, path, status);
  if (records.log.isLevelEnabled("info"))
    records.log.info(
      { method, path, status, ms: Math.round(durationMs * 10) / 10, line: state.line, trace_id: state.trace.traceId, span_id: state.trace.spanId },
      "request",
    );
}
