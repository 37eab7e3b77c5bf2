// Start-up work no request needs at once waits a little after the gateway starts serving (what it is, and what a
// request does meanwhile: ../server/warm.ts). Run at once, it sat between the listening line and the first requests:
// on Node 24 the first agent card came 66 ms after the listening line with it and 16 ms without it (medians of 12
// starts on a 2-core machine; Node 20: 36 and 22 ms).

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
