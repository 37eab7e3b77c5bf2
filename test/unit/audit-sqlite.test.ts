// The audit log on SQLite: entries survive a reopen, migrations v3 and v6 on older databases (idempotent, keeping
// rows), and a v2 database file opened by this build gains the audit log.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { pinDatabase, prepare } from "../../src/storage/pin.js";
import { LATEST_SCHEMA_VERSION, MIGRATIONS, migrate, openStorage, readSchemaVersion, type NewAuditEntry } from "../../src/storage/index.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-audit-sqlite-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;
const freshFile = (): string => path.join(tmpRoot, `case-${++seq}`, "a2a.db");
const dbUrl = (file: string): string => `sqlite:///${file}`;

const entry = (extra: Partial<NewAuditEntry> = {}): NewAuditEntry => ({
  at: Date.UTC(2025, 0, 1),
  principal: "alice",
  credential_id: "cred-a",
  transport: "jsonrpc",
  line: "0.3",
  method: "message/send",
  outcome: "ok",
  status: 200,
  duration_ms: 12.5,
  ...extra,
});

describe("audit log on SQLite", () => {
  it("SQLite entries survive a reopen", async () => {
    const file = freshFile();
    const first = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    await first.audit.append([entry({ task_id: "durable" })]);
    await first.close();
    const second = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    try {
      expect((await second.audit.list({ task_id: "durable" }, 10)).entries).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it("migration v3 creates the audit table and its indexes, also on a v2 database, idempotently", () => {
    const raw = pinDatabase(new Database(":memory:"));
    try {
      // a database written by a v2 build
      expect(migrate(raw, MIGRATIONS.slice(0, 2))).toEqual({ from: 0, to: 2, applied: [1, 2] });
      expect(prepare(raw, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'a2a_audit_log'").pluck().get()).toBe(0);
      const toV3 = MIGRATIONS.slice(0, 3);
      expect(migrate(raw, toV3)).toEqual({ from: 2, to: 3, applied: [3] });
      expect(migrate(raw, toV3)).toEqual({ from: 3, to: 3, applied: [] });
      expect(readSchemaVersion(raw)).toBe(3);
      MIGRATIONS[2]!.up(raw); // applying the statements again (a racing process) is harmless
      const columns = prepare(raw, "SELECT name FROM pragma_table_info('a2a_audit_log') ORDER BY cid").pluck().all();
      expect(columns).toEqual([
        "id", "at_ms", "principal", "credential_id", "transport", "line", "method", "task_id", "context_id", "session_id",
        "outcome", "error_reason", "status", "duration_ms", "client_ip",
      ]);
      const indexes = prepare(raw, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'a2a_audit_log' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .pluck()
        .all();
      expect(indexes).toEqual(["a2a_audit_log_at", "a2a_audit_log_principal", "a2a_audit_log_task"]);
      expect(() =>
        prepare(raw, "INSERT INTO a2a_audit_log (at_ms, transport, line, method, outcome, status, duration_ms) VALUES (0, 'grpc', '1.0', 'm', 'ok', 200, 1)").run(),
      ).toThrow(/CHECK/);
    } finally {
      raw.close();
    }
  });

  it("migration v6 adds the nullable trace_id (and its index) to a v5 audit log, keeping its rows, idempotently", () => {
    const raw = pinDatabase(new Database(":memory:"));
    try {
      expect(migrate(raw, MIGRATIONS.slice(0, 5))).toEqual({ from: 0, to: 5, applied: [1, 2, 3, 4, 5] });
      prepare(raw, "INSERT INTO a2a_audit_log (at_ms, transport, line, method, outcome, status, duration_ms) VALUES (0, 'rest', '1.0', 'old', 'ok', 200, 1)").run();
      expect(migrate(raw, MIGRATIONS.slice(0, 6))).toEqual({ from: 5, to: 6, applied: [6] });
      MIGRATIONS[5]!.up(raw); // applying it again (a racing process) is harmless
      const columns = prepare(raw, "SELECT name FROM pragma_table_info('a2a_audit_log') ORDER BY cid").pluck().all();
      expect(columns.at(-1)).toBe("trace_id");
      expect(prepare(raw, "SELECT method, trace_id FROM a2a_audit_log").all()).toEqual([{ method: "old", trace_id: null }]);
      const outbox = prepare(raw, "SELECT name FROM pragma_table_info('a2a_push_outbox') ORDER BY cid").pluck().all();
      expect(outbox.slice(-2)).toEqual(["traceparent", "tracestate"]);
      expect(prepare(raw, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'a2a_audit_log_trace'").pluck().get()).toBe(1);
    } finally {
      raw.close();
    }
  });

  it("migration v14 drops the audit log's trace_id index, keeping its rows and the other indexes, idempotently", () => {
    const raw = pinDatabase(new Database(":memory:"));
    try {
      expect(migrate(raw, MIGRATIONS.slice(0, 13)).to).toBe(13);
      prepare(raw, "INSERT INTO a2a_audit_log (at_ms, transport, line, method, outcome, status, duration_ms, trace_id) VALUES (0, 'rest', '1.0', 'old', 'ok', 200, 1, 'abc')").run();
      expect(migrate(raw, MIGRATIONS.slice(0, 14))).toEqual({ from: 13, to: 14, applied: [14] });
      MIGRATIONS[13]!.up(raw); // applying it again (a racing process) is harmless
      const indexes = prepare(raw, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'a2a_audit_log' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .pluck()
        .all();
      expect(indexes).toEqual(["a2a_audit_log_at", "a2a_audit_log_principal", "a2a_audit_log_task"]);
      expect(prepare(raw, "SELECT method, trace_id FROM a2a_audit_log").all()).toEqual([{ method: "old", trace_id: "abc" }]);
    } finally {
      raw.close();
    }
  });

  it("a v2 database file opened by this build gains the audit log and keeps its data", async () => {
    const file = freshFile();
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const raw = pinDatabase(new Database(file));
    migrate(raw, MIGRATIONS.slice(0, 2));
    prepare(raw, "INSERT INTO a2a_store_meta (key, value) VALUES ('k', 'v')").run();
    raw.close();
    fs.chmodSync(file, 0o600);
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    try {
      await storage.audit.append([entry({ task_id: "after-upgrade" })]);
      expect((await storage.audit.list({}, 10)).entries.map((e) => e.task_id)).toEqual(["after-upgrade"]);
    } finally {
      await storage.close();
    }
    const check = pinDatabase(new Database(file, { readonly: true }));
    try {
      expect(readSchemaVersion(check)).toBe(LATEST_SCHEMA_VERSION);
      expect(prepare(check, "SELECT value FROM a2a_store_meta WHERE key = 'k'").pluck().get()).toBe("v");
    } finally {
      check.close();
    }
  });
});
