// What the StreamMapper (./stream-mapper.ts) hands the runtime, and how its events are written for the wire.
//
// Every artifact and status update of a turn is built here (TurnWire), with `metadata.shared.stream`: a per-turn,
// strictly increasing `sequence` (from `startSequence`), `event_id` `<taskId>:<contextId>:<sequence>`, the block
// type, source, message and part ids; status updates also carry `metadata.shared.session`. Each event goes out with
// a typed description next to it (its block, its interrupt), so the runtime acts on events without reading their
// metadata back, and an artifact update with the artifact as a client holds it after the update (its text
// accumulated here, once: the runtime only stores it).
import type { Artifact, ArtifactUpdateEvent, Message, Metadata, Part, StatusUpdateEvent, TaskState } from "../protocol/model.js";
import type { UpstreamError } from "../upstream/errors.js";

export type BlockType = "text" | "reasoning" | "tool_call" | "file" | "changes";
export type InterruptType = "permission" | "question";
export type TurnOutcome = "completed" | "failed" | "canceled" | "auth-required";

/** An artifact update, the block it streams, and the artifact as a client holds it after this update (compact). */
export interface ArtifactOutput {
  kind: "artifact";
  event: ArtifactUpdateEvent;
  block: BlockType;
  artifact: Artifact;
}

interface InterruptBase {
  requestId: string;
  type: InterruptType;
  /** The object published at `metadata.shared.interrupt` (the task keeps it while the state it set lasts). */
  published: Metadata;
}

/**
 * An OpenCode permission or question request asked or resolved in this turn, as the status update publishes it;
 * `details` of an asked one: what it asks (questions, options, reply_options, …).
 */
export type InterruptSignal = (InterruptBase & { phase: "asked"; details: Metadata }) | (InterruptBase & { phase: "resolved" });

/** A status update and the interrupt it announces, if any. */
export interface StatusOutput {
  kind: "status";
  event: StatusUpdateEvent;
  interrupt?: InterruptSignal;
}

export interface TerminalOutput {
  kind: "terminal";
  state: TurnOutcome;
  error?: UpstreamError;
}

/**
 * The session went idle while follow-ups of this turn are still unanswered (`ordinals`: their acceptFollowUp()
 * numbers, 0-based). OpenCode may start a loop for them by itself (a prompt that arrived just as its loop ended), so the
 * runtime waits briefly and prompts again only what is still unanswered then (stalledFollowUps()).
 */
export interface StalledOutput {
  kind: "stalled";
  ordinals: number[];
}

export type MapperOutput = ArtifactOutput | StatusOutput | TerminalOutput | StalledOutput;

interface StreamMeta {
  block_type?: BlockType;
  source: string;
  message_id: string;
  part_id?: string;
  event_id: string;
  sequence: number;
  role: "agent";
}

/** The upstream part an event comes from (its ids go into `shared.stream`). */
export interface PartRef {
  id: string;
  messageID?: string;
  messageId?: string;
}

export class TurnWire {
  #seq: number;
  #artifacts = false;

  constructor(
    private readonly ids: { taskId: string; contextId: string; sessionId: string },
    startSequence: number,
    private readonly now: () => string,
  ) {
    this.#seq = startSequence - 1;
  }

  /** The last sequence number used. */
  get sequence(): number {
    return this.#seq;
  }

  /** Whether any artifact update was built yet (the echo guard holds only while none was). */
  get artifactsSent(): boolean {
    return this.#artifacts;
  }

  #nextMeta(source: string, messageId: string | undefined, partId: string | undefined, block: BlockType | undefined): StreamMeta {
    const sequence = ++this.#seq;
    const { taskId, contextId } = this.ids;
    return {
      ...(block === undefined ? {} : { block_type: block }),
      source,
      message_id: messageId ?? `${taskId}:${contextId}:assistant`,
      ...(partId === undefined ? {} : { part_id: partId }),
      event_id: `${taskId}:${contextId}:${sequence}`,
      sequence,
      role: "agent",
    };
  }

  /** An artifact update; `extra` metadata goes before `shared.stream`, `lastChunk` marks a whole, final chunk. */
  artifact(
    artifactId: string,
    name: string,
    parts: Part[],
    append: boolean,
    block: BlockType,
    source: string,
    part: PartRef | undefined,
    extra?: { metadata?: Metadata; lastChunk: true },
  ): ArtifactOutput {
    this.#artifacts = true;
    const stream = this.#nextMeta(source, part?.messageID ?? part?.messageId, part?.id, block);
    const event: ArtifactUpdateEvent = {
      kind: "artifact-update",
      taskId: this.ids.taskId,
      contextId: this.ids.contextId,
      artifact: { artifactId, name, parts, metadata: { ...extra?.metadata, shared: { stream } } },
      append,
      lastChunk: extra?.lastChunk ?? false,
    };
    return { kind: "artifact", event, block, artifact: event.artifact };
  }

  /** A non-final status update carrying `shared` (progress or interrupt) next to the stream and session. */
  status(state: TaskState, shared: Metadata, source: string, messageId: string | undefined, message?: Message, interrupt?: InterruptSignal): StatusOutput {
    const stream = this.#nextMeta(source, messageId, undefined, undefined);
    const event: StatusUpdateEvent = {
      kind: "status-update",
      taskId: this.ids.taskId,
      contextId: this.ids.contextId,
      status: { state, timestamp: this.now(), ...(message === undefined ? {} : { message }) },
      final: false,
      metadata: { shared: { ...shared, stream, session: { id: this.ids.sessionId } } },
    };
    return interrupt === undefined ? { kind: "status", event } : { kind: "status", event, interrupt };
  }
}
