// src/upstream against the stub OpenCode (tools/upstream/stub.ts) over real HTTP on 127.0.0.1: routing, auth,
// timeouts, budgets and the error taxonomy of the client wrapper; demultiplexing, ordering, overflow, reconnect,
// idle detection and stream budgets of the EventHub.
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import { UpstreamError } from "../../src/upstream/errors.js";
import type { HubItem } from "../../src/upstream/hub.js";
import { startStubUpstream, type StubUpstream } from "../../tools/upstream/stub.js";
import { text } from "../../tools/upstream/script.js";
import { collectUntil, deltaText, events, link, types, untilEvent, type Link } from "../support/upstream.js";

let stub: StubUpstream;
const links: Link[] = [];

function open(...args: Parameters<typeof link>): Link {
  const l = link(...args);
  links.push(l);
  return l;
}

beforeAll(async () => {
  stub = await startStubUpstream({ heartbeatMs: 100, directory: "/srv/project" });
});
afterEach(async () => {
  await Promise.all(links.splice(0).map((l) => l.stop()));
});
afterAll(async () => {
  await stub?.close();
});

async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  return error as UpstreamError;
}

function emitFor(sessionID: string, n: number): void {
  for (let i = 0; i < n; i++) {
    stub.emit({ type: "message.part.delta", properties: { sessionID, messageID: "msg_x", partID: "prt_x", field: "text", delta: `${i},` } });
  }
}

let markers = 0;
/** Resolves once every event emitted so far has been dispatched by `hub` (upstream order is preserved). */
async function flush(hub: Link["hub"]): Promise<void> {
  const marker = `marker_${++markers}`;
  const sub = hub.subscribe({ sessions: [marker] });
  stub.emit({ type: "test.marker", properties: { sessionID: marker } });
  await collectUntil(sub, (i) => i.length === 1, 5_000);
  sub.close();
}

