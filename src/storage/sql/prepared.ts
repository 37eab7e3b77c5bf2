// Hot queries (GetTask's task row and governance summary, a turn's task writes, push config and session lookups, audit
// inserts) as queries built and compiled once per dialect. Kysely builds an operation tree and compiles it to SQL on
// every call: for a one-row read that is most of the call's CPU (a profile of GetTask on SQLite put Kysely's builders
// and compiler at ~70 µs of ~400 µs per request). A prepared query is a module-level constant; the first call on a
// database builds it with placeholder arguments and compiles it with that database's dialect, and each later call on
// the same dialect (the store's root instance and every one of its transactions share the adapter) only swaps the
// arguments into the compiled parameter list and runs it through the same Kysely executor (connection, transaction and
// driver as any other query). One implementation for SQLite and PostgreSQL.
import type { Compilable, CompiledQuery, Kysely, QueryResult } from "kysely";
import type { SqlSchema } from "./schema.js";

/** A placeholder argument: a string nothing else binds, found again in the compiled parameters. */
const marker = (i: number): string => `\u0000opencode-a2a prepared argument ${i}\u0000`;

/**
 * A database that can run a compiled query at once, bypassing Kysely's executor (its connection provider, a few
 * awaits: most of a one-row SQLite read): the SQLite connection when no transaction holds it (./sqlite-dialect.ts).
 * Registered for the store's root Kysely instance only; a transaction's instance always goes through Kysely.
 */
const direct = new WeakMap<object, <R>(query: CompiledQuery) => QueryResult<R> | undefined>();

export function runsDirectly(db: Kysely<SqlSchema>, runNow: <R>(query: CompiledQuery) => QueryResult<R> | undefined): void {
  direct.set(db, runNow);
}

/** A query compiled for one dialect, and for each of its parameters the argument it takes (-1: a constant). */
interface Compiled<R> {
  query: CompiledQuery<R>;
  slots: number[];
}

/** Arguments are strings (placeholders while building); a value bound in `values()` or `set()` may also be null. */
export class PreparedQuery<A extends (string | null)[], R> {
  /**
   * Compiled forms by dialect adapter: a Kysely instance and all its transactions share one, so a process compiles each
   * query once per database it opens (a gateway opens one). A Kysely instance with plugins of its own would share its
   * adapter too and could compile differently: the stores use none, and run() refuses an instance that has any.
   */
  readonly #forms = new WeakMap<object, Compiled<R>>();
  /** The last adapter used and its form: a process nearly always runs one backend. */
  #lastAdapter: object | undefined;
  #last: Compiled<R> | undefined;

  /** `build` must use each argument as a bound value only (a `where(col, "=", arg)`, a value to insert, …). */
  constructor(private readonly build: (db: Kysely<SqlSchema>, ...args: A) => Compilable<R>) {}

  /** Runs the query with `args` on `db` (a store's Kysely instance or one of its transactions). */
  async execute(db: Kysely<SqlSchema>, ...args: A): Promise<R[]> {
    return (await this.run(db, ...args)).rows;
  }

  /** As execute(), with the whole result (`numAffectedRows` of a write). */
  async run(db: Kysely<SqlSchema>, ...args: A): Promise<QueryResult<R>> {
    const executor = db.getExecutor();
    if (executor.plugins.length > 0) {
      throw new Error(`prepared query: the Kysely instance has plugins (${executor.plugins.map((p) => p.constructor.name).join(", ")}); a compiled form is shared by every instance on its dialect`);
    }
    const adapter = executor.adapter;
    let form = adapter === this.#lastAdapter ? this.#last : this.#forms.get(adapter);
    if (form === undefined) {
      form = this.#compile(db, args.length);
      this.#forms.set(adapter, form);
    }
    this.#lastAdapter = adapter;
    this.#last = form;
    const { query: compiled, slots } = form;
    const parameters = slots.map((slot, i) => (slot < 0 ? compiled.parameters[i] : args[slot]));
    const query: CompiledQuery<R> = { ...compiled, parameters };
    return direct.get(db)?.<R>(query) ?? (await db.executeQuery<R>(query));
  }

  #compile(db: Kysely<SqlSchema>, arity: number): Compiled<R> {
    const markers = Array.from({ length: arity }, (_, i) => marker(i));
    const query = this.build(db, ...(markers as A)).compile();
    // By a map, not markers.indexOf per parameter: the audit log's 512-row INSERT has 8,192 of each, and the quadratic
    // search cost about a second of CPU per statement size.
    const index = new Map(markers.map((m, i) => [m, i]));
    const slots = query.parameters.map((p) => (typeof p === "string" ? (index.get(p) ?? -1) : -1));
    const bound = new Set(slots);
    for (let i = 0; i < arity; i++) {
      if (!bound.has(i)) throw new Error(`prepared query: argument ${i} is not a bound parameter of ${query.sql}`);
    }
    return { query, slots };
  }
}
