// The task store in SQLite (a2a_tasks), with a bounded read cache for GetTask; the contract is in src/storage/tasks.ts.
import crypto from "node:crypto";
import { DEFAULT_TASK_CACHE_SIZE } from "../config/store-url.js";
import type { ListParams, Task, TaskState } from "../protocol/model.js";
import type { StoreDatabase } from "./database.js";
import { canonicalTimestamp, deepFreeze, invalid, page, PageTokens, resolveListQuery, serialize, TERMINAL, type SaveResult, type StoredTask, type StoredTaskView, type TaskExtra, type TaskListResult, type TaskStore } from "./task-records.js";

interface SqlRow {
  id: string;
  owner: string;
  task_json: string;
  session_id: string | null;
  directory: string | null;
  accepted_output_modes: string | null;
  created_at: string;
  updated_at: string;
}

const TERMINAL_SQL = TERMINAL.map((s) => `'${s}'`).join(", ");

export interface SqliteTaskStoreOptions {
  /**
   * Read cache (A2A_TASK_STORE_CACHE_SIZE): how many tasks view() keeps parsed and frozen, least recently read
   * dropped first; 0 = off. Default DEFAULT_TASK_CACHE_SIZE.
   */
  cacheSize?: number;
}


/**
 * Tasks in a2a_tasks: indexed columns (state, context_id, owner, status_timestamp) next to the JSON snapshot.
 *
 * view() (GetTask) is served from a bounded read cache of parsed, deeply frozen snapshots. It stays exact:
 *   - a save through this store drops the task's entry before it writes;
 *   - every read first asks SQLite for `PRAGMA data_version`, which changes when another connection (another
 *     process on the same file, a repair by hand) commits; the whole cache is dropped then. The same query fails
 *     like any other read when the database is unusable, so a cached task is never served from a broken store;
 *   - nothing read inside a transaction is cached (it may yet be rolled back).
 */
export class SqliteTaskStore implements TaskStore {
  private readonly tokens: PageTokens;
  readonly #views = new Map<string, StoredTaskView>();
  readonly #cacheSize: number;
  #dataVersion = -1;

  constructor(
    private readonly store: StoreDatabase,
    options: SqliteTaskStoreOptions = {},
  ) {
    this.#cacheSize = options.cacheSize ?? DEFAULT_TASK_CACHE_SIZE;
    this.tokens = new PageTokens(
      store.transaction("tasks.open", () => {
        store
          .statement("INSERT OR IGNORE INTO a2a_store_meta (key, value) VALUES ('page_token_key', ?)")
          .run(crypto.randomBytes(32).toString("hex"));
        const row = store.statement("SELECT value FROM a2a_store_meta WHERE key = 'page_token_key'").get() as { value: string };
        return Buffer.from(row.value, "hex");
      }),
    );
  }

