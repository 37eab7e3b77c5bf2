// The stores written once with Kysely for both SQL backends, on every backend: memory, SQLite (Kysely on the
// gateway's connection) and PostgreSQL (the test run's throwaway cluster, one fresh database per case) run the same
// behavioural suite. Messages (seed 002): ids taken once, replace, the buffer's filter and order, buffer sizes,
// threads, replies received, nanosecond times beyond 2^53. Subtask calls: kept whole, ids taken once. Both: a
// database failure is TASK_STORE_UNAVAILABLE. Then the PostgreSQL schema: migrated from an empty database, idempotent
// on reopen, once when two gateways open it together, refused when newer than this build.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Kysely, sql } from "kysely";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStorage, SqlMessageStore, SqlSubtaskCallStore, type MessageStore, type StoredMessage, type SubtaskCallStore } from "../../src/storage/index.js";
import { LATEST_POSTGRES_VERSION, openPostgres, POSTGRES_SCHEMA_NAME, type PostgresDatabase } from "../../src/storage/sql/postgres.js";
import { A2AError } from "../../src/contract/errors.js";
import { freshDatabase, openTestPostgres, postgresUrl } from "../support/postgres.js";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-message-store-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
let seq = 0;

/** 2^60 ns and on: beyond a double's exact integers. */
const BASE = 1n << 60n;
function message(id: string, fields: Partial<StoredMessage> = {}): StoredMessage {
  return {
    id,
    owner: "alice",
    createdAt: BASE + BigInt(++seq),
    updatedAt: BASE + BigInt(seq),
    from: "ses_a",
    to: "ses_b",
    inReplyTo: null,
    awaitReply: false,
    draft: false,
    buffered: true,
    acceptedAt: null,
    acceptedBy: null,
    initial: `text of ${id}`,
    message: `text of ${id}`,
    deliveredAt: null,
    ...fields,
  };
}

interface Opened {
  store: MessageStore;
  calls: SubtaskCallStore;
  close(): Promise<void>;
  /** Makes every later call fail as the database would. */
  break(): Promise<void>;
}

