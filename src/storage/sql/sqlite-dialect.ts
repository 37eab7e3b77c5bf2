// Kysely on the gateway's SQLite connection (src/storage/database.ts): the stores written once with Kysely for both
// SQL backends run here on the same better-sqlite3 handle as the rest of the SQLite store. Statements come from the
// connection's cache (one per SQL text, kept for the life of the process: src/storage/pin.ts) and return every
// integer as a bigint (nanosecond times do not fit a double; ./rows.ts reads both backends' integers). better-sqlite3
// is synchronous, so each query runs to its end before another starts; a transaction awaits between its statements,
// so the one connection is held by one user at a time (a queue, as Kysely's own SQLite driver does): nothing else
// runs inside another caller's transaction.
import {
  CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from "kysely";
import type { StoreDatabase } from "../database.js";

class SqliteConnection implements DatabaseConnection {
  constructor(
    private readonly store: StoreDatabase,
    private readonly onWrite: (() => void) | undefined,
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return Promise.resolve(this.run<R>(query));
  }

  run<R>(query: CompiledQuery): QueryResult<R> {
    const statement = this.store.statement(query.sql);
    const parameters = query.parameters as unknown[];
    if (statement.reader) return { rows: statement.safeIntegers(true).all(...parameters) as R[] };
    const result = statement.run(...parameters);
    this.onWrite?.();
    return { rows: [], numAffectedRows: BigInt(result.changes), insertId: BigInt(result.lastInsertRowid) };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming queries are not used on SQLite");
  }
}

class SqliteDriver implements Driver {
  readonly #store: StoreDatabase;
  readonly #connection: SqliteConnection;
  /** Settles when the connection is free; acquireConnection chains onto it. */
  #free: Promise<void> = Promise.resolve();
  #release: (() => void) | undefined;
  /** Users holding or waiting for the connection (acquired and not yet released). */
  #users = 0;

  constructor(store: StoreDatabase, onWrite: (() => void) | undefined) {
    this.#store = store;
    this.#connection = new SqliteConnection(store, onWrite);
  }

  async init(): Promise<void> {}

  /**
   * Runs one statement at once when nobody holds or waits for the connection (no transaction is open on it), else
   * undefined (the caller goes through the queue). Nothing can come between: better-sqlite3 runs it to its end
   * before this returns, as an acquire → execute → release through the queue would with the connection free.
   */
  runNow<R>(query: CompiledQuery): QueryResult<R> | undefined {
    if (this.#users !== 0) return undefined;
    return this.#connection.run<R>(query);
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    this.#users++;
    const previous = this.#free;
    let release!: () => void;
    this.#free = new Promise<void>((resolve) => (release = resolve));
    await previous;
    this.#release = release;
    return this.#connection;
  }

  // BEGIN IMMEDIATE: the writer lock is taken at once (another process on the file waits busy_timeout for it).
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("BEGIN IMMEDIATE"));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("COMMIT"));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // Some failures (SQLITE_FULL, SQLITE_IOERR, …) end the transaction themselves: a ROLLBACK then would fail and
    // hide the error that matters.
    if (!this.#store.db.inTransaction) return;
    await connection.executeQuery(CompiledQuery.raw("ROLLBACK"));
  }

  async releaseConnection(): Promise<void> {
    const release = this.#release;
    this.#release = undefined;
    this.#users--;
    release?.();
  }

  async destroy(): Promise<void> {}
}

/**
 * A Kysely dialect over `store`'s connection (closing the store closes it; Kysely's destroy() does not). `onWrite` is
 * called after each statement that is not a read (the WAL checkpoint thread's wake-up, ./readers.ts).
 */
export function sqliteDialect(store: StoreDatabase, onWrite?: () => void): Dialect & { runNow<R>(query: CompiledQuery): QueryResult<R> | undefined } {
  const driver = new SqliteDriver(store, onWrite);
  return {
    runNow: (query) => driver.runNow(query),
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => driver,
    createIntrospector: (db: Kysely<unknown>) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}
