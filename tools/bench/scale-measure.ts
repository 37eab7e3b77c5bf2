// bench:scale (./scale.ts), its measuring side: JSON-RPC calls on lean keep-alive connections, the timed variants
// (GetTask, ListTasks of one owner and of the admin), the stall probe, the gateway's RSS (/proc/<pid>/status) and the
// event loop lag gauges of its /metrics.
import fs from "node:fs";
import http from "node:http";
import { LeanConnection, request, target, timeout, type Target } from "./tasks-client.js";
import { hr, msSince } from "./tasks-measure.js";

/** One principal on one protocol line: its own connection. */
export class Rpc {
  readonly #conn: LeanConnection;
  #id = 0;
  constructor(
    readonly t: Target,
    token: string,
    version: "0.3" | "1.0",
  ) {
    this.#conn = new LeanConnection(t, "/", { authorization: `Bearer ${token}`, "a2a-version": version });
  }

  /** The call's result and its latency in ms; throws on an HTTP or JSON-RPC error. */
  async call(method: string, params: unknown): Promise<{ result: Record<string, unknown>; ms: number }> {
    const body = JSON.stringify({ jsonrpc: "2.0", id: ++this.#id, method, params });
    const start = hr();
    const res = await timeout(this.#conn.call(body), 120_000, method);
    const ms = msSince(start);
    const parsed = JSON.parse(res.text) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
    if (res.status !== 200 || parsed.result === undefined) throw new RpcError(method, res.status, parsed.error?.code, res.text.slice(0, 300));
    return { result: parsed.result, ms };
  }

  close(): void {
    this.#conn.close();
  }
}

export class RpcError extends Error {
  constructor(
    method: string,
    readonly status: number,
    readonly code: number | undefined,
    text: string,
  ) {
    super(`${method}: HTTP ${status} ${text}`);
  }
}

/** A timed request kind; `next()` gives the method and params of its next call, `check` validates a result. */
export interface Variant {
  label: string;
  rpc: Rpc;
  next(): { method: string; params: unknown };
  check?(result: Record<string, unknown>): void;
  samples: number[];
  /** Why the variant is not measured (e.g. the gateway does not offer the method). */
  skipped?: string;
}

/** Runs `v` sequentially up to `count` calls or `seconds`, whichever comes first (at least one call). */
export async function sample(v: Variant, count: number, seconds: number): Promise<void> {
  if (v.skipped !== undefined) return;
  const start = hr();
  for (let i = 0; i < count && (i === 0 || msSince(start) < seconds * 1000); i++) {
    const { method, params } = v.next();
    try {
      const { result, ms } = await v.rpc.call(method, params);
      v.check?.(result);
      v.samples.push(ms);
    } catch (error) {
      if (error instanceof RpcError && error.code === -32601) {
        v.skipped = `${method} not offered (-32601)`;
        return;
      }
      throw new Error(`${v.label}`, { cause: error });
    }
  }
}

export interface Dist {
  p50: number;
  p99: number;
  max: number;
  n: number;
}
export function dist(samples: number[]): Dist {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number): number => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1] ?? NaN, n: s.length };
}

/** /proc/<pid>/status memory lines, in MB. */
export interface Rss {
  vmRss: number;
  anon: number;
  file: number;
  shmem: number;
}
export function rss(pid: number | undefined): Rss {
  const text = pid === undefined ? "" : fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN) / 1024;
  return { vmRss: kb("VmRSS"), anon: kb("RssAnon"), file: kb("RssFile"), shmem: kb("RssShmem") };
}
export const rssText = (r: Rss): string => `VmRSS ${r.vmRss.toFixed(0)} MB (RssAnon ${r.anon.toFixed(0)} + RssShmem ${r.shmem.toFixed(0)} + RssFile ${r.file.toFixed(0)})`;

/**
 * The main thread of process `pid` so far (Linux /proc/<pid>/schedstat): ms it ran on a CPU, and ms it was runnable
 * but waited for one (other processes had the CPUs). Undefined where the file cannot be read.
 */
