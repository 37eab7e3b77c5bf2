/**
 * A fast in-process stand-in for `opencode serve` (OpenCode 1.18.33) for tests and benchmarks.
 *
 * Speaks the subset of the real HTTP API the gateway uses (sessions, sync/async prompting, abort, permissions,
 * questions, `/event` + `/global/event` SSE, Basic auth, and the session routes behind `opencode.sessions.*`:
 * message paging with `X-Next-Cursor`, todo, diff, children, command, shell, fork, share, summarize,
 * revert/unrevert) with the real routes, status codes, JSON shapes and content types. Requests are routed by the
 * pinned OpenAPI snapshot (spec/upstream/opencode.openapi.json) to the route groups under ./stub/routes/, which
 * register their handlers by operationId. Model turns are driven by the shared Reply vocabulary (./script.ts) and
 * emit the event sequence the real server emits for the same replies (observed against a hermetic 1.18.33, see the
 * reference /work/shared/reference/opencode-upstream.md §6–§8). Ids and timestamps differ; types, order and shapes
 * match.
 *
 * Test controls live on the returned object (script, scriptFor, emit, dropEventStreams, pauseHeartbeats, failNext,
 * burst, stats, requests); the benchmark ones are also served as `POST /__stub/burst`, `GET /__stub/stats` and
 * `POST /__stub/script`.
 *
 * CLI: `npx tsx tools/upstream/stub.ts [--port N] [--heartbeat-ms N] [--password P] [--directory D]` prints
 * `opencode stub listening on http://127.0.0.1:PORT` and stops on SIGTERM/SIGINT.
 *
 * Node built-ins only; listens on 127.0.0.1 only.
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { StubUpstreamOptions } from "./stub/api.js";
import { startStubUpstream } from "./stub/server.js";

export type { BurstOptions, EmitEvent, FailRule, RecordedRequest, RouteMatch, StubStats, StubUpstream, StubUpstreamOptions } from "./stub/api.js";
export { startStubUpstream };

// ---------------------------------------------------------------------------------------------------------------
// CLI

function parseArgs(argv: string[]): StubUpstreamOptions {
  const opts: StubUpstreamOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    const need = (): string => {
      if (value === undefined) throw new Error(`${arg} needs a value`);
      i++;
      return value;
    };
    const int = (): number => {
      const n = Number(need());
      if (!Number.isInteger(n) || n < 0) throw new Error(`${arg}: expected a non-negative integer`);
      return n;
    };
    if (arg === "--port") opts.port = int();
    else if (arg === "--heartbeat-ms") opts.heartbeatMs = int();
    else if (arg === "--password") opts.password = need();
    else if (arg === "--username") opts.username = need();
    else if (arg === "--directory") opts.directory = need();
    else throw new Error(`unknown argument ${arg ?? ""}`);
  }
  return opts;
}

async function main(): Promise<void> {
  let opts: StubUpstreamOptions;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`opencode stub: ${(error as Error).message}\nusage: stub.ts [--port N] [--heartbeat-ms N] [--password P] [--username U] [--directory D]\n`);
    process.exit(2);
  }
  const stub = await startStubUpstream(opts);
  process.stdout.write(`opencode stub listening on ${stub.url}\n`);
  const stop = (): void => {
    void stub.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`opencode stub: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
