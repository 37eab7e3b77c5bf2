// Startup benchmark: process start → first successful public agent card response, for the built gateway
// (`node bin/opencode-a2a.js serve`), against a baseline measured in the same run: a bare `node:http` server
// answering the same request. Prints medians and the ratio. Bounded: RUNS runs, each with a 20 s cap.
// The gateway points at the stub OpenCode (OPENCODE_BASE_URL), so OpenCode's own start-up is not measured.
import path from "node:path";
import { startStubUpstream } from "../upstream/stub.js";
import { spawnListening, stopProcess } from "./listening.js";

const root = path.resolve(import.meta.dirname, "../..");
const RUNS = Number(process.env.BENCH_RUNS ?? 7);

const BASELINE = `
const http = require("node:http");
const s = http.createServer((q, r) => { r.setHeader("content-type", "application/json"); r.end('{"name":"baseline"}'); });
s.listen(0, "127.0.0.1", () => process.stdout.write("opencode-a2a listening on http://127.0.0.1:" + s.address().port + "\\n"));
process.on("SIGTERM", () => process.exit(0));
`;

async function once(cmd: string, args: string[]): Promise<number> {
  const started = performance.now();
  const { child, url } = await spawnListening(cmd, args, {
    cwd: root,
    env: { ...process.env, A2A_BEARER_TOKEN: "bench-token-123456", A2A_PORT: "0", A2A_LOG_LEVEL: "silent", OPENCODE_BASE_URL: stub.url },
  });
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

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const stub = await startStubUpstream();
const gateway: number[] = [];
const baseline: number[] = [];
for (let i = 0; i < RUNS; i++) {
  baseline.push(await once(process.execPath, ["-e", BASELINE]));
  gateway.push(await once(process.execPath, ["bin/opencode-a2a.js", "serve"]));
}
const g = median(gateway);
const b = median(baseline);
console.log(`startup (process start → first 200 card), ${RUNS} runs, node ${process.version}`);
console.log(`  baseline node:http  median ${b.toFixed(0)} ms  [${baseline.map((x) => x.toFixed(0)).join(", ")}]`);
console.log(`  opencode-a2a        median ${g.toFixed(0)} ms  [${gateway.map((x) => x.toFixed(0)).join(", ")}]`);
console.log(`  ratio gateway/baseline: ${(g / b).toFixed(2)}x`);
await stub.close();