const backends: [string, () => Promise<Opened>][] = [
  [
    "memory",
    async () => {
      const storage = await openStorage({ backend: "memory" });
      return { store: storage.messages, calls: storage.subtaskCalls, close: async () => storage.close(), break: async () => undefined };
    },
  ],
  [
    "sqlite",
    async () => {
      const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${path.join(tmp, `case-${++seq}.db`)}` });
      return { store: storage.messages, calls: storage.subtaskCalls, close: async () => storage.close(), break: async () => storage.close() };
    },
  ],
];
if (postgresUrl !== undefined) {
  backends.push([
    "postgres",
    async () => {
      const pg = await openTestPostgres();
      return { store: new SqlMessageStore(pg.db), calls: new SqlSubtaskCallStore(pg.db), close: pg.close, break: pg.break };
    },
  ]);
}

describe.each(backends)("%s", (_name, open) => {
  let opened: Opened;
  let store: MessageStore;
  beforeEach(async () => {
    opened = await open();
    store = opened.store;
  });
  afterEach(() => opened.close());

  it("an id is taken once; update replaces every field; get gives back exactly what was stored", async () => {
    const m = message("m1", { acceptedAt: BASE + 7n, acceptedBy: "ses_c", deliveredAt: BASE + 9n, awaitReply: true, initial: "first", message: "ready" });
    expect(await store.create(m)).toBe(true);
    expect(await store.create({ ...m, message: "other" })).toBe(false);
    expect(await store.get("m1")).toEqual(m);
    const changed = { ...m, draft: true, buffered: false, from: null, to: null, acceptedAt: null, acceptedBy: null, deliveredAt: null, message: "changed", updatedAt: BASE + 100n };
    await store.update(changed);
    expect(await store.get("m1")).toEqual(changed);
    expect(await store.get("nope")).toBeUndefined();
  });

  it("the buffer: buffered, not accepted, not drafts, of that session, oldest first; sizes per session", async () => {
    await store.create(message("b1"));
    await store.create(message("b2"));
    await store.create(message("draft", { draft: true }));
    await store.create(message("accepted", { acceptedAt: BASE }));
    await store.create(message("direct", { buffered: false }));
    await store.create(message("elsewhere", { to: "ses_c" }));
    await store.create(message("b0", { createdAt: BASE - 5n }));
    expect((await store.buffer("ses_b")).map((m) => m.id)).toEqual(["b0", "b1", "b2"]);
    expect(await store.bufferSizes(["ses_b", "ses_c", "ses_none"])).toEqual(new Map([["ses_b", 3], ["ses_c", 1], ["ses_none", 0]]));
    expect(await store.bufferSizes([])).toEqual(new Map());
  });

  it("threads: the replies to a message and the replies a session received, oldest first (same time: by id)", async () => {
    await store.create(message("q"));
    const at = BASE + 1_000n;
    await store.create(message("r2", { inReplyTo: "q", from: "ses_b", to: "ses_a", createdAt: at }));
    await store.create(message("r1", { inReplyTo: "q", from: "ses_b", to: "ses_a", createdAt: at }));
    await store.create(message("r3", { inReplyTo: "r1", from: "ses_a", to: "ses_b" }));
    await store.create(message("rd", { inReplyTo: "q", to: "ses_a", draft: true, createdAt: at + 1n }));
    expect((await store.replies("q")).map((m) => m.id)).toEqual(["r1", "r2", "rd"]);
    expect((await store.repliesTo("ses_a")).map((m) => m.id)).toEqual(["r1", "r2"]);
    expect((await store.repliesTo("ses_b")).map((m) => m.id)).toEqual(["r3"]);
  });

  it("subtask calls: kept whole (items in order, epoch ms), an id taken once", async () => {
    const call = {
      call_id: "call-1",
      owner: "alice",
      context_id: "ctx-1",
      created_at: 1_700_000_000_123,
      items: [
        { client_id: "a", status: "accepted" as const, task_id: "t-1", parallel_group: "g" },
        { client_id: "b", status: "failed" as const, error: { reason: "INVALID_PARAMS", code: -32602, message: "bad", field: "agent" } },
      ],
    };
    await opened.calls.create(call);
    expect(await opened.calls.get("call-1")).toEqual(call);
    expect(await opened.calls.get("call-2")).toBeUndefined();
    await expect(opened.calls.create({ ...call, owner: "bob" })).rejects.toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation: "subtaskCalls.create" } });
    expect((await opened.calls.get("call-1"))?.owner).toBe("alice");
  });

  it("a database failure is TASK_STORE_UNAVAILABLE naming the operation", async () => {
    if (_name === "memory") return;
    await opened.break();
    for (const [call, operation] of [
      [() => store.get("m1"), "messages.get"],
      [() => store.create(message("m9")), "messages.create"],
      [() => opened.calls.get("c1"), "subtaskCalls.get"],
    ] as const) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(A2AError);
      expect(error).toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation } });
    }
  });
});

describe.skipIf(postgresUrl === undefined)("the PostgreSQL schema", () => {
  const open: PostgresDatabase[] = [];
  const dropped: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const db of open.splice(0)) await db.close().catch(() => undefined);
    for (const drop of dropped.splice(0)) await drop();
  });

  it("is made from an empty database, reopened without change, and migrated once by two gateways opening together", async () => {
    const database = await freshDatabase();
    dropped.push(database.drop);
    const [a, b] = await Promise.all([openPostgres(database.url), openPostgres(database.url)]);
    open.push(a, b);
    expect([a.migration.from, b.migration.from].sort()).toEqual([0, LATEST_POSTGRES_VERSION]);
    expect(a.migration.to).toBe(LATEST_POSTGRES_VERSION);
    const again = await openPostgres(database.url);
    open.push(again);
    expect(again.migration).toEqual({ from: LATEST_POSTGRES_VERSION, to: LATEST_POSTGRES_VERSION });
    const tables = await sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`.execute(again.db);
    expect(tables.rows.map((r) => r.table_name).sort()).toEqual([
      "a2a_audit_log",
      "a2a_bus_payloads",
      "a2a_governance_trail",
      "a2a_instances",
      "a2a_interrupt_requests",
      "a2a_pending_session_claims",
      "a2a_push_configs",
      "a2a_push_outbox",
      "a2a_rate_events",
      "a2a_rate_windows",
      "a2a_schema_version",
      "a2a_session_bindings",
      "a2a_session_messages",
      "a2a_session_owners",
      "a2a_store_meta",
      "a2a_stream_leases",
      "a2a_subtask_calls",
      "a2a_task_counts",
      "a2a_tasks",
    ]);
  });

  it("a schema newer than this build is refused (SCHEMA_TOO_NEW) and left as it is", async () => {
    const database = await freshDatabase();
    dropped.push(database.drop);
    open.push(await openPostgres(database.url));
    const db = open[0]!.db as unknown as Kysely<any>;
    await sql`UPDATE a2a_schema_version SET version = ${LATEST_POSTGRES_VERSION + 1} WHERE name = ${POSTGRES_SCHEMA_NAME}`.execute(db);
    await expect(openPostgres(database.url)).rejects.toMatchObject({ name: "StorageError", code: "SCHEMA_TOO_NEW" });
    const row = await sql<{ version: number }>`SELECT version FROM a2a_schema_version`.execute(db);
    expect(row.rows[0]!.version).toBe(LATEST_POSTGRES_VERSION + 1);
  });

  it("a server that does not answer is OPEN_FAILED", async () => {
    await expect(openPostgres("postgres://postgres@127.0.0.1:1/none", { connectionTimeoutMs: 2_000 })).rejects.toMatchObject({ name: "StorageError", code: "OPEN_FAILED" });
  });
});
