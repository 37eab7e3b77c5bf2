// Startup benchmark: process start → first successful public agent card response, for the built gateway
// (`node bin/opencode-a2a.js serve`), against a baseline measured in the same run: a bare `node:http` server
// answering the same request (./startup-probe.ts, shared with bench:scale). Prints medians, the ratio and the issue 23
// target line (cold start ≤ 3× the bare server). Bounded: BENCH_RUNS runs (default 7), each with a 20 s cap.
// The gateway points at the stub OpenCode (OPENCODE_BASE_URL), so OpenCode's own start-up is not measured.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startStubUpstream } from "../upstream/stub.js";
import { BARE_SERVER, startToCard } from "./startup-probe.js";

// BENCH_ROOT: the checkout (or installed package) whose bin/opencode-a2a.js is started; default this one.
const root = process.env.BENCH_ROOT ?? path.resolve(import.meta.dirname, "../..");
const RUNS = Number(process.env.BENCH_RUNS ?? 7);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

// Every process starts in a throwaway directory: the gateway's default store (./opencode-a2a.db) is made there, not in
// the checkout, and each later run opens the store the first one made (a later start, as a restart is).
const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "bench-startup-"));
const stub = await startStubUpstream();
const env = { ...process.env, A2A_BEARER_TOKEN: "bench-token-123456", A2A_PORT: "0", A2A_LOG_LEVEL: "silent", OPENCODE_BASE_URL: stub.url };
const gateway: number[] = [];
const baseline: number[] = [];
const load = os.loadavg()[0]!;
for (let i = 0; i < RUNS; i++) {
  baseline.push(await startToCard(process.execPath, ["-e", BARE_SERVER], { cwd, env }));
  gateway.push(await startToCard(process.execPath, [path.join(root, "bin/opencode-a2a.js"), "serve"], { cwd, env }));
}
const g = median(gateway);
const b = median(baseline);
console.log(`startup (process start → first 200 card), ${RUNS} runs, node ${process.version}, load average ${load.toFixed(2)} at start, ${os.loadavg()[0]!.toFixed(2)} at end`);
console.log(`  baseline node:http  median ${b.toFixed(0)} ms  [${baseline.map((x) => x.toFixed(0)).join(", ")}]`);
console.log(`  opencode-a2a        median ${g.toFixed(0)} ms  [${gateway.map((x) => x.toFixed(0)).join(", ")}]`);
console.log(`  ratio gateway/baseline: ${(g / b).toFixed(2)}x`);
console.log(`  ${g / b <= 3 ? "PASS" : "FAIL"}  cold start ≤ 3× the bare node:http server: ${(g / b).toFixed(2)}× (${g.toFixed(0)} ms against ${b.toFixed(0)} ms)`);
await stub.close();
fs.rmSync(cwd, { recursive: true, force: true });
