// Ordered fan-out of one task's events to every attached stream: each subscriber gets its own queue, events are
// appended to all queues synchronously in publication order, so concurrent subscribers see the same events in
// the same order (A2A 1.0 §3.5.2). A subscriber's iterator ends after the event that closes the stream.
//
// A subscriber's queue is bounded (STREAM_BACKLOG_LIMIT): a stream whose client reads so slowly that it falls that
// far behind the task is ended with STREAM_BUDGET_EXCEEDED (the task goes on and can be resubscribed), the way the
// upstream event hub ends a subscriber that falls behind, instead of buffering without end or dropping events.
import { A2AError } from "../contract/errors.js";
import type { Metrics } from "../observability/metrics.js";
import type { StreamEvent } from "../protocol/model.js";
import { BoundedQueue } from "../util/queue.js";

/** Events one stream may fall behind its task (as many as the upstream hub's default OPENCODE_EVENT_BUFFER_LIMIT). */
export const STREAM_BACKLOG_LIMIT = 10_000;

export type EventQueue = BoundedQueue<StreamEvent, A2AError>;

export const backlogExceeded = (): A2AError =>
  new A2AError(
    "STREAM_BUDGET_EXCEEDED",
    `Stream closed: the client fell ${STREAM_BACKLOG_LIMIT} events behind; the task goes on and can be resubscribed`,
    { budget: "backlog", limit: STREAM_BACKLOG_LIMIT },
  );

export class FanOut {
  readonly #queues = new Set<EventQueue>();
  #closed = false;

  /** A new subscriber; `first` (the current Task) is queued before any later event. */
  subscribe(first?: StreamEvent): EventQueue {
    const queue: EventQueue = new BoundedQueue(STREAM_BACKLOG_LIMIT, backlogExceeded, () => this.#queues.delete(queue));
    if (first !== undefined) queue.push(first);
    if (this.#closed) queue.end();
    else this.#queues.add(queue);
    return queue;
  }

  publish(event: StreamEvent): void {
    for (const q of this.#queues) q.push(event);
  }

  /** Ends every subscriber after what it already has (the stream closes). */
  close(): void {
    this.#closed = true;
    for (const q of this.#queues) q.end();
    this.#queues.clear();
  }
}

/** A client's stream of a task's events (send-stream, subscribe). */
export interface StreamHandle {
  events: EventQueue;
  /** Called when the client goes away. */
  close(): void;
}

/**
 * The handle of a stream that opens now: counted in `metrics` until the client goes away. A stream forwarded to the
 * gateway running the task is counted there only (`metrics` undefined on the forwarding side), so a cluster's sum
 * counts each stream once.
 */
export function streamHandle(events: EventQueue, metrics?: Pick<Metrics, "streamRequests" | "streamActive">): StreamHandle {
  metrics?.streamRequests.inc();
  metrics?.streamActive.inc();
  let closed = false;
  return {
    events,
    close: () => {
      if (closed) return;
      closed = true;
      metrics?.streamActive.dec();
      void events.return();
    },
  };
}
