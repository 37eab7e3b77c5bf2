// Reader threads of a SQLite store file (A2A_TASK_STORE_READERS): reads that grow with the store (listings, their
// totals) run on worker threads with read-only connections of their own, so a long read never holds up the event
// loop (better-sqlite3 is synchronous: a query on the gateway's connection blocks every request and stream until it
// ends). WAL lets these connections read while the gateway writes; each sees what was committed before its read
// began, so a listing after a write sees that write.
//
// A call sends SQL compiled on the main thread (Kysely, the SQLite dialect) and gets the rows back, integers as
// bigint like the gateway's own connection (./sqlite-dialect.ts). The queries of one call run in one read transaction
// (one snapshot: a page and its total agree). Threads start on first use, one more whenever every started one is busy,
// up to the pool size; a thread that dies fails its call and is replaced on the next one. A failure comes back as an
// Error carrying SQLite's code, which the store turns into TASK_STORE_UNAVAILABLE like any other.
//
// WAL checkpoints (`checkpointEveryMs`): one thread at a time also checkpoints the file, on a second connection of its
// own. By default SQLite checkpoints inside the COMMIT that takes the WAL past 1,000 pages: on the gateway's connection
// that COMMIT copies the pages back into the database file and syncs both files on the event loop (under GetTask load
// the audit log's batch COMMITs took up to 23 ms on a 2-core machine, and 4 ms once checkpoints ran here). While a
// thread holds the duty, the gateway's connection does not checkpoint (`onCheckpointDuty`: `wal_autocheckpoint = 0`)
// and the thread runs a PASSIVE checkpoint every `checkpointEveryMs` when another connection has committed since its
// last pass (its own `PRAGMA data_version`). A PASSIVE checkpoint waits for no one: writers go on appending, readers
// keep their snapshots, and what a reader still uses is left for the next pass. A checkpoint is not a commit: it
// moves no other connection's `PRAGMA data_version`, so the gateway's read caches (../change-watch.ts) stay. While the
// thread's passes fail (its connection cannot open or write the file, another process holds a checkpoint), and when
// the thread dies, the gateway's connection checkpoints again; the next successful pass, or the next thread started,
// takes the duty back. After `quietPasses` passes that found no commit the thread's timer stops, and the next write
// on the gateway's connection (`wrote()`) starts it again: an idle gateway's thread does not wake. What the duty has
// done is in `checkpoints` (served on /metrics).
// The duty rides on a reader rather than a thread of its own: a thread is a V8 isolate (+8 MB RssAnon measured).
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { CompiledQuery } from "kysely";
import { youngGenerationLimit } from "../../util/young-generation.js";

