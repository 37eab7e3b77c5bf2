// What a gateway starts once it serves (Gateway.warm(), called by main.ts after its listening line), in the
// background from BACKGROUND_START_DELAY_MS on (../util/background-start.ts): the first SQLite reader thread, the push
// outbox's first pass (deliveries left from before a restart) and the request validators. Until then a listing
// starts its own thread, a push queued by a task is delivered at once and a call loads its own validator.
import type { Logger } from "pino";
import type { Catalog } from "../contract/catalog.js";
import { warmValidators } from "../contract/validate.js";
import type { PushService } from "../push/service.js";
import type { Storage } from "../storage/index.js";
import { startInBackground } from "../util/background-start.js";

export function warmInBackground(parts: { storage: Storage | undefined; push: PushService | undefined; catalog: Catalog; log: Logger }): void {
  startInBackground(() => {
    parts.storage?.warmReaders?.();
    parts.push?.firstPass();
    warmValidators(parts.catalog, (err) => parts.log.error({ err: String(err) }, "loading the request validators failed"));
  });
}
