// EventHub benchmark: N concurrent session subscriptions (default 1,000) sharing ONE upstream event connection
// to the stub OpenCode (tools/upstream/stub.ts, run as a separate process), against baselines measured in the
// same run:
//   - throughput: one raw consumer of the same upstream stream (the generated SSE client, JSON-parsed, no
//     demultiplexing): how fast the transport alone delivers the burst;
//   - memory: the per-request design of the Python reference, one upstream SSE connection per stream
//     (measured on BENCH_RAW_CONNECTIONS connections).
// Prints events/s delivered, bytes per subscription and the ratios. Bounded: BENCH_RUNS runs, 120 s overall.
//
//   npm run bench:eventhub      (node --expose-gc --import tsx tools/bench/eventhub.ts)
import path from "node:path";
import { createClient } from "../../generated/opencode/client/index.js";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import { UpstreamClient } from "../../src/upstream/client.js";
import { EventHub, type Subscription } from "../../src/upstream/hub.js";
import { spawnListening, stopProcess } from "./listening.js";

const root = path.resolve(import.meta.dirname, "../..");
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 1000);
const EVENTS_PER_SESSION = Number(process.env.BENCH_EVENTS_PER_SESSION ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const RAW_CONNECTIONS = Number(process.env.BENCH_RAW_CONNECTIONS ?? 100);
const DELTA_BYTES = 16;
const TOTAL = SUBSCRIPTIONS * EVENTS_PER_SESSION;

const deadline = setTimeout(() => {
  process.stderr.write("bench:eventhub exceeded 120 s\n");
  process.exit(1);
}, 120_000);

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc (npm run bench:eventhub)");

function heap(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");

async function startStub(): Promise<{ url: string; stop(): Promise<void> }> {
  const { child, url } = await spawnListening(
    process.execPath,
    ["--import", "tsx", path.join(root, "tools/upstream/stub.ts"), "--port", "0", "--heartbeat-ms", "10000"],
    { cwd: root },
  );
  return { url, stop: () => stopProcess(child) };
}

const sessions = Array.from({ length: SUBSCRIPTIONS }, (_, i) => `ses_bench${String(i).padStart(6, "0")}`);

async function burst(url: string): Promise<void> {
  const res = await fetch(`${url}/__stub/burst`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ sessions, eventsPerSession: EVENTS_PER_SESSION, deltaBytes: DELTA_BYTES }),
  });
  if (!res.ok) throw new Error(`burst failed: HTTP ${res.status}`);
  await res.arrayBuffer();
}

async function stubConnections(url: string): Promise<number> {
  const res = await fetch(`${url}/__stub/stats`);
  return ((await res.json()) as { eventConnections: number }).eventConnections;
}

/** Baseline: one consumer of /global/event through the generated SSE client, counting the burst's deltas. */
async function rawThroughput(url: string): Promise<number> {
  const controller = new AbortController();
  const { stream } = await sdk.globalEvent({ client: createClient({ baseUrl: url }), signal: controller.signal, sseMaxRetryAttempts: 1 });
  const iterator = stream[Symbol.asyncIterator]();
  await iterator.next(); // server.connected: the connection is open
  let count = 0;
  let started = 0;
  const reading = (async () => {
    for (;;) {
      const { value, done } = await iterator.next();
      if (done) throw new Error("raw stream ended early");
      const frame = value as { payload?: { type?: string } };
      if (frame.payload?.type === "message.part.delta" && ++count === TOTAL) return performance.now() - started;
    }
  })();
  started = performance.now();
  await burst(url);
  const ms = await reading;
  controller.abort();
  return (TOTAL / ms) * 1000;
}

async function consume(sub: Subscription, expected: number): Promise<void> {
  let n = 0;
  let last = 0;
  for await (const item of sub) {
    if (item.type !== "event") continue;
    if (item.seq <= last) throw new Error("out of order delivery");
    last = item.seq;
    if (++n === expected) return;
  }
  throw new Error(`subscription ended after ${n} of ${expected}`);
}

