// Messages between OpenCode sessions (seed 002; the service is src/messages): each message with its owner (the
// principal that sent it), sender and receiver sessions, thread parent, draft / buffered state, acceptance and
// delivery times (nanoseconds since the epoch, as bigint). Drafts and buffered messages survive a restart. One
// Kysely implementation serves SQLite and PostgreSQL; the memory backend keeps them in a map.
import type { Insertable, Kysely, Selectable } from "kysely";
import type { SessionMessagesTable, SqlSchema } from "./sql/schema.js";
import { big, bigOrNull, bit, flag, int, storeCall } from "./sql/rows.js";

export interface StoredMessage {
  id: string;
  owner: string;
  createdAt: bigint;
  updatedAt: bigint;
  from: string | null;
  to: string | null;
  inReplyTo: string | null;
  /** The sender waits for the receiver's answer as a reply (request-response). */
  awaitReply: boolean;
  draft: boolean;
  buffered: boolean;
  acceptedAt: bigint | null;
  acceptedBy: string | null;
  initial: string;
  message: string;
  deliveredAt: bigint | null;
}

export interface MessageStore {
  /** Stores a new message; false when its id is taken (nothing is written). */
  create(message: StoredMessage): Promise<boolean>;
  /** Replaces a stored message (same id). */
  update(message: StoredMessage): Promise<void>;
  get(id: string): Promise<StoredMessage | undefined>;
  /** The messages waiting in a session's buffer (buffered, not accepted, not drafts), oldest first. */
  buffer(session: string): Promise<StoredMessage[]>;
  /** How many messages wait in each of these sessions' buffers. */
  bufferSizes(sessions: string[]): Promise<Map<string, number>>;
  /** The replies to a message, oldest first. */
  replies(id: string): Promise<StoredMessage[]>;
  /** The replies a session received (`to` it, `in_reply_to` set), oldest first. */
  repliesTo(session: string): Promise<StoredMessage[]>;
}

/** Oldest first; the same time: by id in code-unit order (SQLite's BINARY collation, PostgreSQL's "C" on the id). */
const byCreated = (a: StoredMessage, b: StoredMessage): number =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
const waiting = (m: StoredMessage): boolean => m.buffered && m.acceptedAt === null && !m.draft;

export class MemoryMessageStore implements MessageStore {
  readonly #byId = new Map<string, StoredMessage>();

  async create(message: StoredMessage): Promise<boolean> {
    if (this.#byId.has(message.id)) return false;
    this.#byId.set(message.id, { ...message });
    return true;
  }

  async update(message: StoredMessage): Promise<void> {
    this.#byId.set(message.id, { ...message });
  }

  async get(id: string): Promise<StoredMessage | undefined> {
    const m = this.#byId.get(id);
    return m === undefined ? undefined : { ...m };
  }

  async buffer(session: string): Promise<StoredMessage[]> {
    return this.#where((m) => m.to === session && waiting(m));
  }

  async bufferSizes(sessions: string[]): Promise<Map<string, number>> {
    const sizes = new Map(sessions.map((s) => [s, 0]));
    for (const m of this.#byId.values()) if (m.to !== null && sizes.has(m.to) && waiting(m)) sizes.set(m.to, sizes.get(m.to)! + 1);
    return sizes;
  }

  async replies(id: string): Promise<StoredMessage[]> {
    return this.#where((m) => m.inReplyTo === id);
  }

  async repliesTo(session: string): Promise<StoredMessage[]> {
    return this.#where((m) => m.to === session && m.inReplyTo !== null && !m.draft);
  }

  #where(keep: (m: StoredMessage) => boolean): StoredMessage[] {
    return [...this.#byId.values()].filter(keep).sort(byCreated).map((m) => ({ ...m }));
  }
}

type Row = Selectable<SessionMessagesTable>;

const fromRow = (r: Row): StoredMessage => ({
  id: r.id,
  owner: r.owner,
  createdAt: big(r.created_at),
  updatedAt: big(r.updated_at),
  from: r.from_session,
  to: r.to_session,
  inReplyTo: r.in_reply_to,
  awaitReply: flag(r.await_reply),
  draft: flag(r.draft),
  buffered: flag(r.buffered),
  acceptedAt: bigOrNull(r.accepted_at),
  acceptedBy: r.accepted_by,
  initial: r.initial,
  message: r.message,
  deliveredAt: bigOrNull(r.delivered_at),
});

const toRow = (m: StoredMessage): Insertable<SessionMessagesTable> => ({
  id: m.id,
  owner: m.owner,
  created_at: m.createdAt,
  updated_at: m.updatedAt,
  from_session: m.from,
  to_session: m.to,
  in_reply_to: m.inReplyTo,
  await_reply: bit(m.awaitReply),
  draft: bit(m.draft),
  buffered: bit(m.buffered),
  accepted_at: m.acceptedAt,
  accepted_by: m.acceptedBy,
  initial: m.initial,
  message: m.message,
  delivered_at: m.deliveredAt,
});

/**
 * The list padded to a power of two (repeating its last entry): an `IN` list's SQL text depends on its length, and
 * SQLite keeps one statement per text for the life of the process (src/storage/pin.ts), so lengths are few.
 */
function padded(values: string[]): string[] {
  let size = 1;
  while (size < values.length) size *= 2;
  return [...values, ...Array<string>(size - values.length).fill(values[values.length - 1]!)];
}

/** The message store of both SQL backends (SQLite and PostgreSQL), written once with Kysely. */
export class SqlMessageStore implements MessageStore {
  constructor(private readonly db: Kysely<SqlSchema>) {}

  #rows() {
    return this.db.selectFrom("a2a_session_messages").selectAll();
  }

  #waiting(session: string) {
    return this.#rows().where("to_session", "=", session).where("buffered", "=", 1).where("accepted_at", "is", null).where("draft", "=", 0);
  }

