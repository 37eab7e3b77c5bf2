// The audit log store: one behavioural suite (append, newest-first listing, every filter, keyset paging with opaque
// tokens, bad tokens, prune, trim, ids never reused, failure mapping) run against every backend — memory, SQLite and
// PostgreSQL (the test run's throwaway cluster, one fresh database per case) — then two gateways appending to one
// PostgreSQL database at once, and the page tokens. SQLite durability and migrations: audit-sqlite.test.ts; the
// query parser of GET /admin/audit: audit-query.test.ts.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Kysely } from "kysely";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { A2AError } from "../../src/contract/errors.js";
import {
  decodeAuditPageToken,
  encodeAuditPageToken,
  openStorage,
  SqlAuditStore,
  type AuditEntry,
  type AuditStore,
  type NewAuditEntry,
} from "../../src/storage/index.js";
import { openPostgres } from "../../src/storage/sql/postgres.js";
import type { SqlSchema } from "../../src/storage/sql/schema.js";
import { freshDatabase, openTestPostgres, postgresUrl } from "../support/postgres.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-audit-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;
const freshFile = (): string => path.join(tmpRoot, `case-${++seq}`, "a2a.db");
const dbUrl = (file: string): string => `sqlite:///${file}`;

const T0 = Date.UTC(2025, 0, 1);
const iso = (ms: number): string => new Date(ms).toISOString();
const DAY = 86_400_000;

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

async function expectInvalidToken(call: Promise<unknown>): Promise<void> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(A2AError);
  expect(error).toMatchObject({ reason: "INVALID_PARAMS", data: { field: "page_token" } });
}

/** All entries matching `filter`, paging `size` at a time, newest first. */
async function listAll(audit: AuditStore, size: number, filter: Parameters<AuditStore["list"]>[0] = {}): Promise<AuditEntry[]> {
  const all: AuditEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await audit.list(filter, size, cursor);
    all.push(...page.entries);
    cursor = page.next;
  } while (cursor !== undefined);
  return all;
}

interface Opened {
  audit: AuditStore;
  /** The database under `audit` (another store on it: a small trace window). */
  sql: Kysely<SqlSchema>;
  close(): Promise<void>;
  /** Makes every later call fail as the database would. */
  break(): Promise<void>;
}

const backends: { name: string; open: () => Promise<Opened> }[] = [
  {
    name: "memory",
    open: async () => {
      const storage = await openStorage({ backend: "memory" });
      return { audit: storage.audit, sql: storage.sql, close: () => storage.close(), break: () => storage.close() };
    },
  },
  {
    name: "sqlite",
    open: async () => {
      const storage = await openStorage({ backend: "sqlite", url: dbUrl(freshFile()) });
      return { audit: storage.audit, sql: storage.sql, close: () => storage.close(), break: () => storage.close() };
    },
  },
];
if (postgresUrl !== undefined) {
  backends.push({
    name: "postgres",
    open: async () => {
      const pg = await openTestPostgres();      return {
        audit: new SqlAuditStore(pg.db),
        sql: pg.db,

        close: pg.close,

        break: pg.break,
      };
    },
  });
}

