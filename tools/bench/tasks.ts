// Task benchmark of the gateway, every number against a baseline measured in the same run:
//
//   1. Turns. The stub OpenCode (tools/upstream/stub.ts, reply "ok") and the gateway (`node bin/opencode-a2a.js
//      serve`, memory store, SQLite store and PostgreSQL store) run as separate processes. Baseline ("direct"): the same turn done
//      against a stub directly, the way the gateway does it: `POST /session/{id}/prompt_async` and wait for that
//      session's `session.idle` on one shared `/global/event` connection. Measured: sequential latency (p50/p99)
//      of direct, JSON-RPC `message/send` (blocking) and `message/stream` (time to the final event; memory and
//      SQLite), the added latency (gateway − direct), throughput at concurrency BENCH_CONCURRENCY, then the sequential
//      turns once more after the throughput runs (every process past thousands of turns, most of V8's compiling done). Each
//      consumer has its own stub process, so no process parses events of another one's turns.
//   2. GetTask with 10,000 stored tasks, JSON-RPC 1.0 (`A2A-Version: 1.0`), random ids, on the gateway (SQLite
//      and PostgreSQL stores filled through src/storage before it starts; and the memory-store gateway of part 1,
//      topped up to 10,000 tasks through message/send) against an @a2a-js/sdk 1.3.0 server (tools/bench/sdk-server.ts) with
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
// PostgreSQL (./tasks-postgres.ts): the server BENCH_POSTGRES_URL names, else a throwaway cluster started with
// tools/postgres/cluster.ts and removed at the end; each PostgreSQL gateway (part 1, part 2) gets a fresh database
// (bench_<random>). Without PostgreSQL binaries (and no BENCH_POSTGRES_URL) the PostgreSQL rows are skipped, and the
// report says so and why. The PostgreSQL server's CPU counts in its gateway's rows when it runs on this machine.
//
// Only 127.0.0.1 (and BENCH_POSTGRES_URL); bounded by request counts and a 300 s deadline; every child process
// is stopped at the end. Modules: ./tasks-env.ts (knobs, processes), ./tasks-client.ts (HTTP, clients),
// ./tasks-measure.ts (pool, CPU, statistics), ./tasks-gettask.ts (part 2), ./tasks-postgres.ts.
//
//   npm run bench:tasks      (node --expose-gc --import tsx tools/bench/tasks.ts)
//
// Knobs: BENCH_SEQUENTIAL (turns per mode, default 600), BENCH_CONCURRENCY (16), BENCH_THROUGHPUT (turns per
// throughput run, 1000), BENCH_STEADY (sequential turns per mode after the throughput runs, 300), BENCH_ROUNDS
// (interleaved rounds, 3), BENCH_GET_REQUESTS (GetTask calls per target and concurrency, 7500), BENCH_GET_CONCURRENCY ("8,32"), BENCH_TASKS (10000), BENCH_GET_CLIENT ("lean": one bare
// keep-alive socket per worker, see LeanConnection; "node": node:http with a keep-alive agent), BENCH_POSTGRES_URL
// (postgres://… of a server to create the bench databases on; default: a throwaway cluster), BENCH_POSTGRES ("off":
// no PostgreSQL rows).
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { ensureBuilt } from "../../test/support/build.js";
import { DirectClient, GatewayClient, target } from "./tasks-client.js";
import { cleanupSync, CONCURRENCY, finish, loadAtStart, progress, ROUNDS, SEQUENTIAL, startFloor, startGateway, startStub, STEADY, stop, t0, THROUGHPUT, tmp, TOKEN, WARMUP } from "./tasks-env.js";
import { partGetTask } from "./tasks-gettask.js";
import { CpuMeter, cpuText, gc, hr, latency, lpad, median, ms, msSince, pad, pool, rate, signed, type CpuSource } from "./tasks-measure.js";
import { benchPostgres, type BenchPostgres } from "./tasks-postgres.js";
import { getTaskTargets, turnTargets, type GetFigures } from "./tasks-targets.js";
// ---------------------------------------------------------------------------------------------------------------
// Part 1: turns

interface TurnMode {
  label: string;
  /** One turn; returns its latency in ms. */
  run(worker: number): Promise<number>;
  /** CPU of [gateway, stub, bench client] during the sequential turns. */
  cpu: CpuMeter;
}

