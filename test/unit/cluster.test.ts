// src/cluster on the test run's PostgreSQL: the LISTEN/NOTIFY bus (order, payloads larger than a NOTIFY), calls and
// streams between two instances (answers, typed errors, timeouts, close from either side, lost events, a lost peer)
// and the instance leases.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { A2AError } from "../../src/contract/errors.js";
import { PgBus, PAYLOAD_LIMIT } from "../../src/cluster/bus.js";
import { InstanceLeases } from "../../src/cluster/leases.js";
import { Peers, type StreamSink } from "../../src/cluster/peers.js";
import { openPostgres, type PostgresDatabase } from "../../src/storage/sql/postgres.js";
import { BoundedQueue } from "../../src/util/queue.js";
import { rejectsA2AError } from "../support/errors.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";
import { until } from "../support/task-wire.js";

const log = pino({ level: "silent" });

describe.skipIf(postgresUrl === undefined)("the gateways' bus and leases on PostgreSQL", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let pg: PostgresDatabase;
  const stops: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    database = await freshDatabase();
    pg = await openPostgres(database.url);
  });
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    await pg?.close();
    await database?.drop();
  });

  async function bus(instance: string, receive: (m: unknown) => void | Promise<void>, onDown: () => void = () => undefined): Promise<PgBus> {
    const b = new PgBus({ url: database.url, pool: pg.pool, instance, log, receive, onDown });
    await b.start();
    stops.push(() => b.stop());
    return b;
  }

  /** Two instances whose Peers talk over two real buses. */
  async function pair(x: string, y: string): Promise<[Peers, Peers]> {
    const peers: Record<string, Peers> = {};
    const bx = await bus(x, (m) => peers[x]!.receive(m));
    const by = await bus(y, (m) => peers[y]!.receive(m));
    peers[x] = new Peers(x, (to, m) => bx.send(to, m));
    peers[y] = new Peers(y, (to, m) => by.send(to, m));
    return [peers[x], peers[y]];
  }

  const sink = (detach: () => void): BoundedQueue<unknown, A2AError> => new BoundedQueue(100, () => new A2AError("STREAM_BUDGET_EXCEEDED"), detach);

  it("delivers every message in the order it was sent, small and larger than a NOTIFY payload alike", async () => {
    const got: unknown[] = [];
    await bus("bus-y", (m) => void got.push(m));
    const bx = await bus("bus-x", () => undefined);
    const big = "x".repeat(PAYLOAD_LIMIT * 3);
    const sent = Array.from({ length: 60 }, (_, i) => ({ i, body: i % 7 === 3 ? big : `m${i}` }));
    await Promise.all(sent.map((m) => bx.send("bus-y", m)));
    await until("every message", () => (got.length === sent.length ? true : undefined), 10_000);
    expect(got).toEqual(sent);
    // Large payloads were read and deleted by their receiver.
    const { rows } = await pg.pool.query<{ n: string }>("SELECT COUNT(*) AS n FROM a2a_bus_payloads");
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it("a call is answered by the other instance's handler; its typed error comes back as the same A2AError", async () => {
    const [a, b] = await pair("call-a", "call-b");
    b.handle("echo", async (body: { n: number }, from) => ({ twice: body.n * 2, from }));
    b.handle("refuse", async () => {
      throw new A2AError("TASK_NOT_FOUND", "no such task", { task_id: "t-1" });
    });
    expect(await a.call("call-b", "echo", { n: 21 })).toEqual({ twice: 42, from: "call-a" });
    const error = await rejectsA2AError(() => a.call("call-b", "refuse", {}), "TASK_NOT_FOUND");
    expect(error.message).toBe("no such task");
    expect(error.data).toEqual({ task_id: "t-1" });
    await rejectsA2AError(() => a.call("call-b", "unknown-op", {}), "INTERNAL_ERROR");
    // Nobody listens for "call-nobody": the call times out as GATEWAY_PEER_UNREACHABLE.
    const lost = await rejectsA2AError(() => a.call("call-nobody", "echo", { n: 1 }, 300), "GATEWAY_PEER_UNREACHABLE");
    expect(lost.data).toMatchObject({ instance: "call-nobody" });
  });

  it("a stream: opened, every event in order, ended; closed by the reader, the source is closed", async () => {
    const [a, b] = await pair("stream-a", "stream-b");
    let closed = 0;
    b.handleStream("count", async (body: { to: number }) => {
      const q = new BoundedQueue<number, Error>(1000, () => new Error("overflow"));
      for (let i = 1; i <= body.to; i++) q.push(i);
      q.end();
      return { events: q, close: () => void closed++ };
    });
    const events = await a.open("stream-b", "count", { to: 50 }, sink);
    const seen: unknown[] = [];
    for await (const e of events) seen.push(e);
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(closed).toBe(1);

    let sourceClosed = false;
    b.handleStream("forever", async () => {
      const q = new BoundedQueue<number, Error>(1000, () => new Error("overflow"), () => (sourceClosed = true));
      q.push(1);
      return { events: q, close: () => q.close() };
    });
    const endless = await a.open("stream-b", "forever", {}, sink);
    expect((await endless.next()).value).toBe(1);
    endless.close(); // the reader went away
    await until("the serving side to close its source", () => (sourceClosed ? true : undefined), 5_000);
    b.handleStream("refused", async () => {
      throw new A2AError("UNSUPPORTED_OPERATION", "no live stream");
    });
    await rejectsA2AError(() => a.open("stream-b", "refused", {}, sink), "UNSUPPORTED_OPERATION");
  });

  it("a lost event ends the stream with an error instead of a gap; a lost peer fails what waits on it", async () => {
    const sent: unknown[] = [];
    const a = new Peers("gap-a", async (_to, m) => void sent.push(m));
    let got: BoundedQueue<unknown, A2AError> | undefined;
    const opening = a.open("gap-b", "s", {}, (detach) => (got = sink(detach)) as StreamSink & BoundedQueue<unknown, A2AError>);
    await until("the request to go out", () => (sent.length === 1 ? true : undefined));
    const id = (sent[0] as { id: string }).id;
    await a.receive({ k: "res", id, ok: true });
    const events = await opening;
    await a.receive({ k: "ev", id, seq: 1, body: "one" });
    expect((await events.next()).value).toBe("one");
    await a.receive({ k: "ev", id, seq: 3, body: "three" }); // 2 never arrived
    await expect(events.next()).rejects.toMatchObject({ reason: "GATEWAY_PEER_UNREACHABLE" });
    expect(got?.closed).toBe(true);
    // The serving side is told to stop.
    expect(sent.at(-1)).toEqual({ k: "close", id });

    const call = a.call("gap-b", "slow", {}, 0);
    expect(a.waitingOn()).toEqual(new Set(["gap-b"]));
    a.lost("gap-b", "its lease ran out");
    await rejectsA2AError(() => call, "GATEWAY_PEER_UNREACHABLE");
    expect(a.waitingOn().size).toBe(0);
  });

  it("the serving side losing its bus ends the streams it serves with an error; a late event of a closed stream stops its source", async () => {
    const [a, b] = await pair("down-a", "down-b");
    let closedSources = 0;
    b.handleStream("forever", async () => {
      const q = new BoundedQueue<number, Error>(1000, () => new Error("overflow"));
      q.push(1);
      return { events: q, close: () => void (closedSources++, q.close()) };
    });
    const events = await a.open("down-b", "forever", {}, sink);
    expect((await events.next()).value).toBe(1);
    b.lost(undefined, "the bus between the gateways lost its database connection");
    expect(closedSources).toBe(1);
    await expect(events.next()).rejects.toMatchObject({ reason: "GATEWAY_PEER_UNREACHABLE" });

    // An event for a stream nobody reads any more (its reader timed out): the server is told to close it.
    const sent: unknown[] = [];
    const c = new Peers("late-c", async (_to, m) => void sent.push(m));
    await c.receive({ k: "ev", id: "gone-stream", seq: 1, body: "late", from: "late-d" });
    expect(sent).toEqual([{ k: "close", id: "gone-stream" }]);
  });

  it("a close while the stream is opening closes its source at once; a close after its end leaves nothing that closes a later stream", async () => {
    const sent: { k: string; id: string; ok?: boolean }[] = [];
    const b = new Peers("close-b", async (_to, m) => void sent.push(m as (typeof sent)[number]));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const closedSources: string[] = [];
    b.handleStream("s", async (body: { name: string; wait: boolean }) => {
      if (body.wait) await gate;
      const q = new BoundedQueue<number, Error>(10, () => new Error("overflow"));
      q.push(1);
      q.end();
      return { events: q, close: () => void closedSources.push(body.name) };
    });
    // The reader goes away while the handler opens the stream: the source is closed at once, nothing is sent.
    await b.receive({ k: "req", id: "early", from: "close-a", op: "s", body: { name: "early", wait: true }, stream: true });
    await b.receive({ k: "close", id: "early" });
    release();
    await until("the early stream's source to close", () => (closedSources.includes("early") ? true : undefined));
    expect(sent.filter((m) => m.id === "early")).toEqual([]);
    // A stream served to its end, then a late close for it: the same id served again is served in full.
    await b.receive({ k: "req", id: "done", from: "close-a", op: "s", body: { name: "done-1", wait: false }, stream: true });
    await until("the first stream to end", () => (sent.some((m) => m.id === "done" && m.k === "end") ? true : undefined));
    await b.receive({ k: "close", id: "done" });
    sent.length = 0;
    await b.receive({ k: "req", id: "done", from: "close-a", op: "s", body: { name: "done-2", wait: false }, stream: true });
    await until("the second stream to end", () => (sent.some((m) => m.k === "end") ? true : undefined));
    expect(sent.map((m) => m.k)).toEqual(["res", "ev", "end"]);
  });

  it("leases: an instance is alive while it renews; stopped, it is gone; expired, it is not alive", async () => {
    let now = 1_000_000;
    const ticks: string[][] = [];
    const lease = (instance: string) =>
      new InstanceLeases({ sql: pg.db, instance, leaseMs: 1_000, log, now: () => now, manual: true, tick: async (alive) => void ticks.push([...alive].sort()) });
    const x = lease("lease-x");
    const y = lease("lease-y");
    await x.start();
    await y.start();
    await x.refresh();
    expect(ticks.at(-1)).toEqual(["lease-x", "lease-y"]);
    expect(await x.isAlive("lease-y")).toBe(true);
    now += 1_500; // y has not renewed for longer than its lease
    await x.refresh();
    expect(ticks.at(-1)).toEqual(["lease-x"]);
    expect(await x.isAlive("lease-y")).toBe(false);
    await y.refresh(); // y comes back
    await x.refresh();
    expect(ticks.at(-1)).toEqual(["lease-x", "lease-y"]);
    await y.stop();
    await x.refresh();
    expect(ticks.at(-1)).toEqual(["lease-x"]);
    await x.stop();
    const { rows } = await pg.pool.query("SELECT id FROM a2a_instances WHERE id LIKE 'lease-%'");
    expect(rows).toEqual([]);
  });
});
