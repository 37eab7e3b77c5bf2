// A bounded async queue: one producer pushes synchronously, one consumer reads with `for await` (or next()).
// Shared by the upstream event hub (a subscriber's buffer) and the task fan-out (an attached stream's buffer): a
// consumer that falls `limit` items behind is not served silently less, it is ended with the error `overflow` makes
// (its buffered items are dropped, its next read rejects once, then it is done).
//
// Three ways to end: end() (the producer is done; what is buffered is still read), close() (the consumer went away:
// buffered items are dropped, a pending read resolves as done) and fail(). `onDetach` runs once, on close or fail,
// so the producer stops routing items to a queue nobody reads.

export class BoundedQueue<T, E = Error> implements AsyncIterableIterator<T> {
  #items: T[] = [];
  #head = 0;
  #waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  /** No more items are taken (end, close or fail). */
  #ended = false;
  /** Closed or failed: detached from its producer. */
  #closed = false;
  #failure: E | undefined;
  #failureDelivered = false;

  constructor(
    readonly limit: number,
    private readonly overflow: () => E,
    private readonly onDetach?: () => void,
  ) {}

  /** Closed or failed. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Items buffered and not yet read. */
  get buffered(): number {
    return this.#items.length - this.#head;
  }

  /** The error that ended the queue (overflow, or fail()), if any. */
  get failure(): E | undefined {
    return this.#failure;
  }

  push(item: T): void {
    if (this.#ended) return;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter.resolve({ value: item, done: false });
      return;
    }
    if (this.buffered >= this.limit) {
      this.fail(this.overflow());
      return;
    }
    this.#items.push(item);
  }

  /** No more items after the buffered ones. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.buffered > 0) return;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.resolve({ value: undefined, done: true });
  }

  /** Ends the queue with an error: buffered items are dropped, the next read rejects. */
  fail(error: E): void {
    if (this.#closed) return;
    this.#failure = error;
    this.#detach();
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      this.#failureDelivered = true;
      waiter.reject(error);
    }
  }

  /** Ends the queue now: buffered items are dropped, a pending read resolves as done. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#detach();
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.resolve({ value: undefined, done: true });
  }

  #detach(): void {
    this.#items = [];
    this.#head = 0;
    this.#ended = true;
    this.#closed = true;
    this.onDetach?.();
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head++] as T;
      // Read items are dropped in batches, not one shift() per read.
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.#failure !== undefined && !this.#failureDelivered) {
      this.#failureDelivered = true;
      return Promise.reject(this.#failure);
    }
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  /** The consumer is done (a `for await` loop left early, the client disconnected). */
  return(): Promise<IteratorResult<T>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
