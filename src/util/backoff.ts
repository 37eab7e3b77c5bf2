// Exponential backoff with equal jitter (half of the step fixed, half random), shared by everything that retries:
// the upstream event stream's reconnects and push notification deliveries. Clients retrying the same failure at
// once spread out, and no delay is below half its step.

/**
 * The delay before retry number `step` (0 = the first retry): initialMs · 2^step capped at maxMs, then a random
 * point between half of it and all of it.
 */
export function backoffMs(step: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(step, 30));
  return Math.round(base / 2 + (random() * base) / 2);
}
