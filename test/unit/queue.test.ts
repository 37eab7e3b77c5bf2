// The bounded async queue (src/util/queue.ts) the event hub's subscribers and the task fan-out (src/runtime/fanout.ts)
// share: items in order, three ways to end (end: drain first; close: drop; fail: drop, reject once), and a consumer
// that falls `limit` items behind is ended with the overflow error rather than served silently less.
import { describe, expect, it } from "vitest";
import { A2AError } from "../../src/contract/errors.js";
import type { StreamEvent } from "../../src/protocol/model.js";
import { FanOut, STREAM_BACKLOG_LIMIT } from "../../src/runtime/fanout.js";
import { BoundedQueue } from "../../src/util/queue.js";

const overflow = () => new Error("overflow");

describe("BoundedQueue", () => {
  it("hands items out in order, to a waiting read at once", async () => {
    const q = new BoundedQueue<number>(10, overflow);
    const waiting = q.next();
    q.push(1);
    q.push(2);
    q.push(3);
    expect(await waiting).toEqual({ value: 1, done: false });
    expect(q.buffered).toBe(2);
    expect(await q.next()).toEqual({ value: 2, done: false });
    expect(await q.next()).toEqual({ value: 3, done: false });
  });

  it("end(): what is buffered is still read, then done; later pushes are ignored", async () => {
    const q = new BoundedQueue<number>(10, overflow);
    q.push(1);
    q.end();
    q.push(2);
    expect(await q.next()).toEqual({ value: 1, done: false });
    expect(await q.next()).toEqual({ value: undefined, done: true });
    expect(q.closed).toBe(false);
  });

  it("close(): drops what is buffered, ends a pending read, detaches once", async () => {
    let detached = 0;
    const q = new BoundedQueue<number>(10, overflow, () => detached++);
    const pending = q.next();
    q.close();
    q.close();
    expect(await pending).toEqual({ value: undefined, done: true });
    q.push(1);
    expect(await q.next()).toEqual({ value: undefined, done: true });
    expect(q.closed).toBe(true);
    expect(detached).toBe(1);
  });

  it("a consumer that falls `limit` items behind is ended with the overflow error: once, then done", async () => {
    let detached = 0;
    const q = new BoundedQueue<number>(3, overflow, () => detached++);
    for (let i = 0; i < 5; i++) q.push(i);
    expect(q.failure).toEqual(new Error("overflow"));
    expect(q.buffered).toBe(0);
    await expect(q.next()).rejects.toThrow("overflow");
    expect(await q.next()).toEqual({ value: undefined, done: true });
    expect(detached).toBe(1);
  });

  it("fail() rejects a pending read", async () => {
    const q = new BoundedQueue<number>(3, overflow);
    const pending = q.next();
    q.fail(new Error("gone"));
    await expect(pending).rejects.toThrow("gone");
    expect(await q.next()).toEqual({ value: undefined, done: true });
  });

  it("reads many items through (read items are dropped in batches)", async () => {
    const q = new BoundedQueue<number>(10_000, overflow);
    for (let i = 0; i < 5_000; i++) q.push(i);
    const seen: number[] = [];
    for (let i = 0; i < 5_000; i++) seen.push((await q.next()).value as number);
    expect(seen).toEqual(Array.from({ length: 5_000 }, (_, i) => i));
  });
});

describe("FanOut", () => {
  const status = (n: number): StreamEvent => ({
    kind: "status-update",
    taskId: "t",
    contextId: "c",
    status: { state: "working", timestamp: String(n) },
    final: false,
  });

  it("gives every subscriber the same events in the same order, the first one before them", async () => {
    const fanout = new FanOut();
    const a = fanout.subscribe(status(0));
    const b = fanout.subscribe();
    fanout.publish(status(1));
    fanout.close();
    const read = async (q: typeof a) => {
      const out: StreamEvent[] = [];
      for await (const e of q) out.push(e);
      return out;
    };
    expect(await read(a)).toEqual([status(0), status(1)]);
    expect(await read(b)).toEqual([status(1)]);
    expect(await read(fanout.subscribe(status(2)))).toEqual([status(2)]);
  });

  it("ends a stream that falls STREAM_BACKLOG_LIMIT events behind with STREAM_BUDGET_EXCEEDED, sparing the others", async () => {
    const fanout = new FanOut();
    const slow = fanout.subscribe();
    const fast = fanout.subscribe();
    for (let i = 0; i <= STREAM_BACKLOG_LIMIT; i++) {
      fanout.publish(status(i));
      expect((await fast.next()).value).toEqual(status(i));
    }
    const error = await slow.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(A2AError);
    expect(error).toMatchObject({ reason: "STREAM_BUDGET_EXCEEDED", data: { budget: "backlog", limit: STREAM_BACKLOG_LIMIT } });
    expect(await slow.next()).toEqual({ value: undefined, done: true });
    fanout.publish(status(-1));
    expect(await fast.next()).toEqual({ value: status(-1), done: false });
  });
});
