// Task benchmark of the gateway, every number against a baseline measured in the same run:
//
//   1. Turns. The stub OpenCode (tools/upstream/stub.ts, reply "ok") and the gateway (`node bin/opencode-a2a.js
//      serve`, memory store and SQLite store) run as separate processes. Baseline ("direct"): the same turn done
//      against a stub directly, the way the gateway does it: `POST /session/{id}/prompt_async` and wait for that
//      session's `session.idle` on one shared `/global/event` connection. Measured: sequential latency (p50/p99)
//      of direct, JSON-RPC `message/send` (blocking) and `message/stream` (time to the final event), the added
//      latency (gateway − direct), and throughput at concurrency BENCH_CONCURRENCY. Each consumer has its own
//      stub process, so no process parses events of another one's turns.
//   2. GetTask with 10,000 stored tasks, JSON-RPC 1.0 (`A2A-Version: 1.0`), random ids, on the gateway (SQLite
//      store filled through src/storage before it starts; and the memory-store gateway of part 1, topped up to
//      10,000 tasks through message/send) against an @a2a-js/sdk 1.3.0 server (tools/bench/sdk-server.ts) with
//      InMemoryTaskStore and with DatabaseTaskStore on SQLite, holding the same task content. The SQLite gateway
//      runs twice: with its read cache (A2A_TASK_STORE_CACHE_SIZE, default) and without (0). Every target reads each
//      of its tasks once before the timed runs.
//   3. The floor (tools/bench/floor.ts), in both parts: a bare node:http server doing only what no gateway can skip
//      (part 1: take the request, prompt_async, wait for session.idle, answer; part 2: look the task up in a Map and
//      JSON.stringify it), without authentication, validation, codecs, store, audit or event mapping. The gateway
//      is reported against it as well: "above floor" is what the gateway's own work costs.
// Next to the rates, the CPU time each process used per turn / per GetTask is reported (Linux /proc/<pid>/stat):
// on a small shared machine it says more about where the time goes than the rates, which other load moves.
//
// Only 127.0.0.1; bounded by request counts and a 300 s deadline; every child process is stopped at the end.
//
//   npm run bench:tasks      (node --expose-gc --import tsx tools/bench/tasks.ts)
//
// Knobs: BENCH_SEQUENTIAL (turns per mode, default 600), BENCH_CONCURRENCY (16), BENCH_THROUGHPUT (turns per
// throughput run, 1000), BENCH_ROUNDS (interleaved rounds, 3), BENCH_GET_REQUESTS (GetTask calls per target and
// concurrency, 7500), BENCH_GET_CONCURRENCY ("8,32"), BENCH_TASKS (10000), BENCH_GET_CLIENT ("lean": one bare
// keep-alive socket per worker, see LeanConnection; "node": node:http with a keep-alive agent).
import type { ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { CredentialRegistry } from "../../src/auth/credentials.js";
import { catalog } from "../../src/contract/catalog.js";
import { openStorage } from "../../src/storage/index.js";
import { ensureBuilt } from "../../test/support/build.js";
import { onSseFrames, spawnListening, stopProcess } from "./listening.js";
import { benchTaskId, gatewayTask } from "./sdk-server.js";

const root = path.resolve(import.meta.dirname, "../..");
const num = (name: string, def: number): number => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer`);
  return v;
};
const SEQUENTIAL = num("BENCH_SEQUENTIAL", 600);
const CONCURRENCY = num("BENCH_CONCURRENCY", 16);
const THROUGHPUT = num("BENCH_THROUGHPUT", 1000);
const ROUNDS = num("BENCH_ROUNDS", 3);
const GET_REQUESTS = num("BENCH_GET_REQUESTS", 7500);
const GET_CONCURRENCY = (process.env.BENCH_GET_CONCURRENCY ?? "8,32").split(",").map(Number);
if (!GET_CONCURRENCY.every((c) => Number.isInteger(c) && c > 0)) throw new Error("BENCH_GET_CONCURRENCY must list positive integers");
const GET_CLIENT = process.env.BENCH_GET_CLIENT ?? "lean";
if (GET_CLIENT !== "lean" && GET_CLIENT !== "node") throw new Error('BENCH_GET_CLIENT must be "lean" or "node"');
const TASKS = num("BENCH_TASKS", 10_000);
const DEADLINE_MS = 300_000;
const WARMUP = 200;
const TOKEN = `bench-${randomBytes(12).toString("hex")}`;
const t0 = Date.now();
const loadAtStart = os.loadavg()[0]!;

// ---------------------------------------------------------------------------------------------------------------
// Processes and the deadline

const children = new Set<ChildProcess>();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bench-tasks-"));

function cleanupSync(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  fs.rmSync(tmp, { recursive: true, force: true });
}

const deadline = setTimeout(() => {
  process.stderr.write(`bench:tasks exceeded ${DEADLINE_MS / 1000} s; stopping\n`);
  cleanupSync();
  process.exit(1);
}, DEADLINE_MS);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    cleanupSync();
    process.exit(130);
  });
}

const progress = (line: string): void => void process.stderr.write(`  [${((Date.now() - t0) / 1000).toFixed(0).padStart(3)} s] ${line}\n`);

async function spawnService(name: string, args: string[], env: NodeJS.ProcessEnv, cwd = root): Promise<{ name: string; url: string; child: ChildProcess }> {
  const { child, url } = await spawnListening(process.execPath, args, { cwd, env: { ...process.env, ...env }, timeoutMs: 60_000 });
  children.add(child);
  return { name, url, child };
}

async function stop(service: { child: ChildProcess }): Promise<void> {
  await stopProcess(service.child);
  children.delete(service.child);
}

const startStub = (name: string) =>
  spawnService(name, ["--import", "tsx", path.join(root, "tools/upstream/stub.ts"), "--port", "0", "--heartbeat-ms", "10000"], {});

function startGateway(name: string, stubUrl: string, store: { backend: "memory" } | { backend: "database"; file: string }, env: Record<string, string> = {}) {
  return spawnService(
    name,
    [path.join(root, "bin/opencode-a2a.js"), "serve"],
    {
      A2A_BEARER_TOKEN: TOKEN,
      // The limiter stays on (its cost is measured) with a limit the bench cannot reach; the audit log keeps its default (on).
      A2A_RATE_LIMIT_MAX_REQUESTS: "100000000",
      // Likewise the open-stream limit per credential (default 10; the stream throughput run keeps 16 open).
      A2A_RATE_LIMIT_MAX_STREAMS: "1000000",
      A2A_HOST: "127.0.0.1",
      A2A_PORT: "0",
      A2A_LOG_LEVEL: "silent",
      OPENCODE_BASE_URL: stubUrl,
      OPENCODE_WORKSPACE_ROOT: root,
      OPENCODE_MAX_CONCURRENT_REQUESTS: "0",
      OPENCODE_MAX_CONCURRENT_STREAMS: "0",
      A2A_TASK_STORE_BACKEND: store.backend,
      ...(store.backend === "database" ? { A2A_TASK_STORE_DATABASE_URL: `sqlite:///${store.file}` } : {}),
      ...env,
    },
    tmp, // no ./.env of the repository, no default database file in it
  );
}

