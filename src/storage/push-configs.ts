// Push notification configs per task: set (upsert by (taskId, id), keeping the original position), get, list in
// creation order, delete. Stored as JSON snapshots of the internal PushConfig. One Kysely implementation serves
// SQLite and PostgreSQL (the memory backend is the same store on an in-memory SQLite database).
import type { Kysely } from "kysely";
import type { PushConfig } from "../protocol/model.js";
import { storeCall } from "./sql/rows.js";
import { PreparedQuery } from "./sql/prepared.js";
import type { SqlSchema } from "./sql/schema.js";

export interface PushConfigStore {
  /** Insert or replace the config with this (taskId, id). */
  set(config: PushConfig): Promise<void>;
  get(taskId: string, id: string): Promise<PushConfig | undefined>;
  /** A task's configs in creation order. */
  list(taskId: string): Promise<PushConfig[]>;
  /** Whether the task has any config. */
  has(taskId: string): Promise<boolean>;
  delete(taskId: string, id: string): Promise<boolean>;
  /** Drop every config of a task. Returns how many. */
  deleteAll(taskId: string): Promise<number>;
}

const parse = (json: string): PushConfig => JSON.parse(json) as PushConfig;

/** list()'s read, run at every state change of a task (push delivery): a prepared query (./sql/prepared.ts). */
const listConfigs = new PreparedQuery<[taskId: string], { config_json: string }>((db, taskId) =>
  db.selectFrom("a2a_push_configs").select("config_json").where("task_id", "=", taskId).orderBy("rowid"),
);

/** The push config store of both SQL backends (SQLite and PostgreSQL), written once with Kysely. */
export class SqlPushConfigStore implements PushConfigStore {
  constructor(
    private readonly db: Kysely<SqlSchema>,
    private readonly now: () => number = Date.now,
  ) {}

  set(config: PushConfig): Promise<void> {
    return storeCall("pushConfigs.set", async () => {
      const now = BigInt(this.now());
      const configJson = JSON.stringify(config);
      // An upsert keeps the row, so its position (rowid) and created_at stay.
      await this.db
        .insertInto("a2a_push_configs")
        .values({ task_id: config.taskId, id: config.id, config_json: configJson, created_at: now, updated_at: now })
        .onConflict((oc) => oc.columns(["task_id", "id"]).doUpdateSet({ config_json: configJson, updated_at: now }))
        .execute();
    });
  }

  get(taskId: string, id: string): Promise<PushConfig | undefined> {
    return storeCall("pushConfigs.get", async () => {
      const row = await this.db.selectFrom("a2a_push_configs").select("config_json").where("task_id", "=", taskId).where("id", "=", id).executeTakeFirst();
      return row === undefined ? undefined : parse(row.config_json);
    });
  }

  list(taskId: string): Promise<PushConfig[]> {
    return storeCall("pushConfigs.list", async () => (await listConfigs.execute(this.db, taskId)).map((r) => parse(r.config_json)));
  }

  has(taskId: string): Promise<boolean> {
    return storeCall(
      "pushConfigs.has",
      async () => (await this.db.selectFrom("a2a_push_configs").select("task_id").where("task_id", "=", taskId).limit(1).executeTakeFirst()) !== undefined,
    );
  }

  delete(taskId: string, id: string): Promise<boolean> {
    return storeCall("pushConfigs.delete", async () => {
      const result = await this.db.deleteFrom("a2a_push_configs").where("task_id", "=", taskId).where("id", "=", id).executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  deleteAll(taskId: string): Promise<number> {
    return storeCall("pushConfigs.deleteAll", async () => {
      const result = await this.db.deleteFrom("a2a_push_configs").where("task_id", "=", taskId).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}
