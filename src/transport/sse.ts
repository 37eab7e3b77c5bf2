// Server-Sent Events for the streaming operations of both transports. A handler returns an EventStream
// (src/operations/stream.ts); the transport frames each event (JSON-RPC: a response envelope carrying the request
// id; REST: the bare event),
// writes `data: <json>\n\n` with backpressure, sends a comment heartbeat while idle, ends the response after the
// last event, and tells the stream when the client went away. Budgets (bytes, duration, idle time) end a stream with
// one clean STREAM_BUDGET_EXCEEDED error event; the task itself goes on and can be resubscribed.
//
// It writes to the raw response (headers already set on it are kept): the JSON-RPC edge has no Koa context, and
// a Koa route hands over with `ctx.respond = false`.
import type { IncomingMessage, ServerResponse } from "node:http";
import { A2AError } from "../contract/errors.js";
import type { EventStream } from "../operations/stream.js";

export interface SseFraming {
  event(value: unknown): unknown;
  error(error: unknown): unknown;
}

/** Per-stream limits (0 = none): A2A_STREAM_MAX_BYTES, A2A_STREAM_MAX_DURATION_SECONDS, A2A_STREAM_IDLE_TIMEOUT_SECONDS. */
export interface StreamBudget {
  maxBytes: number;
  maxDurationMs: number;
  idleMs: number;
}

export const NO_BUDGET: StreamBudget = { maxBytes: 0, maxDurationMs: 0, idleMs: 0 };

function budgetError(budget: "bytes" | "duration" | "idle", limit: number, detail: string): A2AError {
  return new A2AError("STREAM_BUDGET_EXCEEDED", `Stream closed: ${detail}; the task goes on and can be resubscribed`, { budget, limit });
}

const HEARTBEAT_MS = 15_000;

export function sendEventStream(req: IncomingMessage, res: ServerResponse, stream: EventStream, framing: SseFraming, budget: StreamBudget = NO_BUDGET): void {
  res.writeHead(200, {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache, no-transform",
    Connection: "keep-alive",
    "X-Accel-Buffering": "no",
  });
  res.flushHeaders();
  req.socket.setNoDelay(true);

  let done = false;
  let sent = 0;
  const timers: NodeJS.Timeout[] = [];
  const finish = (): void => {
    if (done) return;
    done = true;
    clearInterval(heartbeat);
    for (const t of timers) clearTimeout(t);
    stream.close();
    res.end();
  };
  /** Ends the stream with its budget error (framed like any stream error). */
  const exhaust = (error: A2AError): void => {
    if (done) return;
    res.write(`data: ${JSON.stringify(framing.error(error))}\n\n`);
    finish();
  };
  if (budget.maxDurationMs > 0)
    timers.push(setTimeout(() => exhaust(budgetError("duration", budget.maxDurationMs / 1000, `it was open for ${budget.maxDurationMs / 1000} s`)), budget.maxDurationMs));
  let idle: NodeJS.Timeout | undefined;
  const armIdle = (): void => {
    if (budget.idleMs <= 0) return;
    if (idle === undefined) {
      idle = setTimeout(() => exhaust(budgetError("idle", budget.idleMs / 1000, `no event for ${budget.idleMs / 1000} s`)), budget.idleMs);
      timers.push(idle);
    } else idle.refresh();
  };
  armIdle();
  const heartbeat = setInterval(() => {
    if (!done) res.write(": keep-alive\n\n");
  }, HEARTBEAT_MS);
  heartbeat.unref();
  req.on("close", finish);
  res.on("close", finish);

  const write = async (value: unknown): Promise<void> => {
    if (done) return;
    const frame = `data: ${JSON.stringify(value)}\n\n`;
    sent += Buffer.byteLength(frame);
    if (budget.maxBytes > 0 && sent > budget.maxBytes) {
      exhaust(budgetError("bytes", budget.maxBytes, `the next event would pass ${budget.maxBytes} bytes`));
      return;
    }
    armIdle();
    if (!res.write(frame)) {
      await new Promise<void>((resolve) => {
        const onDrain = (): void => {
          res.off("drain", onDrain);
          res.off("close", onDrain);
          resolve();
        };
        res.once("drain", onDrain);
        res.once("close", onDrain);
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
