// Ordered, idempotent schema migrations for the SQLite store. The applied version lives in
// a2a_schema_version(name PK, version) under the scope name "state_store". Each migration runs in its own
// IMMEDIATE transaction that re-reads the version first, so two processes racing on first start apply it once;
// a failing migration rolls back entirely (no version bump, no half-created tables). A database whose version is
// newer than the code knows is refused.
import type Database from "better-sqlite3";
import { prepare } from "./pin.js";
import { StorageError } from "../config/store-url.js";
import { SQLITE_TASK_LISTING } from "./sql/task-listing-ddl.js";

export const SCHEMA_NAME = "state_store";

export interface Migration {
  version: number;
  description: string;
  up(db: Database.Database): void;
}

const V1 = `
CREATE TABLE IF NOT EXISTS a2a_tasks (
  id                    TEXT PRIMARY KEY,
  context_id            TEXT NOT NULL,
  owner                 TEXT NOT NULL,
  state                 TEXT NOT NULL,
  status_timestamp      TEXT NOT NULL,
  session_id            TEXT,
  directory             TEXT,
  accepted_output_modes TEXT,
  task_json             TEXT NOT NULL,
  created_at            TEXT NOT NULL,
  updated_at            TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_tasks_owner_ts ON a2a_tasks (owner, status_timestamp DESC, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_owner_context_ts ON a2a_tasks (owner, context_id, status_timestamp DESC, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_context_ts ON a2a_tasks (context_id, status_timestamp DESC, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_ts ON a2a_tasks (status_timestamp DESC, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_state ON a2a_tasks (state);

CREATE TABLE IF NOT EXISTS a2a_session_bindings (
  owner      TEXT NOT NULL,
  context_id TEXT NOT NULL,
  scope_key  TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (owner, context_id, scope_key)
);
CREATE INDEX IF NOT EXISTS a2a_session_bindings_session ON a2a_session_bindings (session_id);

CREATE TABLE IF NOT EXISTS a2a_session_owners (
  session_id TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS a2a_pending_session_claims (
  session_id TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_pending_session_claims_expires ON a2a_pending_session_claims (expires_at);

CREATE TABLE IF NOT EXISTS a2a_push_configs (
  task_id     TEXT NOT NULL,
  id          TEXT NOT NULL,
  config_json TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (task_id, id)
);

CREATE TABLE IF NOT EXISTS a2a_store_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
`;

// The interrupt registry (src/storage/interrupts.ts): one binding per pending OpenCode permission/question request.
// Times are epoch milliseconds; `tombstone_expires_at` >= `expires_at` (replies get EXPIRED in between).
const V2 = `
CREATE TABLE IF NOT EXISTS a2a_interrupt_requests (
  request_id           TEXT PRIMARY KEY,
  session_id           TEXT NOT NULL,
  interrupt_type       TEXT NOT NULL CHECK (interrupt_type IN ('permission', 'question')),
  owner                TEXT NOT NULL,
  credential_id        TEXT,
  task_id              TEXT NOT NULL,
  context_id           TEXT NOT NULL,
  details_json         TEXT NOT NULL,
  routing_json         TEXT NOT NULL DEFAULT '{}',
  created_at           INTEGER NOT NULL,
  expires_at           INTEGER NOT NULL,
  tombstone_expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_owner_expires ON a2a_interrupt_requests (owner, expires_at);
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_owner_type_expires ON a2a_interrupt_requests (owner, interrupt_type, expires_at);
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_tombstone ON a2a_interrupt_requests (tombstone_expires_at);
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_task ON a2a_interrupt_requests (task_id);
`;

// The audit log (src/storage/audit.ts): one row per call — who, which method, about which task/session, outcome.
// No secrets and no bodies. `at_ms` is epoch milliseconds; `id` grows with every insert (AUTOINCREMENT: ids of
// pruned rows are never reused, so page tokens stay meaningful).
const V3 = `
CREATE TABLE IF NOT EXISTS a2a_audit_log (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  at_ms         INTEGER NOT NULL,
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
  duration_ms   REAL NOT NULL,
  client_ip     TEXT
);
CREATE INDEX IF NOT EXISTS a2a_audit_log_principal ON a2a_audit_log (principal, id);
CREATE INDEX IF NOT EXISTS a2a_audit_log_task ON a2a_audit_log (task_id);
CREATE INDEX IF NOT EXISTS a2a_audit_log_at ON a2a_audit_log (at_ms);
`;

// Fewer task indexes. Every task write (create, each state change) rewrites a page of each index on a2a_tasks; with
// WAL that is a page written per index per commit, which cost more than the task row itself. Kept: the per-owner
// listing orders (owner, status_timestamp) and (owner, context_id, status_timestamp), which every ListTasks of a
// non-admin uses. Dropped: the owner-less orders (the admin-wide listing now sorts) and `state` (read only by the
// start-up sweep of orphaned tasks, a single full scan).
const V4 = `
DROP INDEX IF EXISTS a2a_tasks_ts;
DROP INDEX IF EXISTS a2a_tasks_context_ts;
DROP INDEX IF EXISTS a2a_tasks_state;
`;