const startFloor = (name: string, args: string[]) => spawnService(name, ["--import", "tsx", path.join(root, "tools/bench/floor.ts"), ...args], {});

const startSdk = (name: string, env: Record<string, string>) =>
  spawnService(name, ["--import", "tsx", path.join(root, "tools/bench/sdk-server.ts")], { SDK_TASKS: String(TASKS), ...env });

// ---------------------------------------------------------------------------------------------------------------
// HTTP: node:http with keep-alive (less client CPU than fetch on a 2-core machine, where the client shares the cores)

interface Target {
  host: string;
  port: number;
  agent: http.Agent;
}

function target(url: string): Target {
  const u = new URL(url);
  // `timeout` (2 s) makes the agent close a free socket well before a server's keep-alive timeout (5 s by default)
  // does: a socket left idle while the other targets run is otherwise reused just as the server closes it ("socket
  // hang up"). A call in flight is bounded by its own request timeout instead.
  return { host: u.hostname, port: Number(u.port), agent: new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 2_000 }) };
}

function timeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms))),
  ]);
}

function request(t: Target, method: string, urlPath: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: t.host,
        port: t.port,
        method,
        path: urlPath,
        agent: t.agent,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.setTimeout(15_000, () => req.destroy(new Error(`${method} ${urlPath}: timeout`)));
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * POST with an SSE answer: calls onEvent with each parsed `data:` JSON (only those `wanted` says are worth parsing,
 * default all); resolves at the end of the body.
 */
function streamRequest(
  t: Target,
  urlPath: string,
  headers: Record<string, string>,
  body: string | undefined,
  onEvent: (data: unknown) => void,
  method = "POST",
  wanted: (data: string) => boolean = () => true,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: t.host,
        port: t.port,
        method,
        path: urlPath,
        agent: t.agent,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        onSseFrames(res, (frame) => {
          for (const line of frame.split("\n")) if (line.startsWith("data:") && wanted(line)) onEvent(JSON.parse(line.slice(5)));
        });
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const hr = (): bigint => process.hrtime.bigint();
const msSince = (start: bigint): number => Number(hr() - start) / 1e6;

/** `total` calls of fn over `concurrency` workers; returns the elapsed ms. */
async function pool(total: number, concurrency: number, fn: (worker: number, i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const start = hr();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async (_, worker) => {
      while (next < total) await fn(worker, next++);
    }),
  );
  return msSince(start);
}

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

/** CPU time (user + system, ms) a process has used so far: /proc/<pid>/stat on Linux, NaN elsewhere. */
function cpuMs(pid: number | undefined): number {
  if (pid === undefined || pid === process.pid) {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime in USER_HZ (100/s) ticks
  } catch {
    return NaN;
  }
}
/** Accumulates the CPU a set of processes spends inside measured sections. */
class CpuMeter {
  readonly used: number[];
  constructor(readonly pids: Array<number | undefined>) {
    this.used = pids.map(() => 0);
  }
  async measure<T>(fn: () => Promise<T>): Promise<T> {
    const before = this.pids.map(cpuMs);
    try {
      return await fn();
    } finally {
      this.pids.forEach((pid, i) => (this.used[i]! += cpuMs(pid) - before[i]!));
    }
  }
}
const cpuText = (totalMs: number, count: number, unit: "ms" | "µs"): string =>
  Number.isNaN(totalMs) ? "n/a" : unit === "ms" ? (totalMs / count).toFixed(2) : String(Math.round((totalMs / count) * 1000));

// ---------------------------------------------------------------------------------------------------------------
// Clients of one turn

/**
 * Direct: prompt_async + session.idle on a shared /global/event connection (what the gateway does per turn). It
 * JSON-parses only the frames it acts on (the first one, and `session.idle`), as a lean direct caller would: parsing
 * all ~40 frames of a turn put ~0.2 ms of avoidable client work into the baseline, which flattered the gateway's
 * added latency.
 */
class DirectClient {
  readonly #waiters = new Map<string, () => void>();
  readonly #events: Target;
  constructor(readonly t: Target) {
    this.#events = { ...t, agent: new http.Agent({ keepAlive: false }) };
  }

  connect(): Promise<void> {
    return new Promise((connected, failed) => {
      let first = true;
      streamRequest(this.#events, "/global/event", { accept: "text/event-stream" }, undefined, (data) => {
        if (first) {
          first = false;
          connected();
        }
        const payload = (data as { payload?: { type?: string; properties?: { sessionID?: string } } }).payload;
        if (payload?.type !== "session.idle") return;
        const id = payload.properties?.sessionID ?? "";
        const waiter = this.#waiters.get(id);
        if (waiter === undefined) return;
        this.#waiters.delete(id);
        waiter();
      }, "GET", (line) => first || line.includes('"type":"session.idle"')).catch(failed);
    });
  }

  async createSession(): Promise<string> {
    const res = await request(this.t, "POST", "/session", {}, "{}");
    if (res.status !== 200) throw new Error(`POST /session: HTTP ${res.status}`);
    return (JSON.parse(res.text) as { id: string }).id;
  }

  async turn(sessionId: string): Promise<void> {
    const idle = new Promise<void>((r) => this.#waiters.set(sessionId, r));
    const res = await request(this.t, "POST", `/session/${sessionId}/prompt_async`, {}, JSON.stringify({ parts: [{ type: "text", text: "hi" }] }));
    if (res.status !== 204) throw new Error(`prompt_async: HTTP ${res.status} ${res.text}`);
    await timeout(idle, 10_000, "session.idle");
  }

  destroy(): void {
    this.#events.agent.destroy();
    this.t.agent.destroy();
  }
}

/** The gateway: JSON-RPC 0.3 message/send (blocking) and message/stream, one context per worker. */
class GatewayClient {
  readonly taskIds: string[] = [];
  #rpcId = 0;
  readonly #headers = { authorization: `Bearer ${TOKEN}`, "a2a-version": "0.3" };
  constructor(
    readonly name: string,
    readonly t: Target,
    readonly keepIds: boolean,
  ) {}

  #body(method: string, contextId: string): string {
    return JSON.stringify({
      jsonrpc: "2.0",
      id: ++this.#rpcId,
      method,
      params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hi" }], contextId } },
    });
  }

  async send(contextId: string): Promise<void> {
    const res = await request(this.t, "POST", "/", this.#headers, this.#body("message/send", contextId));
    const task = (JSON.parse(res.text) as { result?: { id: string; status: { state: string } } }).result;
    if (res.status !== 200 || task?.status.state !== "completed") throw new Error(`${this.name} message/send: HTTP ${res.status} ${res.text.slice(0, 300)}`);
    if (this.keepIds) this.taskIds.push(task.id);
  }

  /** Resolves with the ms to the final event (the stream's end is awaited too). */
  async stream(contextId: string): Promise<number> {
    const start = hr();
    let final = -1;
    let id = "";
    const status = await streamRequest(this.t, "/", { ...this.#headers, accept: "text/event-stream" }, this.#body("message/stream", contextId), (data) => {
      const result = (data as { result?: { kind: string; id?: string; final?: boolean; status?: { state: string } } }).result;
      if (result?.kind === "task") id = result.id ?? "";
      else if (result?.kind === "status-update" && result.final === true && result.status?.state === "completed") final = msSince(start);
    });
    if (status !== 200 || final < 0) throw new Error(`${this.name} message/stream: HTTP ${status}, no completed final event`);
    if (this.keepIds) this.taskIds.push(id);
    return final;
  }

  destroy(): void {
    this.t.agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Statistics and formatting

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}
const median = (xs: number[]): number => percentile([...xs].sort((a, b) => a - b), 0.5);
interface Latency {
  p50: number;
  p99: number;
  mean: number;
  n: number;
}
function latency(samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), mean: sorted.reduce((a, b) => a + b, 0) / sorted.length, n: sorted.length };
}
const ms = (v: number): string => `${v.toFixed(2)} ms`;
const signed = (v: number): string => `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(2)} ms`;
const rate = (v: number): string => `${Math.round(v).toLocaleString("en-US")}/s`;
const pad = (s: string, n: number): string => s.padEnd(n);
const lpad = (s: string, n: number): string => s.padStart(n);

