/**
 * Refreshes spec/upstream/opencode.openapi.json from the pinned OpenCode's own `GET /doc`.
 *
 *   npx tsx tools/upstream/snapshot.ts           write the snapshot
 *   npx tsx tools/upstream/snapshot.ts --check   exit 1 (writing nothing) when the committed snapshot is stale
 *
 * Starts a hermetic `opencode serve` (no model is needed for /doc), checks that the server is the installed
 * opencode-ai version, checks that /doc is an OpenAPI 3 document, adds `"x-opencode-version"` and writes
 * 2-space JSON with a trailing newline. The output is deterministic (run-specific values are normalized).
 */
import { once } from "node:events";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { opencodeVersion, startHermeticOpencode, type HermeticOpencode } from "./hermetic.js";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const outFile = resolve(repoRoot, "spec", "upstream", "opencode.openapi.json");
const DOC_TIMEOUT_MS = 20_000;
const HEALTH_TIMEOUT_MS = 5_000;

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A 127.0.0.1 port nothing listens on right now (the model server is never called for /doc). */
async function unusedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (!isObject(address) || typeof address.port !== "number") throw new Error("could not reserve a port");
  return address.port;
}

async function getJson(url: string, timeoutMs: number): Promise<{ body: unknown; bytes: number; ms: number }> {
  const started = Date.now();
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await response.text();
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}: ${text.slice(0, 500)}`);
  return { body: JSON.parse(text) as unknown, bytes: Buffer.byteLength(text), ms: Date.now() - started };
}

/**
 * Replaces run-specific values (temp dirs, the server URL) with fixed placeholders. None occur in
 * OpenCode 1.18.33's /doc; this guards future versions and reports what it had to replace.
 */
function normalize(text: string, server: HermeticOpencode): { text: string; replaced: string[] } {
  const volatile: Array<[string, string]> = [
    [dirname(server.home), "<hermetic-tmp>"],
    [server.workspace, "<workspace>"],
    [server.home, "<home>"],
    [server.url, "<opencode-url>"],
    [new URL(server.url).host, "<opencode-host>"],
  ];
  const replaced: string[] = [];
  let out = text;
  for (const [value, placeholder] of volatile) {
    const needle = JSON.stringify(value).slice(1, -1); // as it appears inside JSON strings
    if (out.includes(needle)) {
      replaced.push(`${value} -> ${placeholder}`);
      out = out.split(needle).join(placeholder);
    }
  }
  return { text: out, replaced };
}

async function main(): Promise<void> {
  const check = process.argv.includes("--check");
  const version = opencodeVersion();
  const modelBaseUrl = `http://127.0.0.1:${await unusedPort()}/v1`;

  const spawnedAt = Date.now();
  const server = await startHermeticOpencode({ modelBaseUrl });
  const startMs = Date.now() - spawnedAt;
  try {
    const health = await getJson(`${server.url}/global/health`, HEALTH_TIMEOUT_MS);
    const serverVersion = isObject(health.body) ? health.body.version : undefined;
    if (serverVersion !== version) {
      throw new Error(
        `version mismatch: opencode-ai package ${version}, server /global/health ${JSON.stringify(serverVersion)}`,
      );
    }

    const doc = await getJson(`${server.url}/doc`, DOC_TIMEOUT_MS);
    const served = doc.body;
    if (!isObject(served) || typeof served.openapi !== "string" || !/^3\.\d+\.\d+$/.test(served.openapi)) {
      throw new Error(`GET /doc is not an OpenAPI 3 document (openapi: ${JSON.stringify(isObject(served) ? served.openapi : served)})`);
    }
    const { info, paths } = served;
    if (!isObject(info) || typeof info.version !== "string") throw new Error("GET /doc: info.version missing");
    if (!isObject(paths) || Object.keys(paths).length === 0) throw new Error("GET /doc: no paths");
    // OpenCode 1.18.33 serves the static API version "1.0.0" in info.version, not its package version, so the
    // package version is checked against /global/health above and recorded as x-opencode-version.
    if (info.version !== version) {
      console.error(`note: info.version is ${JSON.stringify(info.version)} (static API version), package is ${version}`);
    }

    // Served key order, with x-opencode-version right after info.
    const snapshot: JsonObject = {};
    for (const [key, value] of Object.entries(served)) {
      snapshot[key] = value;
      if (key === "info") snapshot["x-opencode-version"] = version;
    }
    const { text, replaced } = normalize(`${JSON.stringify(snapshot, null, 2)}\n`, server);
    for (const entry of replaced) console.error(`normalized volatile value: ${entry}`);

    const shown = relative(process.cwd(), outFile) || outFile;
    const summary =
      `${Object.keys(paths).length} paths, ${Buffer.byteLength(text)} bytes (served ${doc.bytes}), ` +
      `OpenAPI ${served.openapi}, opencode ${version}; listening after ${startMs} ms, /doc in ${doc.ms} ms`;
    if (check) {
      const current = existsSync(outFile) ? readFileSync(outFile, "utf8") : undefined;
      if (current !== text) {
        console.error(`${shown} is stale: run npx tsx tools/upstream/snapshot.ts (${summary})`);
        process.exitCode = 1;
      } else {
        console.log(`${shown} is up to date: ${summary}`);
      }
      return;
    }
    const temp = `${outFile}.tmp-${process.pid}`;
    writeFileSync(temp, text);
    renameSync(temp, outFile);
    console.log(`wrote ${shown}: ${summary}`);
  } finally {
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
