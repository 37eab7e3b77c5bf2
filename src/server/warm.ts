// What a gateway starts once it serves (Gateway.warm(), called by main.ts after its listening line), in the
// background BACKGROUND_START_DELAY_MS later: the first SQLite reader thread (which also takes over the WAL
// checkpoints), the push outbox's first pass (deliveries left from before a restart) and the request validators.
// Until then a listing starts its own thread, the gateway's connection checkpoints, a push queued by a task is
// delivered at once and a call loads its own validator. Run at once, this work sat between the listening line and
// the first requests: on Node 24 the first agent card came 66 ms after the listening line with it and 16 ms without
// it (medians of 12 starts on a 2-core machine; Node 20: 36 and 22 ms).
import type { Logger } from "pino";
import type { Catalog } from "../contract/catalog.js";
import { warmValidators } from "../contract/validate.js";
import type { PushService } from "../push/service.js";
import type { Storage } from "../storage/index.js";

/** How long after the gateway serves its background start-up work begins. */
export const BACKGROUND_START_DELAY_MS = 250;

/** Schedules the background start-up work; the timer does not keep the process alive. */
export function warmInBackground(parts: { storage: Storage | undefined; push: PushService | undefined; catalog: Catalog; log: Logger }): void {
  setTimeout(() => {
    parts.storage?.warmThreads?.();
    parts.push?.firstPass();
    warmValidators(parts.catalog, (err) => parts.log.error({ err: String(err) }, "loading the request validators failed"));
  }, BACKGROUND_START_DELAY_MS).unref();
}
