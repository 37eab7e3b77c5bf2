// Shared by the benchmarks: spawn a process and wait for its "… listening on http://…" stdout line.
import { spawn, type ChildProcess } from "node:child_process";

export async function spawnListening(
  command: string,
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ["ignore", "pipe", "inherit"] });
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const url = await new Promise<string>((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`no listening line within ${timeoutMs} ms`)), timeoutMs);
    child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening`));
    });
  });
  return { child, url };
}

/** SIGTERM and wait for the exit. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}