describe.each(backends)("audit store ($name)", ({ open }) => {
  let opened: Opened;
  let audit: AuditStore;
  beforeEach(async () => {
    opened = await open();
    audit = opened.audit;
  });
  afterEach(() => opened.close());

  it("trim() keeps the newest maxEntries entries and says how many went", async () => {
    await audit.append(Array.from({ length: 30 }, (_, i) => entry({ method: `m${i}` })));
    expect(await audit.trim(40)).toBe(0);
    expect(await audit.trim(12)).toBe(18);
    const kept = (await audit.list({}, 100)).entries.map((e) => e.method);
    expect(kept).toEqual(Array.from({ length: 12 }, (_, i) => `m${29 - i}`));
    expect(await audit.trim(0)).toBe(12);
    expect((await audit.list({}, 100)).entries).toHaveLength(0);
  });

  it("keeps each entry's trace_id and filters by it (entries without one have none)", async () => {
    const traceA = "4bf92f3577b34da6a3ce929d0e0e4736";
    await audit.append([entry({ trace_id: traceA, method: "a" }), entry({ method: "none" }), entry({ trace_id: "0af7651916cd43dd8448eb211c80319c", method: "b" }), entry({ trace_id: traceA, method: "c" })]);
    expect((await audit.list({ trace_id: traceA }, 10)).entries.map((e) => e.method)).toEqual(["c", "a"]);
    expect((await audit.list({ trace_id: traceA, method: "a" }, 10)).entries.map((e) => e.trace_id)).toEqual([traceA]);
    const none = (await audit.list({ method: "none" }, 10)).entries[0]!;
    expect(none).not.toHaveProperty("trace_id");
    expect(Object.keys((await audit.list({ method: "a" }, 10)).entries[0]!).at(-1)).toBe("trace_id");
  });

  it("a trace_id listing reads a bounded window per page: short pages carry a token while older entries remain, none is skipped", async () => {
    const traceA = "4bf92f3577b34da6a3ce929d0e0e4736";
    // 10 entries, oldest first; trace A on 1, 2, 6 and 9 (counting from 0)
    await audit.append(Array.from({ length: 10 }, (_, i) => entry({ method: `m${i}`, ...([1, 2, 6, 9].includes(i) ? { trace_id: traceA } : { trace_id: "0af7651916cd43dd8448eb211c80319c" }), ...(i === 6 ? { task_id: "t6" } : {}) })));
    const windowed = new SqlAuditStore(opened.sql, { traceWindow: 3 });
    // window of 3: [m9 m8 m7] → m9, token; [m6 m5 m4] → m6, token; [m3 m2 m1] → m2 m1, token; [m0] → nothing, last page
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await windowed.list({ trace_id: traceA }, 10, cursor);
      pages.push(page.entries.map((e) => e.method));
      cursor = page.next;
    } while (cursor !== undefined);
    expect(pages).toEqual([["m9"], ["m6"], ["m2", "m1"], []]);
    // a full page ends at its last entry as any page does
    const first = await windowed.list({ trace_id: traceA }, 1, (await windowed.list({ trace_id: traceA }, 10)).next);
    expect(first.entries.map((e) => e.method)).toEqual(["m6"]);
    expect(first.next).toBeDefined();
    // with task_id the task_id index finds the entries: no window
    expect((await windowed.list({ trace_id: traceA, task_id: "t6" }, 10)).entries.map((e) => e.method)).toEqual(["m6"]);
    // the default window holds them all: one page
    expect(await audit.list({ trace_id: traceA }, 10)).toEqual({ entries: expect.any(Array) });
    expect((await listAll(audit, 2, { trace_id: traceA })).map((e) => e.method)).toEqual(["m9", "m6", "m2", "m1"]);
  });

  it("appends entries and lists them newest first, in their wire shape", async () => {
    await audit.append([
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
    const { entries, next } = await audit.list({}, 10);
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
    await audit.append([]);
    await audit.append([entry()]);
    expect((await audit.list({}, 1)).entries[0]!.id).toBeGreaterThan(newest.id);
  });

  it("filters by principal, credential, method, task, session, outcome and time (AND)", async () => {
    await audit.append([
      entry({ at: iso(T0 + 0), principal: "alice", task_id: "t1", session_id: "s1" }),
      entry({ at: iso(T0 + 1000), principal: "bob", credential_id: "cred-b", task_id: "t2", method: "tasks/get" }),
      entry({ at: iso(T0 + 2000), principal: "alice", task_id: "t2", outcome: "error", error_reason: "TASK_NOT_FOUND", status: 200 }),
      entry({ at: iso(T0 + 3000), principal: "alice", session_id: "s1", method: "opencode.sessions.get" }),
    ]);
    const methods = async (f: Parameters<AuditStore["list"]>[0]) => (await audit.list(f, 100)).entries.map((e) => `${e.principal}:${e.method}:${e.at.slice(17, 19)}`);
    expect(await methods({ principal: "alice" })).toEqual(["alice:opencode.sessions.get:03", "alice:message/send:02", "alice:message/send:00"]);
    expect(await methods({ credential_id: "cred-b" })).toEqual(["bob:tasks/get:01"]);
    expect(await methods({ method: "tasks/get" })).toEqual(["bob:tasks/get:01"]);
    expect(await methods({ task_id: "t2" })).toEqual(["alice:message/send:02", "bob:tasks/get:01"]);
    expect(await methods({ session_id: "s1" })).toEqual(["alice:opencode.sessions.get:03", "alice:message/send:00"]);
    expect(await methods({ outcome: "error" })).toEqual(["alice:message/send:02"]);
    expect(await methods({ since: T0 + 1000, until: T0 + 3000 })).toEqual(["alice:message/send:02", "bob:tasks/get:01"]);
    expect(await methods({ principal: "alice", task_id: "t2", outcome: "ok" })).toEqual([]);
    expect(await methods({ principal: "nobody" })).toEqual([]);
  });

  it("pages newest first with opaque tokens, also under a filter, without skipping entries appended meanwhile", async () => {
    await audit.append(Array.from({ length: 7 }, (_, i) => entry({ at: iso(T0 + i), task_id: `t${i}`, principal: i % 2 ? "bob" : "alice" })));
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await audit.list({}, 3, token);
      seen.push(...page.entries.map((e) => e.task_id!));
      token = page.next;
      pages++;
      if (pages === 1) await audit.append([entry({ task_id: "late" })]); // newer than the cursor: not in later pages
      if (token !== undefined) expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    } while (token !== undefined);
    expect(pages).toBe(3);
    expect(seen).toEqual(["t6", "t5", "t4", "t3", "t2", "t1", "t0"]);

    const first = await audit.list({ principal: "alice" }, 2);
    expect(first.entries.map((e) => e.task_id)).toEqual(["late", "t6"]);
    const second = await audit.list({ principal: "alice" }, 2, first.next);
    expect(second.entries.map((e) => e.task_id)).toEqual(["t4", "t2"]);
    const third = await audit.list({ principal: "alice" }, 2, second.next);
    expect(third.entries.map((e) => e.task_id)).toEqual(["t0"]);
    expect(third.next).toBeUndefined();
    // an exactly full last page has no next token
    expect((await audit.list({ principal: "bob" }, 3)).next).toBeUndefined();
  });

  it("refuses page tokens it did not issue with INVALID_PARAMS (field page_token)", async () => {
    await audit.append([entry(), entry()]);
    const token = (await audit.list({}, 1)).next!;
    expect(decodeAuditPageToken(token)).toBeGreaterThan(0);
    for (const bad of ["", "!!!", "abc", Buffer.from("0").toString("base64url"), Buffer.from("-5").toString("base64url"), Buffer.from("1.5").toString("base64url"), `${token}=`, Buffer.from("99999999999999999").toString("base64url"), "x".repeat(40)]) {
      await expectInvalidToken(audit.list({}, 10, bad));
    }
  });

  it("prunes entries recorded before a cutoff", async () => {
    await audit.append([entry({ at: iso(T0 - 2000), task_id: "old" }), entry({ at: iso(T0), task_id: "edge" }), entry({ at: iso(T0 + 5), task_id: "new" })]);
    expect(await audit.prune(T0)).toBe(1);
    expect(await audit.prune(T0)).toBe(0);
    expect((await audit.list({}, 10)).entries.map((e) => e.task_id)).toEqual(["new", "edge"]);
  });

  it("rejects an entry whose time is not a date, appending nothing of its batch", async () => {
    await expect(audit.append([entry({ task_id: "a" }), entry({ at: "yesterday" })])).rejects.toThrow(TypeError);
    expect((await audit.list({}, 10)).entries).toEqual([]);
    // Also past the first multi-row INSERT (150 rows: 128 + 16 + 4 + 2): the bad entry is the 130th.
    const big = Array.from({ length: 150 }, (_, i) => entry({ task_id: `t${i}` }));
    big[129] = entry({ at: "never" });
    await expect(audit.append(big)).rejects.toThrow(TypeError);
    expect((await audit.list({}, 10)).entries).toEqual([]);
  });

  it("a batch is all or nothing also when the database refuses a row of a later INSERT", async () => {
    // 150 rows are four INSERTs in one transaction; the 149th breaks the transport CHECK constraint.
    const batch = Array.from({ length: 150 }, (_, i) => entry({ task_id: `t${i}` }));
    batch[148] = entry({ transport: "grpc" as never });
    await expect(audit.append(batch)).rejects.toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation: "audit.append" } });
    expect((await audit.list({}, 10)).entries).toEqual([]);
  });

  it("ids are never reused, also after every entry was trimmed or pruned", async () => {
    await audit.append([entry(), entry(), entry()]);
    const top = (await audit.list({}, 1)).entries[0]!.id;
    expect(await audit.trim(0)).toBe(3);
    await audit.append([entry({ at: iso(T0 - DAY) })]);
    const next = (await audit.list({}, 1)).entries[0]!.id;
    expect(next).toBeGreaterThan(top);
    expect(await audit.prune(T0)).toBe(1);
    await audit.append([entry()]);
    expect((await audit.list({}, 1)).entries[0]!.id).toBeGreaterThan(next);
  });

  it("keeps times and durations exactly (fractional ms durations, times far from now); a fractional time is whole ms", async () => {
    const far = Date.UTC(2999, 11, 31, 23, 59, 59, 999);
    await audit.append([entry({ at: far, duration_ms: 1234.5678, status: 599 }), entry({ at: T0 + 0.75, task_id: "frac" })]);
    const [frac, last] = (await audit.list({}, 10)).entries;
    expect(last).toMatchObject({ at: iso(far), duration_ms: 1234.5678, status: 599 });
    expect(frac).toMatchObject({ at: iso(T0), task_id: "frac" });
    expect((await audit.list({ since: far }, 10)).entries).toHaveLength(1);
    expect((await audit.list({ until: T0 + 0.5 }, 10)).entries.map((e) => e.task_id)).toEqual(["frac"]);
  });

  it("a database failure is TASK_STORE_UNAVAILABLE naming the operation", async () => {
    await opened.break();
    for (const [operation, call] of [
      ["audit.append", () => audit.append([entry()])],
      ["audit.list", () => audit.list({}, 10)],
      ["audit.prune", () => audit.prune(T0)],
      ["audit.trim", () => audit.trim(10)],
    ] as const) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, operation).toBeInstanceOf(A2AError);
      expect(error, operation).toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation } });
    }
  });

  it("appends large batches whole and in order (chunked multi-row inserts plus the remainder)", async () => {
    for (const size of [1, 63, 64, 65, 150, 1000]) {
      const batch = Array.from({ length: size }, (_, i) =>
        entry({ at: iso(T0 + i), task_id: `b${size}-${i}`, ...(i % 2 === 0 ? { session_id: `s${i}`, error_reason: "X", outcome: "error" as const } : {}) }),
      );
      await audit.append(batch);
      const listed = (await audit.list({ task_id: `b${size}-${size - 1}` }, 1)).entries[0]!;
      expect(listed).toMatchObject({ at: iso(T0 + size - 1), task_id: `b${size}-${size - 1}` });
    }
    const all = await listAll(audit, 100);
    expect(all).toHaveLength(1 + 63 + 64 + 65 + 150 + 1000);
    expect(all.map((e) => e.id)).toEqual([...all.map((e) => e.id)].sort((a, b) => b - a));
    const last150 = all.slice(1000, 1150).reverse();
    expect(last150.map((e) => e.task_id)).toEqual(Array.from({ length: 150 }, (_, i) => `b150-${i}`));
    expect(last150[0]).toMatchObject({ session_id: "s0", error_reason: "X", outcome: "error" });
    expect(last150[1]).not.toHaveProperty("session_id");
    expect(all.slice(0, 1000).reverse().map((e) => e.task_id)).toEqual(Array.from({ length: 1000 }, (_, i) => `b1000-${i}`));
  });
});

