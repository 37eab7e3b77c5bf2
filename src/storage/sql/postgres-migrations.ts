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
    version: 8,
    description: "governance trail (permission decisions, governor feedback)",
    // One decision per request across every gateway on this database: the partial unique index, written with
    // INSERT … ON CONFLICT (request_id) WHERE kind = 'decision' DO NOTHING.
    sql: `
CREATE TABLE IF NOT EXISTS a2a_governance_trail (
  id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_id    TEXT NOT NULL,
  owner      TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('decision', 'feedback')),
  request_id TEXT,
  source     TEXT,
  entry_json TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_governance_trail_task ON a2a_governance_trail (task_id, kind, id);
CREATE UNIQUE INDEX IF NOT EXISTS a2a_governance_trail_request ON a2a_governance_trail (request_id) WHERE kind = 'decision';
`,
  },
];