// ---------------------------------------------------------------------------------------------------------------
// Part 1: turns

interface TurnMode {
  label: string;
  /** One turn; returns its latency in ms. */
  run(worker: number): Promise<number>;
  /** CPU of [gateway, stub, bench client] during the sequential turns. */
  cpu: CpuMeter;
}

async function partTurns(report: string[]): Promise<{ memory: GatewayClient; stubUrl: string; services: Array<{ child: ChildProcess }> }> {
  progress("part 1: starting 4 stubs, 2 gateways and the floor proxy");
  const [stubDirect, stubMemory, stubSqlite, stubFloor] = await Promise.all([startStub("stub-direct"), startStub("stub-memory"), startStub("stub-sqlite"), startStub("stub-floor")]);
  const [gwMemory, gwSqlite, floor] = await Promise.all([
    startGateway("gateway-memory", stubMemory.url, { backend: "memory" }),
    startGateway("gateway-sqlite", stubSqlite.url, { backend: "database", file: path.join(tmp, "turns.db") }),
    startFloor("floor-proxy", ["--proxy", stubFloor.url]),
  ]);

  const direct = new DirectClient(target(stubDirect.url));
  await direct.connect();
  const sessions = await Promise.all(Array.from({ length: CONCURRENCY }, () => direct.createSession()));
  const memory = new GatewayClient("gateway-memory", target(gwMemory.url), true);
  const sqlite = new GatewayClient("gateway-sqlite", target(gwSqlite.url), false);
  const floorClient = new GatewayClient("floor-proxy", target(floor.url), false);
  const contexts = Array.from({ length: CONCURRENCY }, () => randomUUID());
  // First turn of every context binds its session (POST /session) — not part of the measurements.
  await Promise.all(contexts.flatMap((c) => [memory.send(c), sqlite.send(c), floorClient.send(c)]));

  const timed = async (fn: () => Promise<void>): Promise<number> => {
    const start = hr();
    await fn();
    return msSince(start);
  };
  const me = process.pid;
  const pids = (gateway: { child: ChildProcess } | undefined, stub: { child: ChildProcess }) => new CpuMeter([gateway?.child.pid ?? -1, stub.child.pid, me]);
  const modes: TurnMode[] = [
    { label: "direct: prompt_async + session.idle (stub)", run: (w) => timed(() => direct.turn(sessions[w]!)), cpu: pids(undefined, stubDirect) },
    { label: "gateway memory  message/send (blocking)", run: (w) => timed(() => memory.send(contexts[w]!)), cpu: pids(gwMemory, stubMemory) },
    { label: "gateway memory  message/stream (final event)", run: (w) => memory.stream(contexts[w]!), cpu: pids(gwMemory, stubMemory) },
    { label: "gateway sqlite  message/send (blocking)", run: (w) => timed(() => sqlite.send(contexts[w]!)), cpu: pids(gwSqlite, stubSqlite) },
    { label: "gateway sqlite  message/stream (final event)", run: (w) => sqlite.stream(contexts[w]!), cpu: pids(gwSqlite, stubSqlite) },
    { label: "floor: bare node:http proxy, message/send", run: (w) => timed(() => floorClient.send(contexts[w]!)), cpu: pids(floor, stubFloor) },
  ];
  const FLOOR = modes.length - 1;

  progress(`part 1: warm-up (${WARMUP} turns per mode)`);
  for (const mode of modes) for (let i = 0; i < WARMUP; i++) await mode.run(0);

  progress(`part 1: sequential latency, ${SEQUENTIAL} turns per mode in ${ROUNDS} interleaved rounds`);
  const samples = modes.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    const n = Math.ceil(SEQUENTIAL / ROUNDS);
    for (const [m, mode] of modes.entries()) {
      gc();
      await mode.cpu.measure(async () => {
        for (let i = 0; i < n; i++) samples[m]!.push(await mode.run(0));
      });
    }
  }

  progress(`part 1: throughput, ${THROUGHPUT} turns per run at concurrency ${CONCURRENCY}, ${ROUNDS} rounds`);
  const rates = modes.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [m, mode] of modes.entries()) {
      gc();
      const elapsed = await pool(THROUGHPUT, CONCURRENCY, async (w) => void (await mode.run(w))).catch((error: unknown) => {
        throw new Error(`${mode.label}: throughput run failed`, { cause: error });
      });
      rates[m]!.push((THROUGHPUT / elapsed) * 1000);
    }
  }

  const lat = samples.map(latency);
  const base = lat[0]!;
  const baseRate = median(rates[0]!);
  report.push(
    `1. Turns (stub reply "ok"): sequential latency, ${lat[0]!.n} turns per mode in ${ROUNDS} interleaved rounds`,
    `   ${pad("", 46)}${lpad("p50", 10)}${lpad("p99", 10)}${lpad("mean", 10)}   ${pad("added p50 / p99", 22)}CPU ms per turn: gateway / stub / client`,
  );
  for (const [m, mode] of modes.entries()) {
    const l = lat[m]!;
    const added = m === 0 ? "" : `${signed(l.p50 - base.p50)} / ${signed(l.p99 - base.p99)}`;
    const [gwCpu, stubCpu, clientCpu] = mode.cpu.used.map((c) => cpuText(c, l.n, "ms"));
    report.push(`   ${pad(mode.label, 46)}${lpad(ms(l.p50), 10)}${lpad(ms(l.p99), 10)}${lpad(ms(l.mean), 10)}   ${pad(added, 22)}${m === 0 ? "–" : gwCpu} / ${stubCpu} / ${clientCpu}`);
  }
  const overhead = lat[1]!.p50 - base.p50;
  const floorAdded = lat[FLOOR]!.p50 - base.p50;
  report.push(
    `   floor (bare node:http proxy, no gateway work) adds ${signed(floorAdded)} p50 to direct; the gateway's own work above the floor: ` +
      `memory send ${signed(lat[1]!.p50 - lat[FLOOR]!.p50)}, sqlite send ${signed(lat[3]!.p50 - lat[FLOOR]!.p50)}; ` +
      `a < 1 ms target leaves ${signed(1 - floorAdded)} for it`,
    `   target "gateway p50 overhead < 1 ms" (memory message/send): ${signed(overhead)} → ${overhead < 1 ? "met" : "NOT met"}` +
      `; sqlite message/send: ${signed(lat[3]!.p50 - base.p50)} → ${lat[3]!.p50 - base.p50 < 1 ? "met" : "NOT met"}`,
    `   Throughput at concurrency ${CONCURRENCY}, ${THROUGHPUT} turns per run (median; the ${ROUNDS} interleaved runs in brackets)`,
  );
  for (const [m, mode] of modes.entries()) {
    const r = median(rates[m]!);
    const ratio = m === 0 ? "" : `   ${(r / baseRate).toFixed(2)}x of direct`;
    report.push(`   ${pad(mode.label, 46)}${lpad(`${rate(r)}`, 10)}   (${rates[m]!.map((x) => Math.round(x)).join(", ")})${ratio}`);
  }

  direct.destroy();
  sqlite.destroy();
  floorClient.destroy();
  await Promise.all([stop(gwSqlite), stop(stubSqlite), stop(floor), stop(stubFloor)]);
  return { memory, stubUrl: stubDirect.url, services: [gwMemory, stubMemory, stubDirect] };
}

