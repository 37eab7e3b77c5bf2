// Test helpers around src/upstream: a client + event hub pointed at a real or stub OpenCode, and readers that
// collect hub items until a condition holds (always bounded by a timeout, never a hang).
import { UpstreamClient, type UpstreamClientOptions } from "../../src/upstream/client.js";
import { EventHub, type EventHubOptions, type HubEvent, type HubItem, type Subscription } from "../../src/upstream/hub.js";

export interface Link {
  client: UpstreamClient;
  hub: EventHub;
  stop(): Promise<void>;
}

export function link(
  baseUrl: string,
  clientOptions: Partial<UpstreamClientOptions> = {},
  hubOptions: Partial<Omit<EventHubOptions, "upstream">> = {},
): Link {
  const client = new UpstreamClient({
    baseUrl,
    timeoutMs: 15_000,
    streamTimeoutMs: 0,
    maxConcurrentRequests: 64,
    ...clientOptions,
  });
  const hub = new EventHub({
    upstream: client,
    idleTimeoutMs: 15_000,
    bufferLimit: 10_000,
    reconnectInitialMs: 50,
    reconnectMaxMs: 500,
    maxStreams: 0,
    ...hubOptions,
  });
  return { client, hub, stop: () => hub.stop() };
}

/**
 * Reads items from `sub` until `done(items)` is true; rejects with the items seen so far after `timeoutMs`.
 * Failures of the subscription (overflow) reject too.
 */
export async function collectUntil(
  sub: Subscription,
  done: (items: HubItem[], last: HubItem) => boolean,
  timeoutMs = 20_000,
): Promise<HubItem[]> {
  const items: HubItem[] = [];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const summary = items.map((i) => (i.type === "event" ? i.event.type : i.type)).join(", ");
      reject(new Error(`condition not met within ${timeoutMs} ms; saw ${items.length} items: ${summary}`));
    }, timeoutMs);
  });
  try {
    const reading = (async () => {
      for (;;) {
        const next = await sub.next();
        if (next.done) throw new Error(`subscription ended after ${items.length} items`);
        items.push(next.value);
        if (done(items, next.value)) return items;
      }
    })();
    return await Promise.race([reading, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const events = (items: HubItem[]): HubEvent[] => items.filter((i): i is HubEvent => i.type === "event");

export const types = (items: HubItem[]): string[] => events(items).map((e) => e.event.type);

/** Until an event of `type` (optionally matching `where`) arrived. */
export const untilEvent =
  (type: string, where: (e: HubEvent) => boolean = () => true) =>
  (_items: HubItem[], last: HubItem): boolean =>
    last.type === "event" && last.event.type === type && where(last);

/** The text streamed by `message.part.delta` events, in order. */
export function deltaText(items: HubItem[]): string {
  return events(items)
    .map((e) => e.event)
    .filter((e) => e.type === "message.part.delta")
    .map((e) => (e.type === "message.part.delta" ? e.properties.delta : ""))
    .join("");
}
