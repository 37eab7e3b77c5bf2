// The tables of the stores written once with Kysely for SQLite and PostgreSQL (column types as each backend may
// return them: ./rows.ts reads them). The SQLite schema is made by src/storage/migrations.ts, the PostgreSQL schema by
// ./postgres-migrations.ts; both name tables and columns alike.
import type { ColumnType, Generated } from "kysely";

type Int64 = ColumnType<bigint | string, bigint, bigint>;
type Flag = ColumnType<bigint | number, number, number>;
type NullableInt64 = ColumnType<bigint | string | null, bigint | null, bigint | null>;

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

export interface SessionBindingsTable {
  owner: string;
  context_id: string;
  scope_key: string;
  session_id: string;
  /** Epoch ms. */
  updated_at: Int64;
}

export interface SessionOwnersTable {
  session_id: string;
  owner: string;
  /** Epoch ms. */
  created_at: Int64;
}

export interface PendingSessionClaimsTable {
  session_id: string;
  owner: string;
  /** Epoch ms. */
  updated_at: Int64;
  /** Epoch ms; the claim is live while expires_at > now. */
  expires_at: Int64;
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

export interface PushConfigsTable {
  task_id: string;
  id: string;
  config_json: string;
  /** Epoch ms. */
  created_at: Int64;
  updated_at: Int64;
  /**
   * The creation order of the configs: SQLite's implicit rowid (kept by an upsert), on PostgreSQL an identity column
   * of that name (kept by ON CONFLICT … DO UPDATE). Never written.
   */
  rowid: ColumnType<bigint | string, never, never>;
}

export interface PushOutboxTable {
  /** Grows in enqueue order (SQLite AUTOINCREMENT, PostgreSQL identity): the order within a queue. */
  id: ColumnType<bigint | string, never, never>;
  task_id: string;
  config_id: string;
  body: string;
  content_type: string;
  attempts: ColumnType<bigint | number, number, number>;
  /** Epoch ms. */
  next_attempt_at: Int64;
  created_at: Int64;
  last_error: string | null;
  traceparent: string | null;
  tracestate: string | null;
  held_until: NullableInt64;
  coalesce_key: string | null;
}

export interface TasksTable {
  id: string;
  context_id: string;
  owner: string;
  state: string;
  /** Canonical ISO 8601 UTC with milliseconds (sorts as text). */
  status_timestamp: string;
  session_id: string | null;
  directory: string | null;
  /** JSON array of media types. */
  accepted_output_modes: string | null;
  task_json: string;
  /** ISO 8601. */
  created_at: string;
  updated_at: string;
  /** The gateway instance running the task's turn (src/cluster); null for tasks from before instances. */
  instance: ColumnType<string | null, string | null | undefined, string | null>;
}

/** PostgreSQL only: one row per running gateway (src/cluster/leases.ts). */
export interface InstancesTable {
  id: string;
  /** Epoch ms. */
  started_at: Int64;
  /** Epoch ms; the instance is alive while lease_until >= now. */
  lease_until: Int64;
  /** JSON: host, pid, version (for operators). */
  info: string;
}

/** PostgreSQL only: a message between gateways too large for a NOTIFY payload (src/cluster/bus.ts). */
export interface BusPayloadsTable {
  id: Generated<Int64>;
  body: string;
  /** Epoch ms. */
  created_at: Int64;
}

/** Task counts per state for ListTasks totals (./task-listing-ddl.ts): kept by triggers, never written by the stores. */
export interface TaskCountsTable {
  /** 0 all tasks, 1 per owner, 2 per context, 3 per owner and context ('' in the unused key parts). */
  kind: number;
  owner: string;
  context_id: string;
  state: string;
  /** PostgreSQL: 0–15 by the task id's hash (less waiting between gateways); SQLite: 0. */
  shard: number;
  n: ColumnType<bigint | number | string, never, never>;
}

export interface StoreMetaTable {
  key: string;
  value: string;
}

export interface SqlSchema {
  a2a_session_messages: SessionMessagesTable;
  a2a_subtask_calls: SubtaskCallsTable;
  a2a_session_bindings: SessionBindingsTable;
  a2a_session_owners: SessionOwnersTable;
  a2a_pending_session_claims: PendingSessionClaimsTable;
  a2a_interrupt_requests: InterruptRequestsTable;
  a2a_governance_trail: GovernanceTrailTable;
  a2a_audit_log: AuditLogTable;
  a2a_push_configs: PushConfigsTable;
  a2a_push_outbox: PushOutboxTable;
  a2a_tasks: TasksTable;
  a2a_task_counts: TaskCountsTable;
  a2a_store_meta: StoreMetaTable;
  a2a_instances: InstancesTable;
  a2a_bus_payloads: BusPayloadsTable;
}
