// Per-credential abuse limits: an exact sliding-window request limit (a ring of the last `max` request times per
// credential, so a burst is refused until its oldest request leaves the window, with no fixed-window edge doubling)
// and a cap on concurrently open SSE streams. Two Limiters keep them: LocalLimiter in this process (SQLite and memory
// backends: one gateway per store), PostgresLimiter in the database (./limits-postgres.ts: every gateway on one
// PostgreSQL database shares each credential's window and stream slots).
import { A2AError } from "../contract/errors.js";
import { storeUnavailable } from "../storage/database.js";
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

/** A credential's policy: its own `rate_limit` overrides, else the deployment's defaults. */
export function limitPolicy(defaults: LimitPolicy, override: RateLimitOverride | undefined): LimitPolicy {
  return {
    maxRequests: override?.max_requests ?? defaults.maxRequests,
    windowMs: override?.window_seconds !== undefined ? override.window_seconds * 1000 : defaults.windowMs,
    maxStreams: override?.max_streams ?? defaults.maxStreams,
  };
}

/**
 * The verdict of one take, from the window as it stands after it: `used` requests counted (the take's own included
 * when allowed), the oldest at `oldest` (epoch ms; undefined when none), and when refused with a weight that can fit,
 * `freeing`: the time of the request whose leaving the window makes room for the weight.
 */
export function verdictOf(policy: LimitPolicy, weight: number, now: number, allowed: boolean, used: number, oldest: number | undefined, freeing: number | undefined): RateVerdict {
  const resetMs = used > 0 && oldest !== undefined ? oldest + policy.windowMs : now;
  // When refused, the wait is until enough of the oldest requests have left the window for `weight` to fit.
  let retryMs = 0;
  if (!allowed && weight > policy.maxRequests) retryMs = policy.windowMs;
  else if (!allowed && freeing !== undefined) retryMs = Math.max(0, freeing + policy.windowMs - now);
  return {
    allowed,
    limit: policy.maxRequests,
    remaining: policy.maxRequests - used,
    resetAt: Math.ceil(resetMs / 1000),
    retryAfter: Math.max(1, Math.ceil(retryMs / 1000)),
  };
}

/** STREAM_LIMIT_EXCEEDED for a credential holding `open` of its `limit` streams. */
export function streamLimitExceeded(open: number, limit: number): A2AError {
  return new A2AError("STREAM_LIMIT_EXCEEDED", `This credential already has ${open} open streams (limit ${limit})`, {
    limit,
    open_streams: open,
  });
}

/**
 * Where the limits are kept. take: count `weight` requests for `key` if they all fit in its window, else none (null:
 * no limit). openStream: reserve a stream slot (STREAM_LIMIT_EXCEEDED when full); the function it gives releases it
 * (idempotent). A failure of the store behind them is TASK_STORE_UNAVAILABLE.
 */
export interface Limiter {
  take(key: string, policy: LimitPolicy, weight?: number): Promise<RateVerdict | null>;
  openStream(key: string, policy: LimitPolicy): Promise<() => void>;
  openStreams(key: string): Promise<number>;
  close(): Promise<void>;
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
    return limitPolicy(this.defaults, override);
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
    let freeing: number | undefined;
    if (!allowed && weight <= policy.maxRequests) {
      const needed = weight - (policy.maxRequests - w.size);
      freeing = w.times[(w.head + Math.max(0, needed - 1)) % w.max]!;
    }
    return verdictOf(policy, weight, now, allowed, w.size, w.size > 0 ? w.oldest() : undefined, freeing);
  }

  /** Reserve a stream slot; the returned function releases it (idempotent). Throws STREAM_LIMIT_EXCEEDED when full. */
  openStream(key: string, policy: LimitPolicy): () => void {
    const open = this.#streams.get(key) ?? 0;
    if (policy.maxStreams > 0 && open >= policy.maxStreams) throw streamLimitExceeded(open, policy.maxStreams);
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

/** The Limiter of one process: RateLimiter's windows and counts in memory, for the SQLite and memory backends. */
export class LocalLimiter implements Limiter {
  readonly rates: RateLimiter;
  constructor(defaults: LimitPolicy, now: () => number = Date.now) {
    this.rates = new RateLimiter(defaults, now);
  }
  take(key: string, policy: LimitPolicy, weight = 1): Promise<RateVerdict | null> {
    return Promise.resolve(this.rates.take(key, policy, weight));
  }
  openStream(key: string, policy: LimitPolicy): Promise<() => void> {
    try {
      return Promise.resolve(this.rates.openStream(key, policy));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }
  openStreams(key: string): Promise<number> {
    return Promise.resolve(this.rates.openStreams(key));
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The deployment's limits applied per credential: what the edge and the transports call. */
export class AccessLimits {
  readonly limiter: Limiter;

  /** `limiter`: where the windows and stream slots are kept (default: this process, LocalLimiter). */
  constructor(
    readonly defaults: LimitPolicy,
    limiter?: Limiter,
  ) {
    this.limiter = limiter ?? new LocalLimiter(defaults);
  }

  /**
   * Count `weight` requests of the principal's credential. Returns the X-RateLimit-* headers to send (empty when
   * unlimited) and, when refused, the RATE_LIMITED error (nothing is counted then). When the store of a shared
   * limiter fails, the error is TASK_STORE_UNAVAILABLE (503): fail closed, as every other store-backed step does,
   * rather than let a credential run unlimited while its window cannot be read.
   */
  async charge(principal: Principal, weight = 1): Promise<{ headers: Record<string, string>; error?: A2AError }> {
    const policy = limitPolicy(this.defaults, principal.rateLimit);
    let verdict: RateVerdict | null;
    try {
      verdict = await this.limiter.take(principal.credentialId, policy, weight);
    } catch (err) {
      return { headers: {}, error: storeUnavailable("limits.charge", err) };
    }
    if (verdict === null) return { headers: {} };
    if (!verdict.allowed) return { headers: rateLimitHeaders(verdict), error: rateLimited(verdict, policy.windowMs / 1000, weight) };
    return { headers: rateLimitHeaders(verdict) };
  }

  /** Reserve one of the credential's stream slots (STREAM_LIMIT_EXCEEDED when none is free; TASK_STORE_UNAVAILABLE when the store fails). */
  async openStream(principal: Principal): Promise<() => void> {
    try {
      return await this.limiter.openStream(principal.credentialId, limitPolicy(this.defaults, principal.rateLimit));
    } catch (err) {
      throw storeUnavailable("limits.openStream", err);
    }
  }

  close(): Promise<void> {
    return this.limiter.close();
  }
}
