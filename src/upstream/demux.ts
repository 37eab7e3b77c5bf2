// The event hub's demultiplexer (./hub.ts): the subscribers of the one upstream connection, indexed by session, and
// the routing of every frame to them. Session subscribers receive the events of their sessions (of the types they
// asked for); wildcard subscribers receive everything (of their directory). While no wildcard subscriber is
// attached, a frame that names no subscribed session, or is of a type no session subscriber wants, is counted and
// dropped unparsed (./frames.ts).
import type { Event as OpencodeEvent } from "../../generated/opencode/types.gen.js";
import { frameType, mayConcern, sessionIdOf } from "./frames.js";
import { Subscription, type HubEvent, type HubItem, type SubscriptionHost } from "./subscription.js";
import { isObject } from "../util/object.js";

export interface SubscriberOptions {
  all: boolean;
  directory: string | undefined;
  stream: boolean;
  bufferLimit: number;
  types: ReadonlySet<string> | undefined;
}

export class Demux implements SubscriptionHost {
  readonly #bySession = new Map<string, Set<Subscription>>();
  readonly #wildcards = new Set<Subscription>();
  readonly #subscribers = new Set<Subscription>();
  /** Session subscribers without a type filter; while there are none (and no wildcard), #wanted decides parsing. */
  #allTypes = 0;
  /** How many filtered session subscribers want each type. */
  readonly #wanted = new Map<string, number>();
  #streams = 0;
  #seq = 0;
  #framesIn = 0;
  #delivered = 0;
  #overflows = 0;
  #malformed = 0;
  #unparsed = 0;

  constructor(readonly ready: (timeoutMs?: number) => Promise<void>) {}

  /** Subscribers attached now, and how many of them are A2A streams. */
  get subscribers(): number {
    return this.#subscribers.size;
  }

  get streams(): number {
    return this.#streams;
  }

  counters(): { framesIn: number; eventsDelivered: number; overflows: number; malformed: number; unparsed: number } {
    return { framesIn: this.#framesIn, eventsDelivered: this.#delivered, overflows: this.#overflows, malformed: this.#malformed, unparsed: this.#unparsed };
  }

  add(opts: SubscriberOptions, sessions: Iterable<string>): Subscription {
    const sub = new Subscription(this, opts.all, opts.directory, opts.stream, opts.bufferLimit, opts.types);
    this.#subscribers.add(sub);
    if (sub.types === undefined) this.#allTypes++;
    else for (const t of sub.types) this.#wanted.set(t, (this.#wanted.get(t) ?? 0) + 1);
    if (sub.stream) this.#streams++;
    if (sub.all) this.#wildcards.add(sub);
    for (const id of sessions) sub.addSession(id);
    return sub;
  }

  index(sub: Subscription, sessionId: string): void {
    let set = this.#bySession.get(sessionId);
    if (set === undefined) this.#bySession.set(sessionId, (set = new Set()));
    set.add(sub);
  }

  unindex(sub: Subscription, sessionId: string): void {
    const set = this.#bySession.get(sessionId);
    if (set === undefined) return;
    set.delete(sub);
    if (set.size === 0) this.#bySession.delete(sessionId);
  }

  detach(sub: Subscription): void {
    if (!this.#subscribers.delete(sub)) return;
    if (sub.failure !== undefined) this.#overflows++;
    if (sub.stream) this.#streams--;
    if (sub.types === undefined) this.#allTypes--;
    else
      for (const t of sub.types) {
        const n = (this.#wanted.get(t) ?? 0) - 1;
        if (n > 0) this.#wanted.set(t, n);
        else this.#wanted.delete(t);
      }
    this.#wildcards.delete(sub);
    for (const id of sub.sessions) this.unindex(sub, id);
  }

  /** An item for every subscriber (the connection went down or came back). */
  broadcast(item: HubItem): void {
    for (const sub of [...this.#subscribers]) sub._push(item);
  }

  closeAll(): void {
    for (const sub of [...this.#subscribers]) sub.close();
  }

  /** The data of one frame: routed, or dropped unparsed when no subscriber can want it. */
  frame(data: string): void {
    if (this.#wildcards.size === 0 && (!mayConcern(data, this.#bySession) || (this.#allTypes === 0 && !this.#wants(data)))) {
      this.#framesIn++;
      this.#unparsed++;
      return;
    }
    let frame: unknown;
    try {
      frame = JSON.parse(data);
    } catch {
      frame = data; // counted as malformed by #dispatch
    }
    this.#dispatch(frame);
  }

  /** A frame some filtered subscriber may want: its type is wanted, or cannot be read without parsing. */
  #wants(data: string): boolean {
    const type = frameType(data);
    return type === undefined || this.#wanted.has(type);
  }

  #dispatch(frame: unknown): void {
    this.#framesIn++;
    // /global/event frames: { directory?, project?, payload: { id, type, properties } }
    const payload = isObject(frame) ? frame.payload : undefined;
    if (!isObject(payload) || typeof payload.type !== "string") {
      this.#malformed++;
      return;
    }
    const type = payload.type;
    if (type === "sync" || type === "server.heartbeat" || type === "server.connected") return;
    const directory = isObject(frame) && typeof frame.directory === "string" ? frame.directory : undefined;
    const item: HubEvent = { type: "event", event: payload as unknown as OpencodeEvent, directory, seq: ++this.#seq };
    const sessionId = sessionIdOf(payload);
    if (sessionId !== undefined) {
      const subs = this.#bySession.get(sessionId);
      if (subs !== undefined) {
        for (const sub of subs) {
          if (sub.types !== undefined && !sub.types.has(type)) continue;
          sub._push(item);
          this.#delivered++;
        }
      }
    }
    for (const sub of this.#wildcards) {
      if (sub.directory !== undefined && sub.directory !== directory) continue;
      if (sessionId !== undefined && sub.sessions.has(sessionId)) continue; // already delivered above
      sub._push(item);
      this.#delivered++;
    }
  }
}
