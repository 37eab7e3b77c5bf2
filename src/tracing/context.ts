// W3C Trace Context (Level 1, https://www.w3.org/TR/trace-context/): the `traceparent` / `tracestate` request headers.
//
// Every request gets a TraceContext: a valid incoming `traceparent` keeps its trace id and becomes the parent of a new
// span id for the gateway's work; an invalid or absent one starts a new trace (random ids). `tracestate` is passed on
// only with a valid `traceparent` (§3.3.1: without one it is discarded). The context is sent on every OpenCode call
// and push delivery made for the request or its task (`traceparent: 00-<trace id>-<span id>-<flags>`).
//
// This file is the whole of it when OpenTelemetry export is off (./index.ts): no SDK, a regex and random bytes from
// a pooled buffer (one randomFillSync per 512 ids instead of one crypto call per span).
import { randomFillSync } from "node:crypto";

/** version-traceid-parentid-flags; a future version may append `-…` fields (§3.2.4: parse what we know). */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(?:-|$)/;
const ZERO_TRACE = "00000000000000000000000000000000";
const ZERO_SPAN = "0000000000000000";
/** §3.3.1.5: at least 512 characters of `tracestate` are propagated; a longer value is dropped, not cut mid-entry. */
const MAX_TRACESTATE = 512;

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

function randomHex(bytes: number): string {
  for (;;) {
    if (offset + bytes > POOL_BYTES) {
      randomFillSync(pool);
      offset = 0;
    }
    const hex = pool.toString("hex", offset, offset + bytes);
    offset += bytes;
    // All zeros is invalid for both ids (§3.2.2.3, §3.2.2.4); vanishingly rare, but never sent. (newIds checks its halves.)
    if (bytes === 24 || (hex !== ZERO_TRACE && hex !== ZERO_SPAN)) return hex;
  }
}

/** A new random trace id (16 bytes, lower-case hex). */
export const newTraceId = (): string => randomHex(16);
/** A new random span id (8 bytes, lower-case hex). */
export const newSpanId = (): string => randomHex(8);

/** A parsed valid `traceparent`: its trace id, the caller's span id (our parent) and the sampled flag. */
export interface RemoteParent {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

/** The parts of a valid `traceparent` header, or undefined (absent, malformed, all-zero ids, version ff, repeated). */
export function parseTraceparent(header: string | string[] | undefined): RemoteParent | undefined {
  if (typeof header !== "string" || header.length < 55 || !TRACEPARENT.test(header)) return undefined;
  // Version 00 has exactly four fields; a higher version may have more, after a `-`. Version ff is invalid.
  if (header.startsWith("00") ? header.length !== 55 : header.startsWith("ff")) return undefined;
  const traceId = header.slice(3, 35);
  const spanId = header.slice(36, 52);
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  // Only the sampled bit (the lowest of the flags) is defined in Level 1.
  return { traceId, spanId, sampled: (parseInt(header[54]!, 16) & 1) === 1 };
}

/** `tracestate` as passed on: repeated headers joined (node:http does it with ", "), empty or oversized dropped. */
export function cleanTracestate(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header.join(",") : header;
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === "" || trimmed.length > MAX_TRACESTATE) return undefined;
  return trimmed;
}

/** The trace context of one request (or of the task it started): what is logged, audited and propagated. */
export class TraceContext {
  private header: string | undefined = undefined;

  constructor(
    /** 32 lower-case hex digits. */
    readonly traceId: string,
    /** The gateway's span for this request (16 hex digits): the parent of every call made for it. */
    readonly spanId: string,
    readonly sampled: boolean,
    /** The caller's `tracestate`, passed on unchanged. */
    readonly tracestate: string | undefined,
    /** The caller's span id, when the request came with a valid `traceparent`. */
    readonly parentSpanId: string | undefined,
  ) {}

  /** `traceparent` naming this context's span as the parent (the value sent upstream when no client span is made). */
  get traceparent(): string {
    return (this.header ??= formatTraceparent(this.traceId, this.spanId, this.sampled));
  }

  /**
   * Never serialised with what carries it: a task's routing (which carries its trace to every OpenCode call, see
   * src/tracing/index.ts withTrace) is stored as JSON by the interrupt registry, and bodies are logged as JSON.
   */
  toJSON(): undefined {
    return undefined;
  }
}

export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`;
}

/**
 * The trace context of an incoming request: the caller's trace (valid `traceparent`) with a new span id, or a new
 * trace. A trace the gateway starts is marked sampled, like OpenTelemetry's default sampler does.
 */
export function incomingTrace(traceparent: string | string[] | undefined, tracestate: string | string[] | undefined): TraceContext {
  const parent = traceparent === undefined ? undefined : parseTraceparent(traceparent);
  if (parent === undefined) {
    // Both ids from one read of the pool (this runs for every request that comes without a trace).
    const ids = newIds();
    return new TraceContext(ids.slice(0, 32), ids.slice(32), true, undefined, undefined);
  }
  return new TraceContext(parent.traceId, newSpanId(), parent.sampled, tracestate === undefined ? undefined : cleanTracestate(tracestate), parent.spanId);
}

/** 48 hex digits: a trace id then a span id, neither all zeros. */
function newIds(): string {
  for (;;) {
    const hex = randomHex(24);
    if (!hex.startsWith(ZERO_TRACE) && !hex.endsWith(ZERO_SPAN)) return hex;
  }
}
