// bench:scale (./scale.ts), its data: the task set (layout LAYOUT_VERSION) and the seeding of a SQLite file or a
// PostgreSQL database through the store of the code under test (<root>/dist/src/storage/index.js: openStorage, then
// Storage.atomically with tx.tasks.create, in batches), so the rows, indexes and any counters are what that code
// writes.
//
// Layout: task i belongs to context group g = floor(i / 4) (4 tasks per context); every 10th group is owner "bench"
// (10% of the tasks, the principal of the owner listing), the other groups are spread over 997 owners "user-<k>".
// UNFINISHED tasks (spread evenly over the ids) are working / input-required / submitted; the rest are terminal
// (85% completed, 8% failed, 5% canceled, 2% rejected, from a hash of i). Status timestamps run over a year from
// 2025-01-01 in id order with a jitter of a few slots. Each task is a finished turn: 2 or 4 history messages, one text
// artifact with stream metadata (completed tasks), session and usage metadata: 1.1–2.5 KB of JSON (median 1.8 KB).
//
// SQLite files are cached under <tmp>/opencode-a2a-scale/ by (root's git HEAD, a hash of its built storage code, N,
// LAYOUT_VERSION): a rerun copies the cached file instead of seeding. The gateway fails the unfinished tasks at its
// first start, so every run works on a fresh copy and never starts a gateway on the cached file itself.
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import type { Task, TaskState } from "../../src/protocol/model.js";
import { hr, msSince } from "./tasks-measure.js";

type StorageModule = typeof import("../../src/storage/index.js");

export const LAYOUT_VERSION = 1;
export const UNFINISHED_MAX = 300;
const START = Date.parse("2025-01-01T00:00:00.000Z");
const SPAN = 365 * 24 * 3600 * 1000;

