// Which messages belong to a turn (StreamMapper, ./stream-mapper.ts), and how far the turn got. Parts count only when
// their message is an assistant message of this turn: parentID = our user message id when known, else the parent of
// the first assistant message seen after the turn started, or the user message of a follow-up sent into the turn.
// Roles are learned from `message.updated`; parts of messages whose role is not known yet are held (bounded, oldest
// message dropped first) and replayed once it is. User/system messages and OpenCode's compaction summaries are not
// the turn's.
import type { Event as OpencodeEvent } from "../../generated/opencode/types.gen.js";
import { isObject } from "../util/object.js";

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const NONE: readonly OpencodeEvent[] = [];

export class TurnScope {
  #started = false;
  /** OpenCode said busy since the last idle. */
  #busy = false;
  /** A stall was reported for the current idle period (idle is announced twice: status idle, then session.idle). */
  #stallReported = false;
  /** Parent (user message) of the turn's first assistant messages. */
  #parentId: string | undefined;
  /** The newest user message id seen before the turn started (OpenCode's ids ascend): follow-ups are newer. */
  #userFloor: string | undefined;
  /** Follow-up prompts sent into this turn, by acceptFollowUp() ordinal: their user message once seen, answered or not. */
  readonly #followUps: { id?: string; answered: boolean }[] = [];
  /** User message id → follow-up ordinal. */
  readonly #followUpIds = new Map<string, number>();
  /** The turn's assistant messages → whether OpenCode finished them (`time.completed` or `finish`). */
  readonly #finished = new Map<string, boolean>();
  /** Message id → whether its parts belong to this turn. */
  readonly #messages = new Map<string, boolean>();
  /** Events of messages whose role is not known yet, in arrival order. */
  readonly #held = new Map<string, OpencodeEvent[]>();
  #heldCount = 0;
  #dropped = 0;

  constructor(
    /** The OpenCode message id of our prompt, when known. */
    private readonly userMessageId: string | undefined,
    private readonly heldLimit: number,
  ) {}

  /** The turn has begun upstream (our user message, `busy`, or an assistant message of the turn was seen). */
  get started(): boolean {
    return this.#started;
  }

  get busy(): boolean {
    return this.#busy;
  }

  /** Held events dropped by the buffer bound. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Whether every assistant message of the turn is finished (false before the first one). */
  get allFinished(): boolean {
    if (this.#finished.size === 0) return false;
    for (const done of this.#finished.values()) if (!done) return false;
    return true;
  }

  /** `session.status busy`. */
  busyNow(): void {
    this.#started = true;
    this.#busy = true;
    this.#stallReported = false;
  }

  idleNow(): void {
    this.#busy = false;
  }

  /**
   * A `message.updated`: whether the message is one of the turn's (decided once per message id), and the events held
   * for it until now, to apply first (none when it is not the turn's).
   */
  message(id: string, info: Record<string, unknown>): { ours: boolean; held: readonly OpencodeEvent[] } {
    let ours = this.#messages.get(id);
    let held = NONE;
    if (ours === undefined) {
      ours = this.#classify(info);
      this.#messages.set(id, ours);
      const waiting = this.#held.get(id);
      if (waiting !== undefined) {
        this.#held.delete(id);
        this.#heldCount -= waiting.length;
        if (ours) held = waiting;
      }
    }
    if (ours) {
      const time = isObject(info.time) ? info.time : {};
      const done = typeof time.completed === "number" || (typeof info.finish === "string" && info.finish !== "");
      this.#finished.set(id, (this.#finished.get(id) ?? false) || done);
    }
    return { ours, held };
  }

  /** A part event of message `messageId`: true when it is to be applied now (held while the message is unknown). */
  route(messageId: string, event: OpencodeEvent): boolean {
    const ours = this.#messages.get(messageId);
    if (ours === undefined) this.#hold(messageId, event);
    return ours === true;
  }

  /** A follow-up prompt is about to be sent into the turn: its ordinal. */
  acceptFollowUp(): number {
    this.#followUps.push({ answered: false });
    return this.#followUps.length - 1;
  }

  /** The follow-up `ordinal` could not be sent (its prompt failed): the turn no longer waits for it. */
  withdrawFollowUp(ordinal: number): void {
    const f = this.#followUps[ordinal];
    if (f === undefined) return;
    f.answered = true;
    if (f.id !== undefined) this.#followUpIds.delete(f.id);
  }

  /** Follow-ups stored upstream but not answered; each is forgotten (a new prompt's user message takes its place). */
  stalledFollowUps(): number[] {
    const stalled: number[] = [];
    this.#followUps.forEach((f, ordinal) => {
      if (f.answered || f.id === undefined) return;
      this.#followUpIds.delete(f.id);
      delete f.id;
      stalled.push(ordinal);
    });
    return stalled;
  }

