// Shared by the benchmarks: spawn a process and wait for its "… listening on http://…" stdout line.
import { spawn, type ChildProcess } from "node:child_process";
import type { IncomingMessage } from "node:http";

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

/** Calls onFrame with each Server-Sent Events frame of `res` (the text between blank lines), as it arrives. */
export function onSseFrames(res: IncomingMessage, onFrame: (frame: string) => void): void {
  let buf = "";
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    buf += chunk;
    for (let end = buf.indexOf("\n\n"); end >= 0; end = buf.indexOf("\n\n")) {
      const frame = buf.slice(0, end);
      buf = buf.slice(end + 2);
      onFrame(frame);
    }
  });
}
