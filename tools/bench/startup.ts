// Startup benchmark: process start → first successful public agent card response, for the built gateway
// (`node bin/opencode-a2a.js serve`), against a baseline measured in the same run: a bare `node:http` server
// answering the same request. Prints medians and the ratio. Bounded: RUNS runs, each with a 20 s cap.
// The gateway points at the stub OpenCode (OPENCODE_BASE_URL), so OpenCode's own start-up is not measured.
import { spawn } from "node:child_process";
import path from "node:path";
import { startStubUpstream } from "../upstream/stub.js";

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
  const child = spawn(cmd, args, {
    cwd: root,
    env: { ...process.env, A2A_BEARER_TOKEN: "bench-token-123456", A2A_PORT: "0", A2A_LOG_LEVEL: "silent", OPENCODE_BASE_URL: stub.url },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no listening line within 20 s")), 20_000);
      let buf = "";
      child.stdout!.on("data", (d: Buffer) => {
        buf += d.toString();
        const m = /listening on (http:\/\/\S+)/.exec(buf);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.once("exit", (code) => reject(new Error(`exited with ${code}`)));
    });
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
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
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
