// Shared by tools/bench/startup.ts and tools/bench/scale.ts: process start → first successful agent card answer, and
// the bare node:http server both measure against (it answers the card path with a small JSON body).
import { spawnListening, stopProcess } from "./listening.js";

/** The baseline: a bare node:http server, run with `node -e`, printing the listening line the bench waits for. */
export const BARE_SERVER = `
const http = require("node:http");
const s = http.createServer((q, r) => { r.setHeader("content-type", "application/json"); r.end('{"name":"baseline"}'); });
s.listen(0, "127.0.0.1", () => process.stdout.write("opencode-a2a listening on http://127.0.0.1:" + s.address().port + "\\n"));
process.on("SIGTERM", () => process.exit(0));
`;

/**
 * Starts `cmd args`, waits for its listening line, then asks GET /.well-known/agent-card.json every 5 ms until one
 * answers 200; returns the ms from spawn to that answer and stops the process. `timeoutMs` bounds the listening line.
 */
export async function startToCard(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<number> {
  const started = performance.now();
  const { child, url } = await spawnListening(cmd, args, { cwd: opts.cwd, env: opts.env, timeoutMs: opts.timeoutMs ?? 20_000 });
  try {
    for (let i = 0; i < 2000; i++) {
      const res = await fetch(`${url}/.well-known/agent-card.json`).catch(() => undefined);
      if (res?.ok) {
        await res.arrayBuffer();
        return performance.now() - started;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error("card never answered 200");
  } finally {
    await stopProcess(child);
  }
}
