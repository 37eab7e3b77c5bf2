// @ts-check
// The managed OpenCode's guardian: a small process between the gateway and `opencode serve` that ends OpenCode when
// the gateway is gone, however it went. The gateway stops OpenCode in order on SIGTERM/SIGINT and kills it from its
// exit hook, but a SIGKILL (OOM killer, `kill -9`, a crashed container runtime) runs no code: OpenCode would be left
// running, holding its port and the user's sessions. The guardian holds the read end of a pipe whose write end only
// the gateway has; the kernel closes it when the gateway dies, and the guardian then stops OpenCode (SIGTERM, a
// grace period, SIGKILL) and exits.
//
//   node bin/opencode-a2a-guardian.mjs <grace-ms> <binary> [args...]
//
// Plain JavaScript (no build step): src/upstream/managed.ts starts it the same way from the sources and from dist/.
//
// OpenCode runs in the guardian's process group (the gateway starts the guardian detached, as a group leader, and
// signals the whole group), writes to the guardian's stdout/stderr (the gateway's pipes), and its exit status is
// the guardian's: the same code, or the same signal re-raised. OpenCode's pid is written to fd 3 (a pipe the gateway
// opens) once it is spawned.
import { spawn } from "node:child_process";
import fs from "node:fs";

const [graceArg, binary, ...args] = process.argv.slice(2);
const graceMs = Number(graceArg);
if (binary === undefined || !Number.isFinite(graceMs)) {
  process.stderr.write("usage: guardian <grace-ms> <binary> [args...]\n");
  process.exit(64);
}

const child = spawn(binary, args, { stdio: ["ignore", "inherit", "inherit"] });
// OpenCode's pid, on fd 3 when the gateway opened it (a pipe): the gateway logs the process it really runs.
if (child.pid !== undefined) {
  try {
    fs.writeSync(3, `${child.pid}\n`);
    fs.closeSync(3);
  } catch {
    // no fd 3: started by hand
  }
}
let stopping = false;

/** @param {NodeJS.Signals} signal */
function stop(signal) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  if (stopping) return;
  stopping = true;
  setTimeout(() => child.kill("SIGKILL"), graceMs).unref();
}

// The gateway is gone (its end of stdin closed) or asks us to stop.
process.stdin.on("end", () => stop("SIGTERM"));
process.stdin.on("error", () => stop("SIGTERM"));
process.stdin.resume();
/** @type {NodeJS.Signals[]} */
const FORWARDED = ["SIGTERM", "SIGINT", "SIGHUP"];
for (const signal of FORWARDED) process.on(signal, () => stop(signal));

child.on("error", (err) => {
  process.stderr.write(`guardian: cannot start ${binary}: ${err.message}\n`);
  process.exit(127);
});
child.on("exit", (code, signal) => {
  if (signal !== null) {
    for (const s of FORWARDED) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
