// The upstream error taxonomy: every failure kind maps to one project error (spec/errors/project.tsp) with the
// catalog's code and HTTP status, and to the A2A task state it implies.
import { describe, expect, it } from "vitest";
import { errorEntry } from "../../src/contract/catalog.js";
import { classifyAssistantError, classifyHttp, classifyThrown, UpstreamError } from "../../src/upstream/errors.js";

const response = (status: number, headers: Record<string, string> = {}) => new Response(null, { status, headers });

describe("HTTP status classes", () => {
  const cases: [number, string | undefined, string, number][] = [
    [401, undefined, "UPSTREAM_HTTP_ERROR", 502],
    [403, undefined, "UPSTREAM_HTTP_ERROR", 502],
    [404, "ses_1", "SESSION_NOT_FOUND", 404],
    [404, undefined, "UPSTREAM_HTTP_ERROR", 502],
    [409, "ses_1", "UPSTREAM_HTTP_ERROR", 409],
    [429, undefined, "UPSTREAM_BACKPRESSURE", 503],
    [400, undefined, "UPSTREAM_HTTP_ERROR", 502],
    [422, undefined, "UPSTREAM_HTTP_ERROR", 502],
    [500, undefined, "UPSTREAM_HTTP_ERROR", 502],
    [503, undefined, "UPSTREAM_HTTP_ERROR", 502],
  ];
  it.each(cases)("%i (session %s) → %s, HTTP %i", (status, sessionId, reason, http) => {
    const err = classifyHttp(response(status), { name: "SomeError", data: { message: "boom" } }, "op", sessionId);
    expect(err.kind).toBe("http");
    expect(err.status).toBe(status);
    expect(err.upstreamName).toBe("SomeError");
    expect(err.detail).toBe(`HTTP ${status}: boom`);
    const a2a = err.toA2AError();
    expect(a2a.reason).toBe(reason);
    expect(a2a.options.httpStatus ?? errorEntry("1.0", reason).http).toBe(http);
    expect(err.taskState).toBe("failed");
  });

  it("keeps the upstream status in the error data", () => {
    expect(classifyHttp(response(500), "oops", "op").toA2AError().data).toEqual({ upstream_status: 500, detail: "HTTP 500: oops" });
  });

  it("reads Retry-After (seconds and HTTP date) into the backpressure error", () => {
    const a = classifyHttp(response(429, { "retry-after": "7" }), undefined, "op").toA2AError();
    expect(a.data).toMatchObject({ retry_after_seconds: 7 });
    expect(a.options.headers).toEqual({ "Retry-After": "7" });
    const date = new Date(Date.now() + 30_000).toUTCString();
    const b = classifyHttp(response(429, { "retry-after": date }), undefined, "op");
    expect(b.retryAfterSeconds).toBeGreaterThanOrEqual(28);
    expect(b.retryAfterSeconds).toBeLessThanOrEqual(31);
  });

  it("understands OpenCode's _tag error bodies (SessionBusyError)", () => {
    const err = classifyHttp(response(409), { _tag: "SessionBusyError", sessionID: "ses_1", message: "Session is busy: ses_1" }, "sessionShell", "ses_1");
    expect(err.upstreamName).toBe("SessionBusyError");
    expect(err.toA2AError().message).toBe("OpenCode session is busy");
  });
});

describe("thrown errors", () => {
  it("a refused connection is unreachable", () => {
    const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
    const err = classifyThrown(new TypeError("fetch failed", { cause }), "sessionGet");
    expect(err.kind).toBe("unreachable");
    expect(err.detail).toContain("ECONNREFUSED");
    expect(err.toA2AError().reason).toBe("UPSTREAM_UNREACHABLE");
    expect(errorEntry("1.0", "UPSTREAM_UNREACHABLE").http).toBe(503);
  });

  it("a timed-out call is a timeout carrying its limit", () => {
    const err = classifyThrown(new DOMException("x", "AbortError"), "sessionGet", { timedOut: true, timeoutSeconds: 2.5 });
    expect(err.kind).toBe("timeout");
    expect(err.toA2AError()).toMatchObject({ reason: "UPSTREAM_TIMEOUT", data: { timeout_seconds: 2.5 } });
  });

  it("a call canceled by the gateway is aborted, invalid JSON is a payload error", () => {
    expect(classifyThrown(new DOMException("x", "AbortError"), "op").kind).toBe("aborted");
    let syntax: unknown;
    try {
      JSON.parse("{nope");
    } catch (e) {
      syntax = e;
    }
    const payload = classifyThrown(syntax, "op");
    expect(payload.kind).toBe("payload");
    expect(payload.toA2AError().reason).toBe("UPSTREAM_PAYLOAD_ERROR");
  });

  it("an UpstreamError passes through unchanged", () => {
    const original = new UpstreamError({ kind: "timeout", operation: "x", detail: "y" });
    expect(classifyThrown(original, "z")).toBe(original);
  });
});

describe("in-band errors (info.error, session.error)", () => {
  it.each([
    [{ name: "MessageAbortedError", data: { message: "Aborted" } }, "aborted", "canceled"],
    [{ name: "ProviderAuthError", data: { providerID: "fake", message: "bad key" } }, "model", "auth-required"],
    [{ name: "APIError", data: { message: "unauthorized", statusCode: 401, isRetryable: false } }, "model", "auth-required"],
    [{ name: "APIError", data: { message: "forbidden", statusCode: 403, isRetryable: false } }, "model", "auth-required"],
    [{ name: "APIError", data: { message: "bad", statusCode: 400, isRetryable: false } }, "model", "failed"],
    [{ name: "ContextOverflowError", data: { message: "too long" } }, "model", "failed"],
    [{ name: "UnknownError", data: { message: "?" } }, "model", "failed"],
  ] as const)("%o → %s / %s", (error, kind, state) => {
    const err = classifyAssistantError(error as never, "session.error", "ses_1");
    expect(err.kind).toBe(kind);
    expect(err.taskState).toBe(state);
    expect(err.upstreamName).toBe(error.name);
    expect(err.toA2AError().reason).toBe("UPSTREAM_HTTP_ERROR");
  });

  it("an error without a body still classifies", () => {
    const err = classifyAssistantError(undefined, "session.error");
    expect(err).toMatchObject({ kind: "model", upstreamName: "UnknownError", taskState: "failed" });
  });

  it("a parameter the URL cannot hold (an unpaired surrogate) is the caller's INVALID_PARAMS, not an unreachable upstream", () => {
    let thrown: unknown;
    try {
      encodeURIComponent("\ud800");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(URIError);
    expect(() => classifyThrown(thrown, "sessionGet")).toThrow(expect.objectContaining({ reason: "INVALID_PARAMS" }));
  });
});