// ---------------------------------------------------------------------------------------------------------------
// Part 2: GetTask with 10,000 stored tasks

/** Fills a fresh gateway SQLite file with TASKS tasks through src/storage, owned by the bench token's principal. */
async function fillGatewayStore(file: string): Promise<{ owner: string; ms: number }> {
  const principal = new CredentialRegistry({ bearerToken: TOKEN }, { access: catalog.access_control }).resolve({ authorization: `Bearer ${TOKEN}` });
  if (principal === null) throw new Error("the bench token does not resolve to a principal");
  const start = hr();
  const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
  try {
    const timestamp = new Date().toISOString();
    await storage.atomically(async (tx) => {
      for (let i = 0; i < TASKS; i++) await tx.tasks.create(gatewayTask(i, timestamp), principal.id, { acceptedOutputModes: ["text/plain", "application/json"] });
    });
    const count = await storage.tasks.count();
    if (count !== TASKS) throw new Error(`expected ${TASKS} tasks, found ${count}`);
  } finally {
    await storage.close();
  }
  return { owner: principal.id, ms: msSince(start) };
}

/**
 * The GetTask load generator's connection: one bare keep-alive socket, one request at a time (no pipelining), the
 * request head built once, each answer framed by its Content-Length (both servers send one for JSON). The load
 * client shares the cores with the server it measures: CPU node:http's client spends per call is lost by both
 * servers alike and caps the faster one's rate the most. This one spends less (the report prints the client's CPU
 * per call either way; BENCH_GET_CLIENT=node measures with node:http).
 */
