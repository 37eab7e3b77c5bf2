// The text and reasoning lanes of a turn (StreamMapper, ./stream-mapper.ts). Lane artifacts have stable ids:
// `<taskId>:text` (all text parts of the turn, joined with a blank line) and `<taskId>:reasoning`. Chunks are appended
// (`append: true` after a lane's first chunk). Deltas arriving before their part's first `message.part.updated` are
// buffered per part (bounded) and replayed when it arrives; full-text snapshots are diffed against the part buffer and
// only the new suffix is sent. A snapshot that is not a prefix extension REPLACES the lane (`append: false`, the
// lane's full text) instead of being suppressed as the reference does (§17.9), so the live stream never diverges from
// the final text. A snapshot that is a stale prefix of what deltas already built is ignored.
//
// Echo guard: while nothing has been streamed yet, a text part equal to the user's own input is held back (and left
// out of the final text) unless it grows into something else.
import type { Artifact, ArtifactUpdateEvent, Metadata } from "../protocol/model.js";
import type { MapperOutput, TurnWire } from "./turn-events.js";

/** Joins the text parts of one turn (several assistant messages / steps) into the text lane and final text. */
export const TEXT_PART_SEPARATOR = "\n\n";

interface TextPart {
  id: string;
  messageId: string;
  text: string;
  /** Held back by the echo guard. */
  echo: boolean;
  lane: Lane;
}

interface Lane {
  artifactId: string;
  name: string;
  block: "text" | "reasoning";
  source: string;
  parts: TextPart[];
  emitted: boolean;
  /** The lane's text as the client has it after the chunks sent so far. */
  shown: string;
  /** The metadata (`shared.stream`) of the lane's last chunk. */
  metadata?: Metadata;
}

const visible = (p: TextPart): string => (p.echo ? "" : p.text);

/** A lane's text as the client has it: its visible parts joined with the separator. */
function laneText(lane: Lane): string {
  let text = "";
  for (const p of lane.parts) {
    const v = visible(p);
    if (v === "") continue;
    text = text === "" ? v : text + TEXT_PART_SEPARATOR + v;
  }
  return text;
}

/** The part text after a full-text snapshot: extensions and rewrites win, a stale (shorter) prefix does not. */
function mergeSnapshot(buffer: string, snapshot: string): string {
  if (snapshot === buffer || snapshot.startsWith(buffer)) return snapshot;
  return buffer.startsWith(snapshot) ? buffer : snapshot;
}

function laneArtifact(lane: Lane, text: string): Artifact {
  return { artifactId: lane.artifactId, name: lane.name, parts: [{ kind: "text", text }], ...(lane.metadata === undefined ? {} : { metadata: lane.metadata }) };
}

export class TextLanes {
  readonly #text: Lane;
  readonly #reasoning: Lane;
  readonly #parts = new Map<string, TextPart>();
  /** Deltas that arrived before their part's first message.part.updated (part id → text so far). */
  readonly #early = new Map<string, string>();
  #dropped = 0;

  constructor(
    private readonly wire: TurnWire,
    taskId: string,
    private readonly userText: string,
    private readonly earlyLimit: number,
  ) {
    const lane = (kind: "text" | "reasoning", name: string, source: string): Lane => ({
      artifactId: `${taskId}:${kind}`,
      name,
      block: kind,
      source,
      parts: [],
      emitted: false,
      shown: "",
    });
    this.#text = lane("text", "response", "assistant_text");
    this.#reasoning = lane("reasoning", "reasoning", "reasoning");
  }

  /** Early deltas dropped by the buffer bound. */
  get dropped(): number {
    return this.#dropped;
  }

