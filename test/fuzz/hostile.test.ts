// Issue 6: property-based fuzzing of the RUNNING gateway (real HTTP on 127.0.0.1, in-process, with the stub OpenCode
// behind it so task methods really run). At least 10,000 malformed, oversized, wrongly typed and hostile requests
// (test/fuzz/generators.ts) in one bounded run, 16 in flight (16 fast-check runners with consecutive seeds). Every
// answer is judged by test/fuzz/oracle.ts:
//  - no 5xx, no internal/upstream error reasons (the stub is healthy), no hang, no connection dropped without an answer;
//  - JSON-RPC answers are `{jsonrpc:"2.0", id, error:{code:int, message, data}}` of the right line (0.3 data.type,
//    1.0 ErrorInfo detail), code/reason/headers from the catalog, HTTP 200 (204 for notifications; 401/413/415/429
//    keep their status), the request id echoed, batches answered item by item;
//  - REST answers have the catalog's HTTP status for the reason and the body shape of the line (0.3 flat, 1.0 AIP-193);
//  - where the edge decides before any handler (version, credentials, size, media type, nesting depth) the exact reason;
//  - raw malformed HTTP may be answered by Node's parser (bare 400/431, connection closed): then a fresh connection
//    must still be accepted;
//  - afterwards a normal authenticated message/send still completes against the stub.
// Reproduce a run with FUZZ_SEED=<seed printed in the summary>; FUZZ_RUNS scales the request count (default 10,240).
import fc from "fast-check";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { startStubUpstream, type StubUpstream } from "../../tools/upstream/stub.js";
import { startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { hostileRequests } from "./generators.js";
import { createOracle, type Verdict } from "./oracle.js";
import { acceptsConnections, sendHttp, sendRaw, TASK_PLACEHOLDER, type Exchange, type FuzzRequest, type WireOptions } from "./wire.js";

const LIMIT = 64 * 1024;
const CONCURRENCY = 16;
const TOTAL_RUNS = Number(process.env.FUZZ_RUNS ?? 10_240);
const RUNS_PER_WORKER = Math.ceil(TOTAL_RUNS / CONCURRENCY);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2_000_000_000);
const TEST_TIMEOUT_MS = 240_000;
/** fast-check stops generating after this long; the run then fails unless it reached its request count. */
const FUZZ_BUDGET_MS = 200_000;

