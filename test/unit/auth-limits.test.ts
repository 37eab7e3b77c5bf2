import { describe, expect, it } from "vitest";
import { AccessLimits, RateLimiter } from "../../src/auth/limits.js";
import { A2AError } from "../../src/contract/errors.js";
import type { Principal } from "../../src/auth/index.js";

const policy = { maxRequests: 3, windowMs: 1000, maxStreams: 2 };

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("RateLimiter (exact sliding window)", () => {
  it("counts down, refuses at the limit and frees one slot per expired request", () => {
    const c = clock();
    const l = new RateLimiter(policy, c.now);
    expect(l.take("k", policy)!.remaining).toBe(2);
    c.advance(300);
    expect(l.take("k", policy)!.remaining).toBe(1);
    expect(l.take("k", policy)!.remaining).toBe(0);
    const refused = l.take("k", policy)!;
    expect(refused.allowed).toBe(false);
    // The oldest request (t0) leaves the window at t0 + 1000, i.e. 700 ms after now → Retry-After rounds up to 1 s.
    expect(refused.retryAfter).toBe(1);
    expect(refused.resetAt).toBe(Math.ceil((1_000_000 + 1000) / 1000));
    c.advance(700);
    // Exactly one slot freed (the first request); the two at +300 ms are still inside.
    expect(l.take("k", policy)!.allowed).toBe(true);
    expect(l.take("k", policy)!.allowed).toBe(false);
    c.advance(300);
    // The two requests made at +300 ms leave the window at +1300 ms; the one at +1000 ms is still inside.
    expect(l.take("k", policy)!.remaining).toBe(1);
  });

  it("a refused request is not counted, and keys are independent", () => {
    const c = clock();
    const l = new RateLimiter(policy, c.now);
    for (let i = 0; i < 3; i++) l.take("a", policy);
    for (let i = 0; i < 10; i++) expect(l.take("a", policy)!.allowed).toBe(false);
    expect(l.take("b", policy)!.remaining).toBe(2);
    c.advance(1001);
    expect(l.take("a", policy)!.remaining).toBe(2);
  });

  it("a weighted take is all or nothing; a weight above the limit never fits", () => {
    const c = clock();
    const l = new RateLimiter(policy, c.now);
    expect(l.take("k", policy, 2)!.remaining).toBe(1);
    const refused = l.take("k", policy, 2)!;
    expect(refused.allowed).toBe(false);
    expect(refused.remaining).toBe(1);
    const never = l.take("x", policy, 4)!;
    expect(never.allowed).toBe(false);
    expect(never.retryAfter).toBe(1);
  });

  it("0 means no limit", () => {
    const l = new RateLimiter(policy);
    expect(l.take("k", { ...policy, maxRequests: 0 })).toBeNull();
  });

  it("stream slots: refused when full, released once", () => {
    const l = new RateLimiter(policy);
    const r1 = l.openStream("k", policy);
    const r2 = l.openStream("k", policy);
    expect(() => l.openStream("k", policy)).toThrow(A2AError);
    try {
      l.openStream("k", policy);
    } catch (err) {
      expect((err as A2AError).reason).toBe("STREAM_LIMIT_EXCEEDED");
    }
    r1();
    r1();
    expect(l.openStreams("k")).toBe(1);
    l.openStream("k", policy);
    r2();
    expect(l.openStreams("k")).toBe(1);
  });
});

describe("AccessLimits", () => {
  const principal = (rateLimit?: Principal["rateLimit"]): Principal => ({
    id: "p",
    credentialId: "c",
    trustLevel: "execute",
    scopes: new Set(),
    admin: false,
    ...(rateLimit ? { rateLimit } : {}),
  });

  it("per-credential overrides win over the deployment's defaults", async () => {
    const limits = new AccessLimits({ maxRequests: 100, windowMs: 60_000, maxStreams: 1 });
    const { headers } = await limits.charge(principal({ max_requests: 2, window_seconds: 5 }));
    expect(headers["X-RateLimit-Limit"]).toBe("2");
    expect(headers["X-RateLimit-Remaining"]).toBe("1");
    await limits.charge(principal({ max_requests: 2, window_seconds: 5 }));
    const { error, headers: h } = await limits.charge(principal({ max_requests: 2, window_seconds: 5 }));
    expect(error?.reason).toBe("RATE_LIMITED");
    expect(error?.data).toMatchObject({ limit: 2, window_seconds: 5 });
    expect(h["X-RateLimit-Remaining"]).toBe("0");
    expect(error?.options.headers?.["Retry-After"]).toMatch(/^\d+$/);
  });

  it("no limit → no headers", async () => {
    const limits = new AccessLimits({ maxRequests: 0, windowMs: 60_000, maxStreams: 0 });
    expect((await limits.charge(principal())).headers).toEqual({});
    for (let i = 0; i < 100; i++) await limits.openStream(principal());
  });
});
