// Ordered fan-out of one task's events to every attached stream: each subscriber gets its own queue, events are
// appended to all queues synchronously in publication order, so concurrent subscribers see the same events in
// the same order (A2A 1.0 §3.5.2). A subscriber's iterator ends after the event that closes the stream.
import type { StreamEvent } from "../protocol/model.js";

export class EventQueue implements AsyncIterableIterator<StreamEvent> {
  #items: StreamEvent[] = [];
  #head = 0;
  #waiter: ((r: IteratorResult<StreamEvent>) => void) | undefined;
  #ended = false;

  constructor(private readonly onClose: (q: EventQueue) => void) {}

  push(event: StreamEvent): void {
    if (this.#ended) return;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter({ value: event, done: false });
    } else this.#items.push(event);
  }

  /** No more events after the buffered ones. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#head >= this.#items.length) {
      const waiter = this.#waiter;
      this.#waiter = undefined;
      waiter?.({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<StreamEvent>> {
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head++] as StreamEvent;
      if (this.#head > 256 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.#waiter = resolve;
    });
  }

  /** The consumer went away (client disconnected): stop buffering for it. */
  return(): Promise<IteratorResult<StreamEvent>> {
    this.#items = [];
    this.#head = 0;
    this.end();
    this.onClose(this);
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<StreamEvent> {
    return this;
  }
}

export class FanOut {
  readonly #queues = new Set<EventQueue>();
  #closed = false;

  get subscribers(): number {
    return this.#queues.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** A new subscriber; `first` (the current Task) is queued before any later event. */
  subscribe(first?: StreamEvent): EventQueue {
    const queue = new EventQueue((q) => this.#queues.delete(q));
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