// CommonJS, evaluated as the thread's main script: it loads the better-sqlite3 build the gateway itself loaded
// (sqliteModule()), so both threads run one native build.
const THREAD = `
"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.module);
const db = new Database(workerData.file, { readonly: true, fileMustExist: true, timeout: workerData.busyTimeoutMs });
db.exec("PRAGMA cache_size = -16384");
db.exec("PRAGMA mmap_size = 268435456");
const statements = new Map();
function prepared(sql) {
  let statement = statements.get(sql);
  if (statement === undefined) {
    statement = db.prepare(sql);
    if (!statement.reader) throw Object.assign(new Error("a reader thread only reads"), { code: "A2A_NOT_A_READ" });
    statement.safeIntegers(true);
    statements.set(sql, statement);
  }
  return statement;
}
const messageOf = (err) => String((err && err.message) || err);
const read = db.transaction((queries) => queries.map((q) => prepared(q.sql).all(...q.parameters)));
let checkpoints;
if (workerData.checkpointEveryMs > 0) {
  try {
    const writable = new Database(workerData.file, { fileMustExist: true, timeout: workerData.busyTimeoutMs });
    const version = writable.prepare("PRAGMA data_version").pluck();
    const checkpoint = writable.prepare(workerData.checkpointSql);
    let seen; // the first pass checkpoints what was committed before the thread started
    let quiet = 0; // passes in a row that found no commit
    let timer;
    const pass = () => {
      try {
        const now = version.get();
        if (now === seen) {
          if (++quiet < workerData.quietPasses) return;
          // Nothing committed for a while: the timer stops until the gateway writes again (m.wake), so an idle
          // gateway's thread does not wake every few hundred milliseconds.
          clearInterval(timer);
          timer = undefined;
          parentPort.postMessage({ checkpoint: { asleep: true, checkedAt: Date.now() } });
          return;
        }
        seen = now;
        quiet = 0;
        const result = checkpoint.get();
        parentPort.postMessage({ checkpoint: { checkpointed: result.checkpointed, log: result.log } });
      } catch (err) {
        seen = undefined; // try again at the next pass
        parentPort.postMessage({ checkpoint: { error: messageOf(err) } });
      }
    };
    const wake = () => {
      quiet = 0;
      if (timer === undefined) timer = setInterval(pass, workerData.checkpointEveryMs);
    };
    wake();
    checkpoints = { wake, close: () => (clearInterval(timer), writable.close()) };
  } catch (err) {
    parentPort.postMessage({ checkpoint: { error: messageOf(err) } });
  }
}
parentPort.on("message", (m) => {
  if (m.close === true) {
    // The connections close before the thread ends, so the gateway's own close (the last one) can remove -wal/-shm.
    if (checkpoints !== undefined) checkpoints.close();
    db.close();
    parentPort.close();
    return;
  }
  if (m.wake === true) {
    if (checkpoints !== undefined) checkpoints.wake();
    return;
  }
  try {
    parentPort.postMessage({ id: m.id, results: read(m.queries) });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: { message: messageOf(err), code: err && err.code } });
  }
});
`;

export interface SqliteReadersOptions {
  /** The database file (opened read-only; it must exist and be in WAL mode). */
  file: string;
  /** Threads at most (A2A_TASK_STORE_READERS, ≥ 1). */
  size: number;
  busyTimeoutMs: number;
  /** One thread checkpoints the WAL this often (ms); none when absent or 0. */
  checkpointEveryMs?: number;
  /**
   * Whether the WAL is checkpointed by a thread: true when a thread takes the duty and when its passes succeed again
   * (the gateway's connection stops checkpointing); false when a pass fails or the thread dies (the connection
   * checkpoints again, so a thread that cannot checkpoint never leaves the WAL growing).
   */
  onCheckpointDuty?(held: boolean): void;
  /** Passes in a row without a commit after which the thread's timer stops until wrote() (default QUIET_PASSES). */
  quietPasses?: number;
  /** The statement of a pass (fault injection: tests make it fail); PRAGMA wal_checkpoint(PASSIVE) by default. */
  checkpointSql?: string;
}

/** SQLite's own default: a connection checkpoints in the COMMIT that takes the WAL past this many pages. */
export const SQLITE_AUTOCHECKPOINT_PAGES = 1000;

/** How often the thread holding the checkpoint duty looks for commits to checkpoint (ms). */
export const CHECKPOINT_EVERY_MS = 200;

/** Passes in a row that find no commit before the thread's timer stops (1 s at CHECKPOINT_EVERY_MS). */
export const QUIET_PASSES = 5;

/** What the checkpoint duty has done so far (/metrics: a2a_sqlite_wal_*). */
export interface CheckpointStats {
  /** Whether a thread holds the duty now (else the gateway's connection checkpoints). */
  onThread: boolean;
  /** Passes that ran a checkpoint, across the threads that held the duty. */
  passes: number;
  /** Frames copied into the database file, summed over the passes. */
  checkpointed: number;
  /** Frames in the WAL at the last pass. */
  walFrames: number;
  /** Passes that failed (each hands checkpointing back to the gateway's connection until one succeeds). */
  failures: number;
  /** The last error a pass met (the next pass tries again). */
  lastError?: string;
  /** Whether the thread's timer is stopped for want of commits (until the next write). */
  asleep: boolean;
}

interface Job {
  id: number;
  queries: { sql: string; parameters: readonly unknown[] }[];
  resolve(results: unknown[][]): void;
  reject(err: Error): void;
}

