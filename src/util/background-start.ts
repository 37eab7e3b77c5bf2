// Start-up work no request needs at once waits a little after the gateway starts serving: loading the request
// validators, the push outbox's first pass (deliveries left from before a restart), the first SQLite reader thread.
// Run at once, it sat between the listening line and the first requests: on Node 24 the first agent card came 66 ms
// after the listening line with it and 16 ms without it (medians of 12 starts on a 2-core machine; Node 20: 36 and
// 22 ms). A request that needs one of them in the meantime does not wait for the delay: it loads its own validator,
// a push enqueued by a task is delivered at once, a listing starts its own reader thread.

/** How long after it is scheduled the background start-up work begins. */
export const BACKGROUND_START_DELAY_MS = 250;

/** Runs `work` after `delayMs` (default BACKGROUND_START_DELAY_MS) without keeping the process alive for it. */
export function startInBackground(work: () => void, delayMs: number = BACKGROUND_START_DELAY_MS): void {
  if (delayMs <= 0) {
    work();
    return;
  }
  setTimeout(work, delayMs).unref();
}
