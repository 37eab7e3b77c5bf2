// Per-credential abuse limits: an exact sliding-window request limit (a ring of the last `max` request times per
// credential, so a burst is refused until its oldest request leaves the window, with no fixed-window edge doubling)
// and a cap on concurrently open SSE streams.
import { A2AError } from "../contract/errors.js";
import type { RateLimitOverride } from "./credentials.js";
import type { Principal } from "./index.js";

export interface LimitPolicy {
  maxRequests: number;
  windowMs: number;
  maxStreams: number;
}

export interface RateVerdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Epoch seconds at which one more request will be allowed (the oldest counted request leaves the window). */
  resetAt: number;
  /** Seconds to wait before retrying (only when refused). */
  retryAfter: number;
}

class Window {
  readonly times: Float64Array;
  head = 0;
  size = 0;
  constructor(
    readonly max: number,
    readonly windowMs: number,
  ) {
    this.times = new Float64Array(max);
  }
  /** Drop entries older than the window start. */
  expire(start: number): void {
    while (this.size > 0 && this.times[this.head]! <= start) {
      this.head = (this.head + 1) % this.max;
      this.size--;
    }
  }
  push(t: number): void {
    this.times[(this.head + this.size) % this.max] = t;
    this.size++;
  }
  oldest(): number {
    return this.times[this.head]!;
  }
}

export class RateLimiter {
  readonly #windows = new Map<string, Window>();
  readonly #streams = new Map<string, number>();
  #sweptAt = 0;

  constructor(
    private readonly defaults: LimitPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  policy(override: RateLimitOverride | undefined): LimitPolicy {
    return {
      maxRequests: override?.max_requests ?? this.defaults.maxRequests,
      windowMs: override?.window_seconds !== undefined ? override.window_seconds * 1000 : this.defaults.windowMs,
      maxStreams: override?.max_streams ?? this.defaults.maxStreams,
    };
  }

  /** Count `weight` requests for `key` if they all fit in the window; otherwise count none. null: no limit. */
  take(key: string, policy: LimitPolicy, weight = 1): RateVerdict | null {
    if (policy.maxRequests <= 0) return null;
    const now = this.now();
    this.#sweep(now);
    const id = `${key}\u0000${policy.maxRequests}\u0000${policy.windowMs}`;
    let w = this.#windows.get(id);
    if (w === undefined) this.#windows.set(id, (w = new Window(policy.maxRequests, policy.windowMs)));
    w.expire(now - policy.windowMs);
    const allowed = weight <= policy.maxRequests - w.size;
    if (allowed) for (let i = 0; i < weight; i++) w.push(now);
    const resetMs = w.size > 0 ? w.oldest() + policy.windowMs : now;
    // When refused, the wait is until enough of the oldest requests have left the window for `weight` to fit.
    let retryMs = 0;
    if (!allowed && weight > policy.maxRequests) retryMs = policy.windowMs;
    else if (!allowed) {
      const needed = Math.min(weight, policy.maxRequests) - (policy.maxRequests - w.size);
      const freeing = w.times[(w.head + Math.max(0, needed - 1)) % w.max]!;
      retryMs = Math.max(0, freeing + policy.windowMs - now);
    }
    return {
      allowed,
      limit: policy.maxRequests,
      remaining: policy.maxRequests - w.size,
      resetAt: Math.ceil(resetMs / 1000),
      retryAfter: Math.max(1, Math.ceil(retryMs / 1000)),
    };
  }

  /** Reserve a stream slot; the returned function releases it (idempotent). Throws STREAM_LIMIT_EXCEEDED when full. */
  openStream(key: string, policy: LimitPolicy): () => void {
    const open = this.#streams.get(key) ?? 0;
    if (policy.maxStreams > 0 && open >= policy.maxStreams)
      throw new A2AError("STREAM_LIMIT_EXCEEDED", `This credential already has ${open} open streams (limit ${policy.maxStreams})`, {
        limit: policy.maxStreams,
        open_streams: open,
      });
    this.#streams.set(key, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#streams.get(key) ?? 1) - 1;
      if (left <= 0) this.#streams.delete(key);
      else this.#streams.set(key, left);
    };
  }

  openStreams(key: string): number {
    return this.#streams.get(key) ?? 0;
  }

  /** Forget idle windows now and then, so credentials that stopped calling cost no memory. */
  #sweep(now: number): void {
    if (now - this.#sweptAt < 60_000) return;
    this.#sweptAt = now;
    for (const [id, w] of this.#windows) {
      w.expire(now - w.windowMs);
      if (w.size === 0) this.#windows.delete(id);
    }
  }
}

/** The X-RateLimit-* headers of a verdict. */
export function rateLimitHeaders(v: RateVerdict): Record<string, string> {
  return {
    "X-RateLimit-Limit": String(v.limit),
    "X-RateLimit-Remaining": String(v.remaining),
    "X-RateLimit-Reset": String(v.resetAt),
  };
}

export function rateLimited(v: RateVerdict, windowSeconds: number, weight = 1): A2AError {
  return new A2AError(
    "RATE_LIMITED",
    weight > v.limit
      ? `A batch of ${weight} calls can never fit the limit of ${v.limit} requests per ${windowSeconds} s; split it`
      : `Rate limit of ${v.limit} requests per ${windowSeconds} s reached; retry in ${v.retryAfter} s`,
    { retry_after_seconds: v.retryAfter, limit: v.limit, window_seconds: windowSeconds },
    { headers: { "Retry-After": String(v.retryAfter), ...rateLimitHeaders(v) } },
  );
}

/** The deployment's limits applied per credential: what the edge and the transports call. */
export class AccessLimits {
  readonly limiter: RateLimiter;

  constructor(
    readonly defaults: LimitPolicy,
    now: () => number = Date.now,
  ) {
    this.limiter = new RateLimiter(defaults, now);
  }

  /**
   * Count `weight` requests of the principal's credential. Returns the X-RateLimit-* headers to send (empty when
   * unlimited) and, when refused, the RATE_LIMITED error (nothing is counted then).
   */
  charge(principal: Principal, weight = 1): { headers: Record<string, string>; error?: A2AError } {
    const policy = this.limiter.policy(principal.rateLimit);
    const verdict = this.limiter.take(principal.credentialId, policy, weight);
    if (verdict === null) return { headers: {} };
    if (!verdict.allowed) return { headers: rateLimitHeaders(verdict), error: rateLimited(verdict, policy.windowMs / 1000, weight) };
    return { headers: rateLimitHeaders(verdict) };
  }

  /** Reserve one of the credential's stream slots (STREAM_LIMIT_EXCEEDED when none is free). */
  openStream(principal: Principal): () => void {
    return this.limiter.openStream(principal.credentialId, this.limiter.policy(principal.rateLimit));
  }
}
