// The WAL checkpoints of a SQLite store file, on a thread of their own. By default SQLite checkpoints inside the COMMIT
// that takes the WAL past 1,000 pages: on the gateway's connection that COMMIT then copies every page back into the
// database file and syncs both files, blocking the event loop (under GetTask load the audit log's batch COMMITs took
// up to 23 ms on a 2-core machine). Once this thread runs, the gateway's connection stops checkpointing
// (`wal_autocheckpoint = 0`) and the thread runs a PASSIVE checkpoint every `everyMs` when another connection has
// committed since its last one (`PRAGMA data_version` of its own connection). A PASSIVE checkpoint waits for no one:
// writers go on appending, readers keep their snapshots, and what a reader still uses is left for the next pass.
//
// A checkpoint is not a commit: it moves no other connection's `PRAGMA data_version`, so the read caches of the
// gateway (../change-watch.ts) are not cleared by it. Should the thread die, the gateway's connection checkpoints again
// as SQLite does by default (`onGone`).
import { Worker } from "node:worker_threads";
import { youngGenerationLimit } from "../../util/young-generation.js";
import { CLOSE_WAIT_MS, sqliteModule } from "./readers.js";

// CommonJS, evaluated as the thread's main script; its statements live as long as the thread (../pin.ts).
const THREAD = `
"use strict";
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true, timeout: workerData.busyTimeoutMs });
const version = db.prepare("PRAGMA data_version").pluck();
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
let seen; // the first pass checkpoints what was committed before the thread started
function pass() {
  const now = version.get();
  if (now === seen) return;
  seen = now;
  const r = checkpoint.get();
  parentPort.postMessage({ log: r.log, checkpointed: r.checkpointed, busy: r.busy });
}
const timer = setInterval(() => {
  try {
    pass();
  } catch (err) {
    parentPort.postMessage({ error: String((err && err.message) || err) });
  }
}, workerData.everyMs);
parentPort.on("message", (m) => {
  if (m.close !== true) return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** SQLite's own default: a connection checkpoints in the COMMIT that takes the WAL past this many pages. */
export const SQLITE_AUTOCHECKPOINT_PAGES = 1000;

/** How often the thread looks for commits to checkpoint (ms). */
export const CHECKPOINT_EVERY_MS = 200;

export interface CheckpointerOptions {
  file: string;
  busyTimeoutMs: number;
  everyMs?: number;
  /** The thread ended without close() (or could not open the file): the gateway's connection must checkpoint again. */
  onGone(err: Error): void;
}

/** What the thread has done so far (tests, diagnostics). */
export interface CheckpointStats {
  passes: number;
  /** Frames copied into the database file, summed over the passes. */
  checkpointed: number;
  /** The last error a pass met (the next pass tries again). */
  lastError?: string;
}

export class SqliteCheckpointer {
  readonly #worker: Worker;
  readonly #ended: Promise<void>;
  readonly stats: CheckpointStats = { passes: 0, checkpointed: 0 };
  #closing = false;

  constructor(options: CheckpointerOptions) {
    const young = youngGenerationLimit();
    this.#worker = new Worker(THREAD, {
      eval: true,
      workerData: { module: sqliteModule(), file: options.file, busyTimeoutMs: options.busyTimeoutMs, everyMs: options.everyMs ?? CHECKPOINT_EVERY_MS },
      ...(young === undefined ? {} : { resourceLimits: { maxYoungGenerationSizeMb: young } }),
    });
    this.#worker.unref();
    this.#ended = new Promise<void>((resolve) => this.#worker.once("exit", () => resolve()));
    this.#worker.on("message", (m: { log?: number; checkpointed?: number; error?: string }) => {
      if (m.error !== undefined) {
        this.stats.lastError = m.error;
        return;
      }
      this.stats.passes++;
      this.stats.checkpointed += m.checkpointed ?? 0;
    });
    let gone = false;
    const end = (err: Error): void => {
      if (gone || this.#closing) return;
      gone = true;
      options.onGone(err);
    };
    this.#worker.on("error", end);
    this.#worker.on("exit", (code) => end(new Error(`the checkpoint thread exited (code ${code})`)));
  }

  /** Resolves once the thread has closed its connection and ended (before the gateway's own connection closes). */
  async close(): Promise<void> {
    if (this.#closing) return this.#ended;
    this.#closing = true;
    this.#worker.postMessage({ close: true }); // nothing happens if the thread has already ended
    const timer = setTimeout(() => void this.#worker.terminate(), CLOSE_WAIT_MS);
    await this.#ended;
    clearTimeout(timer);
  }

  /** Ends the thread as a crash would (tests). */
  kill(): Promise<number> {
    return this.#worker.terminate();
  }
}
