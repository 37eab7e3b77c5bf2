// A gateway in a process of its own (what `npm start` runs: bin/opencode-a2a.js serve), for tests that need several
// gateways at once or kill one (test/integration/cluster.test.ts). It listens on a free port on 127.0.0.1.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { binPath } from "./build.js";
import { TEST_TOKEN } from "./gateway.js";

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** What it wrote on stderr so far (its warnings and errors). */
  stderr(): string;
  /** Ends it with `signal` and waits until it is gone. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * The URL of the `… listening on http://…` line a starting gateway prints on stdout; rejects when none comes within
 * `ms` or the process ends first (`more`: what else to tell then, e.g. its stderr).
 */
export function listeningUrl(child: ChildProcess, ms: number, more: () => string = () => ""): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`no listening line within ${ms} ms: ${out} ${more()}`)), ms);
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once("close", () => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited before listening: ${out} ${more()}`));
    });
  });
}

export async function startGatewayProcess(env: Record<string, string>): Promise<GatewayProcess> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-proc-"));
  const child = spawn(process.execPath, [binPath, "serve"], {
    cwd: home,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: home,
      A2A_HOST: "127.0.0.1",
      A2A_PORT: "0",
      A2A_BEARER_TOKEN: TEST_TOKEN,
      A2A_LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const url = await listeningUrl(child, 30_000, () => stderr);
  return {
    url,
    child,
    stderr: () => stderr,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(killer);
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}