describe("UpstreamClient", () => {
  it("routes by directory by default and by workspace when given", async () => {
    const { client } = open(stub.url, { directory: "/srv/project" });
    await client.createSession({ title: "routing" });
    await client.createSession({ title: "elsewhere" }, { directory: "/srv/other" });
    await client.createSession({ title: "ws" }, { workspace: "wrk_1", directory: "/ignored" });
    const creates = stub.requests.filter((r) => r.method === "POST" && r.path === "/session").slice(-3);
    expect(creates.map((r) => r.query)).toEqual([{ directory: "/srv/project" }, { directory: "/srv/other" }, { workspace: "wrk_1" }]);
    expect(creates.map((r) => (r.body as { title: string }).title)).toEqual(["routing", "elsewhere", "ws"]);
  });

  it("sends Basic auth and classifies a wrong password as an upstream 401", async () => {
    const locked = await startStubUpstream({ password: "s3cret-pw" });
    try {
      const good = open(locked.url, { password: "s3cret-pw" });
      expect(await good.client.health()).toMatchObject({ healthy: true });
      expect(locked.requests.at(-1)?.headers.authorization).toBe(`Basic ${Buffer.from("opencode:s3cret-pw").toString("base64")}`);
      const bad = open(locked.url, { password: "wrong" });
      const error = await failure(bad.client.createSession({ title: "x" }));
      expect(error).toMatchObject({ kind: "http", status: 401 });
      expect(error.toA2AError()).toMatchObject({ reason: "UPSTREAM_HTTP_ERROR", data: { upstream_status: 401 } });
      // The event stream gets the same typed failure instead of retrying silently forever.
      const sub = bad.hub.subscribe({ all: true });
      const [down] = await collectUntil(sub, (_i, last) => last.type === "disconnected", 5_000);
      expect(down).toMatchObject({ type: "disconnected", error: { kind: "http", status: 401 } });
    } finally {
      await locked.close();
    }
  });

  it("times out a slow call with UPSTREAM_TIMEOUT", async () => {
    const { client } = open(stub.url, { timeoutMs: 100 });
    const session = await client.createSession({ title: "slow" });
    stub.failNext(`GET /session/${session.id}`, { delayMs: 1_000 });
    const started = Date.now();
    const error = await failure(client.getSession(session.id));
    expect(Date.now() - started).toBeLessThan(900);
    expect(error.kind).toBe("timeout");
    expect(error.toA2AError()).toMatchObject({ reason: "UPSTREAM_TIMEOUT", data: { timeout_seconds: 0.1 } });
  });

  it("uses the stream timeout for calls made on behalf of streams", async () => {
    const { client } = open(stub.url, { timeoutMs: 2_000, streamTimeoutMs: 80 });
    const session = await client.createSession({ title: "slow stream" });
    stub.failNext(`GET /session/${session.id}`, { delayMs: 800 });
    expect((await failure(client.getSession(session.id, { timeout: "stream" }))).kind).toBe("timeout");
  });

  it("reports a closed port as UPSTREAM_UNREACHABLE", async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const { client } = open(`http://127.0.0.1:${port}`);
    const error = await failure(client.health());
    expect(error.kind).toBe("unreachable");
    expect(error.detail).toMatch(/ECONNREFUSED/);
    expect(error.toA2AError().reason).toBe("UPSTREAM_UNREACHABLE");
  });

  it("maps each HTTP status class to its typed error", async () => {
    const { client } = open(stub.url);
    const session = await client.createSession({ title: "statuses" });
    const path = `GET /session/${session.id}`;
    const expectations: [number, string, number | undefined][] = [
      [403, "UPSTREAM_HTTP_ERROR", undefined],
      [409, "UPSTREAM_HTTP_ERROR", 409],
      [429, "UPSTREAM_BACKPRESSURE", undefined],
      [400, "UPSTREAM_HTTP_ERROR", undefined],
      [500, "UPSTREAM_HTTP_ERROR", undefined],
    ];
    for (const [status, reason, httpStatus] of expectations) {
      stub.failNext(path, { status, body: { name: "Injected", data: { message: `status ${status}` } }, headers: { "retry-after": "3" } });
      const error = await failure(client.getSession(session.id));
      expect(error).toMatchObject({ kind: "http", status, upstreamName: "Injected" });
      const a2a = error.toA2AError();
      expect(a2a.reason).toBe(reason);
      expect(a2a.options.httpStatus).toBe(httpStatus);
      if (status === 429) expect(a2a.data).toMatchObject({ retry_after_seconds: 3 });
    }
    // The stub answers an unknown session with OpenCode's own 404 NotFoundError.
    const missing = await failure(client.getSession("ses_unknown"));
    expect(missing).toMatchObject({ kind: "http", status: 404, upstreamName: "NotFoundError" });
    expect(missing.toA2AError()).toMatchObject({ reason: "SESSION_NOT_FOUND", data: { session_id: "ses_unknown" } });
  });

  it("reports malformed 2xx bodies and dropped connections", async () => {
    const { client } = open(stub.url);
    stub.failNext("POST /session", { status: 200, body: "{not json", headers: { "content-type": "application/json" } });
    expect((await failure(client.createSession({ title: "x" }))).kind).toBe("payload");
    stub.failNext("POST /session", { status: 200, body: "<html>proxy</html>", headers: { "content-type": "text/html" } });
    const html = await failure(client.createSession({ title: "x" }));
    expect(html.kind).toBe("payload");
    expect(html.toA2AError().reason).toBe("UPSTREAM_PAYLOAD_ERROR");
    stub.failNext("POST /session", { destroy: true });
    expect((await failure(client.createSession({ title: "x" }))).kind).toBe("unreachable");
  });

  it("queues calls beyond OPENCODE_MAX_CONCURRENT_REQUESTS in arrival order, fails fast beyond OPENCODE_MAX_QUEUED_REQUESTS, and never blocks an abort", async () => {
    const { client } = open(stub.url, { maxConcurrentRequests: 2, maxQueuedRequests: 1 });
    const session = await client.createSession({ title: "budget" });
    stub.failNext(`GET /session/${session.id}`, { delayMs: 400 });
    stub.failNext(`GET /session/${session.id}`, { delayMs: 400 });
    const slow = [client.getSession(session.id), client.getSession(session.id)];
    await new Promise((r) => setTimeout(r, 50));
    expect(client.stats().inFlight).toBe(2);
    // The third call waits for a slot instead of failing, and runs once one is free.
    const waited = client.getSession(session.id);
    await new Promise((r) => setTimeout(r, 20));
    expect(client.stats()).toMatchObject({ inFlight: 2, queued: 1 });
    // The fourth finds the waiting line full: it fails at once, typed and retryable.
    const started = Date.now();
    const rejected = await failure(client.getSession(session.id));
    expect(Date.now() - started).toBeLessThan(100);
    expect(rejected.kind).toBe("backpressure");
    expect(rejected.toA2AError()).toMatchObject({ reason: "UPSTREAM_BACKPRESSURE", data: { limit: 2 }, options: { headers: { "Retry-After": "1" } } });
    expect(await client.abort(session.id)).toBe(true);
    await Promise.all(slow);
    expect((await waited).id).toBe(session.id);
    expect(client.stats()).toMatchObject({ inFlight: 0, queued: 0, rejectedByBudget: 1 });
    expect((await client.getSession(session.id)).id).toBe(session.id);
  });

  it("a call that waits for a slot past its timeout fails with UPSTREAM_BACKPRESSURE", async () => {
    const { client } = open(stub.url, { maxConcurrentRequests: 1, timeoutMs: 150 });
    const session = await client.createSession({ title: "budget timeout" });
    stub.failNext(`GET /session/${session.id}`, { delayMs: 400 });
    const slow = client.getSession(session.id, { timeout: 2_000 });
    await new Promise((r) => setTimeout(r, 30));
    const waited = await failure(client.getSession(session.id));
    expect(waited.kind).toBe("backpressure");
    expect((await slow).id).toBe(session.id);
    expect(client.stats()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  it("cancels a call when the caller's signal aborts", async () => {
    const { client } = open(stub.url);
    const session = await client.createSession({ title: "cancel" });
    stub.failNext(`GET /session/${session.id}`, { delayMs: 1_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect((await failure(client.getSession(session.id, { signal: controller.signal }))).kind).toBe("aborted");
  });
});

describe("EventHub", () => {
  it("demultiplexes by session over a single upstream connection, in order", async () => {
    const { hub } = open(stub.url);
    const before = stub.eventConnections();
    const subs = Array.from({ length: 50 }, (_, i) => hub.subscribe({ sessions: [`ses_demux_${i}`] }));
    const all = hub.subscribe({ all: true });
    await hub.ready(5_000);
    expect(stub.eventConnections() - before).toBe(1);
    for (let round = 0; round < 20; round++) for (let i = 0; i < 50; i++) emitFor(`ses_demux_${i}`, 1);
    stub.emit({ type: "file.edited", properties: { file: "/srv/project/a.txt" } });
    const got = await Promise.all(subs.map((s) => collectUntil(s, (items) => items.length === 20, 5_000)));
    got.forEach((items, i) => {
      const evs = events(items);
      expect(evs.every((e) => JSON.stringify(e.event.properties).includes(`"ses_demux_${i}"`))).toBe(true);
      expect(deltaText(items)).toBe("0,".repeat(20));
      const seqs = evs.map((e) => e.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    });
    // The wildcard subscriber sees everything, including events without a session.
    const everything = await collectUntil(all, untilEvent("file.edited"), 5_000);
    expect(events(everything)).toHaveLength(1001);
    expect(events(everything).at(-1)?.directory).toBe("/srv/project");
    expect(hub.status()).toMatchObject({ subscribers: 51, connections: 1 });
  });

  it("adds and removes sessions of a live subscription", async () => {
    const { hub } = open(stub.url);
    const sub = hub.subscribe();
    await sub.ready(5_000);
    emitFor("ses_dyn_a", 1);
    await flush(hub);
    sub.addSession("ses_dyn_a");
    sub.addSession("ses_dyn_b");
    emitFor("ses_dyn_a", 1);
    emitFor("ses_dyn_b", 1);
    await flush(hub);
    sub.removeSession("ses_dyn_a");
    emitFor("ses_dyn_a", 1);
    emitFor("ses_dyn_b", 1);
    const items = await collectUntil(sub, (i) => i.length === 3, 5_000);
    expect(events(items).map((e) => (e.event.properties as { sessionID: string }).sessionID)).toEqual(["ses_dyn_a", "ses_dyn_b", "ses_dyn_b"]);
  });

  it("leaves frames of sessions nobody follows unparsed while no wildcard subscriber is attached", async () => {
    const { hub } = open(stub.url);
    const sub = hub.subscribe({ sessions: ["ses_watched"] });
    await sub.ready(5_000);
    const before = hub.status();
    emitFor("ses_not_watched", 5);
    emitFor("ses_watched", 2);
    const items = await collectUntil(sub, (i) => i.length === 2, 5_000);
    expect(deltaText(items)).toBe("0,1,");
    const after = hub.status();
    expect(after.unparsed - before.unparsed).toBeGreaterThanOrEqual(5);
    expect(after.eventsDelivered - before.eventsDelivered).toBe(2);
    expect(after.malformed).toBe(before.malformed);
  });

  it("delivers only the event types a session subscriber asked for, and leaves the others unparsed", async () => {
    const { hub } = open(stub.url);
    const filtered = hub.subscribe({ sessions: ["ses_typed"], types: new Set(["session.idle"]) });
    await filtered.ready(5_000);
    const before = hub.status();
    emitFor("ses_typed", 3); // message.part.delta frames: not wanted
    stub.emit({ type: "session.updated", properties: { sessionID: "ses_typed", info: { id: "ses_typed" } } });
    stub.emit({ type: "session.idle", properties: { sessionID: "ses_typed" } });
    const items = await collectUntil(filtered, untilEvent("session.idle"), 5_000);
    expect(events(items).map((e) => e.event.type)).toEqual(["session.idle"]);
    const mid = hub.status();
    expect(mid.unparsed - before.unparsed).toBeGreaterThanOrEqual(4);
    expect(mid.eventsDelivered - before.eventsDelivered).toBe(1);
    // An unfiltered subscriber of the same session gets everything again (and the filtered one still only its type).
    const everything = hub.subscribe({ sessions: ["ses_typed"] });
    emitFor("ses_typed", 2);
    stub.emit({ type: "session.idle", properties: { sessionID: "ses_typed" } });
    expect(deltaText(await collectUntil(everything, untilEvent("session.idle"), 5_000))).toBe("0,1,");
    expect(events(await collectUntil(filtered, untilEvent("session.idle"), 5_000)).map((e) => e.event.type)).toEqual(["session.idle"]);
    everything.close();
    filtered.close();
  });

  it("ends a subscriber that falls behind its buffer limit with UPSTREAM_BACKPRESSURE, sparing the others", async () => {
    const { hub } = open(stub.url, {}, { bufferLimit: 16 });
    const slow = hub.subscribe({ sessions: ["ses_slow"] });
    const fast = hub.subscribe({ sessions: ["ses_slow"], bufferLimit: 1_000 });
    await hub.ready(5_000);
    emitFor("ses_slow", 40);
    const fastItems = await collectUntil(fast, (i) => i.length === 40, 5_000);
    expect(deltaText(fastItems)).toBe(Array.from({ length: 40 }, (_, i) => `${i},`).join(""));
    const error = await slow.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({ kind: "backpressure", limit: 16 });
    expect((error as UpstreamError).toA2AError().reason).toBe("UPSTREAM_BACKPRESSURE");
    expect(await slow.next()).toEqual({ value: undefined, done: true });
    expect(hub.status().overflows).toBe(1);
  });

  it("reports a dropped connection once, reconnects, and delivers again", async () => {
    const { hub } = open(stub.url, {}, { reconnectInitialMs: 20, reconnectMaxMs: 100 });
    const sub = hub.subscribe({ sessions: ["ses_drop"] });
    await sub.ready(5_000);
    emitFor("ses_drop", 1);
    await flush(hub);
    stub.dropEventStreams();
    const items = await collectUntil(sub, (_i, last) => last.type === "reconnected", 5_000);
    expect(items.map((i) => i.type)).toEqual(["event", "disconnected", "reconnected"]);
    const down = items[1] as Extract<HubItem, { type: "disconnected" }>;
    expect(down.error.kind).toBe("unreachable");
    emitFor("ses_drop", 1);
    const after = await collectUntil(sub, (i) => i.length === 1, 5_000);
    expect(deltaText(after)).toBe("0,");
    await flush(hub);
    expect(hub.status()).toMatchObject({ state: "open", reconnects: 1, connections: 2 });
  });

  it("treats a silent connection (no heartbeat) as dead and reconnects", async () => {
    const { hub } = open(stub.url, {}, { idleTimeoutMs: 400, reconnectInitialMs: 20, reconnectMaxMs: 50 });
    const sub = hub.subscribe({ sessions: ["ses_idle"] });
    await sub.ready(5_000);
    // Heartbeats every 100 ms keep it alive well past the idle timeout.
    await new Promise((r) => setTimeout(r, 700));
    expect(hub.status().reconnects).toBe(0);
    stub.pauseHeartbeats(true);
    try {
      const [down] = await collectUntil(sub, (_i, last) => last.type === "disconnected", 5_000);
      expect(down).toMatchObject({ type: "disconnected", error: { kind: "timeout" } });
      expect((down as Extract<HubItem, { type: "disconnected" }>).error.detail).toMatch(/no event or heartbeat for 400 ms/);
    } finally {
      stub.pauseHeartbeats(false);
    }
    const back = await collectUntil(sub, (_i, last) => last.type === "reconnected", 5_000);
    expect(back.at(-1)?.type).toBe("reconnected");
  });

  it("limits A2A streams with OPENCODE_MAX_CONCURRENT_STREAMS, not upstream connections", async () => {
    const { hub } = open(stub.url, {}, { maxStreams: 2 });
    const a = hub.subscribe({ sessions: ["s1"], stream: true });
    hub.subscribe({ sessions: ["s2"], stream: true });
    let error: unknown;
    try {
      hub.subscribe({ sessions: ["s3"], stream: true });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ kind: "backpressure", limit: 2 });
    // Internal (non-stream) subscriptions are not A2A streams.
    hub.subscribe({ sessions: ["s4"] });
    a.close();
    expect(() => hub.subscribe({ sessions: ["s5"], stream: true })).not.toThrow();
    await hub.ready(5_000);
    expect(hub.status()).toMatchObject({ streams: 2, maxStreams: 2, subscribers: 3, connections: 1 });
  });

  it("rejects ready() with a typed error when OpenCode cannot be reached", async () => {
    const { hub } = open("http://127.0.0.1:9", {}, { reconnectInitialMs: 20, reconnectMaxMs: 50 });
    const sub = hub.subscribe({ sessions: ["x"] });
    const error = await sub.ready(300).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).kind).toBe("unreachable");
    const [down] = await collectUntil(sub, (i) => i.length === 1, 2_000);
    expect(down?.type).toBe("disconnected");
  });

  it("ends iteration when a subscription is closed, and on stop()", async () => {
    const { hub } = open(stub.url);
    const sub = hub.subscribe({ sessions: ["ses_close"] });
    const seen: HubItem[] = [];
    const loop = (async () => {
      for await (const item of sub) seen.push(item);
    })();
    await sub.ready(5_000);
    emitFor("ses_close", 2);
    await expect.poll(() => seen.length).toBe(2);
    sub.close();
    await loop;
    const other = hub.subscribe({ sessions: ["ses_close"] });
    const pending = other.next();
    await hub.stop();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(hub.state).toBe("stopped");
  });

  it("carries a whole scripted turn from the stub in OpenCode's event order", async () => {
    const { client, hub } = open(stub.url);
    const session = await client.createSession({ title: "turn" });
    stub.scriptFor(session.id, text(["Hello ", "from ", "the stub."]));
    const sub = hub.subscribe({ sessions: [session.id] });
    await sub.ready(5_000);
    await client.call("sessionPromptAsync", (c) =>
      sdk.sessionPromptAsync({ ...c, path: { sessionID: session.id }, body: { parts: [{ type: "text", text: "hi" }] } }),
    );
    const items = await collectUntil(sub, untilEvent("session.idle"), 5_000);
    expect(deltaText(items)).toBe("Hello from the stub.");
    const order = types(items);
    expect(order.indexOf("message.part.delta")).toBeGreaterThan(order.indexOf("session.status"));
    expect(order.lastIndexOf("message.part.delta")).toBeLessThan(order.indexOf("session.idle"));
  });
});
