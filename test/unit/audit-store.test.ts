// The audit log store: one behavioural suite (append, newest-first listing, every filter, keyset paging with opaque
// tokens, bad tokens, prune) run against both backends, then the memory bound, SQLite durability, migration v3 on
// top of a v2 database, failure mapping, and the query parser of GET /admin/audit.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseAuditQuery } from "../../src/server/audit-routes.js";
import { A2AError } from "../../src/contract/errors.js";
import { expectA2AError } from "../support/errors.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";
import {
  decodeAuditPageToken,
  encodeAuditPageToken,
  LATEST_SCHEMA_VERSION,
  MemoryAuditStore,
  MIGRATIONS,
  migrate,
  openStorage,
  readSchemaVersion,
  type AuditEntry,
  type AuditStore,
  type NewAuditEntry,
  type Storage,
} from "../../src/storage/index.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-audit-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;
const freshFile = (): string => path.join(tmpRoot, `case-${++seq}`, "a2a.db");
const dbUrl = (file: string): string => `sqlite:///${file}`;

const T0 = Date.UTC(2025, 0, 1);
const iso = (ms: number): string => new Date(ms).toISOString();

function entry(extra: Partial<NewAuditEntry> = {}): NewAuditEntry {
  return {
    at: iso(T0),
    principal: "alice",
    credential_id: "cred-a",
    transport: "jsonrpc",
    line: "0.3",
    method: "message/send",
    outcome: "ok",
    status: 200,
    duration_ms: 12.5,
    ...extra,
  };
}

const expectInvalidToken = (fn: () => unknown): void => void expectA2AError(fn, "INVALID_PARAMS", { field: "page_token" });

const backends = [
  { name: "memory", open: () => openStorage({ backend: "memory" }) },
  { name: "sqlite", open: () => openStorage({ backend: "sqlite", url: dbUrl(freshFile()) }) },
] as const;

