// bench:scale (./scale.ts), one measurement: a seeded store (SQLite copy or PostgreSQL database) of N tasks, the
// start times against the bare server, then one gateway measured for GetTask, the listings, the stall probe and RSS.
import { contextId, benchGroups, taskId, type Layout, type Seeded } from "./scale-seed.js";
import { ADMIN_TOKEN, DEEP_PAGES, gatewayArgs, gatewayEnv, GET_REQUESTS, LIST_REQUESTS, LIST_SECONDS, loadNow, OWNER_TOKEN, PAGE_SIZE, PROBE_MS, progress, ROUNDS, STALL_SECONDS, STALL_WORKERS, STARTS, startGateway, stop, tmp } from "./scale-env.js";
import { dist, loopLag, probe, Rpc, rss, rssText, sample, schedstat, type Dist, type Rss, type Variant } from "./scale-measure.js";
import { BARE_SERVER, startToCard } from "./startup-probe.js";
import { target } from "./tasks-client.js";
import { gc, hr, median, msSince } from "./tasks-measure.js";

export interface ScaleResult {
  label: string;
  n: number;
  seeded: Seeded;
  starts: { bare: number[]; gateway: number[] };
  variants: Array<{ label: string; who: "owner" | "admin" | "get"; d: Dist; skipped?: string }>;
  idle: Dist;
  loaded: Dist;
  listingsDuringStall: number;
  /** Failed requests during the stall window: the probe's (retried) and the listing workers' (skipped). */
  failures: { probe: number; listings: number; idleProbe: number };
  lag?: Awaited<ReturnType<typeof loopLag>>;
  /** The gateway's main thread in the stall window: ms on a CPU, ms waiting for one, the window's ms. */
  sched?: { cpuMs: number; waitMs: number; spanMs: number };
  rssStart: Rss;
  rssLoaded: Rss;
  load: { start: string; end: string };
}

const pick = (n: number): number => Math.floor(Math.random() * n);

/** The page token after `pages` pages of `params` (each page read once, not timed). */
async function tokenAt(rpc: Rpc, params: Record<string, unknown>, pages: number): Promise<string | undefined> {
  let token: string | undefined;
  for (let p = 0; p < pages; p++) {
    const { result } = await rpc.call("ListTasks", token === undefined ? params : { ...params, pageToken: token });
    token = typeof result.nextPageToken === "string" && result.nextPageToken !== "" ? result.nextPageToken : undefined;
    if (token === undefined) return undefined;
  }
  return token;
}

function listVariants(who: "owner" | "admin", rpc: Rpc, rpc03: Rpc, l: Layout, deepToken: string | undefined): Variant[] {
  const groups = Math.ceil(l.n / 4);
  const context = (): string => contextId(who === "owner" ? pick(benchGroups(l.n)) * 10 : pick(groups));
  const page = (result: Record<string, unknown>): void => {
    if (!Array.isArray(result.tasks)) throw new Error(`no tasks array in ${JSON.stringify(result).slice(0, 200)}`);
  };
  const full = (result: Record<string, unknown>): void => {
    page(result);
    if ((result.tasks as unknown[]).length !== PAGE_SIZE) throw new Error(`expected a full page of ${PAGE_SIZE}, got ${(result.tasks as unknown[]).length}`);
  };
  const v = (label: string, next: () => { method: string; params: unknown }, check: (r: Record<string, unknown>) => void, r = rpc): Variant => ({ label: `ListTasks ${who} ${label}`, rpc: r, next, check, samples: [] });
  const out = [
    v("first page", () => ({ method: "ListTasks", params: { pageSize: PAGE_SIZE } }), full),
    v(`page ${DEEP_PAGES + 1} (pageToken)`, () => ({ method: "ListTasks", params: { pageSize: PAGE_SIZE, pageToken: deepToken } }), full),
    v("status FAILED", () => ({ method: "ListTasks", params: { pageSize: PAGE_SIZE, status: "TASK_STATE_FAILED" } }), full),
    v("contextId", () => ({ method: "ListTasks", params: { pageSize: PAGE_SIZE, contextId: context() } }), page),
    v(`0.3 tasks/list offset ${DEEP_PAGES * PAGE_SIZE}`, () => ({ method: "tasks/list", params: { limit: PAGE_SIZE, offset: DEEP_PAGES * PAGE_SIZE } }), full, rpc03),
  ];
  if (deepToken === undefined) out[1]!.skipped = `fewer than ${DEEP_PAGES + 1} pages`;
  return out;
}