class LeanConnection {
  #socket: net.Socket | undefined;
  readonly #head: string;
  #buf: Buffer = Buffer.alloc(0);
  #waiter: { resolve: (r: { status: number; text: string }) => void; reject: (e: Error) => void } | undefined;
  #lastUsed = 0;

  constructor(
    readonly t: Target,
    urlPath: string,
    headers: Record<string, string>,
  ) {
    const lines = [`POST ${urlPath} HTTP/1.1`, `Host: ${t.host}:${t.port}`, "Content-Type: application/json", ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    this.#head = `${lines.join("\r\n")}\r\nContent-Length: `;
  }

  /**
   * The connection, opened when there is none. Servers close keep-alive connections that sit idle (5 s by default)
   * while the other targets run, and one closing just as a call is written fails that call: a connection idle for
   * 2 s is closed here and a new one opened. One that a server closed while idle is replaced the same way; one that
   * closes under a call fails that call.
   */
  #connection(): net.Socket {
    if (this.#socket !== undefined && performance.now() - this.#lastUsed > 2_000) this.close();
    this.#lastUsed = performance.now();
    if (this.#socket !== undefined) return this.#socket;
    const socket = net.connect(this.t.port, this.t.host);
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
      this.#parse();
    });
    const fail = (error: Error): void => {
      if (this.#socket === socket) this.#socket = undefined;
      this.#buf = Buffer.alloc(0);
      this.#waiter?.reject(error);
      this.#waiter = undefined;
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("connection closed")));
    this.#socket = socket;
    return socket;
  }