describe.each(backends)("audit store ($name)", ({ open }) => {
  let storage: Storage;
  let audit: AuditStore;
  beforeEach(async () => {
    storage = await open();
    audit = storage.audit;
  });
  afterEach(() => storage.close());

  it("trim() keeps the newest maxEntries entries and says how many went", () => {
    audit.append(Array.from({ length: 30 }, (_, i) => entry({ method: `m${i}` })));
    expect(audit.trim(40)).toBe(0);
    expect(audit.trim(12)).toBe(18);
    const kept = audit.list({}, 100).entries.map((e) => e.method);
    expect(kept).toEqual(Array.from({ length: 12 }, (_, i) => `m${29 - i}`));
    expect(audit.trim(0)).toBe(12);
    expect(audit.list({}, 100).entries).toHaveLength(0);
  });

  it("keeps each entry's trace_id and filters by it (entries without one have none)", () => {
    const traceA = "4bf92f3577b34da6a3ce929d0e0e4736";
    audit.append([entry({ trace_id: traceA, method: "a" }), entry({ method: "none" }), entry({ trace_id: "0af7651916cd43dd8448eb211c80319c", method: "b" }), entry({ trace_id: traceA, method: "c" })]);
    expect(audit.list({ trace_id: traceA }, 10).entries.map((e) => e.method)).toEqual(["c", "a"]);
    expect(audit.list({ trace_id: traceA, method: "a" }, 10).entries.map((e) => e.trace_id)).toEqual([traceA]);
    const none = audit.list({ method: "none" }, 10).entries[0]!;
    expect(none).not.toHaveProperty("trace_id");
    expect(Object.keys(audit.list({ method: "a" }, 10).entries[0]!).at(-1)).toBe("trace_id");
  });

  it("appends entries and lists them newest first, in their wire shape", () => {
    audit.append([
      entry({ task_id: "t1", context_id: "c1", session_id: "ses_1", client_ip: "127.0.0.1" }),
      entry({
        at: "2025-01-01T01:00:00.123+01:00",
        principal: null,
        credential_id: null,
        transport: "rest",
        line: "1.0",
        method: "GET /tasks/{id}",
        outcome: "error",
        error_reason: "UNAUTHENTICATED",
        status: 401,
        duration_ms: 0.25,
      }),
    ]);
    const { entries, next } = audit.list({}, 10);
    expect(next).toBeUndefined();
    expect(entries).toHaveLength(2);
    const [newest, oldest] = entries as [AuditEntry, AuditEntry];
    expect(newest.id).toBeGreaterThan(oldest.id);
    expect(newest).toEqual({
      id: newest.id,
      at: "2025-01-01T00:00:00.123Z",
      principal: null,
      credential_id: null,
      transport: "rest",
      line: "1.0",
      method: "GET /tasks/{id}",
      outcome: "error",
      error_reason: "UNAUTHENTICATED",
      status: 401,
      duration_ms: 0.25,
    });
    expect(oldest).toEqual({
      id: oldest.id,
      at: "2025-01-01T00:00:00.000Z",
      principal: "alice",
      credential_id: "cred-a",
      transport: "jsonrpc",
      line: "0.3",
      method: "message/send",
      task_id: "t1",
      context_id: "c1",
      session_id: "ses_1",
      outcome: "ok",
      status: 200,
      duration_ms: 12.5,
      client_ip: "127.0.0.1",
    });
    // appending nothing is a no-op; ids keep growing
    audit.append([]);
    audit.append([entry()]);
    expect(audit.list({}, 1).entries[0]!.id).toBeGreaterThan(newest.id);
  });

  it("filters by principal, credential, method, task, session, outcome and time (AND)", () => {
    audit.append([
      entry({ at: iso(T0 + 0), principal: "alice", task_id: "t1", session_id: "s1" }),
      entry({ at: iso(T0 + 1000), principal: "bob", credential_id: "cred-b", task_id: "t2", method: "tasks/get" }),
      entry({ at: iso(T0 + 2000), principal: "alice", task_id: "t2", outcome: "error", error_reason: "TASK_NOT_FOUND", status: 200 }),
      entry({ at: iso(T0 + 3000), principal: "alice", session_id: "s1", method: "opencode.sessions.get" }),
    ]);
    const methods = (f: Parameters<AuditStore["list"]>[0]) => audit.list(f, 100).entries.map((e) => `${e.principal}:${e.method}:${e.at.slice(17, 19)}`);
    expect(methods({ principal: "alice" })).toEqual(["alice:opencode.sessions.get:03", "alice:message/send:02", "alice:message/send:00"]);
    expect(methods({ credential_id: "cred-b" })).toEqual(["bob:tasks/get:01"]);
    expect(methods({ method: "tasks/get" })).toEqual(["bob:tasks/get:01"]);
    expect(methods({ task_id: "t2" })).toEqual(["alice:message/send:02", "bob:tasks/get:01"]);
    expect(methods({ session_id: "s1" })).toEqual(["alice:opencode.sessions.get:03", "alice:message/send:00"]);
    expect(methods({ outcome: "error" })).toEqual(["alice:message/send:02"]);
    expect(methods({ since: T0 + 1000, until: T0 + 3000 })).toEqual(["alice:message/send:02", "bob:tasks/get:01"]);
    expect(methods({ principal: "alice", task_id: "t2", outcome: "ok" })).toEqual([]);
    expect(methods({ principal: "nobody" })).toEqual([]);
  });

  it("pages newest first with opaque tokens, also under a filter, without skipping entries appended meanwhile", () => {
    audit.append(Array.from({ length: 7 }, (_, i) => entry({ at: iso(T0 + i), task_id: `t${i}`, principal: i % 2 ? "bob" : "alice" })));
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = audit.list({}, 3, token);
      seen.push(...page.entries.map((e) => e.task_id!));
      token = page.next;
      pages++;
      if (pages === 1) audit.append([entry({ task_id: "late" })]); // newer than the cursor: not in later pages
      if (token !== undefined) expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    } while (token !== undefined);
    expect(pages).toBe(3);
    expect(seen).toEqual(["t6", "t5", "t4", "t3", "t2", "t1", "t0"]);

    const first = audit.list({ principal: "alice" }, 2);
    expect(first.entries.map((e) => e.task_id)).toEqual(["late", "t6"]);
    const second = audit.list({ principal: "alice" }, 2, first.next);
    expect(second.entries.map((e) => e.task_id)).toEqual(["t4", "t2"]);
    const third = audit.list({ principal: "alice" }, 2, second.next);
    expect(third.entries.map((e) => e.task_id)).toEqual(["t0"]);
    expect(third.next).toBeUndefined();
    // an exactly full last page has no next token
    expect(audit.list({ principal: "bob" }, 3).next).toBeUndefined();
  });

  it("refuses page tokens it did not issue with INVALID_PARAMS (field page_token)", () => {
    audit.append([entry(), entry()]);
    const token = audit.list({}, 1).next!;
    expect(decodeAuditPageToken(token)).toBeGreaterThan(0);
    for (const bad of ["", "!!!", "abc", Buffer.from("0").toString("base64url"), Buffer.from("-5").toString("base64url"), Buffer.from("1.5").toString("base64url"), `${token}=`, Buffer.from("99999999999999999").toString("base64url"), "x".repeat(40)]) {
      expectInvalidToken(() => audit.list({}, 10, bad));
    }
  });

  it("prunes entries recorded before a cutoff", () => {
    audit.append([entry({ at: iso(T0 - 2000), task_id: "old" }), entry({ at: iso(T0), task_id: "edge" }), entry({ at: iso(T0 + 5), task_id: "new" })]);
    expect(audit.prune(T0)).toBe(1);
    expect(audit.prune(T0)).toBe(0);
    expect(audit.list({}, 10).entries.map((e) => e.task_id)).toEqual(["new", "edge"]);
  });

  it("rejects an entry whose time is not a date, appending nothing of its batch", () => {
    expect(() => audit.append([entry({ task_id: "a" }), entry({ at: "yesterday" })])).toThrow();
    expect(audit.list({}, 10).entries).toEqual([]);
    // Also past the first multi-row chunk (SQLite writes 64 rows per INSERT): the bad entry is the 130th.
    const big = Array.from({ length: 150 }, (_, i) => entry({ task_id: `t${i}` }));
    big[129] = entry({ at: "never" });
    expect(() => audit.append(big)).toThrow();
    expect(audit.list({}, 10).entries).toEqual([]);
  });

  it("appends large batches whole and in order (chunked multi-row inserts plus the remainder)", () => {
    for (const size of [1, 63, 64, 65, 150]) {
      const batch = Array.from({ length: size }, (_, i) =>
        entry({ at: iso(T0 + i), task_id: `b${size}-${i}`, ...(i % 2 === 0 ? { session_id: `s${i}`, error_reason: "X", outcome: "error" as const } : {}) }),
      );
      audit.append(batch);
      const listed = audit.list({ task_id: `b${size}-${size - 1}` }, 1).entries[0]!;
      expect(listed).toMatchObject({ at: iso(T0 + size - 1), task_id: `b${size}-${size - 1}` });
    }
    const all: AuditEntry[] = [];
    for (let cursor: string | undefined, page; (page = audit.list({}, 100, cursor)), all.push(...page.entries), (cursor = page.next) !== undefined; );
    expect(all).toHaveLength(1 + 63 + 64 + 65 + 150);
    expect(all.map((e) => e.id)).toEqual([...all.map((e) => e.id)].sort((a, b) => b - a));
    const last150 = all.slice(0, 150).reverse();
    expect(last150.map((e) => e.task_id)).toEqual(Array.from({ length: 150 }, (_, i) => `b150-${i}`));
    expect(last150[0]).toMatchObject({ session_id: "s0", error_reason: "X", outcome: "error" });
    expect(last150[1]).not.toHaveProperty("session_id");
  });
});

