// Messages between OpenCode sessions (seed 002; the service is src/messages): each message with its owner (the
// principal that sent it), sender and receiver sessions, thread parent, draft / buffered state, acceptance and
// delivery times (nanoseconds since the epoch, as bigint). Drafts and buffered messages survive a restart.
// SQLite and in-memory alike.
import type { StoreDatabase } from "./database.js";

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
  create(message: StoredMessage): boolean;
  /** Replaces a stored message (same id). */
  update(message: StoredMessage): void;
  get(id: string): StoredMessage | undefined;
  /** The messages waiting in a session's buffer (buffered, not accepted, not drafts), oldest first. */
  buffer(session: string): StoredMessage[];
  /** How many messages wait in each of these sessions' buffers. */
  bufferSizes(sessions: string[]): Map<string, number>;
  /** The replies to a message, oldest first. */
  replies(id: string): StoredMessage[];
  /** The replies a session received (`to` it, `in_reply_to` set), oldest first. */
  repliesTo(session: string): StoredMessage[];
}

const byCreated = (a: StoredMessage, b: StoredMessage): number => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id.localeCompare(b.id));
const waiting = (m: StoredMessage): boolean => m.buffered && m.acceptedAt === null && !m.draft;

export class MemoryMessageStore implements MessageStore {
  readonly #byId = new Map<string, StoredMessage>();

  create(message: StoredMessage): boolean {
    if (this.#byId.has(message.id)) return false;
    this.#byId.set(message.id, { ...message });
    return true;
  }

  update(message: StoredMessage): void {
    this.#byId.set(message.id, { ...message });
  }

  get(id: string): StoredMessage | undefined {
    const m = this.#byId.get(id);
    return m === undefined ? undefined : { ...m };
  }

  buffer(session: string): StoredMessage[] {
    return [...this.#byId.values()].filter((m) => m.to === session && waiting(m)).sort(byCreated).map((m) => ({ ...m }));
  }

  bufferSizes(sessions: string[]): Map<string, number> {
    const sizes = new Map(sessions.map((s) => [s, 0]));
    for (const m of this.#byId.values()) if (m.to !== null && sizes.has(m.to) && waiting(m)) sizes.set(m.to, sizes.get(m.to)! + 1);
    return sizes;
  }

  replies(id: string): StoredMessage[] {
    return [...this.#byId.values()].filter((m) => m.inReplyTo === id).sort(byCreated).map((m) => ({ ...m }));
  }

  repliesTo(session: string): StoredMessage[] {
    return [...this.#byId.values()].filter((m) => m.to === session && m.inReplyTo !== null && !m.draft).sort(byCreated).map((m) => ({ ...m }));
  }
}

interface Row {
  id: string;
  owner: string;
  created_at: bigint;
  updated_at: bigint;
  from_session: string | null;
  to_session: string | null;
  in_reply_to: string | null;
  await_reply: bigint;
  draft: bigint;
  buffered: bigint;
  accepted_at: bigint | null;
  accepted_by: string | null;
  initial: string;
  message: string;
  delivered_at: bigint | null;
}

const fromRow = (r: Row): StoredMessage => ({
  id: r.id,
  owner: r.owner,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  from: r.from_session,
  to: r.to_session,
  inReplyTo: r.in_reply_to,
  awaitReply: r.await_reply === 1n,
  draft: r.draft === 1n,
  buffered: r.buffered === 1n,
  acceptedAt: r.accepted_at,
  acceptedBy: r.accepted_by,
  initial: r.initial,
  message: r.message,
  deliveredAt: r.delivered_at,
});

const COLUMNS = "id, owner, created_at, updated_at, from_session, to_session, in_reply_to, await_reply, draft, buffered, accepted_at, accepted_by, initial, message, delivered_at";
const ORDER = "ORDER BY created_at, id";

export class SqliteMessageStore implements MessageStore {
  constructor(private readonly store: StoreDatabase) {}

  #values(m: StoredMessage): unknown[] {
    return [m.id, m.owner, m.createdAt, m.updatedAt, m.from, m.to, m.inReplyTo, m.awaitReply ? 1 : 0, m.draft ? 1 : 0, m.buffered ? 1 : 0, m.acceptedAt, m.acceptedBy, m.initial, m.message, m.deliveredAt];
  }

  /** Rows with every integer as a bigint (nanosecond times do not fit a double). */
  #all(sql: string, ...args: unknown[]): StoredMessage[] {
    return (this.store.statement(sql).safeIntegers(true).all(...args) as Row[]).map(fromRow);
  }

  create(message: StoredMessage): boolean {
    return this.store.guard("messages.create", () => {
      const result = this.store.statement(`INSERT OR IGNORE INTO a2a_session_messages (${COLUMNS}) VALUES (${COLUMNS.split(",").map(() => "?").join(", ")})`).run(...this.#values(message));
      return result.changes === 1;
    });
  }

  update(message: StoredMessage): void {
    this.store.guard("messages.update", () => {
      this.store.statement(`INSERT OR REPLACE INTO a2a_session_messages (${COLUMNS}) VALUES (${COLUMNS.split(",").map(() => "?").join(", ")})`).run(...this.#values(message));
    });
  }

  get(id: string): StoredMessage | undefined {
    return this.store.guard("messages.get", () => this.#all(`SELECT ${COLUMNS} FROM a2a_session_messages WHERE id = ?`, id)[0]);
  }

  buffer(session: string): StoredMessage[] {
    return this.store.guard("messages.buffer", () =>
      this.#all(`SELECT ${COLUMNS} FROM a2a_session_messages WHERE to_session = ? AND buffered = 1 AND accepted_at IS NULL AND draft = 0 ${ORDER}`, session),
    );
  }

  bufferSizes(sessions: string[]): Map<string, number> {
    const sizes = new Map(sessions.map((s) => [s, 0]));
    if (sessions.length === 0) return sizes;
    return this.store.guard("messages.bufferSizes", () => {
      const rows = this.store
        .statement(
          `SELECT to_session, COUNT(*) AS n FROM a2a_session_messages WHERE to_session IN (SELECT value FROM json_each(?)) AND buffered = 1 AND accepted_at IS NULL AND draft = 0 GROUP BY to_session`,
        )
        .all(JSON.stringify(sessions)) as { to_session: string; n: number }[];
      for (const r of rows) sizes.set(r.to_session, r.n);
      return sizes;
    });
  }

  replies(id: string): StoredMessage[] {
    return this.store.guard("messages.replies", () => this.#all(`SELECT ${COLUMNS} FROM a2a_session_messages WHERE in_reply_to = ? ${ORDER}`, id));
  }

  repliesTo(session: string): StoredMessage[] {
    return this.store.guard("messages.repliesTo", () =>
      this.#all(`SELECT ${COLUMNS} FROM a2a_session_messages WHERE to_session = ? AND in_reply_to IS NOT NULL AND draft = 0 ${ORDER}`, session),
    );
  }
}
