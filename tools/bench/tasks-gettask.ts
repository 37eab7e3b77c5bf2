// bench:tasks (./tasks.ts), part 2: GetTask with BENCH_TASKS stored tasks on the gateway (SQLite with and without its
// read cache, PostgreSQL, and the memory gateway of part 1) against the @a2a-js/sdk server and the floor.
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { CredentialRegistry } from "../../src/auth/credentials.js";
import { catalog } from "../../src/contract/catalog.js";
import { openStorage } from "../../src/storage/index.js";
import { benchTaskId, gatewayTask } from "./sdk-server.js";
import { GatewayClient, LeanConnection, request, target, timeout, type Target } from "./tasks-client.js";
import { CONCURRENCY, GET_CLIENT, GET_CONCURRENCY, GET_REQUESTS, progress, ROUNDS, startFloor, startGateway, startSdk, TASKS, tmp, TOKEN } from "./tasks-env.js";
import { cpuMs, cpuText, gc, hr, lpad, median, msSince, pad, pool, rate } from "./tasks-measure.js";
import type { BenchPostgres } from "./tasks-postgres.js";
import type { GetFigure, GetFigures } from "./tasks-targets.js";


/** Fills a fresh gateway store (sqlite:///<file> or postgres://…) with TASKS tasks through src/storage, owned by the bench token's principal. */
async function fillGatewayStore(url: string): Promise<{ owner: string; ms: number }> {
  const principal = new CredentialRegistry({ bearerToken: TOKEN }, { access: catalog.access_control }).resolve({ authorization: `Bearer ${TOKEN}` });
  if (principal === null) throw new Error("the bench token does not resolve to a principal");
  const start = hr();
  const storage = await openStorage({ backend: "sqlite", url });
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

interface GetTarget {
  label: string;
  pid: number | undefined;
  /** CPU ms of a PostgreSQL server behind it so far (counted in its server CPU). */
  dbCpu?: () => number;
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

export async function partGetTask(
  report: string[],
  memory: GatewayClient,
  memoryPid: number | undefined,
  stubUrl: string,
  postgres: BenchPostgres | undefined,
  figures?: GetFigures,
): Promise<Array<{ child: ChildProcess }>> {
  // Top the part-1 memory gateway up to TASKS tasks through message/send (its tasks are real completed turns).
  const missing = TASKS - memory.taskIds.length;
  if (missing > 0) {
    progress(`part 2: topping the memory gateway up with ${missing} message/send turns`);
    const contexts = Array.from({ length: CONCURRENCY }, () => randomUUID());
    await pool(missing, CONCURRENCY, (w) => memory.send(contexts[w]!));
  }

  progress(`part 2: filling the gateway SQLite store${postgres === undefined ? "" : " and a fresh PostgreSQL database"} with ${TASKS} tasks, starting the gateways + 2 SDK servers`);
  const file = path.join(tmp, "gettask.db");
  const fill = await fillGatewayStore(`sqlite:///${file}`);
  const uncachedFile = path.join(tmp, "gettask-uncached.db");
  fs.copyFileSync(file, uncachedFile);
  const pgUrl = await postgres?.database();
  const pgFill = pgUrl === undefined ? undefined : await fillGatewayStore(pgUrl);
  const [gwSqlite, gwUncached, sdkMemory, sdkSqlite, floor, gwPostgres] = await Promise.all([
    startGateway("gateway-sqlite-10k", stubUrl, { backend: "database", url: `sqlite:///${file}` }),
    startGateway("gateway-sqlite-10k-uncached", stubUrl, { backend: "database", url: `sqlite:///${uncachedFile}` }, { A2A_TASK_STORE_CACHE_SIZE: "0" }),
    startSdk("sdk-memory", { SDK_STORE: "memory" }),
    startSdk("sdk-sqlite", { SDK_STORE: "sqlite", SDK_DB: path.join(tmp, "sdk.db") }),
    startFloor("floor-get", ["--get", String(TASKS)]),
    pgUrl === undefined ? undefined : startGateway("gateway-postgres-10k", stubUrl, { backend: "database", url: pgUrl }),
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
  const [gs, gu, gm, sm, ss, fl] = targets as [GetTarget, GetTarget, GetTarget, GetTarget, GetTarget, GetTarget];
  const gp: GetTarget | undefined =
    gwPostgres === undefined
      ? undefined
      : { label: `gateway  postgres (${TASKS.toLocaleString("en-US")} filled)`, pid: gwPostgres.child.pid, dbCpu: postgres?.cpuMs, t: target(gwPostgres.url), path: "/", headers: gatewayHeaders, ids: benchIds, bytes: 0, conns: [] };
  if (gp !== undefined) targets.splice(2, 0, gp);
  const pick = (ids: string[]): string => ids[Math.floor(Math.random() * ids.length)]!;
  let rpcId = 0;

  progress(`part 2: GetTask warm-up (every task read once per target), then ${GET_REQUESTS} calls per target and concurrency (${GET_CONCURRENCY.join(", ")}) in ${ROUNDS} rounds`);
  // Steady state: each server has read every task once (caches filled, code optimised) before anything is timed.
  for (const g of targets) await pool(g.ids.length, 8, (w, i) => getTask(g, g.ids[i]!, ++rpcId, w));
  const rates = new Map<string, number[]>();
  const cpu = new Map<string, number>();
  const clientCpu = new Map<string, number>();
  let dbCpu = 0;
  const n = Math.ceil(GET_REQUESTS / ROUNDS);
  for (const conc of GET_CONCURRENCY) {
    for (let round = 0; round < ROUNDS; round++) {
      for (const g of targets) {
        gc();
        const before = cpuMs(g.pid);
        const dbBefore = g.dbCpu?.() ?? 0;
        const client = process.cpuUsage();
        const elapsed = await pool(n, conc, (w) => getTask(g, pick(g.ids), ++rpcId, w));
        const used = process.cpuUsage(client);
        const key = `${g.label}@${conc}`;
        const db = (g.dbCpu?.() ?? 0) - dbBefore;
        cpu.set(g.label, (cpu.get(g.label) ?? 0) + cpuMs(g.pid) - before + db);
        dbCpu += g.dbCpu === undefined ? 0 : db;
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
    ...(pgFill === undefined || gp === undefined
      ? []
      : [
          `   gateway PostgreSQL store: a fresh database, filled the same way in ${Math.round(pgFill.ms)} ms; its server CPU/req is the gateway's plus the PostgreSQL server's ` +
            `(${cpuText(dbCpu, calls, "µs")} µs of it; no read cache on PostgreSQL)`,
        ]),
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
  const ratio = (a: GetTarget, b: GetTarget): string =>
    `${GET_CONCURRENCY.map((c) => `${(med(a, c) / med(b, c)).toFixed(2)}x @${c}`).join(", ")}; server CPU per request ${(cpuPer(b) / cpuPer(a)).toFixed(2)}x in the gateway's favour`;
  report.push(
    `   ratio gateway sqlite / SDK in-memory:  ${ratio(gs, sm)}   (target ≥ 2x: ${GET_CONCURRENCY.every((c) => med(gs, c) / med(sm, c) >= 2) ? "met" : "NOT met"})`,
    `   ratio gateway sqlite / SDK sqlite:     ${ratio(gs, ss)}`,
    `   ratio gateway sqlite, cache off / SDK in-memory: ${ratio(gu, sm)}`,
    `   ratio gateway memory / SDK in-memory:  ${ratio(gm, sm)}`,
    ...(gp === undefined
      ? []
      : [`   ratio gateway postgres / SDK in-memory: ${ratio(gp, sm)}`, `   ratio gateway postgres / SDK sqlite:    ${ratio(gp, ss)}`]),
    `   floor: ${Math.round(cpuPer(fl) * 1000)} µs server CPU per request with no gateway work; 2x the SDK in-memory server means ≤ ${Math.round((cpuPer(sm) * 1000) / 2)} µs, ` +
      `which leaves ${Math.round((cpuPer(sm) * 1000) / 2 - cpuPer(fl) * 1000)} µs above the floor; the gateway spends ${Math.round((cpuPer(gs) - cpuPer(fl)) * 1000)} (sqlite) / ${Math.round((cpuPer(gm) - cpuPer(fl)) * 1000)} (memory)` +
      `${gp === undefined ? "" : ` / ${Math.round((cpuPer(gp) - cpuPer(fl)) * 1000)} (postgres, with the PostgreSQL server)`} µs above it`,
  );
  if (figures !== undefined) {
    const figure = (g: GetTarget): GetFigure => ({ label: g.label, rates: new Map(GET_CONCURRENCY.map((c) => [c, med(g, c)])), cpuUs: cpuPer(g) * 1000 });
    figures.gateways.push(...[gs, gu, gm, ...(gp === undefined ? [] : [gp])].map(figure));
    figures.floor = figure(fl);
    figures.sdk = figure(sm);
  }
  for (const g of targets) {
    g.t.agent.destroy();
    for (const c of g.conns) c.close();
  }
  return [gwSqlite, gwUncached, sdkMemory, sdkSqlite, floor, ...(gwPostgres === undefined ? [] : [gwPostgres])];
}
