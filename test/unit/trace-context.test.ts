// W3C Trace Context Level 1 parsing and ids (src/tracing/context.ts), and the routing that carries a task's trace.
import { describe, expect, it } from "vitest";
import { incomingTrace, newSpanId, newTraceId, parseTraceparent, TraceContext, traceOfRouting, withTrace } from "../../src/tracing/index.js";
import { cleanTracestate } from "../../src/tracing/context.js";
import { tracesUrl } from "../../src/tracing/otel.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

describe("parseTraceparent", () => {
  it("takes a valid version 00 header: trace id, parent id, sampled flag", () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: false });
    // Unknown flag bits are ignored; only the sampled bit counts.
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-fe`)?.sampled).toBe(false);
  });

  it("takes a future version's known fields, with or without more after a dash", () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01`)?.traceId).toBe(TRACE);
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-comes-next`)?.traceId).toBe(TRACE);
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01x`)).toBeUndefined();
  });

  it.each([
    ["absent", undefined],
    ["repeated (node:http joins them)", `00-${TRACE}-${SPAN}-01, 00-${TRACE}-${SPAN}-01`],
    ["an array", [`00-${TRACE}-${SPAN}-01`]],
    ["version ff", `ff-${TRACE}-${SPAN}-01`],
    ["version 00 with a suffix", `00-${TRACE}-${SPAN}-01-00`],
    ["upper-case hex", `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ["all-zero trace id", `00-${"0".repeat(32)}-${SPAN}-01`],
    ["all-zero parent id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["short trace id", `00-${TRACE.slice(1)}-${SPAN}-01`],
    ["padded", ` 00-${TRACE}-${SPAN}-01`],
    ["garbage", "hello"],
  ])("refuses %s", (_what, header) => {
    expect(parseTraceparent(header as string | string[] | undefined)).toBeUndefined();
  });
});

describe("incomingTrace", () => {
  it("keeps a valid caller's trace id and sampled flag under a new span id; passes tracestate on", () => {
    const t = incomingTrace(`00-${TRACE}-${SPAN}-00`, "vendor=1,other=2");
    expect(t.traceId).toBe(TRACE);
    expect(t.parentSpanId).toBe(SPAN);
    expect(t.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(t.spanId).not.toBe(SPAN);
    expect(t.traceparent).toBe(`00-${TRACE}-${t.spanId}-00`);
    expect(t.tracestate).toBe("vendor=1,other=2");
  });

  it("starts a new sampled trace without a valid traceparent, and drops tracestate then", () => {
    const t = incomingTrace("nonsense", "vendor=1");
    expect(t.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(t.parentSpanId).toBeUndefined();
    expect(t.tracestate).toBeUndefined();
    expect(t.traceparent).toBe(`00-${t.traceId}-${t.spanId}-01`);
  });

  it("tracestate: repeated headers are joined; empty or over 512 characters dropped", () => {
    expect(cleanTracestate(["a=1", "b=2"])).toBe("a=1,b=2");
    expect(cleanTracestate("  ")).toBeUndefined();
    expect(cleanTracestate(`a=${"x".repeat(511)}`)).toBeUndefined();
  });

  it("is never serialised with what carries it", () => {
    const t = incomingTrace(undefined, undefined);
    expect(JSON.stringify({ directory: "/w", trace: t })).toBe('{"directory":"/w"}');
  });
});

describe("ids", () => {
  it("random, well-formed and distinct across the pooled buffer's refills", () => {
    const traces = new Set<string>();
    const spans = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const trace = newTraceId();
      const span = newSpanId();
      expect(trace).toMatch(/^[0-9a-f]{32}$/);
      expect(span).toMatch(/^[0-9a-f]{16}$/);
      traces.add(trace);
      spans.add(span);
    }
    expect(traces.size).toBe(2000);
    expect(spans.size).toBe(2000);
  });
});

describe("a task's routing carries its trace", () => {
  it("withTrace adds it to a copy; spreads carry it on; traceOfRouting reads it back", () => {
    const trace = new TraceContext(TRACE, SPAN, true, undefined, undefined);
    const routing = { directory: "/w" };
    const traced = withTrace(routing, trace);
    expect(routing).toEqual({ directory: "/w" });
    expect(traceOfRouting({ ...traced, sessionId: "ses_1" })).toBe(trace);
    expect(withTrace(routing, undefined)).toBe(routing);
    expect(traceOfRouting(routing)).toBeUndefined();
    expect(traceOfRouting({ trace: "00-not-a-context" })).toBeUndefined();
  });
});

describe("tracesUrl (OTLP endpoint variables)", () => {
  it("the traces endpoint as is, else the base endpoint + /v1/traces, else off", () => {
    expect(tracesUrl({ tracesEndpoint: "http://c:4318/custom", endpoint: "http://x" })).toBe("http://c:4318/custom");
    expect(tracesUrl({ endpoint: "http://c:4318/" })).toBe("http://c:4318/v1/traces");
    expect(tracesUrl({})).toBeUndefined();
  });
});
