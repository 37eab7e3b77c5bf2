// The reads of a2a_tasks that the table's size could make slow, written so that it does not: ListTasks pages, their
// totals, count(), and the restart sweep (TaskStore.orphans). The indexes and counts they read are in
// ./sql/task-listing-ddl.ts.
//   - A page reads the index of its filter set in list order from its start (or from the page token's position:
//     keyset) and stops after pageSize + 1 rows. 0.3's `offset` skips index entries (no row is read for them).
//   - A total is a sum over a2a_task_counts (kept by triggers); only a total under statusTimestampAfter counts, and
//     then only the index entries after that time.
//   - On SQLite every query names its index (INDEXED BY): the plan cannot fall back to a scan of the table as the
//     statistics change, and a query no index serves fails instead of scanning. PostgreSQL plans with its statistics.
//   - On a SQLite file the page and its total run together, on a reader thread (./sql/readers.ts), in one snapshot.
//     On PostgreSQL the total is a column of the page's query: one round trip, one snapshot.
//   - A row listed more than once is kept parsed (and its encodings with it) while its text stays the same
//     (./listed-rows.ts).
import { sql, type CompiledQuery, type Kysely, type SelectQueryBuilder } from "kysely";
import type { ListedRows } from "./listed-rows.js";
import type { SqliteReaders } from "./sql/readers.js";
import { int } from "./sql/rows.js";
import type { SqlSchema } from "./sql/schema.js";
import { UNFINISHED_CONDITION } from "./sql/task-listing-ddl.js";
import { page, type ListQuery, type OrphanScope, type PageTokens, type TaskListResult } from "./task-records.js";

export type SqlDialectName = "sqlite" | "postgres";

/** Where a store's growing reads run: SQLite names its indexes; a SQLite file has reader threads. */
export interface GrowingReads {
  dialect: SqlDialectName;
  readers?: SqliteReaders;
  /** The listed tasks kept parsed (./listed-rows.ts); without it every row is parsed. */
  listed?: ListedRows;
}

type TaskQuery<O> = SelectQueryBuilder<SqlSchema, "a2a_tasks", O>;

/** The index a listing's filter set reads (see ./sql/task-listing-ddl.ts). */
export function listingIndex(q: Pick<ListQuery, "owner" | "contextId" | "state">): string {
  if (q.owner !== undefined) return q.contextId !== undefined ? "a2a_tasks_owner_context_ts" : q.state !== undefined ? "a2a_tasks_owner_state_ts" : "a2a_tasks_owner_ts";
  return q.contextId !== undefined ? "a2a_tasks_context_ts" : q.state !== undefined ? "a2a_tasks_state_ts" : "a2a_tasks_ts";
}

/** `compiled` with SQLite's INDEXED BY after its one `from` clause (`from` exactly as compiled). */
function indexedBy<R>(compiled: CompiledQuery<R>, from: string, index: string, dialect: SqlDialectName): CompiledQuery<R> {
  if (dialect !== "sqlite") return compiled;
  const at = compiled.sql.indexOf(from);
  if (at < 0 || compiled.sql.indexOf(from, at + 1) >= 0) throw new Error(`cannot name the index of: ${compiled.sql}`);
  const end = at + from.length;
  return { ...compiled, sql: `${compiled.sql.slice(0, end)} indexed by "${index}"${compiled.sql.slice(end)}` };
}

function filtered<O>(rows: TaskQuery<O>, q: ListQuery): TaskQuery<O> {
  let out = rows;
  if (q.owner !== undefined) out = out.where("owner", "=", q.owner);
  if (q.contextId !== undefined) out = out.where("context_id", "=", q.contextId);
  if (q.state !== undefined) out = out.where("state", "=", q.state);
  if (q.after !== undefined) out = out.where("status_timestamp", ">", q.after);
  return out;
}

/** Runs `queries` where growing reads run: a reader thread (one snapshot), else the store's own connection. */
async function read(db: Kysely<SqlSchema>, reads: GrowingReads, inTransaction: boolean, queries: CompiledQuery[]): Promise<unknown[][]> {
  // Inside a transaction only its own connection sees what it wrote.
  if (reads.readers !== undefined && !inTransaction) return reads.readers.run(queries);
  const out: unknown[][] = [];
  for (const query of queries) out.push((await db.executeQuery(query)).rows);
  return out;
}

type Total = SelectQueryBuilder<SqlSchema, "a2a_tasks" | "a2a_task_counts", { n: number | string | bigint }>;

const countsOf = (db: Kysely<SqlSchema>, kind: number, owner: string, contextId: string, state: string | undefined): Total => {
  let q = db
    .selectFrom("a2a_task_counts")
    .select(sql<number | string | bigint>`COALESCE(SUM(n), 0)`.as("n"))
    .where("kind", "=", kind)
    .where("owner", "=", owner)
    .where("context_id", "=", contextId);
  if (state !== undefined) q = q.where("state", "=", state);
  return q as Total;
};

/** The queries of a listing, each compiled when first read: listTasks runs `page` and `total`, or on PostgreSQL the page
 * with the total as a column of each row (`pageWithTotal`: one round trip and one snapshot instead of two); tests read
 * their plans. */
