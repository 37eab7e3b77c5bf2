/**
 * The stub's event streams: `/event` (one directory) and `/global/event` (every directory, each event wrapped with
 * its directory and project, plus the real server's `sync` duplicates) with heartbeats, slow-reader protection and
 * the benchmark burst, and the per-session emitters the turns and routes use.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Event, Message, Part, SessionStatus, UserMessage } from "../../../generated/opencode/types.gen.js";
import type { BurstOptions, StubUpstreamOptions } from "./api.js";
import { ev, newId } from "./common.js";
import type { SessionRecord, StubState } from "./state.js";

interface Subscriber {
  res: ServerResponse;
  global: boolean;
  directory: string;
  heartbeat: NodeJS.Timeout;
}

type Payload = Event | { id: string; type: "server.heartbeat"; properties: Record<string, never> };

/** Event types the real server duplicates as `sync` frames on /global/event. */
const SYNC_TYPES = new Set<string>(["session.created", "session.updated", "session.deleted", "message.updated", "message.part.updated"]);

function waitDrain(res: ServerResponse): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((done) => {
    const finish = (): void => {
      res.off("drain", finish);
      res.off("close", finish);
      done();
    };
    res.on("drain", finish);
    res.on("close", finish);
  });
}

export class EventBus {
  readonly counters = { eventsEmitted: 0, framesWritten: 0, bytesWritten: 0, slowReadersDropped: 0 };
  private readonly subscribers = new Set<Subscriber>();
  private readonly heartbeatMs: number;
  private readonly syncFrames: boolean;
  private readonly maxBufferedBytes: number;
  private readonly slowReaderTimeoutMs: number;
  private heartbeatsPaused = false;
  private closed = false;

  constructor(
    private readonly state: StubState,
    opts: StubUpstreamOptions,
  ) {
    this.heartbeatMs = opts.heartbeatMs ?? 10_000;
    this.syncFrames = opts.syncFrames ?? true;
    this.maxBufferedBytes = opts.maxBufferedBytes ?? 16 * 1024 * 1024;
    this.slowReaderTimeoutMs = opts.slowReaderTimeoutMs ?? 5000;
  }

  get connections(): number {
    return this.subscribers.size;
  }

  pauseHeartbeats(paused: boolean): void {
    this.heartbeatsPaused = paused;
  }

