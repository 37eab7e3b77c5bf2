// Calls and streams between the gateways of one database (over ./bus.ts), so any gateway can serve a request about a
// task whose turn runs on another one.
//
// Messages: {k:"req", id, from, op, body} asks the instance running a task to do `op`; it answers {k:"res", id, ok,
// body | error}. A stream op answers "res" once it is open, then sends {k:"ev", id, seq, body} per event and
// {k:"end", id, seq, error?} last; the asking side sends {k:"close", id} when its client went away. `seq` counts the
// events of one stream: a gap (a lost message) ends the stream with an error instead of skipping an event.
// A peer whose lease ran out (./leases.ts), or a bus that lost its connection, fails what waits on it with
// GATEWAY_PEER_UNREACHABLE.
import { randomUUID } from "node:crypto";
import { A2AError } from "../contract/errors.js";
import { errorFromWire, errorToWire, type WireError } from "./wire.js";

type Message =
  | { k: "req"; id: string; from: string; op: string; body: unknown; stream?: boolean }
  | { k: "res"; id: string; ok: true; body?: unknown }
  | { k: "res"; id: string; ok: false; error: WireError }
  | { k: "ev"; id: string; seq: number; body: unknown; from?: string }
  | { k: "end"; id: string; seq: number; error?: WireError }
  | { k: "close"; id: string };

/** How a message leaves this instance (PgBus.send). */
export type Send = (instance: string, message: unknown) => Promise<void>;
export type CallHandler = (body: never, from: string) => Promise<unknown>;
/** What a stream op serves: its events (ended by the op), and close() when the asking side went away. */
export interface StreamSource {
  events: AsyncIterable<unknown>;
  close(): void;
}
export type StreamHandler = (body: never, from: string) => Promise<StreamSource>;
/** Where a stream's events go on the asking side (a BoundedQueue): `detach` tells the serving side to stop. */
export interface StreamSink {
  push(event: unknown): void;
  end(): void;
  fail(error: A2AError): void;
}

interface PendingCall {
  peer: string;
  resolve(body: unknown): void;
  reject(error: A2AError): void;
  timer?: NodeJS.Timeout;
}

interface OpenStream {
  peer: string;
  sink: StreamSink;
  seq: number;
}

export const peerUnreachable = (peer: string, detail: string, data: Record<string, unknown> = {}): A2AError =>
  new A2AError("GATEWAY_PEER_UNREACHABLE", `The gateway instance running the task cannot be reached: ${detail}`, { instance: peer, ...data });

export class Peers {
  readonly #calls = new Map<string, PendingCall>();
  readonly #streams = new Map<string, OpenStream>();
  /** Streams this instance serves to others, by id. */
  readonly #serving = new Map<string, { source: StreamSource; to: string }>();
  /** Streams whose handler is still opening them, and those of them whose reader already went away. */
  readonly #opening = new Set<string>();
  readonly #closedEarly = new Set<string>();
  readonly #handlers = new Map<string, CallHandler>();
  readonly #streamHandlers = new Map<string, StreamHandler>();

  constructor(
    readonly instance: string,
    private readonly send: Send,
  ) {}

  handle(op: string, handler: CallHandler): void {
    this.#handlers.set(op, handler);
  }

  handleStream(op: string, handler: StreamHandler): void {
    this.#streamHandlers.set(op, handler);
  }

