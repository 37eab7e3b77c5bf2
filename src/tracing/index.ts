// Tracing: the W3C trace context of every request (./context.ts), carried to the OpenCode calls and push deliveries
// made for it, and — only when an OTLP endpoint is configured — exported as OpenTelemetry spans (./otel.ts, loaded
// with import() then and never otherwise). The transports and clients only call the functions below; with export off
// they cost a header parse and two random ids per request, nothing per call.
import { incomingTrace, TraceContext } from "./context.js";

export { TraceContext, incomingTrace, parseTraceparent, formatTraceparent, newSpanId, newTraceId } from "./context.js";

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** A request's server span (export on): ended once the answer is known. */
export interface ServerSpan {
  end(name: string, attributes: SpanAttributes, failed: boolean): void;
}

/** A call's client span (export on): its `traceparent` names it as the parent of the callee's work. */
export interface ClientSpan {
  readonly traceparent: string;
  end(error?: string, attributes?: SpanAttributes): void;
}

/** What ./otel.ts plugs in when export is on. */
export interface SpanExport {
  /** The request's context (the SDK's span ids, the caller's trace id) and its open server span. */
  server(traceparent: string | string[] | undefined, tracestate: string | string[] | undefined, attributes: SpanAttributes): TraceContext & { span: ServerSpan };
  client(parent: TraceContext, name: string, attributes: SpanAttributes): ClientSpan;
  shutdown(): Promise<void>;
}

let exporter: SpanExport | undefined;

/** Installs (or, with undefined, removes) the span export. */
export function setSpanExport(next: SpanExport | undefined): void {
  exporter = next;
}

export function spanExport(): SpanExport | undefined {
  return exporter;
}

/** The trace context of an incoming request (with its server span when export is on). */
export function beginRequest(traceparent: string | string[] | undefined, tracestate: string | string[] | undefined, attributes: SpanAttributes): TraceContext {
  return exporter === undefined ? incomingTrace(traceparent, tracestate) : exporter.server(traceparent, tracestate, attributes);
}

/** Ends the request's server span, if it has one (export on). */
export function endRequest(trace: TraceContext | undefined, name: string, attributes: SpanAttributes, failed: boolean): void {
  const span = (trace as { span?: ServerSpan } | undefined)?.span;
  span?.end(name, attributes, failed);
}

/** A client span for an outgoing call made under `parent` (export on), else undefined: send `parent.traceparent`. */
export function beginCall(parent: TraceContext, name: string, attributes: SpanAttributes): ClientSpan | undefined {
  return exporter?.client(parent, name, attributes);
}

/** The W3C headers of an outgoing call: `traceparent` (the call's span, else the request's) and `tracestate`. */
export function traceHeaders(parent: TraceContext, span: ClientSpan | undefined): Record<string, string> {
  const headers: Record<string, string> = { traceparent: span?.traceparent ?? parent.traceparent };
  if (parent.tracestate !== undefined) headers.tracestate = parent.tracestate;
  return headers;
}

/** Log bindings of a trace context. */
export function traceFields(trace: TraceContext): { trace_id: string; span_id: string } {
  return { trace_id: trace.traceId, span_id: trace.spanId };
}

/**
 * A task's routing carrying the trace context of the request that started it. The routing object is what the task
 * runtime and the session resolver spread into the options of every OpenCode call they make for the task
 * (`{ ...routing, sessionId }`), so the trace reaches each of them (prompt_async in the background turn included)
 * without a parameter threaded through every method. It is never serialised (TraceContext.toJSON).
 */
export function withTrace<R extends object>(routing: R, trace: TraceContext | undefined): R {
  return trace === undefined ? routing : ({ ...routing, trace } as R);
}

/** The trace context a routing object carries (see withTrace). */
export function traceOfRouting(routing: object | undefined): TraceContext | undefined {
  const trace = (routing as { trace?: unknown } | undefined)?.trace;
  return trace instanceof TraceContext ? trace : undefined;
}
