// bench:tasks (./tasks.ts), its PostgreSQL server: the one BENCH_POSTGRES_URL names (a superuser or a role that may
// CREATE DATABASE), else a throwaway cluster (tools/postgres/cluster.ts), removed at the end. Every gateway run gets
// a database of its own (CREATE DATABASE bench_<random>), so no earlier run's tasks sit in the tables it reads; they
// are dropped at the end (with the throwaway cluster, the whole cluster goes). Without BENCH_POSTGRES_URL and without
// PostgreSQL binaries, or with BENCH_POSTGRES=off, the PostgreSQL rows are skipped and the report says why.
//
// The CPU the PostgreSQL server spends is measured when it runs on this machine (Linux /proc): its postmaster (the
// parent of a backend, from pg_backend_pid()) with its live children and the children it has reaped, so the backends
// a pool closed and reopened while the bench ran are counted too. On a server shared with other work that number
// includes the other work.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import pg from "pg";
import { findPostgresBin, startCluster, type Cluster } from "../postgres/cluster.js";

export interface BenchPostgres {
  /** For the report: where the server comes from and its version. */
  source: string;
  /** A new, empty database; its URL. */
  database(): Promise<string>;
  /** CPU ms the server's processes have used so far (NaN when it does not run on this machine). */
  cpuMs(): number;
  /** Drops the databases made (BENCH_POSTGRES_URL) or removes the throwaway cluster. */
  close(): Promise<void>;
}

let cluster: Cluster | undefined;

/** Stops the throwaway cluster at once (for an interrupted run; idempotent). */
export function stopPostgresSync(): void {
  cluster?.stop();
}

/** A URL without its password, for the report. */
const redact = (url: string): string => {
  const u = new URL(url);
  if (u.password !== "") u.password = "***";
  return u.toString();
};

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** /proc/<pid>/stat fields after the command name: [2] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime. */
function stat(pid: number): string[] | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  } catch {
    return undefined;
  }
}

/** The postmaster's CPU with its reaped children, plus each live child's own (USER_HZ ticks of 10 ms). */
function treeCpuMs(postmaster: number): number {
  const own = stat(postmaster);
  if (own === undefined) return NaN;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const s = stat(Number(entry));
    if (s !== undefined && Number(s[1]) === postmaster) ticks += Number(s[11]) + Number(s[12]);
  }
  return ticks * 10;
}

/** The server to measure on, or why there is none. */
export async function benchPostgres(): Promise<BenchPostgres | { skipped: string }> {
  if (process.env.BENCH_POSTGRES === "off") return { skipped: "BENCH_POSTGRES=off" };
  let url = process.env.BENCH_POSTGRES_URL || undefined;
  let source: string;
  if (url !== undefined) {
    source = `BENCH_POSTGRES_URL ${redact(url)}`;
  } else {
    if (findPostgresBin() === undefined) {
      return { skipped: "no BENCH_POSTGRES_URL, and no PostgreSQL binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin to start a throwaway cluster" };
    }
    try {
      cluster = await startCluster();
    } catch (error) {
      return { skipped: `the throwaway cluster (tools/postgres/cluster.ts) did not start: ${(error as Error).message.split("\n")[0]}` };
    }
    url = cluster.url;
    source = `throwaway cluster on 127.0.0.1:${cluster.port} (tools/postgres/cluster.ts: fsync, synchronous_commit and full_page_writes off)`;
  }
  const admin = url;
  // The backend's parent is the postmaster, when the server runs here (a remote server's pid means nothing here).
  const host = new URL(admin).hostname;
  const local = host === "" || host === "localhost" || host.startsWith("127.") || host === "[::1]";
  const { version, postmaster } = await withClient(admin, async (c) => {
    const v = await c.query<{ server_version: string }>("SHOW server_version");
    const b = await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    const pid = b.rows[0]!.pid;
    // A server on a forwarded port (a container) has pids of another namespace: only a `postgres` process here counts.
    const ours = local && fs.existsSync(`/proc/${pid}/comm`) && fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "postgres";
    return { version: v.rows[0]!.server_version, postmaster: ours ? Number(stat(pid)?.[1] ?? NaN) : NaN };
  });
  const made: string[] = [];
  return {
    source: `${source}, PostgreSQL ${version}`,
    async database() {
      const name = `bench_${randomBytes(8).toString("hex")}`;
      await withClient(admin, (c) => c.query(`CREATE DATABASE ${name}`));
      made.push(name);
      const u = new URL(admin);
      u.pathname = `/${name}`;
      return u.toString();
    },
    cpuMs: () => (Number.isNaN(postmaster) ? NaN : treeCpuMs(postmaster)),
    async close() {
      try {
        if (cluster === undefined && made.length > 0) {
          await withClient(admin, async (c) => {
            // WITH (FORCE) (PostgreSQL 13+) ends what a killed gateway may have left connected.
            for (const name of made) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => c.query(`DROP DATABASE IF EXISTS ${name}`));
          });
        }
      } finally {
        stopPostgresSync();
      }
    },
  };
}