interface Reply {
  id: number;
  results?: unknown[][];
  error?: { message: string; code?: string };
  /** A checkpoint pass (the thread holding the duty). */
  /** `asleep`: the timer stopped after a look for commits at `checkedAt` (epoch ms) found none. */
  checkpoint?: { checkpointed?: number; log?: number; error?: string; asleep?: true; checkedAt?: number };
}

/** What a thread tells its pool. */
interface ThreadHost {
  idle(thread: Thread): void;
  gone(thread: Thread, err: Error): void;
  checkpointed(thread: Thread, pass: NonNullable<Reply["checkpoint"]>): void;
}

const require = createRequire(import.meta.url);

/**
 * The file of the better-sqlite3 module this process loaded (a loader hook may have chosen another build than the one
 * installed next to this package), else the one installed next to it.
 */
function sqliteModule(): string {
  for (const key of Object.keys(require.cache)) if (/[\\/]better-sqlite3[\\/]lib[\\/]index\.js$/.test(key)) return key;
  return require.resolve("better-sqlite3");
}

/** How long close() waits for a thread's read to end before it terminates the thread. */
const CLOSE_WAIT_MS = 5_000;

class Thread {
  readonly worker: Worker;
  job: Job | undefined;

  constructor(options: SqliteReadersOptions, duty: boolean, host: ThreadHost) {
    const young = youngGenerationLimit(); // Node 20's size on every line (../../util/young-generation.ts)
    this.worker = new Worker(THREAD, {
      eval: true,
      workerData: {
        module: sqliteModule(),
        file: options.file,
        busyTimeoutMs: options.busyTimeoutMs,
        checkpointEveryMs: duty ? (options.checkpointEveryMs ?? 0) : 0,
        quietPasses: Math.max(1, options.quietPasses ?? QUIET_PASSES),
        checkpointSql: options.checkpointSql ?? "PRAGMA wal_checkpoint(PASSIVE)",
      },
      ...(young === undefined ? {} : { resourceLimits: { maxYoungGenerationSizeMb: young } }),
    });
    this.worker.unref();
    this.worker.on("message", (reply: Reply) => {
      if (reply.checkpoint !== undefined) {
        host.checkpointed(this, reply.checkpoint);
        return;
      }
      const job = this.job;
      if (job === undefined || job.id !== reply.id) return;
      this.job = undefined;
      if (reply.error !== undefined) job.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }));
      else job.resolve(reply.results ?? []);
      host.idle(this);
    });
    this.worker.on("error", (err) => host.gone(this, err));
    this.worker.on("exit", (code) => host.gone(this, new Error(`a reader thread exited (code ${code})`)));
  }

  /**
   * Asks the thread to close its connection and end (after the read it may be running), and waits for it; a thread
   * that has not ended after CLOSE_WAIT_MS is terminated.
   */
  async stop(): Promise<void> {
    const ended = new Promise<void>((resolve) => this.worker.once("exit", () => resolve()));
    this.worker.postMessage({ close: true });
    const timer = setTimeout(() => void this.worker.terminate(), CLOSE_WAIT_MS);
    await ended;
    clearTimeout(timer);
  }

  start(job: Job): void {
    this.job = job;
    this.worker.postMessage({ id: job.id, queries: job.queries });
  }
}

