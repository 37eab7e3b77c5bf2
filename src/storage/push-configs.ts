// Push notification configs per task: set (upsert by (taskId, id), keeping the original position), get, list in
// creation order, delete. Stored as JSON snapshots of the internal PushConfig; SQLite and in-memory alike.
import type { PushConfig } from "../protocol/model.js";
import type { StoreDatabase } from "./database.js";

export interface PushConfigStore {
  /** Insert or replace the config with this (taskId, id). */
  set(config: PushConfig): void;
  get(taskId: string, id: string): PushConfig | undefined;
  /** A task's configs in creation order. */
  list(taskId: string): PushConfig[];
  /** Whether the task has any config. */
  has(taskId: string): boolean;
  delete(taskId: string, id: string): boolean;
  /** Drop every config of a task. Returns how many. */
  deleteAll(taskId: string): number;
}

const parse = (json: string): PushConfig => JSON.parse(json) as PushConfig;

export class MemoryPushConfigStore implements PushConfigStore {
  private readonly byTask = new Map<string, Map<string, string>>();

  set(config: PushConfig): void {
    let configs = this.byTask.get(config.taskId);
    if (configs === undefined) this.byTask.set(config.taskId, (configs = new Map()));
    configs.set(config.id, JSON.stringify(config));
  }

  get(taskId: string, id: string): PushConfig | undefined {
    const json = this.byTask.get(taskId)?.get(id);
    return json === undefined ? undefined : parse(json);
  }

  list(taskId: string): PushConfig[] {
    return [...(this.byTask.get(taskId)?.values() ?? [])].map(parse);
  }

  has(taskId: string): boolean {
    return this.byTask.has(taskId);
  }

  delete(taskId: string, id: string): boolean {
    const configs = this.byTask.get(taskId);
    if (configs === undefined || !configs.delete(id)) return false;
    if (configs.size === 0) this.byTask.delete(taskId);
    return true;
  }

  deleteAll(taskId: string): number {
    const n = this.byTask.get(taskId)?.size ?? 0;
    this.byTask.delete(taskId);
    return n;
  }
}

export class SqlitePushConfigStore implements PushConfigStore {
  constructor(
    private readonly store: StoreDatabase,
    private readonly now: () => number = Date.now,
  ) {}

  set(config: PushConfig): void {
    this.store.guard("pushConfigs.set", () => {
      const now = this.now();
      this.store
        .statement(
          `INSERT INTO a2a_push_configs (task_id, id, config_json, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (task_id, id) DO UPDATE SET config_json = excluded.config_json, updated_at = excluded.updated_at`,
        )
        .run(config.taskId, config.id, JSON.stringify(config), now, now);
    });
  }

  get(taskId: string, id: string): PushConfig | undefined {
    return this.store.guard("pushConfigs.get", () => {
      const row = this.store.statement("SELECT config_json FROM a2a_push_configs WHERE task_id = ? AND id = ?").get(taskId, id) as
        | { config_json: string }
        | undefined;
      return row === undefined ? undefined : parse(row.config_json);
    });
  }

  list(taskId: string): PushConfig[] {
    return this.store.guard("pushConfigs.list", () =>
      (this.store.statement("SELECT config_json FROM a2a_push_configs WHERE task_id = ? ORDER BY rowid").all(taskId) as { config_json: string }[]).map(
        (r) => parse(r.config_json),
      ),
    );
  }

  has(taskId: string): boolean {
    return this.store.guard("pushConfigs.has", () => this.store.statement("SELECT 1 FROM a2a_push_configs WHERE task_id = ? LIMIT 1").get(taskId) !== undefined);
  }

  delete(taskId: string, id: string): boolean {
    return this.store.guard(
      "pushConfigs.delete",
      () => this.store.statement("DELETE FROM a2a_push_configs WHERE task_id = ? AND id = ?").run(taskId, id).changes > 0,
    );
  }

  deleteAll(taskId: string): number {
    return this.store.guard("pushConfigs.deleteAll", () => this.store.statement("DELETE FROM a2a_push_configs WHERE task_id = ?").run(taskId).changes);
  }
}