  call(body: string): Promise<{ status: number; text: string }> {
    if (this.#waiter !== undefined) return Promise.reject(new Error("one call at a time"));
    const socket = this.#connection();
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
      socket.write(`${this.#head}${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  #parse(): void {
    const end = this.#buf.indexOf("\r\n\r\n");
    if (end < 0 || this.#waiter === undefined) return;
    const head = this.#buf.toString("latin1", 0, end);
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (length === null) {
      this.#waiter.reject(new Error(`answer without Content-Length: ${head.slice(0, 200)}`));
      this.#waiter = undefined;
      this.#socket?.destroy();
      return;
    }
    const total = end + 4 + Number(length[1]);
    if (this.#buf.length < total) return;
    const text = this.#buf.toString("utf8", end + 4, total);
    this.#buf = this.#buf.length === total ? Buffer.alloc(0) : this.#buf.subarray(total);
    const waiter = this.#waiter;
    this.#waiter = undefined;
    this.#lastUsed = performance.now();
    waiter.resolve({ status: Number(head.slice(9, 12)), text });
  }

  close(): void {
    this.#socket?.removeAllListeners("close");
    this.#socket?.destroy();
    this.#socket = undefined;
  }
}

interface GetTarget {
  label: string;
  pid: number | undefined;
  t: Target;
  path: string;
  headers: Record<string, string>;
  ids: string[];
  bytes: number;
  /** Lean client: one connection per pool worker. */
  conns: LeanConnection[];
}

async function getTask(g: GetTarget, id: string, rpcId: number, worker: number): Promise<void> {
  const body = `{"jsonrpc":"2.0","id":${rpcId},"method":"GetTask","params":{"id":"${id}"}}`;
  const res =
    GET_CLIENT === "lean"
      ? await timeout((g.conns[worker] ??= new LeanConnection(g.t, g.path, g.headers)).call(body), 15_000, `${g.label} GetTask`)
      : await request(g.t, "POST", g.path, g.headers, body);
  // Both servers answer {"jsonrpc":"2.0","id":N,"result":{"id":"<task id>",…}; every 64th answer is parsed in full.
  const ok =
    res.status === 200 &&
    res.text.includes(`"result":{"id":"${id}"`) &&
    (rpcId % 64 !== 0 || (JSON.parse(res.text) as { result?: { id?: string; history?: unknown[] } }).result?.history?.length === 2);
  if (!ok) throw new Error(`${g.label} GetTask ${id}: HTTP ${res.status} ${res.text.slice(0, 300)}`);
  g.bytes = res.text.length;
}

async function partGetTask(report: string[], memory: GatewayClient, memoryPid: number | undefined, stubUrl: string): Promise<Array<{ child: ChildProcess }>> {
  // Top the part-1 memory gateway up to TASKS tasks through message/send (its tasks are real completed turns).
  const missing = TASKS - memory.taskIds.length;
  if (missing > 0) {
    progress(`part 2: topping the memory gateway up with ${missing} message/send turns`);
    const contexts = Array.from({ length: CONCURRENCY }, () => randomUUID());
    await pool(missing, CONCURRENCY, (w) => memory.send(contexts[w]!));
  }

  progress(`part 2: filling the gateway SQLite store with ${TASKS} tasks, starting gateway + 2 SDK servers`);
  const file = path.join(tmp, "gettask.db");
  const fill = await fillGatewayStore(file);
  const uncachedFile = path.join(tmp, "gettask-uncached.db");
  fs.copyFileSync(file, uncachedFile);
  const [gwSqlite, gwUncached, sdkMemory, sdkSqlite, floor] = await Promise.all([
    startGateway("gateway-sqlite-10k", stubUrl, { backend: "database", file }),
    startGateway("gateway-sqlite-10k-uncached", stubUrl, { backend: "database", file: uncachedFile }, { A2A_TASK_STORE_CACHE_SIZE: "0" }),
    startSdk("sdk-memory", { SDK_STORE: "memory" }),
    startSdk("sdk-sqlite", { SDK_STORE: "sqlite", SDK_DB: path.join(tmp, "sdk.db") }),
    startFloor("floor-get", ["--get", String(TASKS)]),
  ]);
  const gatewayHeaders = { authorization: `Bearer ${TOKEN}`, "a2a-version": "1.0" };
  const sdkHeaders = { "a2a-version": "1.0" };
  const benchIds = Array.from({ length: TASKS }, (_, i) => benchTaskId(i));
  const targets: GetTarget[] = [
    { label: `gateway  sqlite (${TASKS.toLocaleString("en-US")} filled)`, pid: gwSqlite.child.pid, t: target(gwSqlite.url), path: "/", headers: gatewayHeaders, ids: benchIds, bytes: 0, conns: [] },
    { label: "gateway  sqlite, read cache off", pid: gwUncached.child.pid, t: target(gwUncached.url), path: "/", headers: gatewayHeaders, ids: benchIds, bytes: 0, conns: [] },
    { label: `gateway  memory (${memory.taskIds.length.toLocaleString("en-US")} via message/send)`, pid: memoryPid, t: memory.t, path: "/", headers: gatewayHeaders, ids: memory.taskIds, bytes: 0, conns: [] },
    { label: "SDK      InMemoryTaskStore", pid: sdkMemory.child.pid, t: target(sdkMemory.url), path: "/a2a/jsonrpc", headers: sdkHeaders, ids: benchIds, bytes: 0, conns: [] },
    { label: "SDK      DatabaseTaskStore (SQLite)", pid: sdkSqlite.child.pid, t: target(sdkSqlite.url), path: "/a2a/jsonrpc", headers: sdkHeaders, ids: benchIds, bytes: 0, conns: [] },
    { label: "floor    bare node:http, Map", pid: floor.child.pid, t: target(floor.url), path: "/", headers: {}, ids: benchIds, bytes: 0, conns: [] },
  ];
  const pick = (ids: string[]): string => ids[Math.floor(Math.random() * ids.length)]!;
  let rpcId = 0;

  progress(`part 2: GetTask warm-up (every task read once per target), then ${GET_REQUESTS} calls per target and concurrency (${GET_CONCURRENCY.join(", ")}) in ${ROUNDS} rounds`);
  // Steady state: each server has read every task once (caches filled, code optimised) before anything is timed.
  for (const g of targets) await pool(g.ids.length, 8, (w, i) => getTask(g, g.ids[i]!, ++rpcId, w));
  const rates = new Map<string, number[]>();
  const cpu = new Map<string, number>();
  const clientCpu = new Map<string, number>();
  const n = Math.ceil(GET_REQUESTS / ROUNDS);
  for (const conc of GET_CONCURRENCY) {
    for (let round = 0; round < ROUNDS; round++) {
      for (const g of targets) {
        gc();
        const before = cpuMs(g.pid);
        const client = process.cpuUsage();
        const elapsed = await pool(n, conc, (w) => getTask(g, pick(g.ids), ++rpcId, w));
        const used = process.cpuUsage(client);
        const key = `${g.label}@${conc}`;
        cpu.set(g.label, (cpu.get(g.label) ?? 0) + cpuMs(g.pid) - before);
        clientCpu.set(g.label, (clientCpu.get(g.label) ?? 0) + (used.user + used.system) / 1000);
        rates.set(key, [...(rates.get(key) ?? []), (n / elapsed) * 1000]);
      }
    }
  }
  const calls = n * ROUNDS * GET_CONCURRENCY.length;

  const med = (g: GetTarget, conc: number): number => median(rates.get(`${g.label}@${conc}`)!);
  report.push(
    ``,
    `2. GetTask, JSON-RPC 1.0 (A2A-Version: 1.0), random ids; ${n * ROUNDS} calls per target and concurrency (req/s: median of ${ROUNDS} interleaved runs)`,
    `   gateway SQLite store filled through src/storage in ${Math.round(fill.ms)} ms (owner "${fill.owner}"); SDK servers hold the same task content`,
    `   warm-up: every target reads each of its tasks once before the timed runs (the gateway's read cache, A2A_TASK_STORE_CACHE_SIZE, is full; "cache off" runs with 0)`,
    `   gateway calls carry the bearer token (checked on every call); the SDK server runs with UserBuilder.noAuthentication`,
    `   load client: ${GET_CLIENT === "lean" ? "one bare keep-alive socket per worker (LeanConnection)" : "node:http, keep-alive agent"}, in this process`,
    `   ${pad("", 42)}${GET_CONCURRENCY.map((c) => lpad(`conc ${c}`, 12)).join("")}${lpad("server CPU/req", 16)}${lpad("client CPU/req", 16)}${lpad("answer", 10)}`,
  );
  const cpuPer = (g: GetTarget): number => cpu.get(g.label)! / calls;
  for (const g of targets) {
    report.push(
      `   ${pad(g.label, 42)}${GET_CONCURRENCY.map((c) => lpad(rate(med(g, c)), 12)).join("")}${lpad(`${cpuText(cpu.get(g.label)!, calls, "µs")} µs`, 16)}${lpad(`${cpuText(clientCpu.get(g.label)!, calls, "µs")} µs`, 16)}${lpad(`${g.bytes} B`, 10)}`,
    );
  }
  const [gs, gu, gm, sm, ss, fl] = targets as [GetTarget, GetTarget, GetTarget, GetTarget, GetTarget, GetTarget];
  const ratio = (a: GetTarget, b: GetTarget): string =>
    `${GET_CONCURRENCY.map((c) => `${(med(a, c) / med(b, c)).toFixed(2)}x @${c}`).join(", ")}; server CPU per request ${(cpuPer(b) / cpuPer(a)).toFixed(2)}x in the gateway's favour`;
  report.push(
    `   ratio gateway sqlite / SDK in-memory:  ${ratio(gs, sm)}   (target ≥ 2x: ${GET_CONCURRENCY.every((c) => med(gs, c) / med(sm, c) >= 2) ? "met" : "NOT met"})`,
    `   ratio gateway sqlite / SDK sqlite:     ${ratio(gs, ss)}`,
    `   ratio gateway sqlite, cache off / SDK in-memory: ${ratio(gu, sm)}`,
    `   ratio gateway memory / SDK in-memory:  ${ratio(gm, sm)}`,
    `   floor: ${Math.round(cpuPer(fl) * 1000)} µs server CPU per request with no gateway work; 2x the SDK in-memory server means ≤ ${Math.round((cpuPer(sm) * 1000) / 2)} µs, ` +
      `which leaves ${Math.round((cpuPer(sm) * 1000) / 2 - cpuPer(fl) * 1000)} µs above the floor; the gateway spends ${Math.round((cpuPer(gs) - cpuPer(fl)) * 1000)} (sqlite) / ${Math.round((cpuPer(gm) - cpuPer(fl)) * 1000)} (memory) µs above it`,
  );
  for (const g of targets) {
    g.t.agent.destroy();
    for (const c of g.conns) c.close();
  }
  return [gwSqlite, gwUncached, sdkMemory, sdkSqlite, floor];
}

// ---------------------------------------------------------------------------------------------------------------

const report: string[] = [];
const services: Array<{ child: ChildProcess }> = [];
let failed = false;
try {
  progress("building dist/ if stale (test/support/build.ts ensureBuilt)");
  ensureBuilt();
  const part1 = await partTurns(report);
  services.push(...part1.services);
  services.push(...(await partGetTask(report, part1.memory, part1.services[0]!.child.pid, part1.stubUrl)));
  part1.memory.destroy();
} catch (error) {
  failed = true;
  const describe = (e: unknown): string => (e instanceof Error ? `${e.stack ?? e.message}${e.cause === undefined ? "" : `\ncaused by: ${describe(e.cause)}`}` : String(e));
  process.stderr.write(`bench:tasks failed: ${describe(error)}\n`);
} finally {
  await Promise.all(services.map((s) => (children.has(s.child) ? stop(s) : Promise.resolve())));
  cleanupSync();
  clearTimeout(deadline);
}
if (!failed) {
  const header =
    `bench:tasks — Node ${process.version}, ${os.cpus().length} CPUs (load average ${loadAtStart.toFixed(1)} at start), ${((Date.now() - t0) / 1000).toFixed(0)} s; ` +
    `stub OpenCode, gateways (node bin/opencode-a2a.js serve), SDK servers and this client as separate processes on 127.0.0.1`;
  process.stdout.write(`${[header, ...report].join("\n")}\n`);
}
process.exit(failed ? 1 : 0);
