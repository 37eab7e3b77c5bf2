// What a streaming operation returns to its transport: the events, already encoded for the caller's line, and a
// way to release the subscription. The transport frames them (src/transport/sse.ts).
export class EventStream {
  constructor(
    /** Already encoded for the caller's line; a thrown error becomes the stream's last (error) event. */
    readonly events: AsyncIterator<unknown>,
    /** The client disconnected (or the response ended): release the subscription. */
    readonly close: () => void,
  ) {}
}

/** The same stream, also running `release` (once) when it is closed. */
export function withRelease(stream: EventStream, release: () => void): EventStream {
  return new EventStream(stream.events, () => {
    release();
    stream.close();
  });
}
