// Optional OpenTelemetry export (OTLP over HTTP, JSON encoding): on only when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set. The SDK is imported here, lazily, by startSpanExport(); with export off this
// file is never loaded. Spans: one SERVER span per request, one CLIENT span per OpenCode call and per push delivery,
// in the trace the request's `traceparent` named (or a new one). The SDK makes the span ids; the W3C headers sent
// upstream name the client span as the parent. Nothing is registered globally (no context manager, no global
// provider): the gateway hands its contexts to the tracer explicitly.
import type { Logger } from "pino";
import { cleanTracestate, formatTraceparent, parseTraceparent, TraceContext } from "./context.js";
import { setSpanExport, type SpanAttributes, type SpanExport } from "./index.js";

export interface SpanExportOptions {
  /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is). */
  tracesEndpoint?: string | undefined;
  /** OTEL_EXPORTER_OTLP_ENDPOINT (`/v1/traces` is appended). */
  endpoint?: string | undefined;
  serviceVersion: string;
}

/** The OTLP traces URL the options name, or undefined (export off). */
export function tracesUrl(options: Pick<SpanExportOptions, "tracesEndpoint" | "endpoint">): string | undefined {
  if (options.tracesEndpoint) return options.tracesEndpoint;
  if (options.endpoint) return `${options.endpoint.replace(/\/+$/, "")}/v1/traces`;
  return undefined;
}

const clean = (attributes: SpanAttributes): Record<string, string | number | boolean> => {
  const out: Record<string, string | number | boolean> = {};
  for (const key in attributes) {
    const v = attributes[key];
    if (v !== undefined) out[key] = v;
  }
  return out;
};

/**
 * Loads the SDK and installs the export (see ./index.ts setSpanExport). Resolves with its stop function (flushes
 * what is buffered), or undefined when no endpoint is configured.
 */
export async function startSpanExport(options: SpanExportOptions, log: Pick<Logger, "info" | "warn">): Promise<(() => Promise<void>) | undefined> {
  const url = tracesUrl(options);
  if (url === undefined) return undefined;
  const [api, base, resources, otlp] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/exporter-trace-otlp-http"),
  ]);
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the defaults.
  const resource = resources
    .resourceFromAttributes({ "service.name": "opencode-a2a", "service.version": options.serviceVersion })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new base.BasicTracerProvider({
    resource,
    spanProcessors: [new base.BatchSpanProcessor(new otlp.OTLPTraceExporter({ url }))],
  });
  const tracer = provider.getTracer("opencode-a2a", options.serviceVersion);
  const { SpanKind, SpanStatusCode, ROOT_CONTEXT, trace, TraceFlags } = api;

  const parentContext = (traceId: string, spanId: string, sampled: boolean, remote: boolean, tracestate: string | undefined) =>
    trace.setSpanContext(ROOT_CONTEXT, {
      traceId,
      spanId,
      traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      isRemote: remote,
      ...(tracestate === undefined ? {} : { traceState: api.createTraceState(tracestate) }),
    });

  const exporter: SpanExport = {
    server(traceparent, tracestate, attributes) {
      const parent = parseTraceparent(traceparent);
      const state = parent === undefined ? undefined : cleanTracestate(tracestate);
      const span = tracer.startSpan(
        "request",
        { kind: SpanKind.SERVER, attributes: clean(attributes) },
        parent === undefined ? ROOT_CONTEXT : parentContext(parent.traceId, parent.spanId, parent.sampled, true, state),
      );
      const sc = span.spanContext();
      const ctx = new TraceContext(sc.traceId, sc.spanId, (sc.traceFlags & TraceFlags.SAMPLED) !== 0, state, parent?.spanId);
      return Object.assign(ctx, {
        span: {
          end(name: string, attrs: SpanAttributes, failed: boolean) {
            span.updateName(name);
            span.setAttributes(clean(attrs));
            if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
            span.end();
          },
        },
      });
    },
    client(parent, name, attributes) {
      const span = tracer.startSpan(
        name,
        { kind: SpanKind.CLIENT, attributes: clean(attributes) },
        parentContext(parent.traceId, parent.spanId, parent.sampled, false, parent.tracestate),
      );
      const sc = span.spanContext();
      return {
        traceparent: formatTraceparent(sc.traceId, sc.spanId, (sc.traceFlags & TraceFlags.SAMPLED) !== 0),
        end(error?: string, attrs?: SpanAttributes) {
          if (attrs !== undefined) span.setAttributes(clean(attrs));
          if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
          span.end();
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
  setSpanExport(exporter);
  log.info({ endpoint: url }, "OpenTelemetry trace export on (OTLP/HTTP JSON)");
  return async () => {
    setSpanExport(undefined);
    try {
      await provider.shutdown();
    } catch (err) {
      log.warn({ err: err instanceof Error ? err.message : String(err) }, "OpenTelemetry export: the last spans could not be sent");
    }
  };
}
