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

/** The audit log (src/storage/audit.ts). */
export interface AuditLogTable {
  /** Assigned by the database (SQLite AUTOINCREMENT, PostgreSQL identity): never written. */
  id: ColumnType<bigint | string, never, never>;
  /** Epoch ms. */
  at_ms: Int64;
  principal: string | null;
  credential_id: string | null;
  /** "jsonrpc" | "rest" (a CHECK constraint on both backends). */
  transport: string;
  line: string;
  method: string;
  task_id: string | null;
  context_id: string | null;
  session_id: string | null;
  /** "ok" | "error" (a CHECK constraint on both backends). */
  outcome: string;
  error_reason: string | null;
  /** HTTP status (SQLite INTEGER: bigint; PostgreSQL INTEGER: number). */
  status: ColumnType<bigint | number, number, number>;
  /** SQLite REAL, PostgreSQL DOUBLE PRECISION. */
  duration_ms: number;
  client_ip: string | null;
  trace_id: string | null;
  peer: string | null;
}

export interface SqlSchema {
  a2a_session_messages: SessionMessagesTable;
  a2a_subtask_calls: SubtaskCallsTable;
  a2a_audit_log: AuditLogTable;
}