/** The hub: SUBSCRIPTIONS subscribers, one per session, all fed by one upstream connection. */
async function hubThroughput(url: string): Promise<{ eventsPerSecond: number; connections: number }> {
  const upstream = new UpstreamClient({ baseUrl: url, timeoutMs: 10_000, streamTimeoutMs: 0, maxConcurrentRequests: 0 });
  const hub = new EventHub({
    upstream,
    idleTimeoutMs: 60_000,
    bufferLimit: EVENTS_PER_SESSION * 2,
    reconnectInitialMs: 250,
    reconnectMaxMs: 5_000,
    maxStreams: 0,
  });
  try {
    const subs = sessions.map((id) => hub.subscribe({ sessions: [id], stream: true }));
    await hub.ready(10_000);
    const connections = await stubConnections(url);
    const started = performance.now();
    const consumers = Promise.all(subs.map((s) => consume(s, EVENTS_PER_SESSION)));
    await burst(url);
    await consumers;
    const ms = performance.now() - started;
    if (hub.status().overflows > 0) throw new Error("subscribers overflowed");
    return { eventsPerSecond: (TOTAL / ms) * 1000, connections };
  } finally {
    await hub.stop();
  }
}

/** Heap per idle hub subscription (the hub's connection is already open, so only subscriptions are counted). */
async function hubMemory(url: string): Promise<number> {
  const upstream = new UpstreamClient({ baseUrl: url, timeoutMs: 10_000, streamTimeoutMs: 0, maxConcurrentRequests: 0 });
  const hub = new EventHub({ upstream, idleTimeoutMs: 60_000, bufferLimit: 10_000, reconnectInitialMs: 250, reconnectMaxMs: 5_000, maxStreams: 0 });
  await hub.ready(10_000);
  const before = heap();
  const subs = sessions.map((id) => hub.subscribe({ sessions: [id], stream: true }));
  const pending = subs.map((s) => s.next()); // a reader waiting on each, as an A2A stream would
  const after = heap();
  for (const s of subs) s.close();
  await Promise.all(pending);
  await hub.stop();
  return (after - before) / SUBSCRIPTIONS;
}

/** Baseline: heap per raw upstream SSE connection (one connection per stream). */
async function rawConnectionMemory(url: string): Promise<number> {
  const client = createClient({ baseUrl: url });
  const controllers: AbortController[] = [];
  const before = heap();
  const iterators = [];
  for (let i = 0; i < RAW_CONNECTIONS; i++) {
    const controller = new AbortController();
    controllers.push(controller);
    const { stream } = await sdk.globalEvent({ client, signal: controller.signal, sseMaxRetryAttempts: 1 });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next(); // server.connected
    iterators.push(iterator);
  }
  const pending = iterators.map((it) => it.next().catch(() => undefined));
  const after = heap();
  for (const c of controllers) c.abort();
  await Promise.all(pending);
  return (after - before) / RAW_CONNECTIONS;
}

const stub = await startStub();
try {
  const raw: number[] = [];
  const hub: number[] = [];
  let connections = 0;
  for (let run = 0; run < RUNS; run++) {
    raw.push(await rawThroughput(stub.url));
    const h = await hubThroughput(stub.url);
    hub.push(h.eventsPerSecond);
    connections = h.connections;
  }
  const perSubscription = median([await hubMemory(stub.url), await hubMemory(stub.url), await hubMemory(stub.url)]);
  const perConnection = median([await rawConnectionMemory(stub.url), await rawConnectionMemory(stub.url), await rawConnectionMemory(stub.url)]);
  const hubRate = median(hub);
  const rawRate = median(raw);
  const lines = [
    `bench:eventhub — ${fmt(SUBSCRIPTIONS)} subscriptions × ${EVENTS_PER_SESSION} events (${fmt(TOTAL)} message.part.delta per run), ${RUNS} runs, Node ${process.version}`,
    `  upstream event connections during the hub runs: ${connections}`,
    `  hub delivered:            ${fmt(hubRate)} events/s (median; runs: ${hub.map(fmt).join(", ")})`,
    `  baseline raw consumer:    ${fmt(rawRate)} events/s (median; runs: ${raw.map(fmt).join(", ")})`,
    `  ratio hub / raw:          ${(hubRate / rawRate).toFixed(2)}x`,
    `  heap per subscription:    ${fmt(perSubscription)} B`,
    `  heap per raw connection:  ${fmt(perConnection)} B (baseline: one upstream SSE connection per stream, ${RAW_CONNECTIONS} measured)`,
    `  ratio connection / subscription: ${(perConnection / perSubscription).toFixed(1)}x`,
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  await stub.stop();
  clearTimeout(deadline);
}
