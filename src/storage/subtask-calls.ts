// Calls of opencode.subtasks.run: who made them, under which context, and what happened to each item (accepted with
// its task, rejected or failed with the error). Written once when the call is answered; the items' states are read
// from their tasks. One Kysely implementation serves SQLite and PostgreSQL; the memory backend keeps them in a map.
import type { Kysely } from "kysely";
import { storeUnavailable } from "./database.js";
import { int, storeCall } from "./sql/rows.js";
import type { SqlSchema } from "./sql/schema.js";

export interface SubtaskCallItem {
  client_id: string;
  status: "accepted" | "rejected" | "failed";
  task_id?: string;
  parallel_group?: string;
  error?: { reason: string; code: number; message: string; field?: string };
}

export interface SubtaskCallRecord {
  call_id: string;
  owner: string;
  context_id: string;
  /** Epoch ms. */
  created_at: number;
  items: SubtaskCallItem[];
}

export interface SubtaskCallStore {
  create(call: SubtaskCallRecord): Promise<void>;
  get(callId: string): Promise<SubtaskCallRecord | undefined>;
}

export class MemorySubtaskCallStore implements SubtaskCallStore {
  readonly #calls = new Map<string, string>();

  async create(call: SubtaskCallRecord): Promise<void> {
    // As the SQL stores: a taken id is a store failure (ids are fresh UUIDs; it never happens in use).
    if (this.#calls.has(call.call_id)) throw storeUnavailable("subtaskCalls.create", new Error(`call ${call.call_id} exists`));
    this.#calls.set(call.call_id, JSON.stringify(call));
  }

  async get(callId: string): Promise<SubtaskCallRecord | undefined> {
    const json = this.#calls.get(callId);
    return json === undefined ? undefined : (JSON.parse(json) as SubtaskCallRecord);
  }
}

/** The subtask call store of both SQL backends (SQLite and PostgreSQL), written once with Kysely. */
export class SqlSubtaskCallStore implements SubtaskCallStore {
  constructor(private readonly db: Kysely<SqlSchema>) {}

  create(call: SubtaskCallRecord): Promise<void> {
    return storeCall("subtaskCalls.create", async () => {
      await this.db
        .insertInto("a2a_subtask_calls")
        .values({ call_id: call.call_id, owner: call.owner, context_id: call.context_id, created_at: BigInt(call.created_at), items_json: JSON.stringify(call.items) })
        .execute();
    });
  }

  get(callId: string): Promise<SubtaskCallRecord | undefined> {
    return storeCall("subtaskCalls.get", async () => {
      const row = await this.db.selectFrom("a2a_subtask_calls").selectAll().where("call_id", "=", callId).executeTakeFirst();
      if (row === undefined) return undefined;
      return { call_id: row.call_id, owner: row.owner, context_id: row.context_id, created_at: int(row.created_at), items: JSON.parse(row.items_json) as SubtaskCallItem[] };
    });
  }
}
