/**
 * What the stub knows: its sessions with their messages, running turns and reply scripts, the files its tools
 * wrote, the pending permission and question requests, and the settings every route reads. Lookups that answer
 * like the real server (404 for an unknown session, 409 for a busy one) live here too; nothing here emits events.
 */
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import type { Message, Part, PermissionRequest, QuestionRequest, Session, Todo, UserMessage } from "../../../generated/opencode/types.gen.js";
import type { Reply } from "../script.js";
import type { StubUpstreamOptions } from "./api.js";
import { notFound, type HttpError } from "./common.js";

export interface MessageRecord {
  info: Message;
  parts: Part[];
}

export interface SessionRecord {
  info: Session;
  messages: MessageRecord[];
  script: Reply[];
  prompted: boolean;
  seq: number;
  loop: Loop | undefined;
  /** `${permission}\0${pattern}` approved with reply "always" */
  approved: string[];
  deleted: boolean;
  /** the last list written by the todowrite tool (GET /session/{id}/todo) */
  todos: Todo[];
  /** forks made of this session (the fork title counts them) */
  forks: number;
}

/** A running turn of a session. */
export interface Loop {
  user: UserMessage;
  queued: UserMessage[];
  controller: AbortController;
  current: MessageRecord | undefined;
  waiters: Array<(result: MessageRecord) => void>;
  silent: boolean;
  /** loseTurns(): the turn vanished with the process; its messages stay as they were. */
  lost?: boolean;
}

export type PermissionDecision = { reply: "once" | "always" | "reject"; message?: string };
export type QuestionDecision = { answers: string[][] } | { rejected: true };

export interface PendingPermission {
  request: PermissionRequest;
  directory: string;
  /** wakes the turn waiting for the answer; undefined once that turn is gone (aborted) */
  resolve: ((decision: PermissionDecision) => void) | undefined;
}

export interface PendingQuestion {
  request: QuestionRequest;
  directory: string;
  resolve: ((decision: QuestionDecision) => void) | undefined;
}

export class StubState {
  /** where the stub listens, once it does (share links and paging links point here) */
  url = "";
  /** the default instance directory (the real server's cwd) */
  readonly directory: string;
  readonly version: string;
  readonly model: { providerID: string; modelID: string };
  readonly defaultReply: Reply;
  readonly sharing: boolean;
  readonly sessions = new Map<string, SessionRecord>();
  /** What write/edit tool calls left in each file (absolute path → content): GET /file/content reads it. */
  readonly files = new Map<string, string>();
  readonly permissions = new Map<string, PendingPermission>();
  readonly questions = new Map<string, PendingQuestion>();
  /** replies for any session, consumed after the session's own script */
  readonly globalScript: Reply[] = [];
  /** turns answered with the default reply because nothing was scripted */
  unscripted = 0;
  /** numbers the tool calls that come without an id */
  callCounter = 0;

  constructor(opts: StubUpstreamOptions) {
    this.directory = resolve(opts.directory ?? process.cwd());
    this.version = opts.version ?? "1.18.33";
    this.model = opts.model ?? { providerID: "fake", modelID: "fake-model" };
    this.defaultReply = opts.defaultReply ?? { kind: "text", chunks: ["ok"] };
    this.sharing = opts.sharing ?? false;
  }

  /** The live session, or the real server's 404. */
  session(id: string): SessionRecord {
    const rec = this.sessions.get(id);
    if (rec === undefined || rec.deleted) throw notFound(`Session not found: ${id}`);
    return rec;
  }

  /** The real server's 409 for changes it refuses while a turn runs. */
  notBusy(rec: SessionRecord): void {
    if (rec.loop === undefined) return;
    const sessionID = rec.info.id;
    throw { status: 409, body: { _tag: "SessionBusyError", sessionID, message: `Session is busy: ${sessionID}` } } satisfies HttpError;
  }

  touch(rec: SessionRecord): void {
    rec.info.time.updated = Math.max(Date.now(), rec.info.time.updated);
  }

  nextReply(rec: SessionRecord): Reply {
    const reply = rec.script.shift() ?? this.globalScript.shift();
    if (reply !== undefined) return reply;
    this.unscripted++;
    return this.defaultReply;
  }

  /** The default directory is a git project (a sha1 id); any other directory is the "global" project. */
  projectOf(directory: string): string {
    return directory === this.directory ? createHash("sha1").update(directory).digest("hex") : "global";
  }

  snapshot(rec: SessionRecord): string {
    return createHash("sha1").update(`snapshot:${rec.info.directory}`).digest("hex");
  }
}