export class SqliteReaders {
  readonly #options: SqliteReadersOptions;
  /** The started threads (private to the pool; tests stop one to see it replaced). */
  private readonly started = new Set<Thread>();
  readonly #idle: Thread[] = [];
  readonly #queue: Job[] = [];
  #seq = 0;
  #closed = false;
  /** The thread holding the checkpoint duty. */
  #checkpointer: Thread | undefined;
  readonly #host: ThreadHost = {
    idle: (t) => this.#onIdle(t),
    gone: (t, err) => this.#onGone(t, err),
    checkpointed: (t, pass) => this.#onCheckpoint(t, pass),
  };
  /** When the gateway's connection last wrote (epoch ms; wrote()). */
  #lastWrite = 0;
  readonly #checkpoints: CheckpointStats = { onThread: false, passes: 0, checkpointed: 0, walFrames: 0, failures: 0, asleep: false };

  constructor(options: SqliteReadersOptions) {
    if (!Number.isInteger(options.size) || options.size < 1) throw new Error("a reader pool needs at least one thread");
    this.#options = options;
  }

  /** Runs `queries` in one read transaction on a reader thread; the rows of each, in order. */
  run(queries: readonly CompiledQuery[]): Promise<unknown[][]> {
    if (this.#closed) return Promise.reject(new Error("the task store is closed"));
    return new Promise((resolve, reject) => {
      this.#queue.push({ id: ++this.#seq, queries: queries.map((q) => ({ sql: q.sql, parameters: q.parameters })), resolve, reject });
      this.#dispatch();
    });
  }

  /** What the checkpoint duty has done, across the threads that held it (a copy). */
  get checkpoints(): Readonly<CheckpointStats> {
    return { ...this.#checkpoints };
  }

  /**
   * The gateway's connection wrote: a checkpoint thread whose timer stopped for want of commits starts it again. Called
   * for every write statement; it posts to the thread only when the timer is stopped.
   */
  wrote(): void {
    this.#lastWrite = Date.now();
    if (this.#checkpoints.asleep) this.#wake();
  }

  #wake(): void {
    this.#checkpoints.asleep = false;
    this.#checkpointer?.worker.postMessage({ wake: true });
  }

  /** Starts one thread now if none runs (a gateway's first listing then does not wait for a thread to boot). */
  warm(): void {
    if (this.#closed || this.started.size > 0) return;
    this.#idle.push(this.#start());
  }

  /** A new thread; it takes the checkpoint duty when checkpoints are asked for and no thread holds it. */
  #start(): Thread {
    const duty = (this.#options.checkpointEveryMs ?? 0) > 0 && this.#checkpointer === undefined;
    const thread = new Thread(this.#options, duty, this.#host);
    this.started.add(thread);
    if (duty) {
      this.#checkpointer = thread;
      this.#duty(true);
    }
    return thread;
  }

  #duty(held: boolean): void {
    this.#checkpoints.asleep = false; // a new thread's timer runs; a dead thread's is gone
    if (held === this.#checkpoints.onThread) return;
    this.#checkpoints.onThread = held;
    this.#options.onCheckpointDuty?.(held);
  }

  #onCheckpoint(thread: Thread, pass: NonNullable<Reply["checkpoint"]>): void {
    if (thread !== this.#checkpointer) return;
    const stats = this.#checkpoints;
    if (pass.asleep === true) {
      stats.asleep = true;
      // A write since the thread's last look (while its message was on the way) would otherwise wait for the next one.
      if (this.#lastWrite >= (pass.checkedAt ?? 0)) this.#wake();
      return;
    }
    if (pass.error !== undefined) {
      stats.failures++;
      stats.lastError = pass.error;
    } else {
      stats.passes++;
      stats.checkpointed += pass.checkpointed ?? 0;
      stats.walFrames = pass.log ?? 0;
    }
    this.#duty(pass.error === undefined);
  }

  /** Threads running now (tests). */
  get threads(): number {
    return this.started.size;
  }

  /** Stops every thread; calls not yet answered fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new Error("the task store is closed");
    for (const job of this.#queue.splice(0)) job.reject(closed);
    const threads = [...this.started];
    this.started.clear();
    this.#checkpointer = undefined;
    this.#idle.length = 0;
    for (const t of threads) t.job?.reject(closed);
    await Promise.all(threads.map((t) => t.stop()));
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let thread = this.#idle.pop();
      if (thread === undefined) {
        if (this.started.size >= this.#options.size) return;
        thread = this.#start();
      }
      thread.start(this.#queue.shift()!);
    }
  }

  #onIdle(thread: Thread): void {
    if (!this.started.has(thread)) return;
    this.#idle.push(thread);
    this.#dispatch();
  }

  #onGone(thread: Thread, err: Error): void {
    if (!this.started.delete(thread)) return;
    if (thread === this.#checkpointer) {
      this.#checkpointer = undefined;
      this.#duty(false); // until the next thread started takes it
    }
    const i = this.#idle.indexOf(thread);
    if (i >= 0) this.#idle.splice(i, 1);
    thread.job?.reject(err);
    thread.job = undefined;
    if (!this.#closed) this.#dispatch();
  }
}
