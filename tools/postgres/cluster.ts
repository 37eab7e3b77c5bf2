// A throwaway PostgreSQL cluster on 127.0.0.1 for the tests and benchmarks (issue 22): initdb into a fresh temporary
// directory, started with pg_ctl on a free port, the `postgres` role with a random password (scram-sha-256: another
// local user cannot connect as the superuser while it runs), no fsync, listening on loopback only (and a socket in
// the same 0700 directory); stop() shuts it down at once and removes the directory.
// PostgreSQL refuses to run as root, so when the caller is root the cluster runs as the system user `a2a-pg`
// (created once, no home, no login shell). The binaries come from PATH or Debian's /usr/lib/postgresql/<version>/bin
// (`.ci/postgres.sh` installs the package in CI).
//
//   npx tsx tools/postgres/cluster.ts    starts one, prints its URL, and stops it on Ctrl-C
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export interface Cluster {
  /** postgres://postgres:<password>@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** The server's log file (for a failing test's report). */
  log: string;
  stop(): void;
}

/** The user a root caller runs the cluster as. */
const SYSTEM_USER = "a2a-pg";

/** The directory holding initdb and pg_ctl: PATH first, then the newest /usr/lib/postgresql/<version>/bin. */
export function findPostgresBin(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir !== "" && fs.existsSync(path.join(dir, "initdb")) && fs.existsSync(path.join(dir, "pg_ctl"))) return dir;
  }
  const root = "/usr/lib/postgresql";
  if (!fs.existsSync(root)) return undefined;
  const versions = fs
    .readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && fs.existsSync(path.join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(root, versions[0], "bin");
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function ensureSystemUser(): void {
  if (spawnSync("id", ["-u", SYSTEM_USER], { stdio: "ignore" }).status === 0) return;
  execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER], { stdio: "pipe" });
}

/** Runs a PostgreSQL program, as SYSTEM_USER when this process is root. */
function run(bin: string, program: string, args: string[]): void {
  const file = path.join(bin, program);
  const asRoot = process.getuid?.() === 0;
  const [cmd, argv] = asRoot ? ["runuser", ["-u", SYSTEM_USER, "--", file, ...args]] : [file, args];
  const result = spawnSync(cmd, argv, { encoding: "utf8", timeout: 60_000 });
  if (result.status !== 0) throw new Error(`${program} ${args.join(" ")} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout}`);
}

/** Starts a cluster (throws when no PostgreSQL binaries are found or it does not start). */
export async function startCluster(): Promise<Cluster> {
  const bin = findPostgresBin();
  if (bin === undefined) throw new Error("PostgreSQL binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql/*/bin");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-pg-"));
  const data = path.join(dir, "data");
  const log = path.join(dir, "server.log");
  let owner: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    ensureSystemUser();
    owner = { uid: Number(execFileSync("id", ["-u", SYSTEM_USER]).toString()), gid: Number(execFileSync("id", ["-g", SYSTEM_USER]).toString()) };
    fs.chownSync(dir, owner.uid, owner.gid);
  }
  fs.chmodSync(dir, 0o700);
  const port = await freePort();
  const password = randomBytes(18).toString("base64url");
  const pwfile = path.join(dir, "pwfile");
  fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (owner !== undefined) fs.chownSync(pwfile, owner.uid, owner.gid);
  try {
    run(bin, "initdb", ["-D", data, "-U", "postgres", "--auth=scram-sha-256", `--pwfile=${pwfile}`, "--encoding=UTF8", "--no-sync", "--no-instructions"]);
    fs.rmSync(pwfile);
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`;
    run(bin, "pg_ctl", ["-D", data, "-l", log, "-w", "-t", "60", "-o", options, "start"]);
  } catch (error) {
    // A server that forked before pg_ctl gave up must not outlive its directory.
    if (fs.existsSync(path.join(data, "postmaster.pid"))) {
      try {
        run(bin, "pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } catch {
        // not running after all
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let stopped = false;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    port,
    log,
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        run(bin, "pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cluster = await startCluster();
  console.log(cluster.url);
  const stop = (): void => {
    cluster.stop();
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  setInterval(() => undefined, 1 << 30);
}
