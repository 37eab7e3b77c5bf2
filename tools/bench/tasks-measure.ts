// bench:tasks (./tasks.ts), its measuring side: a request pool, the CPU time of processes (Linux /proc), statistics
// and the report's number formats.
import fs from "node:fs";

export const hr = (): bigint => process.hrtime.bigint();
export const msSince = (start: bigint): number => Number(hr() - start) / 1e6;

/** `total` calls of fn over `concurrency` workers; returns the elapsed ms. */
export async function pool(total: number, concurrency: number, fn: (worker: number, i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const start = hr();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async (_, worker) => {
      while (next < total) await fn(worker, next++);
    }),
  );
  return msSince(start);
}

export const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

/** CPU time (user + system, ms) a process has used so far: /proc/<pid>/stat on Linux, NaN elsewhere. */
export function cpuMs(pid: number | undefined): number {
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
/** A process's pid (its CPU per cpuMs), or a function giving a CPU total in ms (a PostgreSQL server's processes). */
export type CpuSource = number | undefined | (() => number);
const readCpu = (source: CpuSource): number => (typeof source === "function" ? source() : cpuMs(source));
/** Accumulates the CPU a set of processes spends inside measured sections. */
export class CpuMeter {
  readonly used: number[];
  constructor(readonly sources: CpuSource[]) {
    this.used = sources.map(() => 0);
  }
  async measure<T>(fn: () => Promise<T>): Promise<T> {
    const before = this.sources.map(readCpu);
    try {
      return await fn();
    } finally {
      this.sources.forEach((source, i) => (this.used[i]! += readCpu(source) - before[i]!));
    }
  }
}
export const cpuText = (totalMs: number, count: number, unit: "ms" | "µs"): string =>
  Number.isNaN(totalMs) ? "n/a" : unit === "ms" ? (totalMs / count).toFixed(2) : String(Math.round((totalMs / count) * 1000));

// ---------------------------------------------------------------------------------------------------------------
// Statistics and formatting

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}
export const median = (xs: number[]): number => percentile([...xs].sort((a, b) => a - b), 0.5);
interface Latency {
  p50: number;
  p99: number;
  mean: number;
  n: number;
}
export function latency(samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), mean: sorted.reduce((a, b) => a + b, 0) / sorted.length, n: sorted.length };
}
export const ms = (v: number): string => `${v.toFixed(2)} ms`;
export const signed = (v: number): string => `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(2)} ms`;
export const rate = (v: number): string => `${Math.round(v).toLocaleString("en-US")}/s`;
export const pad = (s: string, n: number): string => s.padEnd(n);
export const lpad = (s: string, n: number): string => s.padStart(n);