  /**
   * At an idle: undefined when every follow-up was answered (the turn may end). Else the follow-ups OpenCode stored
   * but left unanswered, to report as stalled: once per idle period, so empty when already reported (or none stored).
   */
  waitingFollowUps(): number[] | undefined {
    if (this.#followUps.every((f) => f.answered)) return undefined;
    const ordinals = this.#followUps.flatMap((f, i) => (!f.answered && f.id !== undefined ? [i] : []));
    const report = ordinals.length > 0 && !this.#stallReported;
    this.#stallReported = ordinals.length > 0;
    return report ? ordinals : [];
  }

  /** OpenCode user messages of this turn so far (the first prompt's, when seen, then each follow-up's), oldest first. */
  userMessageIds(): string[] {
    const first = this.userMessageId ?? this.#parentId ?? (this.#started ? this.#userFloor : undefined);
    const ids = first === undefined ? [] : [first];
    for (const f of this.#followUps) if (f.id !== undefined && !ids.includes(f.id)) ids.push(f.id);
    return ids;
  }

  /** Whether a message's parts belong to this turn (decided once per message id). */
  #classify(info: Record<string, unknown>): boolean {
    const userMessageId = this.userMessageId;
    const id = str(info.id);
    if (info.role === "user") {
      if (userMessageId !== undefined && id === userMessageId) this.#started = true;
      else if (id !== undefined && !this.#started) {
        if (this.#userFloor === undefined || id > this.#userFloor) this.#userFloor = id;
      } else if (id !== undefined && (this.#userFloor === undefined || id > this.#userFloor)) {
        // A new user message while the turn runs: the oldest follow-up still waiting for its own takes it.
        const ordinal = this.#followUps.findIndex((f) => f.id === undefined && !f.answered);
        if (ordinal >= 0) {
          (this.#followUps[ordinal] as { id?: string }).id = id;
          this.#followUpIds.set(id, ordinal);
        }
      }
      return false;
    }
    if (info.role !== "assistant" || info.summary === true) return false;
    const parent = str(info.parentID);
    const followUp = parent === undefined ? undefined : this.#followUpIds.get(parent);
    if (followUp !== undefined) {
      (this.#followUps[followUp] as { answered: boolean }).answered = true;
      this.#started = true;
      return true;
    }
    if (userMessageId !== undefined) {
      if (parent !== userMessageId) return false;
      this.#started = true;
      return true;
    }
    if (!this.#started) return false;
    this.#parentId ??= parent;
    return parent === this.#parentId;
  }

  #hold(messageId: string, event: OpencodeEvent): void {
    while (this.#heldCount >= this.heldLimit && this.#held.size > 0) {
      const [oldest, events] = this.#held.entries().next().value as [string, OpencodeEvent[]];
      this.#held.delete(oldest);
      this.#heldCount -= events.length;
      this.#dropped += events.length;
    }
    if (this.heldLimit <= 0) {
      this.#dropped++;
      return;
    }
    const list = this.#held.get(messageId);
    if (list === undefined) this.#held.set(messageId, [event]);
    else list.push(event);
    this.#heldCount++;
  }
}
