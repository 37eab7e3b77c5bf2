// The SQLite connection: opens a hardened database file (parent directory created 0700, a regular non-symlink file
// owned by this user and forced to 0600, likewise its -wal/-shm/-journal companions), applies the local durability
// pragmas (WAL, busy_timeout, synchronous=NORMAL, foreign_keys), runs the migrations, caches prepared statements,
// and turns every runtime SQLite failure into A2AError("TASK_STORE_UNAVAILABLE", …, { operation }).
import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { A2AError } from "../contract/errors.js";
import { migrate, type MigrationResult } from "./migrations.js";
import { pinDatabase, prepare } from "./pin.js";
import { StorageError, type StoreLocation } from "../config/store-url.js";

export const DEFAULT_BUSY_TIMEOUT_MS = 30_000;
const COMPANION_SUFFIXES = ["-wal", "-shm", "-journal"] as const;

export interface OpenDatabaseOptions {
  /** busy_timeout in ms (default 30000); tests lower it. */
  busyTimeoutMs?: number;
}

/** Wrap a runtime failure as the typed store error (A2AErrors pass through untouched). */
export function storeUnavailable(operation: string, err: unknown): A2AError {
  if (err instanceof A2AError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const detail = typeof code === "string" ? code : err instanceof Error ? err.message : String(err);
  const wrapped = new A2AError("TASK_STORE_UNAVAILABLE", `Task store unavailable (${operation}: ${detail})`, { operation });
  (wrapped as Error).cause = err;
  return wrapped;
}

export class StoreDatabase {
  private readonly statements = new Map<string, Database.Statement>();
  private closed = false;

  constructor(
    readonly db: Database.Database,
    readonly location: SqliteLocation,
    readonly migration: MigrationResult,
  ) {}

  /** A cached prepared statement. */
  statement(sql: string): Database.Statement {
    if (this.closed) throw new Error("the database is closed");
    let stmt = this.statements.get(sql);
    if (stmt === undefined) {
      stmt = prepare(this.db, sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  /** Run `fn`, turning any SQLite failure into TASK_STORE_UNAVAILABLE. */
  guard<T>(operation: string, fn: () => T): T {
    try {
      if (this.closed) throw new Error("the database is closed");
      return fn();
    } catch (err) {
      throw storeUnavailable(operation, err);
    }
  }

  /** Run `fn` in an IMMEDIATE transaction (all or nothing), with the same error mapping. */
  transaction<T>(operation: string, fn: () => T): T {
    return this.guard(operation, () => this.db.transaction(fn).immediate());
  }

  get isOpen(): boolean {
    return !this.closed && this.db.open;
  }

  /** From now on every statement fails as a closed database's would; close() follows (after the reader threads). */
  refuse(): void {
    this.closed = true;
  }

  /** Checkpoint the WAL into the main file and close. Idempotent. */
  close(): void {
    if (this.closed && !this.db.open) return;
    this.closed = true;
    this.statements.clear();
    try {
      if (this.db.open && !this.db.memory) this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } finally {
      if (this.db.open) this.db.close();
    }
  }
}

function unsafe(file: string, why: string): StorageError {
  return new StorageError("UNSAFE_PATH", `Refusing to open the task store at ${file}: ${why}`);
}

/** An existing path must be a regular, non-symlink file owned by this user. Returns false when it does not exist. */
function checkExisting(file: string): boolean {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw new StorageError("OPEN_FAILED", `Cannot inspect the task store path ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (st.isSymbolicLink()) throw unsafe(file, "it is a symbolic link");
  if (!st.isFile()) throw unsafe(file, "it is not a regular file");
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw unsafe(file, `it is owned by uid ${st.uid}, not by this user (uid ${uid})`);
  return true;
}

function createDirectory(dir: string): void {
  const first = fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (first === undefined) return; // existed already: left as the operator made it
  // Force 0700 on every directory we created (mkdir's mode is subject to the umask).
  for (let d = dir; ; d = path.dirname(d)) {
    fs.chmodSync(d, 0o700);
    if (d === first || path.dirname(d) === d) break;
  }
}

/** Prepare a file path: directory, file created 0600 without following symlinks, companions checked. */
function prepareFile(file: string): void {
  try {
    createDirectory(path.dirname(file));
  } catch (err) {
    throw new StorageError("OPEN_FAILED", `Cannot create the task store directory for ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (!checkExisting(file)) {
    try {
      const { O_CREAT, O_EXCL, O_WRONLY, O_NOFOLLOW } = fs.constants;
      fs.closeSync(fs.openSync(file, O_CREAT | O_EXCL | O_WRONLY | (O_NOFOLLOW ?? 0), 0o600));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
        throw new StorageError("OPEN_FAILED", `Cannot create the task store file ${file}: ${(err as Error).message}`, { cause: err });
      }
      checkExisting(file); // lost a creation race: re-check what is there now
    }
  }
  for (const suffix of COMPANION_SUFFIXES) checkExisting(file + suffix);
  hardenModes(file);
}

function hardenModes(file: string): void {
  for (const f of [file, ...COMPANION_SUFFIXES.map((s) => file + s)]) {
    try {
      fs.chmodSync(f, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw unsafe(f, `cannot set mode 0600 (${(err as Error).message})`);
    }
  }
}

/** A SQLite database: a file or in memory. */
export type SqliteLocation = Exclude<StoreLocation, { kind: "postgres" }>;

/** Open (and migrate) the database at `location`. Throws StorageError on start-up problems. */
export function openDatabase(location: SqliteLocation, options: OpenDatabaseOptions = {}): StoreDatabase {
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  if (location.kind === "file") prepareFile(location.path);
  let db: Database.Database;
  try {
    db = pinDatabase(new Database(location.kind === "memory" ? ":memory:" : location.path, { timeout: busyTimeoutMs }));
  } catch (err) {
    throw new StorageError("OPEN_FAILED", `Cannot open the task store: ${(err as Error).message}`, { cause: err });
  }
  try {
    // exec(), not pragma(): pragma() prepares a throwaway Statement (see ./pin.ts).
    db.exec("PRAGMA journal_mode = WAL");
    db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec("PRAGMA foreign_keys = ON");
    // Reads of a large store (GetTask with random ids) stay in memory: a 32 MiB page cache, and the file mapped
    // (256 MiB window) so cache misses are page-cache reads rather than a read(2) each.
    db.exec("PRAGMA cache_size = -32768");
    if (location.kind === "file") db.exec("PRAGMA mmap_size = 268435456");
    const migration = migrate(db);
    if (location.kind === "file") {
      // Re-check after open (the path could have been swapped) and force the companions' modes.
      checkExisting(location.path);
      for (const suffix of COMPANION_SUFFIXES) checkExisting(location.path + suffix);
      hardenModes(location.path);
    }
    return new StoreDatabase(db, location, migration);
  } catch (err) {
    db.close();
    if (err instanceof StorageError) throw err;
    throw new StorageError("OPEN_FAILED", `Cannot initialise the task store: ${(err as Error).message}`, { cause: err });
  }
}