describe("audit store specifics", () => {
  it("page tokens are base64url of the id", () => {
    expect(encodeAuditPageToken(42)).toBe(Buffer.from("42").toString("base64url"));
    expect(decodeAuditPageToken(encodeAuditPageToken(9_007_199_254_740_991))).toBe(9_007_199_254_740_991);
  });

  it("the memory store is bounded: the oldest entries go first, ids are never reused", () => {
    const store = new MemoryAuditStore(3);
    store.append([entry({ task_id: "a" }), entry({ task_id: "b" })]);
    store.append([entry({ task_id: "c" }), entry({ task_id: "d" }), entry({ task_id: "e" })]);
    const { entries } = store.list({}, 10);
    expect(entries.map((e) => e.task_id)).toEqual(["e", "d", "c"]);
    expect(entries.map((e) => e.id)).toEqual([5, 4, 3]);
    // entries handed out are copies
    entries[0]!.method = "changed";
    expect(store.list({}, 1).entries[0]!.method).toBe("message/send");
  });

  it("SQLite entries survive a reopen", async () => {
    const file = freshFile();
    const first = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    first.audit.append([entry({ task_id: "durable" })]);
    first.close();
    const second = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    try {
      expect(second.audit.list({ task_id: "durable" }, 10).entries).toHaveLength(1);
    } finally {
      second.close();
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
      storage.audit.append([entry({ task_id: "after-upgrade" })]);
      expect(storage.audit.list({}, 10).entries.map((e) => e.task_id)).toEqual(["after-upgrade"]);
    } finally {
      storage.close();
    }
    const check = pinDatabase(new Database(file, { readonly: true }));
    try {
      expect(readSchemaVersion(check)).toBe(LATEST_SCHEMA_VERSION);
      expect(prepare(check, "SELECT value FROM a2a_store_meta WHERE key = 'k'").pluck().get()).toBe("v");
    } finally {
      check.close();
    }
  });

  it("turns a failure of the database into TASK_STORE_UNAVAILABLE", async () => {
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(freshFile()) });
    storage.close();
    for (const [operation, fn] of [
      ["audit.append", () => storage.audit.append([entry()])],
      ["audit.list", () => storage.audit.list({}, 10)],
      ["audit.prune", () => storage.audit.prune(T0)],
    ] as const) {
      let caught: unknown;
      try {
        fn();
      } catch (err) {
        caught = err;
      }
      expect(caught, operation).toBeInstanceOf(A2AError);
      expect((caught as A2AError).reason).toBe("TASK_STORE_UNAVAILABLE");
      expect((caught as A2AError).data).toMatchObject({ operation });
    }
  });
});

