// The PostgreSQL schema, version by version (./postgres.ts applies the pending ones in one transaction). Tables and
// columns are named as in SQLite (src/storage/migrations.ts) so one Kysely store serves both; 64-bit integers are
// BIGINT, flags SMALLINT 0/1, and text that orders results is COLLATE "C" (byte order, as SQLite compares).
import { POSTGRES_RATE_ALLOWANCES } from "./rate-allowances-ddl.js";
import { POSTGRES_TASK_LISTING } from "./task-listing-ddl.js";
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
    version: 3,
    description: "tasks and the store's own settings (the page token key)",
    sql: `
CREATE TABLE IF NOT EXISTS a2a_tasks (
  id                    TEXT COLLATE "C" PRIMARY KEY,
  context_id            TEXT NOT NULL,
  owner                 TEXT NOT NULL,
  state                 TEXT NOT NULL,
  status_timestamp      TEXT COLLATE "C" NOT NULL,
  session_id            TEXT,
  directory             TEXT,
  accepted_output_modes TEXT,
  task_json             TEXT NOT NULL,
  created_at            TEXT NOT NULL,
  updated_at            TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_tasks_owner_ts ON a2a_tasks (owner, status_timestamp DESC, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_owner_context_ts ON a2a_tasks (owner, context_id, status_timestamp DESC, id);
CREATE TABLE IF NOT EXISTS a2a_store_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
`,
  },
  {
    version: 4,
    description: "session bindings, session owners and pending session claims",
    sql: `
CREATE TABLE IF NOT EXISTS a2a_session_bindings (
  owner      TEXT NOT NULL,
  context_id TEXT NOT NULL,
  scope_key  TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (owner, context_id, scope_key)
);
CREATE INDEX IF NOT EXISTS a2a_session_bindings_session ON a2a_session_bindings (session_id);

CREATE TABLE IF NOT EXISTS a2a_session_owners (
  session_id TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS a2a_pending_session_claims (
  session_id TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,
  updated_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_pending_session_claims_expires ON a2a_pending_session_claims (expires_at);
`,
  },
  {
    version: 5,
    description: "interrupt request registry (bindings and tombstones)",
    sql: `
CREATE TABLE IF NOT EXISTS a2a_interrupt_requests (
  request_id           TEXT COLLATE "C" PRIMARY KEY,
  session_id           TEXT NOT NULL,
  interrupt_type       TEXT NOT NULL CHECK (interrupt_type IN ('permission', 'question')),
  owner                TEXT NOT NULL,
  credential_id        TEXT,
  task_id              TEXT NOT NULL,
  context_id           TEXT NOT NULL,
  details_json         TEXT NOT NULL,
  routing_json         TEXT NOT NULL DEFAULT '{}',
  created_at           BIGINT NOT NULL,
  expires_at           BIGINT NOT NULL,
  tombstone_expires_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_owner_expires ON a2a_interrupt_requests (owner, expires_at);
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_owner_type_expires ON a2a_interrupt_requests (owner, interrupt_type, expires_at);
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_tombstone ON a2a_interrupt_requests (tombstone_expires_at);
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_task ON a2a_interrupt_requests (task_id);
CREATE INDEX IF NOT EXISTS a2a_interrupt_requests_expires ON a2a_interrupt_requests (expires_at);
`,
  },
  {
    version: 6,
    description: "push notification configs and outbox",
    // rowid: the configs' creation order (SQLite's implicit rowid, which an upsert keeps). The outbox's id orders each
    // (task, config) queue; its index serves the queue heads and the deletes of a config's or a task's entries.
    sql: `
CREATE TABLE IF NOT EXISTS a2a_push_configs (
  task_id     TEXT COLLATE "C" NOT NULL,
  id          TEXT COLLATE "C" NOT NULL,
  config_json TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL,
  rowid       BIGINT GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (task_id, id)
);
CREATE TABLE IF NOT EXISTS a2a_push_outbox (
  id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_id         TEXT COLLATE "C" NOT NULL,
  config_id       TEXT COLLATE "C" NOT NULL,
  body            TEXT NOT NULL,
  content_type    TEXT NOT NULL,
  attempts        INTEGER NOT NULL,
  next_attempt_at BIGINT NOT NULL,
  created_at      BIGINT NOT NULL,
  last_error      TEXT,
  traceparent     TEXT,
  tracestate      TEXT,
  held_until      BIGINT,
  coalesce_key    TEXT
);
CREATE INDEX IF NOT EXISTS a2a_push_outbox_queue ON a2a_push_outbox (task_id, config_id, id);
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
  {
    version: 9,
    description: "gateway instances: leases, the instance running a task, bus payloads too large for NOTIFY",
    // a2a_instances: one row per running gateway, its lease renewed by a heartbeat (src/cluster/leases.ts).
    // a2a_bus_payloads: a message between gateways larger than a NOTIFY payload, read (and deleted) by its receiver.
    sql: `
ALTER TABLE a2a_tasks ADD COLUMN IF NOT EXISTS instance TEXT;
CREATE INDEX IF NOT EXISTS a2a_tasks_unfinished ON a2a_tasks (id) WHERE state NOT IN ('completed', 'canceled', 'failed', 'rejected');
CREATE TABLE IF NOT EXISTS a2a_instances (
  id          TEXT PRIMARY KEY,
  started_at  BIGINT NOT NULL,
  lease_until BIGINT NOT NULL,
  info        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS a2a_bus_payloads (
  id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  body       TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
`,
  },
  {
    version: 10,
    description: "shared rate-limit windows and stream leases (src/auth/limits-postgres.ts)",
    // Every gateway on the database counts a credential's requests and streams here. Each function runs as one
    // statement under a transaction-level advisory lock on (class, hash of the key), so two gateways cannot both take
    // the last slot; a time is the caller's (tests) or else the database's clock, one clock for every gateway.
    // a2a_rate_events: one row per allowed take (weight requests at at_ms) of a credential's window, the policy
    // ("max/window_ms") part of its key; rows older than the window are deleted by the next take of that key and by a
    // periodic sweep (expires_at). a2a_stream_leases: one row per open stream, renewed by its gateway while open;
    // a lease past expires_at (its gateway died) no longer counts.
    sql: `
CREATE TABLE IF NOT EXISTS a2a_rate_events (
  credential TEXT NOT NULL,
  policy     TEXT NOT NULL,
  at_ms      BIGINT NOT NULL,
  weight     BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_rate_events_key ON a2a_rate_events (credential, policy, at_ms);
CREATE INDEX IF NOT EXISTS a2a_rate_events_expiry ON a2a_rate_events (expires_at);
CREATE TABLE IF NOT EXISTS a2a_stream_leases (
  id         TEXT PRIMARY KEY,
  credential TEXT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_stream_leases_credential ON a2a_stream_leases (credential, expires_at);
CREATE OR REPLACE FUNCTION a2a_now_ms() RETURNS BIGINT LANGUAGE sql VOLATILE AS
  'SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::BIGINT';
CREATE OR REPLACE FUNCTION a2a_rate_take(p_lock INTEGER, p_credential TEXT, p_policy TEXT, p_now BIGINT, p_window BIGINT, p_max BIGINT, p_weight BIGINT)
RETURNS TABLE (now_ms BIGINT, allowed BOOLEAN, used BIGINT, oldest BIGINT, freeing BIGINT)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_now BIGINT;
  v_used BIGINT;
  v_oldest BIGINT;
  v_freeing BIGINT;
  v_ok BOOLEAN;
BEGIN
  PERFORM pg_advisory_xact_lock(177874945, p_lock);
  v_now := COALESCE(p_now, a2a_now_ms());
  DELETE FROM a2a_rate_events e WHERE e.credential = p_credential AND e.policy = p_policy AND e.at_ms <= v_now - p_window;
  SELECT COALESCE(sum(e.weight), 0), min(e.at_ms) INTO v_used, v_oldest
    FROM a2a_rate_events e WHERE e.credential = p_credential AND e.policy = p_policy;
  v_ok := p_weight <= p_max - v_used;
  IF v_ok THEN
    INSERT INTO a2a_rate_events (credential, policy, at_ms, weight, expires_at) VALUES (p_credential, p_policy, v_now, p_weight, v_now + p_window);
    v_used := v_used + p_weight;
    v_oldest := LEAST(COALESCE(v_oldest, v_now), v_now);
  ELSIF p_weight <= p_max THEN
    -- the request whose leaving the window frees room for the weight: where the running count reaches the shortfall
    SELECT c.at_ms INTO v_freeing FROM (
      SELECT e.at_ms, sum(e.weight) OVER (ORDER BY e.at_ms) AS run
        FROM a2a_rate_events e WHERE e.credential = p_credential AND e.policy = p_policy
    ) c WHERE c.run >= p_weight - (p_max - v_used) ORDER BY c.at_ms LIMIT 1;
  END IF;
  RETURN QUERY SELECT v_now, v_ok, v_used, v_oldest, v_freeing;
END
$fn$;
CREATE OR REPLACE FUNCTION a2a_stream_open(p_lock INTEGER, p_id TEXT, p_credential TEXT, p_now BIGINT, p_lease BIGINT, p_max BIGINT)
RETURNS TABLE (opened BOOLEAN, open_streams BIGINT)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_now BIGINT;
  v_open BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(177874946, p_lock);
  v_now := COALESCE(p_now, a2a_now_ms());
  DELETE FROM a2a_stream_leases s WHERE s.credential = p_credential AND s.expires_at <= v_now;
  SELECT count(*) INTO v_open FROM a2a_stream_leases s WHERE s.credential = p_credential;
  IF v_open >= p_max THEN
    RETURN QUERY SELECT false, v_open;
    RETURN;
  END IF;
  INSERT INTO a2a_stream_leases (id, credential, expires_at) VALUES (p_id, p_credential, v_now + p_lease);
  RETURN QUERY SELECT true, v_open + 1;
END
$fn$;
`,
  },
  {
    version: 11,
    description: "a running total per rate-limit window: a take no longer sums every request in its window",
    // Version 10's take summed the weights of every row of its window: O(requests in the window) per request (~3 ms of
    // server CPU at a few thousand requests a minute). a2a_rate_windows keeps that sum: the take adds its weight, and a
    // statement trigger takes off the weights of whatever deletes rows of a2a_rate_events (the take's own expiry, the
    // periodic sweep, a gateway of version 10 still running), so the total stays exact under any interleaving (each
    // update is relative, under the row's lock). The trigger is created before the totals are filled in: it locks the
    // table against writers until this migration commits. The oldest request is an index lookup; only a refused take
    // still reads its window (to find when room frees up), as before.
    sql: `
CREATE TABLE IF NOT EXISTS a2a_rate_windows (
  credential TEXT NOT NULL,
  policy     TEXT NOT NULL,
  used       BIGINT NOT NULL,
  PRIMARY KEY (credential, policy)
);
CREATE OR REPLACE FUNCTION a2a_rate_events_gone() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE a2a_rate_windows w SET used = w.used - g.weight
    FROM (SELECT d.credential, d.policy, sum(d.weight) AS weight FROM gone d GROUP BY d.credential, d.policy) g
    WHERE w.credential = g.credential AND w.policy = g.policy;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS a2a_rate_events_gone ON a2a_rate_events;
CREATE TRIGGER a2a_rate_events_gone AFTER DELETE ON a2a_rate_events REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE PROCEDURE a2a_rate_events_gone();
DELETE FROM a2a_rate_windows;
INSERT INTO a2a_rate_windows (credential, policy, used) SELECT credential, policy, sum(weight) FROM a2a_rate_events GROUP BY credential, policy;
CREATE OR REPLACE FUNCTION a2a_rate_take(p_lock INTEGER, p_credential TEXT, p_policy TEXT, p_now BIGINT, p_window BIGINT, p_max BIGINT, p_weight BIGINT)
RETURNS TABLE (now_ms BIGINT, allowed BOOLEAN, used BIGINT, oldest BIGINT, freeing BIGINT)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_now BIGINT;
  v_used BIGINT;
  v_oldest BIGINT;
  v_freeing BIGINT;
  v_ok BOOLEAN;
BEGIN
  PERFORM pg_advisory_xact_lock(177874945, p_lock);
  v_now := COALESCE(p_now, a2a_now_ms());
  DELETE FROM a2a_rate_events e WHERE e.credential = p_credential AND e.policy = p_policy AND e.at_ms <= v_now - p_window;
  SELECT COALESCE(max(w.used), 0) INTO v_used FROM a2a_rate_windows w WHERE w.credential = p_credential AND w.policy = p_policy;
  SELECT min(e.at_ms) INTO v_oldest FROM a2a_rate_events e WHERE e.credential = p_credential AND e.policy = p_policy;
  v_ok := p_weight <= p_max - v_used;
  IF v_ok THEN
    INSERT INTO a2a_rate_events (credential, policy, at_ms, weight, expires_at) VALUES (p_credential, p_policy, v_now, p_weight, v_now + p_window);
    INSERT INTO a2a_rate_windows AS w (credential, policy, used) VALUES (p_credential, p_policy, p_weight)
      ON CONFLICT (credential, policy) DO UPDATE SET used = w.used + EXCLUDED.used;
    v_used := v_used + p_weight;
    v_oldest := LEAST(COALESCE(v_oldest, v_now), v_now);
  ELSIF p_weight <= p_max THEN
    -- the request whose leaving the window frees room for the weight: where the running count reaches the shortfall
    SELECT c.at_ms INTO v_freeing FROM (
      SELECT e.at_ms, sum(e.weight) OVER (ORDER BY e.at_ms) AS run
        FROM a2a_rate_events e WHERE e.credential = p_credential AND e.policy = p_policy
    ) c WHERE c.run >= p_weight - (p_max - v_used) ORDER BY c.at_ms LIMIT 1;
  END IF;
  RETURN QUERY SELECT v_now, v_ok, v_used, v_oldest, v_freeing;
END
$fn$;
`,
  },
  {
    version: 12,
    description: "task listings at any size: an index per listing order, counts kept by triggers (./task-listing-ddl.ts)",
    sql: POSTGRES_TASK_LISTING,
  },
  {
    version: 13,
    description: "audit log: no trace_id index (trace listings read a bounded window per page; src/storage/audit.ts)",
    // As SQLite's migration 14: the random keys of a trace_id index cost a page write per entry.
    sql: `
DROP INDEX IF EXISTS a2a_audit_log_trace;
`,
  },
  {
    version: 14,
    description: "rate-limit allowances: a take may lease units of its window ahead, unspent ones are given back (src/auth/limits-postgres.ts)",
    // a2a_rate_take stays for gateways of an older version; the new functions are described in ./rate-allowances-ddl.ts.
    sql: POSTGRES_RATE_ALLOWANCES,
  },
];