  create(task: Task, owner: string, extra: TaskExtra = {}): void {
    this.store.guard("tasks.create", () => {
      const stamp = new Date().toISOString();
      const result = this.store
        .statement(
          `INSERT INTO a2a_tasks (id, context_id, owner, state, status_timestamp, session_id, directory,
             accepted_output_modes, task_json, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
        )
        .run(
          task.id,
          task.contextId,
          owner,
          task.status.state,
          canonicalTimestamp(task.status.timestamp),
          extra.sessionId ?? null,
          extra.directory ?? null,
          extra.acceptedOutputModes === undefined ? null : JSON.stringify(extra.acceptedOutputModes),
          serialize(task),
          stamp,
          stamp,
        );
      if (result.changes === 0) throw invalid("id", `task ${task.id} already exists`);
    });
  }

  get(id: string): StoredTask | undefined {
    return this.store.guard("tasks.get", () => {
      const row = this.store
        .statement(
          "SELECT id, owner, task_json, session_id, directory, accepted_output_modes, created_at, updated_at FROM a2a_tasks WHERE id = ?",
        )
        .get(id) as SqlRow | undefined;
      if (row === undefined) return undefined;
      const out: StoredTask = { task: JSON.parse(row.task_json) as Task, owner: row.owner, createdAt: row.created_at, updatedAt: row.updated_at };
      if (row.accepted_output_modes !== null) out.acceptedOutputModes = JSON.parse(row.accepted_output_modes) as string[];
      if (row.session_id !== null) out.sessionId = row.session_id;
      if (row.directory !== null) out.directory = row.directory;
      return out;
    });
  }

  view(id: string): StoredTaskView | undefined {
    return this.store.guard("tasks.view", () => {
      const caching = this.#cacheSize > 0;
      if (caching) {
        const version = this.store.statement("PRAGMA data_version").pluck().get() as number;
        if (version !== this.#dataVersion) {
          this.#views.clear();
          this.#dataVersion = version;
        }
        const hit = this.#views.get(id);
        if (hit !== undefined) {
          // Most recently read last: the first key is the one to drop.
          this.#views.delete(id);
          this.#views.set(id, hit);
          return hit;
        }
      }
      // Only what a read needs: no binding columns to fetch and decode.
      const row = this.store.statement("SELECT owner, task_json FROM a2a_tasks WHERE id = ?").get(id) as
        | { owner: string; task_json: string }
        | undefined;
      if (row === undefined) return undefined;
      const view: StoredTaskView = { task: JSON.parse(row.task_json) as Task, owner: row.owner };
      if (caching && !this.store.db.inTransaction) {
        deepFreeze(view.task);
        this.#views.set(id, view);
        if (this.#views.size > this.#cacheSize) this.#views.delete(this.#views.keys().next().value!);
      }
      return view;
    });
  }

  /** Tasks view() holds parsed (for tests). */
  get cachedViews(): number {
    return this.#views.size;
  }

  save(task: Task): SaveResult {
    this.#views.delete(task.id);
    return this.store.guard("tasks.save", () => {
      // The terminal guard is the WHERE clause itself: atomic against any other writer.
      const result = this.store
        .statement(
          `UPDATE a2a_tasks SET task_json = ?, state = ?, status_timestamp = ?, context_id = ?, updated_at = ?
           WHERE id = ? AND state NOT IN (${TERMINAL_SQL})`,
        )
        .run(serialize(task), task.status.state, canonicalTimestamp(task.status.timestamp), task.contextId, new Date().toISOString(), task.id);
      if (result.changes === 1) return { applied: true } as const;
      const row = this.store.statement("SELECT state FROM a2a_tasks WHERE id = ?").get(task.id) as { state: TaskState } | undefined;
      return row === undefined ? ({ applied: false, reason: "not_found" } as const) : ({ applied: false, reason: "terminal", state: row.state } as const);
    });
  }

  updateExtra(id: string, extra: TaskExtra): boolean {
    return this.store.guard("tasks.updateExtra", () => {
      const result = this.store
        .statement(
          `UPDATE a2a_tasks SET
             session_id = CASE WHEN ? THEN ? ELSE session_id END,
             directory = CASE WHEN ? THEN ? ELSE directory END,
             accepted_output_modes = CASE WHEN ? THEN ? ELSE accepted_output_modes END
           WHERE id = ?`,
        )
        .run(
          extra.sessionId !== undefined ? 1 : 0,
          extra.sessionId ?? null,
          extra.directory !== undefined ? 1 : 0,
          extra.directory ?? null,
          extra.acceptedOutputModes !== undefined ? 1 : 0,
          extra.acceptedOutputModes === undefined ? null : JSON.stringify(extra.acceptedOutputModes),
          id,
        );
      return result.changes === 1;
    });
  }

  list(owner: string | undefined, params: ListParams = {}): TaskListResult {
    const q = resolveListQuery(owner, params, this.tokens);
    return this.store.guard("tasks.list", () => {
      const where: string[] = [];
      const args: unknown[] = [];
      const filters: [string, unknown][] = [
        ["owner = ?", q.owner],
        ["context_id = ?", q.contextId],
        ["state = ?", q.state],
        ["status_timestamp > ?", q.after],
      ];
      for (const [clause, value] of filters) {
        if (value === undefined) continue;
        where.push(clause);
        args.push(value);
      }
      const filter = where.length === 0 ? "" : `WHERE ${where.join(" AND ")}`;
      const total = (this.store.statement(`SELECT COUNT(*) AS n FROM a2a_tasks ${filter}`).get(...args) as { n: number }).n;
      const pageWhere = [...where];
      const pageArgs = [...args];
      if (q.cursor !== undefined) {
        pageWhere.push("(status_timestamp < ? OR (status_timestamp = ? AND id > ?))");
        pageArgs.push(q.cursor.ts, q.cursor.ts, q.cursor.id);
      }
      const sql =
        `SELECT id, status_timestamp AS ts, task_json AS json FROM a2a_tasks ` +
        `${pageWhere.length === 0 ? "" : `WHERE ${pageWhere.join(" AND ")}`} ` +
        `ORDER BY status_timestamp DESC, id ASC LIMIT ? OFFSET ?`;
      const rows = this.store.statement(sql).all(...pageArgs, q.pageSize + 1, q.offset) as { id: string; ts: string; json: string }[];
      return page(q, rows, total, this.tokens);
    });
  }

  count(): number {
    return this.store.guard("tasks.count", () => (this.store.statement("SELECT COUNT(*) AS n FROM a2a_tasks").get() as { n: number }).n);
  }
}