describe("GET /admin/audit query", () => {
  const invalidField = (query: Record<string, string | string[]>): unknown => {
    try {
      parseAuditQuery(query);
    } catch (err) {
      expect(err).toBeInstanceOf(A2AError);
      expect((err as A2AError).reason).toBe("INVALID_PARAMS");
      return (err as A2AError).data.field;
    }
    return undefined;
  };

  it("parses filters, the limit (default 100) and the page token; ignores unknown and empty parameters", () => {
    expect(parseAuditQuery({})).toEqual({ filter: {}, limit: 100 });
    expect(
      parseAuditQuery({
        principal: "alice",
        credential_id: "cred-a",
        method: "GET /tasks/{id}",
        task_id: "t1",
        session_id: "ses_1",
        outcome: "error",
        since: "2025-01-01T01:00:00+01:00",
        until: "2025-01-02T00:00:00.5Z",
        limit: "500",
        page_token: "NDI",
        "A2A-Version": "1.0",
        context_id: "",
      }),
    ).toEqual({
      filter: {
        principal: "alice",
        credential_id: "cred-a",
        method: "GET /tasks/{id}",
        task_id: "t1",
        session_id: "ses_1",
        outcome: "error",
        since: T0,
        until: T0 + 86_400_000 + 500,
      },
      limit: 500,
      pageToken: "NDI",
    });
    // an unencoded "+" of the offset arrives as a space
    expect(parseAuditQuery({ since: "2025-01-01T01:00:00 01:00", principal: "" }).filter).toEqual({ since: T0 });
  });

  it("names the offending parameter", () => {
    expect(invalidField({ limit: "0" })).toBe("limit");
    expect(invalidField({ limit: "501" })).toBe("limit");
    expect(invalidField({ limit: "ten" })).toBe("limit");
    expect(invalidField({ limit: "1.5" })).toBe("limit");
    expect(invalidField({ outcome: "failed" })).toBe("outcome");
    expect(invalidField({ since: "2025-01-01" })).toBe("since");
    expect(invalidField({ until: "2025-13-01T00:00:00Z" })).toBe("until");
    expect(invalidField({ principal: ["a", "b"] })).toBe("principal");
    expect(invalidField({ task_id: "x".repeat(257) })).toBe("task_id");
  });
});