  open(req: IncomingMessage, res: ServerResponse, global: boolean, directory: string): void {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
      "x-content-type-options": "nosniff",
      vary: "Origin",
    });
    res.flushHeaders();
    const sub: Subscriber = {
      res,
      global,
      directory,
      heartbeat: setInterval(() => {
        if (this.heartbeatsPaused) return;
        this.write(sub, this.frame(sub, { id: newId("evt"), type: "server.heartbeat", properties: {} }));
      }, this.heartbeatMs),
    };
    sub.heartbeat.unref();
    this.subscribers.add(sub);
    res.on("close", () => this.drop(sub, false));
    req.socket.setNoDelay(true);
    this.write(sub, this.frame(sub, ev("server.connected", {})));
  }

  /** Destroys every open stream. */
  dropAll(): void {
    for (const sub of [...this.subscribers]) this.drop(sub, true);
  }

  /** No event goes out any more; every stream is destroyed. */
  close(): void {
    this.closed = true;
    this.dropAll();
  }

  /** Sends one event to the matching subscribers; returns those that asked for backpressure. */
  broadcast(payload: Event, directory: string): Subscriber[] {
    if (this.closed) return [];
    this.counters.eventsEmitted++;
    const blocked: Subscriber[] = [];
    if (this.subscribers.size === 0) return blocked;
    const json = JSON.stringify(payload);
    const local = `data: ${json}\n\n`;
    const project = this.state.projectOf(directory);
    const head = `data: {"directory":${JSON.stringify(directory)},"project":${JSON.stringify(project)},"payload":`;
    const globalFrame = `${head}${json}}\n\n`;
    let syncFrame: string | undefined;
    if (this.syncFrames && SYNC_TYPES.has(payload.type)) {
      const props = payload.properties as { sessionID?: string };
      const rec = props.sessionID === undefined ? undefined : this.state.sessions.get(props.sessionID);
      const seq = rec === undefined ? 0 : rec.seq++;
      const sync = { type: "sync", syncEvent: { id: payload.id, type: `${payload.type}.1`, seq, aggregateID: props.sessionID ?? "", data: payload.properties }, id: payload.id };
      syncFrame = `${head}${JSON.stringify(sync)}}\n\n`;
    }
    for (const sub of this.subscribers) {
      if (!sub.global && sub.directory !== directory) continue;
      let ok = this.write(sub, sub.global ? globalFrame : local);
      if (sub.global && syncFrame !== undefined) ok = this.write(sub, syncFrame) && ok;
      if (!ok) blocked.push(sub);
    }
    return blocked;
  }

  async burst(opts: BurstOptions): Promise<{ events: number; ms: number }> {
    const started = performance.now();
    const delta = "x".repeat(Math.max(0, opts.deltaBytes ?? 16));
    const targets = opts.sessions.map((sessionID) => ({
      sessionID,
      messageID: newId("msg"),
      partID: newId("prt"),
      directory: this.state.sessions.get(sessionID)?.info.directory ?? this.state.directory,
    }));
    let events = 0;
    for (let i = 0; i < opts.eventsPerSession && !this.closed; i++) {
      for (const t of targets) {
        const blocked = this.broadcast(
          ev("message.part.delta", { sessionID: t.sessionID, messageID: t.messageID, partID: t.partID, field: "text", delta }),
          t.directory,
        );
        events++;
        if (blocked.length > 0) await Promise.all(blocked.map((sub) => this.drainOrDrop(sub)));
        else if (events % 512 === 0) await new Promise((r) => setImmediate(r));
      }
    }
    return { events, ms: performance.now() - started };
  }

  // ----- events of a session -----------------------------------------------------------------------------------------

  /** Nothing of a silenced turn (delete, close) or a deleted session goes out. */
  send(rec: SessionRecord, payload: Event): void {
    if (rec.loop?.silent === true || rec.deleted) return;
    this.broadcast(payload, rec.info.directory);
  }

  session(rec: SessionRecord): void {
    this.send(rec, ev("session.updated", { sessionID: rec.info.id, info: rec.info }));
  }

  message(rec: SessionRecord, info: Message): void {
    this.send(rec, ev("message.updated", { sessionID: rec.info.id, info }));
  }

  part(rec: SessionRecord, part: Part): void {
    this.send(rec, ev("message.part.updated", { sessionID: rec.info.id, part, time: Date.now() }));
  }

  status(rec: SessionRecord, status: SessionStatus): void {
    this.send(rec, ev("session.status", { sessionID: rec.info.id, status }));
  }

  idle(rec: SessionRecord): void {
    this.status(rec, { type: "idle" });
    this.send(rec, ev("session.idle", { sessionID: rec.info.id }));
  }

  diff(rec: SessionRecord): void {
    this.send(rec, ev("session.diff", { sessionID: rec.info.id, diff: [] }));
  }

  /** the user message re-sent with `summary: {diffs: []}` (the real server does this around every step) */
  userSummary(rec: SessionRecord, user: UserMessage): void {
    user.summary ??= { diffs: [] };
    this.message(rec, user);
  }

  // ----- connections -------------------------------------------------------------------------------------------------

  /** connected/heartbeat frames carry only `payload` on /global/event */
  private frame(sub: Subscriber, payload: Payload): string {
    return sub.global ? `data: ${JSON.stringify({ payload })}\n\n` : `data: ${JSON.stringify(payload)}\n\n`;
  }

  private drop(sub: Subscriber, destroy: boolean): void {
    clearInterval(sub.heartbeat);
    this.subscribers.delete(sub);
    if (destroy) sub.res.destroy();
  }

  /** false when the connection is over its buffer (the caller may wait for 'drain') */
  private write(sub: Subscriber, frame: string): boolean {
    if (sub.res.destroyed) return true;
    const ok = sub.res.write(frame);
    this.counters.framesWritten++;
    this.counters.bytesWritten += frame.length;
    if (!ok && sub.res.writableLength > this.maxBufferedBytes) {
      this.counters.slowReadersDropped++;
      this.drop(sub, true);
      return true;
    }
    return ok;
  }

  /** Waits for 'drain'; a reader that stays congested for slowReaderTimeoutMs is dropped. */
  private async drainOrDrop(sub: Subscriber): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<boolean>((r) => (timer = setTimeout(() => r(true), this.slowReaderTimeoutMs)));
    const isStalled = await Promise.race([waitDrain(sub.res).then(() => false), stalled]);
    clearTimeout(timer);
    if (isStalled && this.subscribers.has(sub)) {
      this.counters.slowReadersDropped++;
      this.drop(sub, true);
    }
  }
}
