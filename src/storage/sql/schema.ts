// The tables of the stores written once with Kysely for SQLite and PostgreSQL (column types as each backend may
// return them: ./rows.ts reads them). The SQLite schema is made by src/storage/migrations.ts, the PostgreSQL schema by
// ./postgres-migrations.ts; both name tables and columns alike.
import type { ColumnType, Generated } from "kysely";

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

export interface GovernanceTrailTable {
  /** Insertion order (SQLite AUTOINCREMENT, PostgreSQL identity): the trail is read by it. */
  id: Generated<bigint | string>;
  task_id: string;
  owner: string;
  kind: "decision" | "feedback";
  /** A decision's request (unique among decisions); NULL for feedback. */
  request_id: string | null;
  /** A decision's source, a feedback round's most severe status. */
  source: string | null;
  entry_json: string;
  /** Epoch ms. */
  created_at: Int64;
}

export interface SqlSchema {
  a2a_session_messages: SessionMessagesTable;
  a2a_subtask_calls: SubtaskCallsTable;
  a2a_governance_trail: GovernanceTrailTable;
}