// Push notifications waiting for delivery (src/storage/push-outbox.ts). The index serves the per-(task, config)
// queue heads and the deletes of a config's or a task's entries.
const V5 = `
CREATE TABLE IF NOT EXISTS a2a_push_outbox (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id         TEXT NOT NULL,
  config_id       TEXT NOT NULL,
  body            TEXT NOT NULL,
  content_type    TEXT NOT NULL,
  attempts        INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  last_error      TEXT
);
CREATE INDEX IF NOT EXISTS a2a_push_outbox_queue ON a2a_push_outbox (task_id, config_id, id);
`;

// W3C trace context (src/tracing): the trace id of the request an audit entry records (GET /admin/audit?trace_id=…),
// and the trace a queued push notification is delivered under (kept across a restart). Nullable columns: rows written
// before stay as they are. ALTER TABLE has no IF NOT EXISTS, so each column is added only when missing (the
// statements may run twice, like the CREATE … IF NOT EXISTS of the other migrations).
const V6_COLUMNS: readonly [table: string, column: string][] = [
  ["a2a_audit_log", "trace_id"],
  ["a2a_push_outbox", "traceparent"],
  ["a2a_push_outbox", "tracestate"],
];

function v6(db: Database.Database): void {
  for (const [table, column] of V6_COLUMNS) {
    const exists = prepare(db, `SELECT COUNT(*) FROM pragma_table_info('${table}') WHERE name = ?`).pluck().get(column) === 1;
    if (!exists) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} TEXT`);
  }
  db.exec("CREATE INDEX IF NOT EXISTS a2a_audit_log_trace ON a2a_audit_log (trace_id)");
}

// Calls of opencode.subtasks.run (src/storage/subtask-calls.ts): one row per call, its items as JSON (their states
// are their tasks'). Read by call id only.
const V7 = `
CREATE TABLE IF NOT EXISTS a2a_subtask_calls (
  call_id    TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,
  context_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  items_json TEXT NOT NULL
);
`;

// Push quiet hours (src/push/quiet-hours.ts): a notification held until its config's quiet window ends
// (`held_until`, epoch ms; NULL = not held) and what it coalesces with while it is held (`coalesce_key`: `a2a`, or
// the typed event's name; NULL = never coalesced). Nullable columns, added only when missing (as in v6).
const V8_COLUMNS: readonly [column: string, type: string][] = [
  ["held_until", "INTEGER"],
  ["coalesce_key", "TEXT"],
];

function v8(db: Database.Database): void {
  for (const [column, type] of V8_COLUMNS) {
    const exists = prepare(db, "SELECT COUNT(*) FROM pragma_table_info('a2a_push_outbox') WHERE name = ?").pluck().get(column) === 1;
    if (!exists) db.exec(`ALTER TABLE a2a_push_outbox ADD COLUMN ${column} ${type}`);
  }
}
// The governance trail (src/storage/governance.ts): per task, decisions on its interrupt requests (one per request:
// the partial unique index) and governor feedback, read in insertion order per task; interrupt bindings by expiry
// (the expiry sweep records the ones nobody answered).
const V9 = `
CREATE TABLE IF NOT EXISTS a2a_governance_trail (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id    TEXT NOT NULL,
  owner      TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('decision', 'feedback')),
  request_id TEXT,
  source     TEXT,
  entry_json TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_governance_trail_task ON a2a_governance_trail (task_id, kind, id);
CREATE UNIQUE INDEX IF NOT EXISTS a2a_governance_trail_request ON a2a_governance_trail (request_id) WHERE kind = 'decision';
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_expires ON a2a_interrupt_requests (expires_at);
`;

// The peer host of an outbound call (the MCP tools a2a_call / a2a_discover) in the audit log.
function v10(db: Database.Database): void {
  const exists = prepare(db, "SELECT COUNT(*) FROM pragma_table_info('a2a_audit_log') WHERE name = 'peer'").pluck().get() === 1;
  if (!exists) db.exec("ALTER TABLE a2a_audit_log ADD COLUMN peer TEXT");
}

// Messages between OpenCode sessions (src/storage/messages.ts, seed 002): by id; a session's buffer (to_session,
// waiting, oldest first), replies by parent, and a principal's messages. Times are nanoseconds.
const V11 = `
CREATE TABLE IF NOT EXISTS a2a_session_messages (
  id           TEXT PRIMARY KEY,
  owner        TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  from_session TEXT,
  to_session   TEXT,
  in_reply_to  TEXT,
  await_reply  INTEGER NOT NULL,
  draft        INTEGER NOT NULL,
  buffered     INTEGER NOT NULL,
  accepted_at  INTEGER,
  accepted_by  TEXT,
  initial      TEXT NOT NULL,
  message      TEXT NOT NULL,
  delivered_at INTEGER
);
CREATE INDEX IF NOT EXISTS a2a_session_messages_buffer ON a2a_session_messages (to_session, buffered, created_at);
CREATE INDEX IF NOT EXISTS a2a_session_messages_reply ON a2a_session_messages (in_reply_to, created_at);
`;

// The gateway instance that runs a task's turn (src/cluster): with PostgreSQL another gateway fails the task when that
// instance's lease ran out; SQLite keeps the column so one store implementation serves both.
function v12(db: Database.Database): void {
  const exists = prepare(db, "SELECT COUNT(*) FROM pragma_table_info('a2a_tasks') WHERE name = 'instance'").pluck().get() === 1;
  if (!exists) db.exec("ALTER TABLE a2a_tasks ADD COLUMN instance TEXT");
}

// The audit log's trace_id index goes. Its keys are random (W3C trace ids): every entry wrote a page of it at commit,
// about as much as the rest of the entry's write (one random-keyed index doubled the log's cost per call). A listing
// filtered by trace_id reads a bounded window of the newest entries per page instead (src/storage/audit.ts
// AUDIT_TRACE_WINDOW); one filtered by task_id as well keeps the task_id index.
const V14 = `
DROP INDEX IF EXISTS a2a_audit_log_trace;
`;

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, description: "tasks, session bindings/owners/claims, push configs, store meta", up: (db) => db.exec(V1) },
  { version: 2, description: "interrupt request registry (bindings and tombstones)", up: (db) => db.exec(V2) },
  { version: 3, description: "audit log", up: (db) => db.exec(V3) },
  { version: 4, description: "task indexes: only the per-owner listing orders", up: (db) => db.exec(V4) },
  { version: 5, description: "push notification outbox", up: (db) => db.exec(V5) },
  { version: 6, description: "trace ids: audit log trace_id, push outbox traceparent/tracestate", up: v6 },
  { version: 7, description: "subtask calls (opencode.subtasks.run)", up: (db) => db.exec(V7) },
  { version: 8, description: "push quiet hours: outbox held_until, coalesce_key", up: v8 },
  { version: 9, description: "governance trail (permission decisions, governor feedback)", up: (db) => db.exec(V9) },
  { version: 10, description: "audit log peer (the host of an outbound call of the MCP tools)", up: v10 },
  { version: 11, description: "messages between OpenCode sessions (seed 002)", up: (db) => db.exec(V11) },
  { version: 12, description: "tasks: the gateway instance running the turn", up: v12 },
  { version: 13, description: "task listings at any size: an index per listing order, counts kept by triggers", up: (db) => db.exec(SQLITE_TASK_LISTING) },
  { version: 14, description: "audit log: no trace_id index (trace listings read a bounded window per page)", up: (db) => db.exec(V14) },
];

export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

function ensureVersionTable(db: Database.Database): void {
  db.exec("CREATE TABLE IF NOT EXISTS a2a_schema_version (name TEXT PRIMARY KEY, version INTEGER NOT NULL)");
}

/** The applied version of `name` (0 when none). */
export function readSchemaVersion(db: Database.Database, name: string = SCHEMA_NAME): number {
  ensureVersionTable(db);
  const row = prepare(db, "SELECT version FROM a2a_schema_version WHERE name = ?").get(name) as { version: number } | undefined;
  return row?.version ?? 0;
}

function writeSchemaVersion(db: Database.Database, name: string, version: number): void {
  // Never lowers the recorded version; repeated writes are no-ops.
  prepare(
    db,
    `INSERT INTO a2a_schema_version (name, version) VALUES (?, ?)
     ON CONFLICT (name) DO UPDATE SET version = excluded.version WHERE excluded.version > a2a_schema_version.version`,
  ).run(name, version);
}

export interface MigrationResult {
  from: number;
  to: number;
  applied: number[];
}

/** Apply every migration newer than the recorded version. Applying twice is a no-op. */
export function migrate(
  db: Database.Database,
  migrations: readonly Migration[] = MIGRATIONS,
  name: string = SCHEMA_NAME,
): MigrationResult {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration list must be contiguous from 1 (got version ${m.version} at index ${i})`);
  });
  const latest = migrations.length;
  const from = readSchemaVersion(db, name);
  if (from > latest) {
    throw new StorageError(
      "SCHEMA_TOO_NEW",
      `The task store database has schema version ${from} (${name}) but this build only knows version ${latest}; ` +
        "refusing to open it. Upgrade opencode-a2a or point A2A_TASK_STORE_DATABASE_URL at another database.",
    );
  }
  const applied: number[] = [];
  for (const m of migrations) {
    if (m.version <= from) continue;
    const step = db.transaction(() => {
      if (readSchemaVersion(db, name) >= m.version) return false; // another process got there first
      m.up(db);
      writeSchemaVersion(db, name, m.version);
      return true;
    });
    if (step.immediate()) applied.push(m.version);
  }
  return { from, to: Math.max(from, readSchemaVersion(db, name)), applied };
}
