// Server-Sent Events for the streaming operations of both transports. A handler returns an EventStream
// (src/operations/stream.ts); the transport frames each event (JSON-RPC: a response envelope carrying the request
// id; REST: the bare event),
// writes `data: <json>\n\n` with backpressure, sends a comment heartbeat while idle, ends the response after the
// last event, and tells the stream when the client went away.
import { PassThrough } from "node:stream";
import type { Context } from "koa";
import type { EventStream } from "../operations/stream.js";

export interface SseFraming {
  event(value: unknown): unknown;
  error(error: unknown): unknown;
}

const HEARTBEAT_MS = 15_000;

export function sendEventStream(ctx: Context, stream: EventStream, framing: SseFraming): void {
  const body = new PassThrough();
  ctx.status = 200;
  ctx.type = "text/event-stream";
  ctx.set("Cache-Control", "no-cache, no-transform");
  ctx.set("Connection", "keep-alive");
  ctx.set("X-Accel-Buffering", "no");
  ctx.body = body;
  ctx.req.socket.setNoDelay(true);

  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    clearInterval(heartbeat);
    stream.close();
    body.end();
  };
  const heartbeat = setInterval(() => {
    if (!done) body.write(": keep-alive\n\n");
  }, HEARTBEAT_MS);
  heartbeat.unref();
  ctx.req.on("close", finish);
  ctx.res.on("close", finish);

  const write = async (value: unknown): Promise<void> => {
    if (done) return;
    if (!body.write(`data: ${JSON.stringify(value)}\n\n`)) {
      await new Promise<void>((resolve) => {
        const onDrain = (): void => {
          body.off("close", onDrain);
          resolve();
        };
        body.once("drain", onDrain);
        body.once("close", onDrain);
      });
    }
  };

  void (async () => {
    try {
      for (;;) {
        const next = await stream.events.next();
        if (next.done || done) break;
        await write(framing.event(next.value));
      }
    } catch (error) {
      await write(framing.error(error));
    } finally {
      finish();
    }
  })();
}
