// The audit log's edge: after the whole request is answered (this middleware sits outside the error boundary, so the
// status is final), one entry per call — every call of a JSON-RPC batch, the operation of a REST route, or the
// request itself when it never reached a call (401, 404, a refused Host...). Public routes are not recorded. No
// bodies and no secrets: the method, the task/context/session ids the call named or produced, the outcome. The
// entries are built after the answer is on its way (setImmediate), off the request's latency.
import type { Context, Next } from "koa";
import { auditSubject, type AuditRecorder } from "../../audit/index.js";
import type { AuditCall, RequestState } from "../state.js";

export function auditTrail(recorder: AuditRecorder) {
  return async function audit(ctx: Context, next: Next): Promise<void> {
    const started = performance.now();
    const state = ctx.state as RequestState;
    const calls: AuditCall[] = [];
    state.calls = calls;
    try {
      await next();
    } finally {
      if (state.route?.public !== true) {
        const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
        const status = ctx.status;
        const common = {
          principal: state.principal?.id ?? null,
          credential_id: state.principal?.credentialId ?? null,
          transport: state.jsonrpc ? ("jsonrpc" as const) : ("rest" as const),
          line: state.line,
          status,
          duration_ms: durationMs,
          client_ip: ctx.request.ip,
        };
        const method = calls.length === 0 ? (state.route ? `${state.route.verb} ${state.route.path}` : `${ctx.method} ${ctx.path}`) : "";
        const { errorReason, jsonrpc } = state;
        setImmediate(() => {
          if (calls.length === 0) {
            const failed = status >= 400 || errorReason !== undefined;
            recorder.record({
              ...common,
              method,
              outcome: failed ? "error" : "ok",
              ...(errorReason !== undefined ? { error_reason: errorReason } : {}),
            });
          } else
            for (const call of calls) {
              // A REST call that failed has its reason; a JSON-RPC call its own, whatever the HTTP status.
              const error = call.error ?? (jsonrpc ? undefined : errorReason);
              recorder.record({
                ...common,
                ...auditSubject(call.params, call.result),
                method: call.method,
                outcome: error !== undefined ? "error" : "ok",
                ...(error !== undefined ? { error_reason: error } : {}),
              });
            }
        });
      }
    }
  };
}
