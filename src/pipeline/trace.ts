// The server span of a request (OpenTelemetry export on): named and described once the request is answered
// (closeRequest, at both doors). With export off this is one check per request.
import { endRequest, spanExport, type SpanAttributes } from "../tracing/index.js";
import type { RequestState } from "./state.js";

/** The span's name (the A2A method, or the route) and its http / rpc / a2a attributes. */
export function requestSpan(state: RequestState, method: string, path: string, status: number): { name: string; attributes: SpanAttributes } {
  const calls = state.calls;
  const call = calls.length === 1 ? calls[0]!.method : undefined;
  const route = state.route === undefined ? `${method} ${path}` : `${state.route.verb} ${state.route.path}`;
  return {
    name: state.jsonrpc ? (call ?? (calls.length > 1 ? "jsonrpc batch" : route)) : route,
    attributes: {
      "http.request.method": method,
      "url.path": path,
      "http.response.status_code": status,
      "rpc.system": state.jsonrpc ? "jsonrpc" : undefined,
      "rpc.method": state.jsonrpc ? call : undefined,
      "a2a.method": calls.length > 0 ? calls.map((c) => c.method).join(",") : undefined,
      "a2a.protocol.version": state.line,
      "a2a.principal": state.principal?.id,
      "error.type": state.errorReason,
    },
  };
}

/** Ends the request's server span (a 5xx marks it failed); nothing when export is off. */
export function endRequestSpan(state: RequestState, method: string, path: string, status: number): void {
  if (spanExport() === undefined) return;
  const span = requestSpan(state, method, path, status);
  endRequest(state.trace, span.name, span.attributes, status >= 500);
}