export function schedstat(pid: number | undefined): { cpuMs: number; waitMs: number } | undefined {
  try {
    const [run, wait] = fs.readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ").map(Number);
    return Number.isFinite(run) && Number.isFinite(wait) ? { cpuMs: run! / 1e6, waitMs: wait! / 1e6 } : undefined;
  } catch {
    return undefined;
  }
}

/** Garbage collections of the gateway's main thread so far, per kind: how many, and how many took over 10 ms. */
export type GcCounts = Record<string, { all: number; over10ms: number }>;

/** prom-client's event loop lag gauges (seconds → ms) from /metrics, and its garbage collection counts; undefined when absent. */
export async function loopLag(t: Target, token: string): Promise<{ max: number; min: number; p99: number; heapMb: number; heapUsedMb: number; externalMb: number; gc: GcCounts } | undefined> {
  const res = await request(t, "GET", "/metrics", { authorization: `Bearer ${token}` });
  if (res.status !== 200) return undefined;
  const gauge = (name: string): number => Number(new RegExp(`^${name} ([0-9.eE+-]+)`, "m").exec(res.text)?.[1] ?? NaN);
  const mb = (name: string): number => gauge(name) / 1048576;
  const gc: GcCounts = {};
  for (const m of res.text.matchAll(/^nodejs_gc_duration_seconds_bucket\{le="([^"]+)",kind="([^"]+)"\} ([0-9.eE+-]+)$/gm)) {
    const entry = (gc[m[2]!] ??= { all: 0, over10ms: 0 });
    if (m[1] === "+Inf") entry.all = Number(m[3]);
    if (m[1] === "0.01") entry.over10ms = -Number(m[3]);
  }
  for (const entry of Object.values(gc)) entry.over10ms += entry.all;
  // The main thread's V8 heap and external memory, to tell them from the rest of the RSS (reader threads, SQLite).
  const out = {
    max: gauge("nodejs_eventloop_lag_max_seconds") * 1000,
    min: gauge("nodejs_eventloop_lag_min_seconds") * 1000,
    p99: gauge("nodejs_eventloop_lag_p99_seconds") * 1000,
    heapMb: mb("nodejs_heap_size_total_bytes"),
    heapUsedMb: mb("nodejs_heap_size_used_bytes"),
    externalMb: mb("nodejs_external_memory_bytes"),
    gc,
  };
  return Number.isNaN(out.max) ? undefined : out;
}

/**
 * The stall probe: one keep-alive connection of its own asks GET `path` every PROBE_MS (the next request PROBE_MS
 * after the previous answer) until stop() is called; resolves with the latencies and how many requests failed. A
 * request that fails (the gateway resets a keep-alive connection whose idle timer ran out while its event loop was
 * blocked) is counted and asked again on a new connection; its sample is the time from the first try to the answer.
 */
export function probe(url: string, urlPath: string, everyMs: number): { stop(): Promise<{ samples: number[]; failures: number }> } {
  const t = target(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const samples: number[] = [];
  let failures = 0;
  let running = true;
  // Kept, and rethrown by stop(): a failed probe must not end the process before the cleanup runs.
  let failed: unknown;
  const loop = (async () => {
    while (running) {
      const start = hr();
      for (let tries = 0; ; tries++) {
        const res = await request({ ...t, agent }, "GET", urlPath, {}).catch((error: unknown) => {
          if (tries >= 20) throw error;
          failures++;
          return undefined;
        });
        if (res === undefined) continue;
        if (res.status !== 200) throw new Error(`probe ${urlPath}: HTTP ${res.status}`);
        break;
      }
      samples.push(msSince(start));
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })().catch((error: unknown) => void (failed = error));
  return {
    async stop() {
      running = false;
      await loop;
      agent.destroy();
      t.agent.destroy();
      if (failed !== undefined) throw failed instanceof Error ? failed : new Error(String(failed));
      return { samples, failures };
    },
  };
}