const hex12 = (n: number): string => n.toString(16).padStart(12, "0");
/** A deterministic number in [0, 1) for (i, salt). */
function unit(i: number, salt: number): number {
  let h = Math.imul(i ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(salt + 0x27d4eb2f, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return ((h ^ (h >>> 16)) >>> 0) / 2 ** 32;
}

export const taskId = (i: number): string => `5ca1e000-0000-4000-8000-${hex12(i)}`;
export const contextId = (group: number): string => `5ca1e000-0000-4000-9000-${hex12(group)}`;
export const groupOf = (i: number): number => Math.floor(i / 4);
export const ownerOfGroup = (g: number): string => (g % 10 === 0 ? "bench" : `user-${g % 997}`);
/** Groups of the owner "bench" among n tasks (every 10th group). */
export const benchGroups = (n: number): number => Math.ceil(Math.ceil(n / 4) / 10);

export interface Layout {
  n: number;
  unfinished: number;
}
export const layout = (n: number): Layout => ({ n, unfinished: Math.min(UNFINISHED_MAX, Math.floor(n / 100)) });

function stateOf(i: number, l: Layout): TaskState {
  const step = l.unfinished === 0 ? 0 : Math.floor(l.n / l.unfinished);
  if (step > 0 && i % step === step - 1 && i / step < l.unfinished) return (["working", "input-required", "submitted"] as const)[(i / step) % 3 | 0]!;
  const h = unit(i, 1);
  return h < 0.85 ? "completed" : h < 0.93 ? "failed" : h < 0.98 ? "canceled" : "rejected";
}

const WORDS = "the a of to in gateway task session store index listing page token owner context state timestamp artifact history message agent user reply change file test build".split(" ");
const words = (i: number, salt: number, count: number): string => Array.from({ length: count }, (_, k) => WORDS[Math.floor(unit(i * 31 + k, salt) * WORDS.length)]).join(" ");

/** Task i of the layout, in the gateway's internal model. */
export function scaleTask(i: number, l: Layout): Task {
  const id = taskId(i);
  const ctx = contextId(groupOf(i));
  const slot = SPAN / l.n;
  const timestamp = new Date(START + Math.floor(i * slot + unit(i, 2) * slot * 3)).toISOString();
  const state = stateOf(i, l);
  const msg = (k: number, role: "user" | "agent", text: string) => ({ messageId: `${id.slice(0, 24)}${hex12(i * 4 + k)}`, role, parts: [{ kind: "text" as const, text }], taskId: id, contextId: ctx });
  const turns = unit(i, 3) < 0.3 ? 2 : 1;
  const history = [];
  for (let t = 0; t < turns; t++) history.push(msg(2 * t, "user", `Task ${i}, step ${t}: ${words(i, 10 + t, 14)}?`), msg(2 * t + 1, "agent", `Done: ${words(i, 20 + t, 24)}.`));
  const answer = `Summary of task ${i}: ${words(i, 30, 36)}.`;
  return {
    id,
    contextId: ctx,
    status: { state, timestamp },
    history,
    artifacts:
      state === "completed"
        ? [
            {
              artifactId: `${id}:text`,
              name: "response",
              parts: [{ kind: "text", text: answer }],
              metadata: { shared: { stream: { block_type: "text", source: "assistant_text", message_id: `msg_${hex12(i)}`, part_id: `prt_${hex12(i)}`, event_id: `${id}:${ctx}:2`, sequence: 2, role: "agent" } } },
            },
          ]
        : [],
    metadata: {
      opencode: { output_negotiation: { accepted_output_modes: ["text/plain", "application/json"] } },
      shared: {
        session: { id: `ses_scale${hex12(groupOf(i))}` },
        usage: { input_tokens: 900 + (i % 500), output_tokens: 120 + (i % 90), total_tokens: 1020 + (i % 590), reasoning_tokens: 0, cache_tokens: { read_tokens: 0, write_tokens: 0 }, cost: 0 },
      },
    },
  };
}

/** The store module of the code under test (<root>/dist/src/storage/index.js). */
export async function storageModule(root: string): Promise<StorageModule> {
  const file = path.join(root, "dist", "src", "storage", "index.js");
  if (!fs.existsSync(file)) throw new Error(`${file} is missing: build it (node node_modules/typescript/bin/tsc -p tsconfig.build.json in ${root})`);
  return (await import(pathToFileURL(file).href)) as StorageModule;
}

/** What the cache key says about the code under test: git HEAD and a hash of its built storage code. */
export function codeKey(root: string): { head: string; storage: string } {
  let head = "(not a git checkout)"; // a BENCH_ROOT may be a copy of a build; the report then names no commit
  try {
    head = execFileSync("git", ["-C", root, "rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    // keep the placeholder
  }
  const hash = crypto.createHash("sha256");
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith(".js")) hash.update(e.name).update(fs.readFileSync(full));
    }
  };
  walk(path.join(root, "dist", "src", "storage"));
  return { head, storage: hash.digest("hex").slice(0, 10) };
}

/**
 * Creates tasks [from, to) of the layout through the store, in transactions of `batch`. PostgreSQL: transactions
 * that each create many tasks lock the shared task-count rows (src/storage/sql/task-listing-ddl.ts) in different
 * orders, so concurrent ones can deadlock (40P01: one is rolled back); such a batch is run again. The gateway itself
 * writes one task per transaction, whose count rows are locked in one order.
 */
async function createRange(storage: Awaited<ReturnType<StorageModule["openStorage"]>>, l: Layout, from: number, to: number, batch: number): Promise<void> {
  for (let start = from; start < to; start += batch) {
    for (let attempt = 1; ; attempt++) {
      try {
        await storage.atomically(async (tx) => {
          for (let i = start; i < Math.min(to, start + batch); i++) {
            await tx.tasks.create(scaleTask(i, l), ownerOfGroup(groupOf(i)), { acceptedOutputModes: ["text/plain", "application/json"], sessionId: `ses_scale${hex12(groupOf(i))}` });
          }
        });
        break;
      } catch (err) {
        if (attempt >= 50 || !/40P01/.test((err as Error).message)) throw err;
      }
    }
  }
}

/**
 * Seeds `workers` ranges at once, each through its own transactions (on PostgreSQL each on its own pool connection;
 * SQLite serialises them on its one connection). Calls `progress` every tenth.
 */
async function seed(mod: StorageModule, url: string, l: Layout, workers: number, progress: (line: string) => void): Promise<void> {
  const storage = await mod.openStorage({ backend: "sqlite", url });
  try {
    const chunk = Math.max(1000, Math.ceil(l.n / 10));
    let next = 0;
    let done = 0;
    const start = hr();
    await Promise.all(
      Array.from({ length: workers }, async () => {
        while (next < l.n) {
          const from = next;
          const to = Math.min(l.n, next + chunk);
          next = to;
          // Several writers at once: one create per transaction, as the gateway writes (its count rows are locked in one order).
          await createRange(storage, l, from, to, workers > 1 ? 1 : 2000);
          done += to - from;
          progress(`seeded ${done.toLocaleString("en-US")} / ${l.n.toLocaleString("en-US")} tasks (${(msSince(start) / 1000).toFixed(0)} s)`);
        }
      }),
    );
    const count = await storage.tasks.count();
    if (count !== l.n) throw new Error(`expected ${l.n} tasks after seeding, found ${count}`);
  } finally {
    await storage.close();
  }
}

export interface Seeded {
  /** Where the gateway runs: a fresh copy of the seeded file (sqlite:///…) or the seeded database (postgres://…). */
  url: string;
  /** ms spent seeding in this run (0: taken from the cache). */
  seedMs: number;
  /** ms spent copying the cached file. */
  copyMs: number;
  source: string;
  bytes: number;
}

const cacheDir = path.join(os.tmpdir(), "opencode-a2a-scale");

/** A fresh copy of the cached SQLite file of (root, n, layout); seeded first when there is none. */
export async function seededSqlite(root: string, l: Layout, workDir: string, progress: (line: string) => void): Promise<Seeded> {
  const { storage } = codeKey(root);
  fs.mkdirSync(cacheDir, { recursive: true });
  // Keyed by the storage code that wrote it, not by the commit: a commit that leaves dist/src/storage alone seeds the
  // same file, and seeding a million tasks takes minutes.
  const cached = path.join(cacheDir, `st${storage}-n${l.n}-v${LAYOUT_VERSION}.db`);
  let seedMs = 0;
  if (!fs.existsSync(cached)) {
    const partial = `${cached}.partial-${process.pid}`;
    progress(`seeding ${l.n.toLocaleString("en-US")} tasks into ${partial} through ${root}/dist/src/storage`);
    const start = hr();
    await seed(await storageModule(root), `sqlite:///${partial}`, l, 1, progress);
    seedMs = msSince(start);
    for (const suffix of ["-wal", "-shm"]) if (fs.existsSync(partial + suffix) && fs.statSync(partial + suffix).size > 0) throw new Error(`${partial}${suffix} left after close`);
    for (const suffix of ["-wal", "-shm"]) fs.rmSync(partial + suffix, { force: true });
    fs.renameSync(partial, cached);
  }
  const work = path.join(workDir, `scale-${l.n}.db`);
  const start = hr();
  fs.copyFileSync(cached, work);
  // Written to disk before any gateway starts on it: otherwise the first start (measured) shares the disk with the
  // kernel writing back gigabytes this copy left dirty (measured at 1M: 1,296 ms to the first card without this, 579
  // ms after a sync).
  const fd = fs.openSync(work, "r+");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return { url: `sqlite:///${work}`, seedMs, copyMs: msSince(start), source: seedMs > 0 ? `seeded now in ${(seedMs / 1000).toFixed(1)} s, cached as ${cached}` : `cached ${cached}`, bytes: fs.statSync(work).size };
}

/** A fresh PostgreSQL database (`url`) seeded through the store with 4 concurrent transactions. */
export async function seededPostgres(root: string, l: Layout, url: string, progress: (line: string) => void): Promise<Seeded> {
  progress(`seeding ${l.n.toLocaleString("en-US")} tasks into a fresh PostgreSQL database through ${root}/dist/src/storage (4 concurrent transactions)`);
  const start = hr();
  await seed(await storageModule(root), url, l, 4, progress);
  const seedMs = msSince(start);
  const settleStart = hr();
  if (process.env.BENCH_SCALE_PG_SETTLE !== "off") await settlePostgres(url);
  const settleMs = msSince(settleStart);
  return { url, seedMs, copyMs: 0, source: `seeded now in ${(seedMs / 1000).toFixed(1)} s (4 concurrent writers, one create per transaction), settled in ${(settleMs / 1000).toFixed(1)} s (VACUUM (ANALYZE), CHECKPOINT)`, bytes: NaN };
}

// A table that grew to N tasks over weeks has long been vacuumed and analyzed by autovacuum; one seeded in 40 s has not,
// and autovacuum would run through the measured window (dead versions of every count row the triggers updated, no
// statistics yet). So the seeded database is settled first: VACUUM (ANALYZE) of the whole database, then a
// CHECKPOINT, so neither the autovacuum workers nor the checkpointer write back the seed while the gateway is measured.
async function settlePostgres(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("VACUUM (ANALYZE)");
    await client.query("CHECKPOINT");
  } finally {
    await client.end();
  }
}