  /** Asks `peer` to do `op`; `timeoutMs` 0 waits as long as the peer lives. */
  call<T>(peer: string, op: string, body: unknown, timeoutMs = 30_000): Promise<T> {
    const id = randomUUID();
    return new Promise<T>((resolve, reject) => {
      const pending: PendingCall = { peer, resolve: resolve as (b: unknown) => void, reject };
      if (timeoutMs > 0) {
        pending.timer = setTimeout(() => this.#settle(id)?.reject(peerUnreachable(peer, `no answer to ${op} within ${timeoutMs} ms`, { timeout_ms: timeoutMs })), timeoutMs);
        pending.timer.unref();
      }
      this.#calls.set(id, pending);
      this.send(peer, { k: "req", id, from: this.instance, op, body } satisfies Message).catch((error: Error) =>
        this.#settle(id)?.reject(peerUnreachable(peer, error.message)),
      );
    });
  }

  /**
   * Opens the stream `op` on `peer`: resolves once the peer serves it (or rejects with its error); the events go to
   * the sink `make` gives, which calls `detach` when its reader went away.
   */
  async open<S extends StreamSink>(peer: string, op: string, body: unknown, make: (detach: () => void) => S, timeoutMs = 30_000): Promise<S> {
    const id = randomUUID();
    const sink = make(() => {
      if (this.#streams.delete(id)) this.#close(peer, id);
    });
    this.#streams.set(id, { peer, sink, seq: 0 });
    const opened = new Promise<unknown>((resolve, reject) => {
      const pending: PendingCall = { peer, resolve, reject };
      pending.timer = setTimeout(() => this.#settle(id)?.reject(peerUnreachable(peer, `no answer to ${op} within ${timeoutMs} ms`)), timeoutMs);
      pending.timer.unref();
      this.#calls.set(id, pending);
    });
    opened.catch(() => undefined); // awaited below; a timeout while the request is still queued is not unhandled
    try {
      await this.send(peer, { k: "req", id, from: this.instance, op, body, stream: true } satisfies Message);
      await opened;
    } catch (error) {
      this.#settle(id);
      // The peer may still open it (a late answer): it is told to stop.
      if (this.#streams.delete(id)) this.#close(peer, id);
      throw error instanceof A2AError ? error : peerUnreachable(peer, (error as Error).message);
    }
    return sink;
  }

  #close(peer: string, id: string): void {
    void this.send(peer, { k: "close", id } satisfies Message).catch(() => undefined);
  }

  #settle(id: string): PendingCall | undefined {
    const pending = this.#calls.get(id);
    if (pending === undefined) return undefined;
    this.#calls.delete(id);
    if (pending.timer !== undefined) clearTimeout(pending.timer);
    return pending;
  }

  /** A message from the bus. */
  async receive(raw: unknown): Promise<void> {
    const message = raw as Message;
    switch (message.k) {
      case "req":
        if (message.stream === true) void this.#serve(message);
        else void this.#answer(message);
        return;
      case "res": {
        const pending = this.#settle(message.id);
        if (message.ok) pending?.resolve(message.body);
        else {
          pending?.reject(errorFromWire(message.error));
          this.#streams.delete(message.id);
        }
        return;
      }
      case "ev": {
        const stream = this.#streams.get(message.id);
        if (stream === undefined) {
          // Nobody reads it here any more (timed out, closed): the serving side is told to stop.
          if (message.from !== undefined) this.#close(message.from, message.id);
          return;
        }
        if (message.seq !== stream.seq + 1) {
          this.#streams.delete(message.id);
          stream.sink.fail(peerUnreachable(stream.peer, `stream event ${stream.seq + 1} was lost`));
          this.#close(stream.peer, message.id);
          return;
        }
        stream.seq = message.seq;
        stream.sink.push(message.body);
        return;
      }
      case "end": {
        const stream = this.#streams.get(message.id);
        if (stream === undefined) return;
        this.#streams.delete(message.id);
        if (message.error !== undefined) stream.sink.fail(errorFromWire(message.error));
        else if (message.seq !== stream.seq) stream.sink.fail(peerUnreachable(stream.peer, "the stream's last events were lost"));
        else stream.sink.end();
        return;
      }
      case "close": {
        const serving = this.#serving.get(message.id);
        // A close for a stream that already ended (or was never asked for here) leaves nothing behind.
        if (serving === undefined && this.#opening.has(message.id)) this.#closedEarly.add(message.id);
        serving?.source.close();
        this.#serving.delete(message.id);
        return;
      }
    }
  }

  async #answer(message: Extract<Message, { k: "req" }>): Promise<void> {
    let reply: Message;
    try {
      const handler = this.#handlers.get(message.op);
      if (handler === undefined) throw new A2AError("INTERNAL_ERROR", `This gateway does not serve ${message.op}`);
      reply = { k: "res", id: message.id, ok: true, body: await handler(message.body as never, message.from) };
    } catch (error) {
      reply = { k: "res", id: message.id, ok: false, error: errorToWire(error) };
    }
    await this.send(message.from, reply).catch(() => undefined);
  }

  async #serve(message: Extract<Message, { k: "req" }>): Promise<void> {
    const { id, from } = message;
    let source: StreamSource;
    this.#opening.add(id);
    try {
      const handler = this.#streamHandlers.get(message.op);
      if (handler === undefined) throw new A2AError("INTERNAL_ERROR", `This gateway does not serve ${message.op}`);
      source = await handler(message.body as never, from);
    } catch (error) {
      this.#opening.delete(id);
      this.#closedEarly.delete(id);
      await this.send(from, { k: "res", id, ok: false, error: errorToWire(error) } satisfies Message).catch(() => undefined);
      return;
    }
    this.#opening.delete(id);
    if (this.#closedEarly.delete(id)) {
      source.close();
      return;
    }
    this.#serving.set(id, { source, to: from });
    let seq = 0;
    let error: WireError | undefined;
    try {
      await this.send(from, { k: "res", id, ok: true } satisfies Message);
      for await (const event of source.events) {
        if (!this.#serving.has(id)) break;
        const n = ++seq;
        // The first event names its sender: a reader that is gone can tell it to stop.
        await this.send(from, { k: "ev", id, seq: n, body: event, ...(n === 1 ? { from: this.instance } : {}) } satisfies Message);
      }
    } catch (err) {
      error = errorToWire(err);
    } finally {
      const closed = !this.#serving.delete(id);
      source.close();
      if (!closed) await this.send(from, { k: "end", id, seq, ...(error === undefined ? {} : { error }) } satisfies Message).catch(() => undefined);
    }
  }

  /**
   * `peer` is gone (its lease ran out), or (`peer` undefined) the bus lost messages or this gateway stops: what waits
   * on it fails with GATEWAY_PEER_UNREACHABLE. Peers that may still be alive are told: their streams from here end
   * with that error, and the streams they serve here are closed.
   */
  lost(peer: string | undefined, detail: string): void {
    for (const [id, pending] of [...this.#calls]) {
      if (peer === undefined || pending.peer === peer) this.#settle(id)?.reject(peerUnreachable(pending.peer, detail));
    }
    for (const [id, stream] of [...this.#streams]) {
      if (peer !== undefined && stream.peer !== peer) continue;
      this.#streams.delete(id);
      stream.sink.fail(peerUnreachable(stream.peer, detail));
      if (peer === undefined) this.#close(stream.peer, id);
    }
    for (const [id, serving] of [...this.#serving]) {
      if (peer !== undefined && serving.to !== peer) continue;
      this.#serving.delete(id);
      serving.source.close();
      if (peer === undefined) {
        const error = errorToWire(peerUnreachable(this.instance, detail));
        void this.send(serving.to, { k: "end", id, seq: -1, error } satisfies Message).catch(() => undefined);
      }
    }
  }

  /** The peers something here waits on (the lease tick checks they are alive). */
  waitingOn(): Set<string> {
    const peers = new Set<string>();
    for (const p of this.#calls.values()) peers.add(p.peer);
    for (const s of this.#streams.values()) peers.add(s.peer);
    for (const s of this.#serving.values()) peers.add(s.to);
    return peers;
  }
}