describe.skipIf(postgresUrl === undefined)("audit store (two gateways on one PostgreSQL database)", () => {
  it("appending at once through two pools loses nothing; a listing pages through every entry exactly once", async () => {
    const database = await freshDatabase();
    const [a, b] = await Promise.all([openPostgres(database.url, { maxConnections: 4 }), openPostgres(database.url, { maxConnections: 4 })]);
    try {
      const stores = [new SqlAuditStore(a.db), new SqlAuditStore(b.db)];
      // Each gateway appends 40 batches of 1 to 70 entries, eight at a time, both at once.
      const sizes = Array.from({ length: 40 }, (_, i) => 1 + ((i * 37) % 70));
      await Promise.all(
        stores.map(async (store, g) => {
          for (let i = 0; i < sizes.length; i += 8) {
            await Promise.all(
              sizes.slice(i, i + 8).map((size, k) =>
                store.append(Array.from({ length: size }, (_, n) => entry({ principal: `gw${g}`, task_id: `gw${g}-b${i + k}-${n}` }))),
              ),
            );
          }
        }),
      );
      const total = 2 * sizes.reduce((x, y) => x + y, 0);
      for (const [reader, size] of [[stores[0]!, 7], [stores[1]!, 100]] as const) {
        const all = await listAll(reader, size);
        expect(all).toHaveLength(total);
        expect(new Set(all.map((e) => e.task_id)).size).toBe(total);
        expect(new Set(all.map((e) => e.id)).size).toBe(total);
        expect(all.map((e) => e.id)).toEqual([...all.map((e) => e.id)].sort((x, y) => y - x));
      }
      // Each batch kept its order (ids growing within it), whichever gateway wrote it.
      const all = await listAll(stores[0]!, 500, { principal: "gw1" });
      const byBatch = new Map<string, AuditEntry[]>();
      for (const e of [...all].reverse()) {
        const key = e.task_id!.replace(/-\d+$/, "");
        byBatch.set(key, [...(byBatch.get(key) ?? []), e]);
      }
      for (const entries of byBatch.values()) expect(entries.map((e) => Number(e.task_id!.split("-").at(-1)))).toEqual(entries.map((_, n) => n));
      // A listing paged while the other gateway appends: no entry twice, every entry older than the first page's newest.
      const before = (await stores[0]!.list({}, 1)).entries[0]!.id;
      const appending = stores[1]!.append(Array.from({ length: 300 }, () => entry({ task_id: "meanwhile" })));
      const paged = await listAll(stores[0]!, 50);
      await appending;
      expect(new Set(paged.map((e) => e.id)).size).toBe(paged.length);
      expect(paged.filter((e) => e.id <= before)).toHaveLength(total);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await database.drop();
    }
  });
});

describe("audit page tokens", () => {
  it("page tokens are base64url of the id", () => {
    expect(encodeAuditPageToken(42)).toBe(Buffer.from("42").toString("base64url"));
    expect(decodeAuditPageToken(encodeAuditPageToken(9_007_199_254_740_991))).toBe(9_007_199_254_740_991);
  });
});