  /** The text lane as streamed (never reasoning). */
  get text(): string {
    return laneText(this.#text);
  }

  /** A `message.part.delta` of a text or reasoning part. */
  delta(partId: string, delta: string, out: MapperOutput[]): void {
    const part = this.#parts.get(partId);
    if (part !== undefined) this.#setText(part, part.text + delta, out);
    else this.#bufferEarly(partId, delta);
  }

  /** A text or reasoning part's full text (`message.part.updated`). */
  snapshot(kind: "text" | "reasoning", id: string, messageId: string, snapshot: unknown, out: MapperOutput[]): void {
    const next = typeof snapshot === "string" ? snapshot : "";
    let part = this.#parts.get(id);
    if (part === undefined) {
      const lane = kind === "text" ? this.#text : this.#reasoning;
      part = { id, messageId, text: "", echo: false, lane };
      this.#parts.set(id, part);
      lane.parts.push(part);
      // Deltas that came first are replayed before the snapshot, so a snapshot that already contains them is
      // recognized as equal / an extension, and an older, shorter one as stale.
      const early = this.#early.get(id);
      if (early !== undefined) {
        this.#early.delete(id);
        this.#setText(part, mergeSnapshot(early, next), out);
        return;
      }
    }
    this.#setText(part, mergeSnapshot(part.text, next), out);
  }

  /** The text lane replaced by `text` in one whole chunk (`append: false, lastChunk: true`): the empty-output placeholder. */
  replaceText(text: string): ArtifactUpdateEvent {
    const lane = this.#text;
    const chunk = this.wire.artifact(lane.artifactId, lane.name, [{ kind: "text", text }], false, "text", lane.source, undefined, { lastChunk: true }).event;
    lane.metadata = chunk.artifact.metadata;
    return chunk;
  }

  /** The lanes' artifacts at the end of the turn (the text lane holding `finalText`); empty lanes have none. */
  artifacts(finalText: string): Artifact[] {
    const reasoning = laneText(this.#reasoning);
    return [
      ...(finalText === "" ? [] : [laneArtifact(this.#text, finalText)]),
      ...(reasoning === "" ? [] : [laneArtifact(this.#reasoning, reasoning)]),
    ];
  }

  #bufferEarly(partId: string, delta: string): void {
    const existing = this.#early.get(partId);
    if (existing !== undefined) {
      this.#early.set(partId, existing + delta);
      return;
    }
    if (this.#early.size >= this.earlyLimit) {
      const oldest = this.#early.keys().next().value as string;
      this.#early.delete(oldest);
      this.#dropped++;
    }
    this.#early.set(partId, delta);
  }

  /** Updates a text/reasoning part and emits the change of its lane (append the suffix, or replace the lane). */
  #setText(part: TextPart, text: string, out: MapperOutput[]): void {
    if (text === part.text) return;
    const lane = part.lane;
    const before = visible(part);
    part.text = text;
    if (part.echo) {
      part.echo = text.trim() === this.userText.trim();
    } else if (lane.block === "text" && !this.wire.artifactsSent && before === "" && this.#isEcho(text)) {
      part.echo = true;
    }
    const after = visible(part);
    if (after === before) return;
    const index = lane.parts.indexOf(part);
    const isTail = lane.parts.slice(index + 1).every((p) => visible(p) === "");
    if (isTail && after.startsWith(before)) {
      let chunk = after.slice(before.length);
      if (before === "" && lane.parts.slice(0, index).some((p) => visible(p) !== "")) chunk = TEXT_PART_SEPARATOR + chunk;
      this.#emit(lane, part, chunk, true, out);
    } else {
      this.#emit(lane, part, laneText(lane), false, out);
    }
  }

  #isEcho(text: string): boolean {
    const user = this.userText.trim();
    return user !== "" && text.trim() === user;
  }

  #emit(lane: Lane, part: TextPart, text: string, append: boolean, out: MapperOutput[]): void {
    const output = this.wire.artifact(lane.artifactId, lane.name, [{ kind: "text", text }], append && lane.emitted, lane.block, lane.source, part);
    lane.emitted = true;
    lane.shown = output.event.append === true ? lane.shown + text : text;
    lane.metadata = output.event.artifact.metadata;
    output.artifact = laneArtifact(lane, lane.shown);
    out.push(output);
  }
}
