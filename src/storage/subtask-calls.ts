// Calls of opencode.subtasks.run: who made them, under which context, and what happened to each item (accepted with
// its task, rejected or failed with the error). Written once when the call is answered; the items' states are read
// from their tasks. SQLite and in-memory alike.
import type { StoreDatabase } from "./database.js";

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
  create(call: SubtaskCallRecord): void;
  get(callId: string): SubtaskCallRecord | undefined;
}

export class MemorySubtaskCallStore implements SubtaskCallStore {
  readonly #calls = new Map<string, string>();

  create(call: SubtaskCallRecord): void {
    this.#calls.set(call.call_id, JSON.stringify(call));
  }

  get(callId: string): SubtaskCallRecord | undefined {
    const json = this.#calls.get(callId);
    return json === undefined ? undefined : (JSON.parse(json) as SubtaskCallRecord);
  }
}

export class SqliteSubtaskCallStore implements SubtaskCallStore {
  constructor(private readonly store: StoreDatabase) {}

  create(call: SubtaskCallRecord): void {
    this.store.guard("subtaskCalls.create", () => {
      this.store
        .statement("INSERT INTO a2a_subtask_calls (call_id, owner, context_id, created_at, items_json) VALUES (?, ?, ?, ?, ?)")
        .run(call.call_id, call.owner, call.context_id, call.created_at, JSON.stringify(call.items));
    });
  }

  get(callId: string): SubtaskCallRecord | undefined {
    return this.store.guard("subtaskCalls.get", () => {
      const row = this.store.statement("SELECT call_id, owner, context_id, created_at, items_json FROM a2a_subtask_calls WHERE call_id = ?").get(callId) as
        | { call_id: string; owner: string; context_id: string; created_at: number; items_json: string }
        | undefined;
      if (row === undefined) return undefined;
      return { call_id: row.call_id, owner: row.owner, context_id: row.context_id, created_at: row.created_at, items: JSON.parse(row.items_json) as SubtaskCallItem[] };
    });
  }
}