export async function measureScale(label: string, l: Layout, seeded: Seeded, stubUrl: string): Promise<ScaleResult> {
  const loadStart = loadNow();
  // Start → first card, interleaved with the bare server. The first gateway start fails the unfinished tasks.
  progress(`${label}: ${STARTS} starts → first card, each after a bare node:http start`);
  const starts = { bare: [] as number[], gateway: [] as number[] };
  for (let i = 0; i < STARTS; i++) {
    starts.bare.push(await startToCard(process.execPath, ["-e", BARE_SERVER], { cwd: tmp, env: process.env }));
    starts.gateway.push(await startToCard(process.execPath, gatewayArgs(), { cwd: tmp, env: gatewayEnv(seeded.url, stubUrl), timeoutMs: 300_000 }));
    progress(`${label}: start ${i + 1}: bare ${starts.bare.at(-1)!.toFixed(0)} ms, gateway ${starts.gateway.at(-1)!.toFixed(0)} ms`);
  }

  const gw = await startGateway(seeded.url, stubUrl);
  const pid = gw.child.pid;
  const t = target(gw.url);
  const admin = new Rpc(t, ADMIN_TOKEN, "1.0");
  const owner = new Rpc(t, OWNER_TOKEN, "1.0");
  const admin03 = new Rpc(t, ADMIN_TOKEN, "0.3");
  const owner03 = new Rpc(t, OWNER_TOKEN, "0.3");
  await new Promise((r) => setTimeout(r, 1000));
  const rssStart = rss(pid);
  try {
    progress(`${label}: page tokens at page ${DEEP_PAGES + 1} (owner, admin), read once`);
    const [ownerToken, adminToken] = [await tokenAt(owner, { pageSize: PAGE_SIZE }, DEEP_PAGES), await tokenAt(admin, { pageSize: PAGE_SIZE }, DEEP_PAGES)];
    const get: Variant = {
      label: "GetTask (admin, random id)",
      rpc: admin,
      next: () => {
        const i = pick(l.n);
        return { method: "GetTask", params: { id: taskId(i) } };
      },
      check: (r) => {
        if (typeof r.id !== "string") throw new Error("GetTask: no task id in the result");
      },
      samples: [],
    };
    const variants = [get, ...listVariants("owner", owner, owner03, l, ownerToken), ...listVariants("admin", admin, admin03, l, adminToken)];
    progress(`${label}: warm-up (200 GetTask, 3 calls per listing)`);
    await sample(get, 200, 60);
    for (const v of variants.slice(1)) {
      await sample(v, 3, 1);
      v.samples.length = 0;
    }
    get.samples.length = 0;
    progress(`${label}: ${ROUNDS} interleaved rounds: ${Math.ceil(GET_REQUESTS / ROUNDS)} GetTask, ≤ ${LIST_REQUESTS} calls or ${LIST_SECONDS} s per listing`);
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of variants) {
        gc();
        await sample(v, v === get ? Math.ceil(GET_REQUESTS / ROUNDS) : LIST_REQUESTS, v === get ? 600 : LIST_SECONDS);
      }
      progress(`${label}: round ${round + 1} done`);
    }

    progress(`${label}: stall probe: idle ${Math.min(3, STALL_SECONDS)} s, then ${STALL_SECONDS} s under ${STALL_WORKERS} workers of admin listings`);
    const idleProbe = probe(gw.url, "/.well-known/agent-card.json", PROBE_MS);
    await new Promise((r) => setTimeout(r, Math.min(3, STALL_SECONDS) * 1000));
    const idle = await idleProbe.stop();
    // prom-client resets its lag histogram when read: the next read covers the load only. Its GC counts are totals.
    const gcBefore = (await loopLag(t, ADMIN_TOKEN))?.gc;
    const loadedProbe = probe(gw.url, "/.well-known/agent-card.json", PROBE_MS);
    const schedBefore = schedstat(pid);
    const start = hr();
    let listings = 0;
    let listingFailures = 0;
    const listers = Array.from({ length: STALL_WORKERS }, () => new Rpc(t, ADMIN_TOKEN, "1.0")).map(async (rpc, w) => {
      const kinds = [{ pageSize: PAGE_SIZE }, { pageSize: PAGE_SIZE, status: "TASK_STATE_FAILED" }, ...(adminToken === undefined ? [] : [{ pageSize: PAGE_SIZE, pageToken: adminToken }])];
      for (let k = w; msSince(start) < STALL_SECONDS * 1000; k++) {
        // A connection the gateway reset is counted and replaced (LeanConnection opens a new one on the next call).
        await rpc.call("ListTasks", kinds[k % kinds.length]).then(
          () => listings++,
          () => listingFailures++,
        );
      }
      rpc.close();
    });
    await Promise.all(listers);
    const schedAfter = schedstat(pid);
    const spanMs = msSince(start);
    const loaded = await loadedProbe.stop();
    const lag = await loopLag(t, ADMIN_TOKEN);
    if (lag !== undefined && gcBefore !== undefined) {
      for (const [kind, n] of Object.entries(lag.gc)) lag.gc[kind] = { all: n.all - (gcBefore[kind]?.all ?? 0), over10ms: n.over10ms - (gcBefore[kind]?.over10ms ?? 0) };
    }
    const rssLoaded = rss(pid);
    return {
      label,
      n: l.n,
      seeded,
      starts,
      variants: variants.map((v) => ({ label: v.label, who: v === get ? "get" : v.label.includes(" owner ") ? "owner" : "admin", d: dist(v.samples), ...(v.skipped === undefined ? {} : { skipped: v.skipped }) })),
      idle: dist(idle.samples),
      loaded: dist(loaded.samples),
      listingsDuringStall: listings,
      failures: { probe: loaded.failures, listings: listingFailures, idleProbe: idle.failures },
      ...(lag === undefined ? {} : { lag }),
      ...(schedBefore === undefined || schedAfter === undefined ? {} : { sched: { cpuMs: schedAfter.cpuMs - schedBefore.cpuMs, waitMs: schedAfter.waitMs - schedBefore.waitMs, spanMs } }),
      rssStart,
      rssLoaded,
      load: { start: loadStart, end: loadNow() },
    };
  } finally {
    for (const r of [admin, owner, admin03, owner03]) r.close();
    t.agent.destroy();
    await stop(gw);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Report

const f = (v: number): string => (Number.isNaN(v) ? "n/a" : v >= 100 ? v.toFixed(0) : v.toFixed(2));
const n = (v: number): string => v.toLocaleString("en-US");
const line = (ok: boolean, text: string): string => `   ${ok ? "PASS" : "FAIL"}  ${text}`;

export function report(r: ScaleResult): string[] {
  const out = [`${r.label}: ${n(r.n)} tasks; store ${r.seeded.source}${Number.isNaN(r.seeded.bytes) ? "" : `, ${(r.seeded.bytes / 2 ** 20).toFixed(0)} MB file (copied in ${(r.seeded.copyMs / 1000).toFixed(1)} s)`}; load average ${r.load.start} at start, ${r.load.end} at end`];
  const bare = median(r.starts.bare);
  const later = r.starts.gateway.slice(1);
  const laterMedian = later.length === 0 ? NaN : median(later);
  const first = r.starts.gateway[0]!;
  out.push(
    `   start → first card: gateway first start ${f(first)} ms (fails the unfinished tasks), later starts median ${f(laterMedian)} ms [${later.map((x) => x.toFixed(0)).join(", ")}]; bare node:http median ${f(bare)} ms [${r.starts.bare.map((x) => x.toFixed(0)).join(", ")}]`,
    `   ${"".padEnd(46)}${"p50 ms".padStart(10)}${"p99 ms".padStart(10)}${"max ms".padStart(10)}${"calls".padStart(8)}`,
  );
  for (const v of r.variants) {
    out.push(v.skipped !== undefined ? `   ${v.label.padEnd(46)}skipped: ${v.skipped}` : `   ${v.label.padEnd(46)}${f(v.d.p50).padStart(10)}${f(v.d.p99).padStart(10)}${f(v.d.max).padStart(10)}${String(v.d.n).padStart(8)}`);
  }
  const stallMax = r.loaded.max - r.idle.p50;
  const stallP99 = r.loaded.p99 - r.idle.p50;
  out.push(
    `   stall probe (GET agent card every ${PROBE_MS} ms on its own connection): idle p50 ${f(r.idle.p50)} / p99 ${f(r.idle.p99)} / max ${f(r.idle.max)} ms (${r.idle.n}); ` +
      `during ${n(r.listingsDuringStall)} admin listings by ${STALL_WORKERS} workers (failed: ${r.failures.listings} listings, ${r.failures.probe} probe requests, retried; idle: ${r.failures.idleProbe}) p50 ${f(r.loaded.p50)} / p99 ${f(r.loaded.p99)} / max ${f(r.loaded.max)} ms (${r.loaded.n})` +
      `${r.lag === undefined ? "; /metrics has no event loop lag gauges" : `; /metrics nodejs_eventloop_lag_max ${f(r.lag.max)} ms, p99 ${f(r.lag.p99)} ms, min ${f(r.lag.min)} ms`}`,
    ...(r.lag === undefined
      ? []
      : [
          `   the gateway's garbage collections in that window: ${Object.entries(r.lag.gc).map(([kind, n]) => `${kind} ${n.all} (${n.over10ms} over 10 ms)`).join(", ") || "not reported"}` +
            (r.sched === undefined
              ? ""
              : `; its main thread ran ${n(Math.round(r.sched.cpuMs))} ms and waited for a CPU ${n(Math.round(r.sched.waitMs))} ms of the ${n(Math.round(r.sched.spanMs))} ms (/proc/<pid>/schedstat)`),
        ]),
    `   RSS after start: ${rssText(r.rssStart)}; after the load: ${rssText(r.rssLoaded)}` +
      (r.lag === undefined ? "" : `; main thread V8 heap ${f(r.lag.heapMb)} MB (used ${f(r.lag.heapUsedMb)}), external ${f(r.lag.externalMb)} MB`),
  );
  const worst = (who: "owner" | "admin"): { p99: number; text: string } => {
    const vs = r.variants.filter((v) => v.who === who && v.skipped === undefined);
    const p99 = Math.max(...vs.map((v) => v.d.p99));
    return { p99, text: vs.map((v) => `${v.label.replace(`ListTasks ${who} `, "")} ${f(v.d.p99)}`).join(", ") };
  };
  const ow = worst("owner");
  const ad = worst("admin");
  const anon = r.rssLoaded.anon + r.rssLoaded.shmem;
  out.push(
    line(ow.p99 < 20, `ListTasks p99 < 20 ms, one owner ("bench", ${n(Math.round(r.n / 10))} tasks) at ${n(r.n)}: worst ${f(ow.p99)} ms (${ow.text})`),
    line(ad.p99 < 20, `ListTasks p99 < 20 ms, admin (all ${n(r.n)} tasks): worst ${f(ad.p99)} ms (${ad.text})`),
    line(
      stallMax <= 20 && r.failures.probe === 0,
      `no event-loop stall > 20 ms while listings run: probe max − idle p50 = ${f(stallMax)} ms (p99 − idle p50 = ${f(stallP99)} ms; ${r.failures.probe} probe requests failed)`,
    ),
    line(first < 600 && laterMedian < 600, `start → first card < 600 ms at ${n(r.n)}: first start ${f(first)} ms, later median ${f(laterMedian)} ms (bare node:http ${f(bare)} ms)`),
    line(anon < 200, `RSS < 200 MB without the mapped file (RssAnon + RssShmem after the load): ${anon.toFixed(0)} MB (VmRSS ${r.rssLoaded.vmRss.toFixed(0)} MB, RssFile ${r.rssLoaded.file.toFixed(0)} MB)`),
  );
  return out;
}