let root: string;
let outside: string;
let stub: StubUpstream;
let upstream: Upstream;
let gw: StartedGateway;
const logged: { level: number; msg?: string; err?: { message?: string; stack?: string } }[] = [];

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fuzz-root-")));
  outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fuzz-outside-")));
  fs.mkdirSync(path.join(root, "inside"));
  fs.symlinkSync(outside, path.join(root, "escape"));
  fs.symlinkSync(path.join(root, "inside"), path.join(root, "alias"));
  fs.writeFileSync(path.join(root, "file.txt"), "not a directory");
  stub = await startStubUpstream({ directory: root });
  const env = {
    A2A_BEARER_TOKEN: TEST_TOKEN,
    OPENCODE_BASE_URL: stub.url,
    OPENCODE_WORKSPACE_ROOT: root,
    A2A_TASK_STORE_BACKEND: "memory",
    A2A_MAX_REQUEST_BODY_BYTES: String(LIMIT),
    // Generous limits: this run measures robustness, not throttling (RATE_LIMITED would still be judged well-formed).
    A2A_RATE_LIMIT_MAX_REQUESTS: "100000000",
    A2A_RATE_LIMIT_MAX_STREAMS: "1000000",
    OPENCODE_MAX_CONCURRENT_REQUESTS: "0",
  };
  // Errors the gateway logs are unexpected failures (handlers that threw something untyped): captured and judged.
  const logger = pino({ level: "error" }, { write: (line: string) => void logged.push(JSON.parse(line)) });
  upstream = await startUpstream(loadConfig(env), logger);
  gw = await startGateway(env, { upstream, logger });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.stop();
  await stub?.close();
  for (const dir of [root, outside]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

class Summary {
  total = 0;
  byStatusClass: Record<string, number> = {};
  byStatus: Record<string, number> = {};
  byShape: Record<string, number> = {};
  byFamily: Record<string, number> = {};
  byReason: Record<string, number> = {};
  byRawLabel: Record<string, string> = {};
  deviations: Record<string, number> = {};
  violations: { family: string; request: string; problems: string[]; answer: string }[] = [];
  nodeLevel = 0;
  fellBackToRaw = 0;
  livenessProbes = 0;
  streams = 0;
  frames = 0;

  record(req: FuzzRequest, x: Exchange, v: Verdict): void {
    this.total++;
    const cls = x.status === 0 ? "none" : `${Math.floor(x.status / 100)}xx`;
    this.byStatusClass[cls] = (this.byStatusClass[cls] ?? 0) + 1;
    this.byStatus[x.status] = (this.byStatus[x.status] ?? 0) + 1;
    this.byShape[v.shape] = (this.byShape[v.shape] ?? 0) + 1;
    this.byFamily[req.family] = (this.byFamily[req.family] ?? 0) + 1;
    for (const r of v.reasons) this.byReason[r] = (this.byReason[r] ?? 0) + 1;
    for (const d of v.deviations) this.deviations[d] = (this.deviations[d] ?? 0) + 1;
    if (v.answeredBy === "node") this.nodeLevel++;
    if (x.fellBackToRaw) this.fellBackToRaw++;
    if (req.kind === "raw") this.byRawLabel[req.label] = `${x.status}${v.answeredBy === "node" ? " (node)" : ""}`;
    if (x.frames) {
      this.streams++;
      this.frames += x.frames.length;
    }
  }
}

function describeRequest(req: FuzzRequest): string {
  if (req.kind === "raw") return `raw ${req.label}: ${JSON.stringify(req.bytes.subarray(0, 300).toString("latin1"))}`;
  const body = req.body === undefined ? "" : ` body(${req.body.length}B)=${JSON.stringify(req.body.subarray(0, 300).toString("utf8"))}`;
  return `${req.method} ${req.path.slice(0, 200)} headers=${JSON.stringify(req.headers).slice(0, 300)}${req.chunked ? " chunked" : ""}${body}`;
}

function describeAnswer(x: Exchange): string {
  return `HTTP ${x.status} ${JSON.stringify(x.headers).slice(0, 200)} ${x.frames ? `frames=${JSON.stringify(x.frames).slice(0, 300)}` : x.body.toString("utf8").slice(0, 400)}${x.failure ? ` failure=${x.failure}` : ""}`;
}

/** Replaces `@@TASK@@` with a task id the run has seen (or a fresh unknown id). */
function withTask(req: FuzzRequest, pool: string[], n: number): FuzzRequest {
  if (req.kind === "raw") return req;
  const id = pool.length > 0 && n % 5 !== 0 ? pool[n % pool.length]! : randomUUID();
  const needle = Buffer.from(TASK_PLACEHOLDER);
  let body = req.body;
  if (body && body.includes(needle)) {
    const parts: Buffer[] = [];
    let at = 0;
    for (let i = body.indexOf(needle); i >= 0; i = body.indexOf(needle, at)) {
      parts.push(body.subarray(at, i), Buffer.from(id));
      at = i + needle.length;
    }
    parts.push(body.subarray(at));
    body = Buffer.concat(parts);
  }
  return { ...req, path: req.path.split(TASK_PLACEHOLDER).join(id), ...(body === undefined ? {} : { body }) };
}

it(
  `answers ${TOTAL_RUNS} hostile requests with well-formed errors of the right line, no 5xx, and keeps serving`,
  async () => {
    const port = Number(new URL(gw.url).port);
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY * 2 });
    const wire: WireOptions = { port, agent, timeoutMs: 15_000, sseBudgetMs: 8_000 };
    const oracle = createOracle({ defaultLine: "0.3", limit: LIMIT, token: TEST_TOKEN, healthyUpstream: true });
    const arb = hostileRequests({ port, token: TEST_TOKEN, limit: LIMIT, root, outside });
    const summary = new Summary();
    const pool: string[] = [];
    let counter = 0;
    const started = Date.now();

    const exercise = async (generated: FuzzRequest): Promise<void> => {
      const n = counter++;
      const req = withTask(generated, pool, n);
      const x = req.kind === "raw" ? await sendRaw(req, wire, req.incomplete ? 1500 : wire.timeoutMs) : await sendHttp(req, wire);
      const v = await oracle.judge(req, x);
      // A malformed request Node's parser refused (or a raw one): the server must still accept connections.
      if (v.answeredBy !== "gateway" || req.kind === "raw") {
        summary.livenessProbes++;
        if (!(await acceptsConnections(wire))) v.problems.push("the server no longer accepts connections");
      }
      summary.record(req, x, v);
      for (const id of v.taskIds) {
        if (pool.includes(id)) continue;
        if (pool.push(id) > 300) pool.shift();
      }
      if (n % 500 === 499) stub.requests.splice(0); // the stub's request log is not needed here
      if (v.problems.length > 0) {
        const violation = { family: req.family, request: describeRequest(req), problems: v.problems, answer: describeAnswer(x) };
        summary.violations.push(violation);
        throw new Error(`${v.problems.join("; ")}\n  request: ${violation.request}\n  answer: ${violation.answer}`);
      }
    };

    const runners = Array.from({ length: CONCURRENCY }, (_, i) =>
      fc.assert(fc.asyncProperty(arb, exercise), {
        numRuns: RUNS_PER_WORKER,
        seed: SEED + i,
        endOnFailure: true,
        interruptAfterTimeLimit: FUZZ_BUDGET_MS,
        markInterruptAsFailure: true,
      }),
    );
    const outcomes = await Promise.allSettled(runners);
    const durationMs = Date.now() - started;
    agent.destroy();

    const unexpectedLogs = logged.filter((l) => l.level >= 50);
    console.log(
      `[fuzz] hostile-request summary\n${JSON.stringify(
        {
          seed: SEED,
          runners: CONCURRENCY,
          requests: summary.total,
          durationMs,
          requestsPerSecond: Math.round((summary.total / durationMs) * 1000),
          byStatusClass: summary.byStatusClass,
          byStatus: summary.byStatus,
          byShape: summary.byShape,
          byFamily: summary.byFamily,
          byReason: Object.fromEntries(Object.entries(summary.byReason).sort((a, b) => b[1] - a[1])),
          nodeLevelAnswers: summary.nodeLevel,
          sentRawAfterClientRefusal: summary.fellBackToRaw,
          livenessProbes: summary.livenessProbes,
          eventStreams: summary.streams,
          eventFrames: summary.frames,
          tasksSeen: pool.length,
          rawOutcomes: summary.byRawLabel,
          deviations: summary.deviations,
          violations: summary.violations.length,
          unexpectedErrorLogs: unexpectedLogs.length,
        },
        null,
        2,
      )}`,
    );
    for (const v of summary.violations.slice(0, 10)) console.log(`[fuzz] VIOLATION (${v.family}) ${v.problems.join("; ")}\n  ${v.request}\n  ${v.answer}`);
    for (const l of unexpectedLogs.slice(0, 5)) console.log(`[fuzz] ERROR LOG ${l.msg}: ${l.err?.stack ?? l.err?.message ?? ""}`);

    const failures = outcomes.flatMap((o) => (o.status === "rejected" ? [String((o.reason as Error).message).slice(0, 2000)] : []));
    expect(failures, failures[0]).toEqual([]);
    expect(summary.violations).toEqual([]);
    expect(summary.total).toBeGreaterThanOrEqual(TOTAL_RUNS);
    expect(summary.byStatusClass["5xx"] ?? 0).toBe(0);
    expect(unexpectedLogs.map((l) => l.msg)).toEqual([]);

    // Still serving: new connections, and a normal authenticated task on both lines completes against the stub.
    expect(gw.server.listening).toBe(true);
    expect(await acceptsConnections(wire)).toBe(true);
    const send = await fetch(`${gw.url}/`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "after-fuzz",
        method: "message/send",
        params: { message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text: "still there?" }] } },
      }),
    });
    expect(send.status).toBe(200);
    const answer = (await send.json()) as { id: string; result: { kind: string; status: { state: string } } };
    expect(answer.id).toBe("after-fuzz");
    expect(answer.result.kind).toBe("task");
    expect(answer.result.status.state).toBe("completed");
    const rest = await fetch(`${gw.url}/message:send`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ message: { role: "ROLE_USER", messageId: randomUUID(), parts: [{ text: "and on 1.0 REST?" }] } }),
    });
    expect(rest.status).toBe(200);
    expect(((await rest.json()) as { task: { status: { state: string } } }).task.status.state).toBe("TASK_STATE_COMPLETED");
  },
  TEST_TIMEOUT_MS,
);