async function partTurns(report: string[], postgres: BenchPostgres | undefined): Promise<{ memory: GatewayClient; stubUrl: string; services: Array<{ child: ChildProcess }> }> {
  progress(`part 1: starting ${postgres === undefined ? "4 stubs, 2" : "5 stubs, 3"} gateways and the floor proxy`);
  const [stubDirect, stubMemory, stubSqlite, stubFloor, stubPostgres] = await Promise.all([
    startStub("stub-direct"),
    startStub("stub-memory"),
    startStub("stub-sqlite"),
    startStub("stub-floor"),
    postgres === undefined ? undefined : startStub("stub-postgres"),
  ]);
  const pgUrl = await postgres?.database();
  const [gwMemory, gwSqlite, floor, gwPostgres] = await Promise.all([
    startGateway("gateway-memory", stubMemory.url, { backend: "memory" }),
    startGateway("gateway-sqlite", stubSqlite.url, { backend: "database", url: `sqlite:///${path.join(tmp, "turns.db")}` }),
    startFloor("floor-proxy", ["--proxy", stubFloor.url]),
    pgUrl === undefined || stubPostgres === undefined ? undefined : startGateway("gateway-postgres", stubPostgres.url, { backend: "database", url: pgUrl }),
  ]);

  const direct = new DirectClient(target(stubDirect.url));
  await direct.connect();
  const sessions = await Promise.all(Array.from({ length: CONCURRENCY }, () => direct.createSession()));
  const memory = new GatewayClient("gateway-memory", target(gwMemory.url), true, TOKEN);
  const sqlite = new GatewayClient("gateway-sqlite", target(gwSqlite.url), false, TOKEN);
  const pgClient = gwPostgres === undefined ? undefined : new GatewayClient("gateway-postgres", target(gwPostgres.url), false, TOKEN);
  const floorClient = new GatewayClient("floor-proxy", target(floor.url), false, TOKEN);
  const contexts = Array.from({ length: CONCURRENCY }, () => randomUUID());
  // First turn of every context binds its session (POST /session) — not part of the measurements.
  await Promise.all(contexts.flatMap((c) => [memory.send(c), sqlite.send(c), floorClient.send(c), ...(pgClient === undefined ? [] : [pgClient.send(c)])]));

  const timed = async (fn: () => Promise<void>): Promise<number> => {
    const start = hr();
    await fn();
    return msSince(start);
  };
  const me = process.pid;
  // [gateway, stub, client, and the PostgreSQL server's processes behind a PostgreSQL gateway]
  const pids = (gateway: { child: ChildProcess } | undefined, stub: { child: ChildProcess }, db?: CpuSource) =>
    new CpuMeter([gateway?.child.pid ?? -1, stub.child.pid, me, ...(db === undefined ? [] : [db])]);
  const modes: TurnMode[] = [
    { label: "direct: prompt_async + session.idle (stub)", run: (w) => timed(() => direct.turn(sessions[w]!)), cpu: pids(undefined, stubDirect) },
    { label: "gateway memory  message/send (blocking)", run: (w) => timed(() => memory.send(contexts[w]!)), cpu: pids(gwMemory, stubMemory) },
    { label: "gateway memory  message/stream (final event)", run: (w) => memory.stream(contexts[w]!), cpu: pids(gwMemory, stubMemory) },
    { label: "gateway sqlite  message/send (blocking)", run: (w) => timed(() => sqlite.send(contexts[w]!)), cpu: pids(gwSqlite, stubSqlite) },
    { label: "gateway sqlite  message/stream (final event)", run: (w) => sqlite.stream(contexts[w]!), cpu: pids(gwSqlite, stubSqlite) },
  ];
  const PG = pgClient === undefined || gwPostgres === undefined || stubPostgres === undefined ? -1 : modes.length;
  if (PG >= 0) {
    modes.push({ label: "gateway postgres message/send (blocking)", run: (w) => timed(() => pgClient!.send(contexts[w]!)), cpu: pids(gwPostgres, stubPostgres!, postgres!.cpuMs) });
  }
  const FLOOR = modes.length;
  modes.push({ label: "floor: bare node:http proxy, message/send", run: (w) => timed(() => floorClient.send(contexts[w]!)), cpu: pids(floor, stubFloor) });

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

  // The sequential turns once more, after the throughput runs: every process has served thousands of turns by then
  // and V8 has compiled what it will (during the sequential runs above, 200 turns after the start, its compiler
  // threads alone took about a fifth of the gateway's CPU, measured per thread). Both are reported.
  progress(`part 1: ${STEADY} sequential turns per mode after the throughput runs`);
  const steadySamples = modes.map(() => [] as number[]);
  const steadyCpu = modes.map((mode) => new CpuMeter(mode.cpu.sources));
  for (const [m, mode] of modes.entries()) {
    gc();
    await steadyCpu[m]!.measure(async () => {
      for (let i = 0; i < STEADY; i++) steadySamples[m]!.push(await mode.run(0));
    });
  }

  const lat = samples.map(latency);
  const base = lat[0]!;
  const baseRate = median(rates[0]!);
  report.push(
    `1. Turns (stub reply "ok"): sequential latency, ${lat[0]!.n} turns per mode in ${ROUNDS} interleaved rounds`,
    `   ${pad("", 46)}${lpad("p50", 10)}${lpad("p99", 10)}${lpad("mean", 10)}   ${pad("added p50 / p99", 22)}CPU ms per turn: gateway / stub / client (/ PostgreSQL server)`,
  );
  for (const [m, mode] of modes.entries()) {
    const l = lat[m]!;
    const added = m === 0 ? "" : `${signed(l.p50 - base.p50)} / ${signed(l.p99 - base.p99)}`;
    const [gwCpu, stubCpu, clientCpu, dbCpu] = mode.cpu.used.map((c) => cpuText(c, l.n, "ms"));
    const db = dbCpu === undefined ? "" : ` / ${dbCpu}`;
    report.push(`   ${pad(mode.label, 46)}${lpad(ms(l.p50), 10)}${lpad(ms(l.p99), 10)}${lpad(ms(l.mean), 10)}   ${pad(added, 22)}${m === 0 ? "–" : gwCpu} / ${stubCpu} / ${clientCpu}${db}`);
  }
  const overhead = lat[1]!.p50 - base.p50;
  const floorAdded = lat[FLOOR]!.p50 - base.p50;
  report.push(
    `   floor (bare node:http proxy, no gateway work) adds ${signed(floorAdded)} p50 to direct; the gateway's own work above the floor: ` +
      `memory send ${signed(lat[1]!.p50 - lat[FLOOR]!.p50)}, sqlite send ${signed(lat[3]!.p50 - lat[FLOOR]!.p50)}` +
      `${PG < 0 ? "" : `, postgres send ${signed(lat[PG]!.p50 - lat[FLOOR]!.p50)}`}; ` +
      `a < 1 ms target leaves ${signed(1 - floorAdded)} for it`,
    `   target "gateway p50 overhead < 1 ms" (memory message/send): ${signed(overhead)} → ${overhead < 1 ? "met" : "NOT met"}` +
      `; sqlite message/send: ${signed(lat[3]!.p50 - base.p50)} → ${lat[3]!.p50 - base.p50 < 1 ? "met" : "NOT met"}` +
      `${PG < 0 ? "" : `; postgres message/send: ${signed(lat[PG]!.p50 - base.p50)} → ${lat[PG]!.p50 - base.p50 < 1 ? "met" : "NOT met"}`}`,
    `   issue 23 targets (message/send; CPU per turn of the sequential runs, added p50 over direct):`,
    ...turnTargets(
      [1, 3, ...(PG < 0 ? [] : [PG])].map((m) => ({ label: modes[m]!.label, cpuMs: modes[m]!.cpu.used[0]! / lat[m]!.n, addedP50: lat[m]!.p50 - base.p50 })),
      { label: modes[FLOOR]!.label, cpuMs: modes[FLOOR]!.cpu.used[0]! / lat[FLOOR]!.n, addedP50: floorAdded },
    ),
    `   Throughput at concurrency ${CONCURRENCY}, ${THROUGHPUT} turns per run (median; the ${ROUNDS} interleaved runs in brackets)`,
  );
  for (const [m, mode] of modes.entries()) {
    const r = median(rates[m]!);
    const ratio = m === 0 ? "" : `   ${(r / baseRate).toFixed(2)}x of direct`;
    report.push(`   ${pad(mode.label, 46)}${lpad(`${rate(r)}`, 10)}   (${rates[m]!.map((x) => Math.round(x)).join(", ")})${ratio}`);
  }
  const steadyLat = steadySamples.map(latency);
  report.push(`   After the throughput runs (every process past thousands of turns), ${STEADY} sequential turns per mode:`);
  for (const [m, mode] of modes.entries()) {
    const l = steadyLat[m]!;
    const added = m === 0 ? "" : `${signed(l.p50 - steadyLat[0]!.p50)}`;
    report.push(`   ${pad(mode.label, 46)}${lpad(ms(l.p50), 10)}${lpad(ms(l.p99), 10)}   added p50 ${pad(added || "–", 10)}CPU ms per turn: ${m === 0 ? "–" : cpuText(steadyCpu[m]!.used[0]!, l.n, "ms")}`);
  }
  report.push(
    `   issue 23 targets after the throughput runs (same figures of these turns):`,
    ...turnTargets(
      [1, 3, ...(PG < 0 ? [] : [PG])].map((m) => ({ label: modes[m]!.label, cpuMs: steadyCpu[m]!.used[0]! / steadyLat[m]!.n, addedP50: steadyLat[m]!.p50 - steadyLat[0]!.p50 })),
      { label: modes[FLOOR]!.label, cpuMs: steadyCpu[FLOOR]!.used[0]! / steadyLat[FLOOR]!.n, addedP50: steadyLat[FLOOR]!.p50 - steadyLat[0]!.p50 },
    ),
  );

  direct.destroy();
  sqlite.destroy();
  pgClient?.destroy();
  floorClient.destroy();
  await Promise.all([gwSqlite, stubSqlite, floor, stubFloor, gwPostgres, stubPostgres].map((s) => (s === undefined ? Promise.resolve() : stop(s))));
  return { memory, stubUrl: stubDirect.url, services: [gwMemory, stubMemory, stubDirect] };
}

