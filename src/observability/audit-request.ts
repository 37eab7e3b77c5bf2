// The audit entries of one answered request: one entry per call — every call of a JSON-RPC batch, the operation of a
// REST route, or the request itself when it never reached a call (401, 404, a refused Host...). No bodies and no
// secrets: the method, the task/context/session ids the call named or produced, the outcome. Both HTTP doors hand
// their answered requests here (through src/pipeline/request.ts); the entries are built after the answer is on its
// way (setImmediate), off the request's latency.
import type { ProtocolLine } from "../contract/catalog.js";
import { auditSubject } from "./audit-subject.js";
import type { AuditRecorder, AuditRecordInput } from "./audit.js";

/** One call the audit log records: a JSON-RPC call (several per batch) or the REST route's operation. */
export interface AuditCall {
  method: string;
  params: unknown;
  result?: unknown;
  /** The error's reason when the call failed. */
  error?: string;
}

/** What is known of an answered request. */
export interface AuditedRequest {
  /** The authenticated caller (src/auth's Principal), if the request got that far. */
  principal: { id: string; credentialId: string } | undefined;
  jsonrpc: boolean;
  line: ProtocolLine;
  status: number;
  durationMs: number;
  clientIp: string | undefined;
  /** The entry's method when no call was reached: the route (`VERB /path`) or the request line. */
  requestMethod: string;
  /** The reason of the error the request was answered with, if any. */
  errorReason: string | undefined;
  calls: AuditCall[];
  /** The request's W3C trace id. */
  traceId: string | undefined;
}

// Requests answered in the same turn of the event loop share one setImmediate: the entries are still built after
// the answers are on their way, in the order the requests were answered, without a timer per request.
let queued: { recorder: AuditRecorder; req: AuditedRequest }[] = [];

/**
 * Builds the entries of every request answered so far (the setImmediate would do it on the next turn). A reader of
 * the audit log calls it before flushing the recorder, so that it sees the calls answered just before its read.
 */
export function buildQueuedAudit(): void {
  buildQueued();
}

function buildQueued(): void {
  if (queued.length === 0) return;
  const batch = queued;
  queued = [];
  for (const { recorder, req } of batch) buildEntries(recorder, req);
}

/** Queues the request's entries; they are built on the next turn of the event loop. */
export function recordAudit(recorder: AuditRecorder, req: AuditedRequest): void {
  if (queued.length === 0) setImmediate(buildQueued);
  queued.push({ recorder, req });
}

function buildEntries(recorder: AuditRecorder, req: AuditedRequest): void {
  const principal = req.principal?.id ?? null;
  const credential_id = req.principal?.credentialId ?? null;
  const transport = req.jsonrpc ? ("jsonrpc" as const) : ("rest" as const);
  const duration_ms = Math.round(req.durationMs * 1000) / 1000;
  /** One entry: the request's members, then the call's method and outcome (the recorder sets the stored order). */
  const entry = (method: string, error: string | undefined, failed: boolean): AuditRecordInput => {
    const e: AuditRecordInput = {
      principal,
      credential_id,
      transport,
      line: req.line,
      status: req.status,
      duration_ms,
      client_ip: req.clientIp,
      method,
      outcome: failed ? "error" : "ok",
    };
    if (error !== undefined) e.error_reason = error;
    if (req.traceId !== undefined) e.trace_id = req.traceId;
    return e;
  };
  if (req.calls.length === 0) {
    recorder.record(entry(req.requestMethod, req.errorReason, req.status >= 400 || req.errorReason !== undefined));
    return;
  }
  for (const call of req.calls) {
    // A REST call that failed has its reason; a JSON-RPC call its own, whatever the HTTP status.
    const error = call.error ?? (req.jsonrpc ? undefined : req.errorReason);
    const subject = auditSubject(call.params, call.result);
    const e = entry(call.method, error, error !== undefined);
    if (subject.task_id !== undefined) e.task_id = subject.task_id;
    if (subject.context_id !== undefined) e.context_id = subject.context_id;
    if (subject.session_id !== undefined) e.session_id = subject.session_id;
    recorder.record(e);
  }
}
