// The message bus between the gateways of one PostgreSQL database: LISTEN/NOTIFY, one channel per gateway instance.
//
// - Order: everything an instance sends goes out on one connection of its own, one NOTIFY after the other, and the
//   receiver handles its notifications one after the other: what A sends to B arrives in the order A sent it.
// - Size: a NOTIFY payload is at most 8000 bytes. A message larger than PAYLOAD_LIMIT is stored in a2a_bus_payloads
//   and the notification carries its id; the receiver reads and deletes it before it handles the next message.
//   Payloads nobody read (the receiver died) are deleted after PAYLOAD_TTL_MS by prune().
// - Failure: when the listening connection breaks, `onDown` runs (whatever was in flight may be lost) and the bus
//   connects again, with a growing pause, until it is stopped.
import crypto from "node:crypto";
import { createRequire } from "node:module";
import type pg from "pg";
import type { Logger } from "pino";

/** The pg client class, loaded when a bus connects (a gateway without PostgreSQL never loads pg). */
const pgClient = (): typeof pg.Client => (createRequire(import.meta.url)("pg") as typeof pg).Client;

/** Bytes of JSON a NOTIFY carries itself (PostgreSQL's limit is 8000 including the channel name). */
export const PAYLOAD_LIMIT = 7_000;
/** How long an unread large payload is kept. */
export const PAYLOAD_TTL_MS = 10 * 60_000;

/** The channel of an instance: a hash, so any instance id is a valid identifier. */
export const channelOf = (instance: string): string => `a2a_${crypto.createHash("sha256").update(instance).digest("hex").slice(0, 40)}`;

export interface BusOptions {
  /** The database URL (the bus opens two connections of its own besides the stores' pool). */
  url: string;
  /** The stores' pool (large payloads). */
  pool: pg.Pool;
  instance: string;
  log: Pick<Logger, "warn" | "info">;
  /** A message for this instance, in the order it was sent. */
  receive(message: unknown): Promise<void> | void;
  /** The listening connection broke: messages may have been lost. */
  onDown(error: Error): void;
}

export class PgBus {
  #listener: pg.Client | undefined;
  #sender: pg.Client | undefined;
  #senderReady: Promise<pg.Client> | undefined;
  /** Sends, one after the other. */
  #sending: Promise<unknown> = Promise.resolve();
  /** Received messages, handled one after the other. */
  #receiving: Promise<void> = Promise.resolve();
  #stopped = false;
  #retry: NodeJS.Timeout | undefined;
  #pause = 250;

  constructor(private readonly opts: BusOptions) {}

  /** Listens on this instance's channel (throws when the database cannot be reached). */
  async start(): Promise<void> {
    await this.#listen();
  }

  async #listen(): Promise<void> {
    const client = new (pgClient())({ connectionString: this.opts.url, keepAlive: true });
    // Until it is this bus's listener, #lost ignores it (a failed connect rejects below instead).
    client.on("error", (error) => this.#lost(client, error));
    client.on("end", () => this.#lost(client, new Error("the listening connection ended")));
    client.on("notification", (n) => {
      if (n.payload === undefined) return;
      const payload = n.payload;
      this.#receiving = this.#receiving.then(() => this.#handle(payload));
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${channelOf(this.opts.instance)}"`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.#stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#listener = client;
    this.#pause = 250;
  }

  #lost(client: pg.Client, error: Error): void {
    if (this.#listener !== client) return;
    this.#listener = undefined;
    void client.end().catch(() => undefined);
    if (this.#stopped) return;
    this.opts.log.warn({ err: error.message }, "the gateway bus lost its PostgreSQL connection; reconnecting");
    this.opts.onDown(error);
    this.#reconnect();
  }

  #reconnect(): void {
    if (this.#stopped || this.#retry !== undefined) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#listen().then(
        // What was asked while no one listened may never be answered: it fails now rather than waiting for ever.
        () => this.opts.onDown(new Error("the bus was down; messages sent meanwhile may be lost")),
        () => {
          this.#pause = Math.min(this.#pause * 2, 5_000);
          this.#reconnect();
        },
      );
    }, this.#pause);
    this.#retry.unref();
  }

  async #handle(payload: string): Promise<void> {
    try {
      let text = payload;
      const ref = /^\{"ref":"(\d+)"\}$/.exec(payload);
      if (ref !== null) {
        const { rows } = await this.opts.pool.query<{ body: string }>("DELETE FROM a2a_bus_payloads WHERE id = $1 RETURNING body", [ref[1]]);
        if (rows[0] === undefined) throw new Error(`bus payload ${ref[1]} is gone`);
        text = rows[0].body;
      }
      await this.opts.receive(JSON.parse(text) as unknown);
    } catch (error) {
      this.opts.log.warn({ err: (error as Error).message }, "a gateway bus message could not be handled");
    }
  }

  /** Sends `message` to `instance` (after every message sent before it). Rejects when it could not be sent. */
  send(instance: string, message: unknown): Promise<void> {
    const sent = this.#sending.then(() => this.#send(instance, message));
    this.#sending = sent.catch(() => undefined);
    return sent;
  }

  async #send(instance: string, message: unknown): Promise<void> {
    if (this.#stopped) throw new Error("the gateway bus is stopped");
    let text = JSON.stringify(message);
    const client = await this.#senderClient();
    try {
      if (Buffer.byteLength(text) > PAYLOAD_LIMIT) {
        const { rows } = await client.query<{ id: string }>("INSERT INTO a2a_bus_payloads (body, created_at) VALUES ($1, $2) RETURNING id", [text, Date.now()]);
        text = JSON.stringify({ ref: String(rows[0]!.id) });
      }
      await client.query("SELECT pg_notify($1, $2)", [channelOf(instance), text]);
    } catch (error) {
      // A broken connection is opened again for the next message.
      if (this.#sender === client) this.#dropSender();
      throw error;
    }
  }

  #senderClient(): Promise<pg.Client> {
    if (this.#senderReady !== undefined) return this.#senderReady;
    const client = new (pgClient())({ connectionString: this.opts.url, keepAlive: true, connectionTimeoutMillis: 10_000 });
    client.on("error", () => {
      if (this.#sender === client) this.#dropSender();
    });
    this.#sender = client;
    const ready = client.connect().then(() => client);
    this.#senderReady = ready;
    ready.catch(() => {
      if (this.#sender === client) this.#dropSender();
    });
    return ready;
  }

  #dropSender(): void {
    const client = this.#sender;
    this.#sender = undefined;
    this.#senderReady = undefined;
    void client?.end().catch(() => undefined);
  }

  /** Deletes large payloads nobody read in PAYLOAD_TTL_MS (their receiver stopped). */
  async prune(now: number): Promise<void> {
    await this.opts.pool.query("DELETE FROM a2a_bus_payloads WHERE created_at < $1", [now - PAYLOAD_TTL_MS]);
  }

  async stop(): Promise<void> {
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    // What is queued still goes out (the last events and ends of streams served from here), then nothing more.
    await this.#sending;
    this.#stopped = true;
    await this.#sending;
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end().catch(() => undefined);
    const sender = this.#sender;
    this.#dropSender();
    await sender?.end().catch(() => undefined);
  }
}