export interface ListingQueries {
  readonly page: CompiledQuery;
  readonly total: CompiledQuery;
  /** PostgreSQL only. */
  readonly pageWithTotal?: CompiledQuery;
}

export function listingQueries(db: Kysely<SqlSchema>, dialect: SqlDialectName, q: ListQuery): ListingQueries {
  const index = listingIndex(q);
  const from = 'from "a2a_tasks"';
  let rows = filtered(db.selectFrom("a2a_tasks").select(["id", "status_timestamp as ts", "task_json as json"]), q);
  const cursor = q.cursor;
  if (cursor !== undefined) {
    // The bound on status_timestamp alone starts the index range at the cursor; the OR then skips what it shows.
    rows = rows
      .where("status_timestamp", "<=", cursor.ts)
      .where((eb) => eb.or([eb("status_timestamp", "<", cursor.ts), eb("id", ">", cursor.id)]));
  }
  let ordered = rows.orderBy("status_timestamp", "desc").orderBy("id", "asc").limit(q.pageSize + 1);
  if (q.offset > 0) ordered = ordered.offset(q.offset);
  const total: Total =
    q.after === undefined
      ? countsOf(db, q.owner === undefined ? (q.contextId === undefined ? 0 : 2) : q.contextId === undefined ? 1 : 3, q.owner ?? "", q.contextId ?? "", q.state)
      : (filtered(db.selectFrom("a2a_tasks").select(sql<number | string | bigint>`COUNT(*)`.as("n")), q) as Total);
  return {
    get page() {
      return indexedBy(ordered.compile(), from, index, dialect);
    },
    get total() {
      return q.after === undefined ? total.compile() : indexedBy(total.compile(), from, index, dialect);
    },
    get pageWithTotal() {
      return dialect === "postgres" ? ordered.select(total.as("total")).compile() : undefined;
    },
  };
}

type PageRow = { id: string; ts: string; json: string };

/** One page of a listing and its total. */
export async function listTasks(db: Kysely<SqlSchema>, reads: GrowingReads, inTransaction: boolean, q: ListQuery, tokens: PageTokens): Promise<TaskListResult> {
  const queries = listingQueries(db, reads.dialect, q);
  let rows: PageRow[];
  let total: number;
  const pageWithTotal = queries.pageWithTotal;
  if (pageWithTotal !== undefined) {
    // The total rides on the page's rows; an empty page (past the end, or nothing matches) asks for it on its own.
    const found = (await db.executeQuery(pageWithTotal)).rows as (PageRow & { total: number | string | bigint })[];
    rows = found;
    total = found.length > 0 ? int(found[0]!.total) : int(((await db.executeQuery(queries.total)).rows[0] as { n: number | string | bigint }).n);
  } else {
    const [found, counted] = await read(db, reads, inTransaction, [queries.page, queries.total]);
    rows = found as PageRow[];
    total = int((counted![0] as { n: number | string | bigint }).n);
  }
  const listed = reads.listed;
  return page(q, rows, total, tokens, listed?.task.bind(listed));
}

/** Every task (the all-tasks counts). */
export async function countTasks(db: Kysely<SqlSchema>, reads: GrowingReads, inTransaction: boolean): Promise<number> {
  const [rows] = await read(db, reads, inTransaction, [countsOf(db, 0, "", "", undefined).compile()]);
  return int((rows![0] as { n: number | string | bigint }).n);
}

/** Up to `limit` unfinished tasks no live gateway runs, by id, from the index of unfinished tasks only. */
export async function orphanTasks(db: Kysely<SqlSchema>, reads: GrowingReads, scope: OrphanScope | undefined, limit: number): Promise<string[]> {
  return (await db.executeQuery<{ task_json: string }>(orphansQuery(db, reads.dialect, scope, limit))).rows.map((row) => row.task_json);
}

/** The sweep's query (tests read its plan). */
export function orphansQuery(db: Kysely<SqlSchema>, dialect: SqlDialectName, scope: OrphanScope | undefined, limit: number): CompiledQuery<{ task_json: string }> {
  // The condition is the partial index's own text: SQLite uses such an index only for a query that states it.
  let q = db.selectFrom("a2a_tasks as t").select("t.task_json").where(sql<boolean>`${sql.raw(`t.${UNFINISHED_CONDITION}`)}`);
  if (scope !== undefined) {
    // Alive is decided now, by the database's clock (PostgreSQL: a2a_instances, a2a_now_ms()).
    q = q.where((eb) =>
      eb.or([
        eb("t.instance", "is", null),
        ...(scope.stale === undefined ? [] : [eb("t.instance", "=", scope.stale)]),
        eb.not(
          eb.exists(
            eb
              .selectFrom("a2a_instances as i")
              .select("i.id")
              .whereRef("i.id", "=", "t.instance")
              .where("i.lease_until", ">=", sql<bigint>`a2a_now_ms()`),
          ),
        ),
      ]),
    );
  }
  return indexedBy(q.orderBy("t.id").limit(limit).compile(), 'from "a2a_tasks" as "t"', "a2a_tasks_unfinished", dialect);
}