// ---------------------------------------------------------------------------------------------------------------

const report: string[] = [];
const services: Array<{ child: ChildProcess }> = [];
let postgres: BenchPostgres | undefined;
let failed = false;
try {
  progress("building dist/ if stale (test/support/build.ts ensureBuilt)");
  ensureBuilt();
  progress("PostgreSQL: BENCH_POSTGRES_URL, else a throwaway cluster (tools/postgres/cluster.ts)");
  const pg = await benchPostgres();
  if ("skipped" in pg) {
    progress(`PostgreSQL rows skipped: ${pg.skipped}`);
    report.push(`PostgreSQL: rows skipped — ${pg.skipped}`, "");
  } else {
    postgres = pg;
    report.push(`PostgreSQL: ${pg.source}; a fresh database per gateway`, "");
  }
  const part1 = await partTurns(report, postgres);
  services.push(...part1.services);
  const figures: GetFigures = { gateways: [] };
  services.push(...(await partGetTask(report, part1.memory, part1.services[0]!.child.pid, part1.stubUrl, postgres, figures)));
  report.push(`   issue 23 targets (GetTask: rates of the same run per concurrency; server CPU per request in brackets):`, ...getTaskTargets(figures));
  part1.memory.destroy();
} catch (error) {
  failed = true;
  const describe = (e: unknown): string => (e instanceof Error ? `${e.stack ?? e.message}${e.cause === undefined ? "" : `\ncaused by: ${describe(e.cause)}`}` : String(e));
  process.stderr.write(`bench:tasks failed: ${describe(error)}\n`);
} finally {
  await Promise.all(services.map((s) => stop(s)));
  cleanupSync(); // kills what is left, removes the throwaway cluster
  // The gateways are gone: the databases made on a BENCH_POSTGRES_URL server can be dropped.
  await postgres?.close().catch((error: unknown) => void process.stderr.write(`bench:tasks: PostgreSQL cleanup failed: ${String(error)}\n`));
  finish();
}
if (!failed) {
  const header =
    `bench:tasks — Node ${process.version}, ${os.cpus().length} CPUs (load average ${loadAtStart.toFixed(1)} at start), ${((Date.now() - t0) / 1000).toFixed(0)} s; ` +
    `stub OpenCode, gateways (node bin/opencode-a2a.js serve), SDK servers and this client as separate processes on 127.0.0.1`;
  process.stdout.write(`${[header, ...report].join("\n")}\n`);
}
process.exit(failed ? 1 : 0);
