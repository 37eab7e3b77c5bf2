// The PostgreSQL schema, version by version (./postgres.ts applies the pending ones in one transaction). Tables and
// columns are named as in SQLite (src/storage/migrations.ts) so one Kysely store serves both; 64-bit integers are
// BIGINT, flags SMALLINT 0/1, and text that orders results is COLLATE "C" (byte order, as SQLite compares).
export interface PostgresMigration {
  version: number;
  description: string;
  sql: string;
}

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    description: "messages between OpenCode sessions (seed 002)",
    sql: `
CREATE TABLE IF NOT EXISTS a2a_session_messages (
  id           TEXT COLLATE "C" PRIMARY KEY,
  owner        TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  updated_at   BIGINT NOT NULL,
  from_session TEXT,
  to_session   TEXT,
  in_reply_to  TEXT,
  await_reply  SMALLINT NOT NULL,
  draft        SMALLINT NOT NULL,
  buffered     SMALLINT NOT NULL,
  accepted_at  BIGINT,
  accepted_by  TEXT,
  "initial"    TEXT NOT NULL,
  message      TEXT NOT NULL,
  delivered_at BIGINT
);
CREATE INDEX IF NOT EXISTS a2a_session_messages_buffer ON a2a_session_messages (to_session, buffered, created_at);
CREATE INDEX IF NOT EXISTS a2a_session_messages_reply ON a2a_session_messages (in_reply_to, created_at);
`,
  },
  {
    version: 2,
    description: "subtask calls (opencode.subtasks.run)",
    sql: `
CREATE TABLE IF NOT EXISTS a2a_subtask_calls (
  call_id    TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,
  context_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  items_json TEXT NOT NULL
);
`,
  },
  {
    version: 7,
    description: "audit log (GET /admin/audit)",
    // As SQLite's a2a_audit_log (migrations 3, 6 and 10). The id is an identity column: a sequence shared by every
    // gateway on the database, never reused (a rolled-back or pruned id leaves a gap), so page tokens stay meaningful.
    sql: `
CREATE TABLE IF NOT EXISTS a2a_audit_log (
  id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at_ms         BIGINT NOT NULL,
  principal     TEXT,
  credential_id TEXT,
  transport     TEXT NOT NULL CHECK (transport IN ('jsonrpc', 'rest')),
  line          TEXT NOT NULL,
  method        TEXT NOT NULL,
  task_id       TEXT,
  context_id    TEXT,
  session_id    TEXT,
  outcome       TEXT NOT NULL CHECK (outcome IN ('ok', 'error')),
  error_reason  TEXT,
  status        INTEGER NOT NULL,
  duration_ms   DOUBLE PRECISION NOT NULL,
  client_ip     TEXT,
  trace_id      TEXT,
  peer          TEXT
);
CREATE INDEX IF NOT EXISTS a2a_audit_log_principal ON a2a_audit_log (principal, id);
CREATE INDEX IF NOT EXISTS a2a_audit_log_task ON a2a_audit_log (task_id);
CREATE INDEX IF NOT EXISTS a2a_audit_log_at ON a2a_audit_log (at_ms);
CREATE INDEX IF NOT EXISTS a2a_audit_log_trace ON a2a_audit_log (trace_id);
`,
  },
];
