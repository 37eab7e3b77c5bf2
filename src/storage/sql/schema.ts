// The tables of the stores written once with Kysely for SQLite and PostgreSQL (column types as each backend may
// return them: ./rows.ts reads them). The SQLite schema is made by src/storage/migrations.ts, the PostgreSQL schema by
// ./postgres-migrations.ts; both name tables and columns alike.
import type { ColumnType } from "kysely";

type Int64 = ColumnType<bigint | string, bigint, bigint>;
type Flag = ColumnType<bigint | number, number, number>;

export interface SessionMessagesTable {
  id: string;
  owner: string;
  created_at: Int64;
  updated_at: Int64;
  from_session: string | null;
  to_session: string | null;
  in_reply_to: string | null;
  await_reply: Flag;
  draft: Flag;
  buffered: Flag;
  accepted_at: ColumnType<bigint | string | null, bigint | null, bigint | null>;
  accepted_by: string | null;
  initial: string;
  message: string;
  delivered_at: ColumnType<bigint | string | null, bigint | null, bigint | null>;
}

export interface SubtaskCallsTable {
  call_id: string;
  owner: string;
  context_id: string;
  /** Epoch ms. */
  created_at: Int64;
  items_json: string;
}

/** The interrupt registry (src/storage/interrupts.ts); times are epoch ms. */
export interface InterruptRequestsTable {
  request_id: string;
  session_id: string;
  interrupt_type: string;
  owner: string;
  credential_id: string | null;
  task_id: string;
  context_id: string;
  details_json: string;
  routing_json: string;
  created_at: Int64;
  expires_at: Int64;
  tombstone_expires_at: Int64;
}

export interface SqlSchema {
  a2a_session_messages: SessionMessagesTable;
  a2a_subtask_calls: SubtaskCallsTable;
  a2a_interrupt_requests: InterruptRequestsTable;
}
