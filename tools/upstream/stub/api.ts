/**
 * The stub's public surface: its options, the test controls on the object startStubUpstream() returns, and what
 * those controls take and report. tools/upstream/stub.ts re-exports all of it.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Reply } from "../script.js";

export interface StubUpstreamOptions {
  /** default 0 (any free port) */
  port?: number;
  /** enables Basic auth on every route (like OPENCODE_SERVER_PASSWORD) */
  password?: string;
  /** Basic auth user name, default "opencode" */
  username?: string;
  /** `server.heartbeat` interval per SSE connection, default 10000 */
  heartbeatMs?: number;
  /** reported by /global/health and stamped on sessions, default "1.18.33" */
  version?: string;
  /** the default instance directory (the real server's cwd), default process.cwd() */
  directory?: string;
  /** answer when no reply is scripted, default text "ok" */
  defaultReply?: Reply;
  /** model stamped on messages, default fake/fake-model (the hermetic config's) */
  model?: { providerID: string; modelID: string };
  /** answer `POST /session/{id}/share` with a link; default false: 500 like the real server with sharing disabled */
  sharing?: boolean;
  /** emit the `sync` duplicate frames on /global/event like the real server, default true */
  syncFrames?: boolean;
  /** an SSE connection whose unsent output exceeds this is destroyed (slow reader), default 16 MiB */
  maxBufferedBytes?: number;
  /** burst() waits this long for a congested SSE connection to drain before destroying it, default 5000 */
  slowReaderTimeoutMs?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** parsed JSON, the raw text when it is not JSON, undefined when empty */
  body: unknown;
  headers: IncomingHttpHeaders;
}

/** "GET /session/*\/message" (method + path, `*` matches one segment), "/global/health" (any method), a RegExp
 * tested against "METHOD /path", or a predicate. */
export type RouteMatch = string | RegExp | ((req: { method: string; path: string }) => boolean);

export type FailRule =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { destroy: true }
  | { delayMs: number };

/** What `emit()` accepts: any event; `id` is filled in when absent. */
export interface EmitEvent {
  id?: string;
  type: string;
  properties?: unknown;
}

export interface BurstOptions {
  sessions: string[];
  eventsPerSession: number;
  /** size of each delta string, default 16 */
  deltaBytes?: number;
}

export interface StubStats {
  eventConnections: number;
  eventsEmitted: number;
  framesWritten: number;
  /** characters of SSE frames written (bytes for ASCII payloads) */
  bytesWritten: number;
  slowReadersDropped: number;
  requests: number;
  sessions: number;
  busySessions: number;
  unscriptedReplies: number;
}

export interface StubUpstream {
  url: string;
  port: number;
  directory: string;
  /** every request received, in order */
  requests: RecordedRequest[];
  /** queue replies for any session (consumed after the session's own queue) */
  script(...replies: Reply[]): void;
  /** queue replies for one session */
  scriptFor(sessionID: string, ...replies: Reply[]): void;
  /** push an arbitrary event to /event subscribers of `directory` (default: the stub's) and to /global/event */
  emit(event: EmitEvent, opts?: { directory?: string }): void;
  /** destroy every open SSE connection */
  dropEventStreams(): void;
  /**
   * What a killed and restarted OpenCode shows: every running turn stops without another event, its assistant
   * message stays unfinished (no completion, no error), no session is busy, and the event streams are cut.
   */
  loseTurns(): void;
  pauseHeartbeats(paused: boolean): void;
  /** the next request matching `match` gets `rule` instead of (or, for delayMs, before) its normal answer */
  failNext(match: RouteMatch, rule: FailRule): void;
  eventConnections(): number;
  burst(opts: BurstOptions): Promise<{ events: number; ms: number }>;
  stats(): StubStats;
  /** destroys every socket and stops all timers */
  close(): Promise<void>;
}
