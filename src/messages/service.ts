// Messages between OpenCode sessions (seed 002; spec: extensions/opencode/messages.tsp). A message goes to a new
// session, a fork, or an existing session of the caller (./sessions.ts). Drafts are kept, never delivered, and
// iterated (`iterate` with `id`) until sent. A ready message to a new or forked session, and any reply, is prompted
// into its session at once (a prompt naming the sender and thread: ./wire.ts); a message to an existing session that
// is not a reply waits in that session's buffer until accepted (oldest, newest, by id, by position), then is
// delivered. Request-response (`await_reply`): the receiving session's answer becomes a reply threaded to the request
// (./replies.ts). Messages are durable in the store (storage/messages.ts); each is visible to its owner (the
// principal that sent it) and to whoever may use its sending or receiving session.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type {
  MessagesBufferParams,
  MessagesBufferResult,
  MessagesGetResult,
  MessagesListSessionsResult,
  MessagesSendParams,
  MessagesSendResult,
  SessionMessage,
} from "../../generated/types/extensions.js";
import type { Principal } from "../auth/index.js";
import type { Routing } from "../bridge/directory.js";
import { A2AError } from "../contract/errors.js";
import { invalid } from "../protocol/codec/common.js";
import type { MessageStore, StoredMessage } from "../storage/messages.js";
import type { UpstreamClient } from "../upstream/client.js";
import type { EventHub } from "../upstream/hub.js";
import { latestAnswer, TURN_END_TYPES, turnEnded, within } from "./replies.js";
import { upstreamCall, type SessionDirectory } from "./sessions.js";
import { BUFFER_INSTRUCTION, deliveryPrompt, nowNs, toWire } from "./wire.js";

export interface MessageServiceOptions {
  store: MessageStore;
  directory: SessionDirectory;
  upstream: UpstreamClient;
  hub: EventHub;
  /** A2A_MESSAGES_DEFAULT_SESSION: where a send goes without `session` / `fork`. */
  defaultSession: string;
  /** A2A_MESSAGES_AWAIT_TIMEOUT_SECONDS in ms. */
  awaitTimeoutMs: number;
  /** A2A_MESSAGES_CURRENT_DIRECTORY_ONLY: a listing cannot name another directory. */
  currentDirectoryOnly: boolean;
  /** A2A_MESSAGES_ACTIVE_ONLY: listings show working sessions only. */
  activeOnly: boolean;
  /** The workspace root (OPENCODE_WORKSPACE_ROOT): the directory of a request that names none. */
  root: string;
  log: Pick<Logger, "warn">;
  now?: () => number;
}

/** Who sends: the principal, and the session it sends from (a tool call's session, or `from_session`). */
export interface Sender {
  principal: Principal;
  session?: string;
}

/**
 * A turn the service started by delivering a message: until it ends, the session's tool calls to the gateway's MCP
 * endpoint act for `principal` (the sender, or whoever accepted the message from the buffer).
 */
export interface DeliveredTurn {
  sessionId: string;
  messageId: string;
  principal: Principal;
  routing: Routing;
}

/** How long a delivered turn is followed (for its reply and its tool calls) at the most. */
export const DELIVERY_WATCH_MS = 3_600_000;

const notFound = (id: string): A2AError => new A2AError("MESSAGE_NOT_FOUND", undefined, { id });

export class MessageService {
  readonly #now: () => number;
  /** Delivered turns not yet ended, by message id. */
  readonly #turns = new Map<string, DeliveredTurn>();

  constructor(private readonly opts: MessageServiceOptions) {
    this.#now = opts.now ?? Date.now;
  }

