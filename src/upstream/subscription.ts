// One subscriber of the event hub (./hub.ts): the sessions (or, for a wildcard, the directory) it follows, the event
// types it wants, and its bounded buffer (src/util/queue.ts). A subscriber that falls its buffer limit behind is
// ended with UPSTREAM_BACKPRESSURE rather than silently losing events.
import type { Event as OpencodeEvent } from "../../generated/opencode/types.gen.js";
import { UpstreamError } from "./errors.js";
import { BoundedQueue } from "../util/queue.js";

export interface HubEvent {
  type: "event";
  event: OpencodeEvent;
  /** Directory (instance) OpenCode tagged the event with. */
  directory: string | undefined;
  /** Hub-wide sequence number, strictly increasing in arrival order. */
  seq: number;
}
export interface HubDisconnected {
  type: "disconnected";
  error: UpstreamError;
}
export interface HubReconnected {
  type: "reconnected";
  downtimeMs: number;
}
export type HubItem = HubEvent | HubDisconnected | HubReconnected;

/** What a subscription needs of the hub: its routing tables (./demux.ts) and the connection's readiness. */
export interface SubscriptionHost {
  index(sub: Subscription, sessionId: string): void;
  unindex(sub: Subscription, sessionId: string): void;
  /** The subscription closed or failed: route nothing more to it. */
  detach(sub: Subscription): void;
  ready(timeoutMs?: number): Promise<void>;
}

export class Subscription implements AsyncIterable<HubItem> {
  readonly sessions = new Set<string>();
  readonly #queue: BoundedQueue<HubItem, UpstreamError>;

  constructor(
    private readonly host: SubscriptionHost,
    readonly all: boolean,
    readonly directory: string | undefined,
    readonly stream: boolean,
    readonly bufferLimit: number,
    readonly types: ReadonlySet<string> | undefined,
  ) {
    const overflow = (): UpstreamError =>
      new UpstreamError({
        kind: "backpressure",
        operation: "event-subscription",
        detail: `subscriber fell ${bufferLimit} events behind (OPENCODE_EVENT_BUFFER_LIMIT); subscription ended`,
        limit: bufferLimit,
      });
    this.#queue = new BoundedQueue(bufferLimit, overflow, () => host.detach(this));
  }

  get closed(): boolean {
    return this.#queue.closed;
  }

  /** Items buffered and not yet consumed. */
  get buffered(): number {
    return this.#queue.buffered;
  }

  /** The error that ended the subscription (overflow), if any. */
  get failure(): UpstreamError | undefined {
    return this.#queue.failure;
  }

  addSession(sessionId: string): void {
    if (this.closed || this.sessions.has(sessionId)) return;
    this.sessions.add(sessionId);
    this.host.index(this, sessionId);
  }

  removeSession(sessionId: string): void {
    if (!this.sessions.delete(sessionId)) return;
    this.host.unindex(this, sessionId);
  }

  /** Resolves once the hub's upstream connection is open (at once if it already is). */
  ready(timeoutMs?: number): Promise<void> {
    return this.host.ready(timeoutMs);
  }

  /** @internal called by the hub for every item routed to this subscriber. */
  _push(item: HubItem): void {
    this.#queue.push(item);
  }

  next(): Promise<IteratorResult<HubItem>> {
    return this.#queue.next();
  }

  /** Ends the subscription; a pending read resolves as done. Idempotent. */
  close(): void {
    this.#queue.close();
  }

  return(): Promise<IteratorResult<HubItem>> {
    return this.#queue.return();
  }

  [Symbol.asyncIterator](): AsyncIterator<HubItem> {
    return this;
  }
}