  create(message: StoredMessage): Promise<boolean> {
    return storeCall("messages.create", async () => {
      const result = await this.db
        .insertInto("a2a_session_messages")
        .values(toRow(message))
        .onConflict((oc) => oc.column("id").doNothing())
        .executeTakeFirst();
      return result.numInsertedOrUpdatedRows === 1n;
    });
  }

  update(message: StoredMessage): Promise<void> {
    return storeCall("messages.update", async () => {
      const { id: _id, ...rest } = toRow(message);
      await this.db
        .insertInto("a2a_session_messages")
        .values(toRow(message))
        .onConflict((oc) => oc.column("id").doUpdateSet(rest))
        .execute();
    });
  }

  get(id: string): Promise<StoredMessage | undefined> {
    return storeCall("messages.get", async () => {
      const row = await this.#rows().where("id", "=", id).executeTakeFirst();
      return row === undefined ? undefined : fromRow(row);
    });
  }

  buffer(session: string): Promise<StoredMessage[]> {
    return storeCall("messages.buffer", async () => (await this.#waiting(session).orderBy("created_at").orderBy("id").execute()).map(fromRow));
  }

  bufferSizes(sessions: string[]): Promise<Map<string, number>> {
    return storeCall("messages.bufferSizes", async () => {
      const sizes = new Map(sessions.map((s) => [s, 0]));
      if (sessions.length === 0) return sizes;
      const rows = await this.db
        .selectFrom("a2a_session_messages")
        .select(["to_session", (eb) => eb.fn.countAll<bigint | string>().as("n")])
        .where("to_session", "in", padded(sessions))
        .where("buffered", "=", 1)
        .where("accepted_at", "is", null)
        .where("draft", "=", 0)
        .groupBy("to_session")
        .execute();
      for (const r of rows) if (r.to_session !== null) sizes.set(r.to_session, int(r.n));
      return sizes;
    });
  }

  replies(id: string): Promise<StoredMessage[]> {
    return storeCall("messages.replies", async () => (await this.#rows().where("in_reply_to", "=", id).orderBy("created_at").orderBy("id").execute()).map(fromRow));
  }

  repliesTo(session: string): Promise<StoredMessage[]> {
    return storeCall("messages.repliesTo", async () =>
      (await this.#rows().where("to_session", "=", session).where("in_reply_to", "is not", null).where("draft", "=", 0).orderBy("created_at").orderBy("id").execute()).map(fromRow),
    );
  }
}