  /** The turns delivered messages started that are still running (the MCP endpoint attributes their tool calls). */
  deliveredTurns(): DeliveredTurn[] {
    return [...this.#turns.values()];
  }

  // ---- send ---------------------------------------------------------------------------------------------------

  async send(sender: Sender, params: MessagesSendParams, routing: Routing, signal?: AbortSignal): Promise<MessagesSendResult> {
    if (params.elaborate === true) throw invalid("elaborate", "is not supported (seed 002 lists it as future work)");
    const principal = sender.principal;
    const from = await this.#from(sender, params, routing);
    if (params.iterate === true) return this.#iterate(principal, params, routing, signal);
    const id = params.id ?? randomUUID();
    if (params.id !== undefined && (await this.opts.store.get(params.id)) !== undefined) throw invalid("id", `message ${params.id} exists; iterate: true updates a draft`);
    const parent = params.reply === undefined ? undefined : await this.#visible(principal, params.reply);
    const { to, existing } = await this.#target(principal, params, from, parent, routing);
    const now = nowNs(this.#now);
    const message: StoredMessage = {
      id,
      owner: principal.id,
      createdAt: now,
      updatedAt: now,
      from,
      to,
      inReplyTo: parent?.id ?? null,
      awaitReply: params.await_reply === true,
      draft: params.draft === true,
      // Only a message to an existing session that is not a reply waits to be accepted.
      buffered: existing && parent === undefined,
      acceptedAt: null,
      acceptedBy: null,
      initial: params.message,
      message: params.message,
      deliveredAt: null,
    };
    if (!(await this.opts.store.create(message))) throw invalid("id", `message ${id} exists; iterate: true updates a draft`);
    return this.#dispatch(message, principal, routing, params, signal);
  }

  /** `iterate`: a draft's new text and state; `draft: false` sends it. */
  async #iterate(principal: Principal, params: MessagesSendParams, routing: Routing, signal?: AbortSignal): Promise<MessagesSendResult> {
    if (params.id === undefined) throw invalid("id", "is required with iterate (the draft to update)");
    for (const field of ["session", "fork", "reply"] as const) {
      if (params[field] !== undefined) throw invalid(field, "cannot change when a draft is iterated");
    }
    const stored = await this.opts.store.get(params.id);
    if (stored === undefined || (stored.owner !== principal.id && !principal.admin)) throw notFound(params.id);
    if (!stored.draft) throw invalid("id", `message ${params.id} was sent; only drafts can be iterated`);
    const updated: StoredMessage = {
      ...stored,
      message: params.message,
      draft: params.draft !== false,
      awaitReply: params.await_reply ?? stored.awaitReply,
      updatedAt: nowNs(this.#now),
    };
    await this.opts.store.update(updated);
    return this.#dispatch(updated, principal, routing, params, signal);
  }

  /** After a message is stored: a draft or a buffered message stays; a ready one is delivered (and awaited). */
  async #dispatch(message: StoredMessage, principal: Principal, routing: Routing, params: MessagesSendParams, signal?: AbortSignal): Promise<MessagesSendResult> {
    if (message.draft) return { message: toWire(message) };
    if (message.buffered) {
      return { message: toWire(message), ...(message.awaitReply ? { awaiting: "the message waits in the receiver's buffer; its reply is threaded once it is accepted and answered" } : {}) };
    }
    const timeoutMs = params.await_timeout_seconds === undefined ? this.opts.awaitTimeoutMs : params.await_timeout_seconds * 1000;
    const { delivered, reply } = await this.#deliver(message, principal, routing, message.awaitReply ? { timeoutMs, signal } : undefined);
    return {
      message: toWire(delivered),
      ...(reply === undefined ? {} : { reply: toWire(reply) }),
      ...(message.awaitReply && reply === undefined ? { awaiting: `no answer within ${timeoutMs / 1000} s; the reply is threaded when it comes` } : {}),
    };
  }

  /**
   * Prompts the message into its session. A delivery OpenCode refuses leaves the message a draft (nothing is lost;
   * iterate it to send again) and fails the call. The turn it starts is followed (one subscription, made before the
   * prompt so its end cannot be missed) until it ends, at most DELIVERY_WATCH_MS: meanwhile it is one of the
   * deliveredTurns(), and with `await_reply` its answer becomes the reply when it ends. With `wait`, the call waits
   * for that reply at most `wait.timeoutMs`; a later answer is still threaded when the turn ends.
   */
  async #deliver(
    message: StoredMessage,
    principal: Principal,
    routing: Routing,
    wait?: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<{ delivered: StoredMessage; reply?: StoredMessage }> {
    const to = message.to;
    if (to === null) return { delivered: message };
    const sub = this.opts.hub.subscribe({ sessions: [to], types: TURN_END_TYPES });
    const since = this.#now();
    try {
      await sub.ready(10_000);
      await upstreamCall(() =>
        this.opts.upstream.call("sessionPromptAsync", (c) => sdk.sessionPromptAsync({ ...c, path: { sessionID: to }, body: { parts: [{ type: "text", text: deliveryPrompt(message) }] } }), {
          ...routing,
          sessionId: to,
        }),
      );
    } catch (error) {
      sub.close();
      // Nothing is lost: a message accepted from a buffer goes back into it; any other becomes a draft (iterate it
      // to send again).
      const kept = message.acceptedAt !== null ? { acceptedAt: null, acceptedBy: null } : { draft: true };
      await this.opts.store.update({ ...message, ...kept, updatedAt: nowNs(this.#now) });
      throw error;
    }
    const delivered: StoredMessage = { ...message, deliveredAt: nowNs(this.#now), updatedAt: nowNs(this.#now) };
    // Followed from here on (turnEnded never rejects and closes the subscription), whatever the update below does.
    this.#turns.set(message.id, { sessionId: to, messageId: message.id, principal, routing });
    const ended = turnEnded(sub, DELIVERY_WATCH_MS).finally(() => this.#turns.delete(message.id));
    await this.opts.store.update(delivered);
    if (!message.awaitReply) return { delivered };
    const answered = ended.then((done) => (done ? this.#reply(delivered, routing, since) : undefined));
    answered.catch((error: unknown) => this.opts.log.warn({ err: String(error), id: message.id }, "could not thread the answer to a message"));
    if (wait === undefined) return { delivered };
    const reply = await within(answered, wait.timeoutMs, wait.signal);
    return { delivered, ...(reply === undefined ? {} : { reply }) };
  }

  /** The receiving session's answer to `request` as a reply message (from it, to the request's sender). */
  async #reply(request: StoredMessage, routing: Routing, sinceMs: number): Promise<StoredMessage | undefined> {
    if (request.to === null || (await this.opts.store.replies(request.id)).some((r) => r.from === request.to)) return undefined;
    const text = await latestAnswer(this.opts.upstream, request.to, routing, sinceMs);
    if (text === undefined) return undefined;
    const now = nowNs(this.#now);
    const reply: StoredMessage = {
      id: randomUUID(),
      owner: request.owner,
      createdAt: now,
      updatedAt: now,
      from: request.to,
      to: request.from,
      inReplyTo: request.id,
      awaitReply: false,
      draft: false,
      buffered: false,
      acceptedAt: null,
      acceptedBy: null,
      initial: text,
      message: text,
      // Returned to the sender (the tool call or the A2A client), not prompted into its session.
      deliveredAt: now,
    };
    await this.opts.store.create(reply);
    return reply;
  }

  // ---- addressing ---------------------------------------------------------------------------------------------

  /** The sending session: `from_session`, else the tool call's; it must be one the caller may use. */
  async #from(sender: Sender, params: MessagesSendParams, routing: Routing): Promise<string | null> {
    const named = params.from_session ?? sender.session;
    if (named === undefined) return null;
    return this.opts.directory.resolve(sender.principal, named, routing, "from_session");
  }

  /** Where a new message goes, and whether that is an existing session (then a non-reply is buffered). */
  async #target(principal: Principal, params: MessagesSendParams, from: string | null, parent: StoredMessage | undefined, routing: Routing): Promise<{ to: string; existing: boolean }> {
    const dir = this.opts.directory;
    const forking = params.fork !== undefined && params.fork !== false;
    if (forking || params.session === "fork") {
      if (params.session !== undefined && params.session !== "fork") throw invalid("fork", "cannot be combined with a session (seed 002: a fork is of the sending session)");
      if (from === null) throw invalid("fork", "needs the session to fork: from_session");
      const back: true | number = params.fork === undefined || params.fork === true ? true : (params.fork as number);
      if (back !== true && (!Number.isInteger(back) || back < 1)) throw invalid("fork", "must be true or a number of messages (1 or more)");
      return { to: await dir.fork(principal, from, back, routing), existing: false };
    }
    const named = params.session ?? (parent === undefined ? this.opts.defaultSession : undefined);
    if (named === undefined) {
      // A reply without a session goes back to the session the message it answers came from.
      if (parent?.from === null || parent?.from === undefined) throw invalid("session", `message ${parent?.id ?? ""} came from no session: name the session to reply to`);
      return { to: await dir.resolve(principal, parent.from, routing, "reply"), existing: true };
    }
    if (named === "new") return { to: await dir.create(principal, `Message from ${from === null ? principal.id : `session ${from}`}`, routing), existing: false };
    return { to: await dir.resolve(principal, named, routing, "session"), existing: true };
  }

  /** A stored message the caller may see (MESSAGE_NOT_FOUND otherwise, exactly as for an unknown id). */
  async #visible(principal: Principal, id: string): Promise<StoredMessage> {
    const m = await this.opts.store.get(id);
    if (m === undefined) throw notFound(id);
    const dir = this.opts.directory;
    const mine =
      m.owner === principal.id || principal.admin || (m.to !== null && (await dir.mayUse(principal, m.to))) || (m.from !== null && (await dir.mayUse(principal, m.from)));
    // A draft is its author's alone.
    if (!mine || (m.draft && m.owner !== principal.id && !principal.admin)) throw notFound(id);
    return m;
  }

  // ---- list_sessions / buffer / get ---------------------------------------------------------------------------

  /** The directory a routing names (a workspace names none). */
  #directoryOf(routing: Routing): string | undefined {
    if ("directory" in routing) return routing.directory;
    return "workspace" in routing ? undefined : this.opts.root;
  }

  /**
   * The caller's sessions of a directory, newest first: `dir` (default: the routing's directory; another one is
   * refused under A2A_MESSAGES_CURRENT_DIRECTORY_ONLY; `reroute` gives its routing), `active` only working (true) or
   * only idle (false) ones (A2A_MESSAGES_ACTIVE_ONLY: only working ones).
   */
  async listSessions(principal: Principal, routing: Routing, params: { dir?: string | undefined; active?: boolean | undefined }, reroute: (dir: string) => Routing): Promise<MessagesListSessionsResult> {
    let where = routing;
    if (params.dir !== undefined && params.dir !== this.#directoryOf(routing)) {
      if (this.opts.currentDirectoryOnly) throw invalid("dir", "must be the caller's directory (A2A_MESSAGES_CURRENT_DIRECTORY_ONLY)");
      try {
        where = reroute(params.dir);
      } catch (error) {
        if (error instanceof A2AError && error.reason === "INVALID_PARAMS") throw invalid("dir", error.message.replace(/^directory /, ""));
        throw error;
      }
    }
    const active = this.opts.activeOnly ? true : params.active;
    const dir = this.opts.directory;
    const [sessions, busy] = await Promise.all([dir.list(principal, where), dir.busy(where)]);
    const wanted = sessions.filter((s) => active === undefined || busy.has(s.id) === active);
    const sizes = await this.opts.store.bufferSizes(wanted.map((s) => s.id));
    return {
      sessions: wanted.map((s) => ({
        id: s.id,
        title: s.title,
        directory: s.directory,
        active: busy.has(s.id),
        ...(s.parentID === undefined ? {} : { parent_id: s.parentID }),
        buffered: sizes.get(s.id) ?? 0,
        updated: s.time.updated,
      })),
    };
  }

  async buffer(sender: Sender, params: MessagesBufferParams, routing: Routing): Promise<MessagesBufferResult> {
    const session = await this.opts.directory.resolve(sender.principal, params.session, routing, "session");
    let accepted: StoredMessage | undefined;
    if (params.accept !== undefined && params.accept !== false) {
      const chosen = this.#choose(await this.opts.store.buffer(session), params.accept);
      const now = nowNs(this.#now);
      const taken: StoredMessage = { ...chosen, acceptedAt: now, acceptedBy: sender.session !== undefined && sender.session !== session ? sender.session : null, updatedAt: now };
      await this.opts.store.update(taken);
      accepted = (await this.#deliver(taken, sender.principal, routing)).delivered;
    }
    const waiting = (await this.opts.store.buffer(session)).map(toWire);
    return {
      session,
      messages: waiting,
      ...(accepted === undefined ? {} : { accepted: toWire(accepted) }),
      ...(params.replies === true ? { replies: (await this.opts.store.repliesTo(session)).map(toWire) } : {}),
      ...(accepted === undefined ? { instruction: BUFFER_INSTRUCTION } : {}),
    };
  }

  /**
   * The buffered message `accept` names: `true` / `oldest`, `newest`, a message id, or a number (an id first, then a
   * position of the list, 1 = oldest).
   */
  #choose(buffer: StoredMessage[], accept: boolean | string | number): StoredMessage {
    if (buffer.length === 0) throw new A2AError("MESSAGE_NOT_FOUND", "the buffer is empty", { id: String(accept) });
    if (accept === true || accept === "oldest") return buffer[0]!;
    if (accept === "newest") return buffer[buffer.length - 1]!;
    const key = String(accept);
    const byId = buffer.find((m) => m.id === key);
    if (byId !== undefined) return byId;
    if (/^\d+$/.test(key)) {
      const at = Number(key);
      if (at >= 1 && at <= buffer.length) return buffer[at - 1]!;
    }
    throw new A2AError("MESSAGE_NOT_FOUND", `no buffered message with id ${key}${/^\d+$/.test(key) ? ` or at position ${key} (the buffer holds ${buffer.length})` : ""}`, { id: key });
  }

  /** A message and its thread of replies (replies to replies too), oldest first. */
  async get(principal: Principal, id: string): Promise<MessagesGetResult> {
    const message = await this.#visible(principal, id);
    const thread: SessionMessage[] = [];
    const queue = [message.id];
    const seen = new Set(queue);
    while (queue.length > 0 && thread.length < 1_000) {
      for (const reply of await this.opts.store.replies(queue.shift()!)) {
        if (seen.has(reply.id) || (reply.draft && reply.owner !== principal.id && !principal.admin)) continue;
        seen.add(reply.id);
        thread.push(toWire(reply));
        queue.push(reply.id);
      }
    }
    thread.sort((a, b) => (BigInt(a.created_at) < BigInt(b.created_at) ? -1 : 1));
    return { message: toWire(message), replies: thread };
  }
}
