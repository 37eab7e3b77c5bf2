// The interrupt registry store: one behavioural suite (TTL, tombstones, principal scoping, duplicates, removal,
// listing) run against every backend (memory, SQLite, PostgreSQL) with an injected clock; then two gateways on one
// PostgreSQL database racing on the same request (exactly one creates, exactly one removes); then SQLite-only checks:
// durability across reopen, migration v2 (idempotent, on top of an existing v1 database) and failure mapping. Last,
// the registry's pure helpers: advertised permission options and answers taken from a follow-up message.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { A2AError } from "../../src/contract/errors.js";
import { advertisedPermissionOptions, answersFromMessage } from "../../src/extensions/interrupt-registry.js";
import type { Message } from "../../src/protocol/model.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";
import {
  MIGRATIONS,
  migrate,
  openStorage,
  readSchemaVersion,
  SqlInterruptStore,
  type InterruptStore,
  type NewInterrupt,
  type Storage,
} from "../../src/storage/index.js";
import { openPostgres, type PostgresDatabase } from "../../src/storage/sql/postgres.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-interrupts-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;
const freshFile = (): string => path.join(tmpRoot, `case-${++seq}`, "a2a.db");
const dbUrl = (file: string): string => `sqlite:///${file}`;

const T0 = Date.UTC(2025, 0, 1);
const TTL = 60; // seconds
const TOMBSTONE = 30; // seconds

function interrupt(requestId: string, extra: Partial<NewInterrupt> = {}): NewInterrupt {
  return {
    requestId,
    type: "permission",
    owner: "alice",
    sessionId: "ses_1",
    taskId: "task-1",
    contextId: "ctx-1",
    details: { permission: "external_directory", patterns: ["/etc/*"], reply_options: ["once", "always", "reject"] },
    routing: { directory: "/srv/work" },
    ...extra,
  };
}

interface Opened {
  interrupts: InterruptStore;
  close(): Promise<void>;
}

const storageOf = (storage: Storage): Opened => ({ interrupts: storage.interrupts, close: () => storage.close() });

const backends: { name: string; open: (now: () => number) => Promise<Opened> }[] = [
  { name: "memory", open: async (now) => storageOf(await openStorage({ backend: "memory", now })) },
  { name: "sqlite", open: async (now) => storageOf(await openStorage({ backend: "sqlite", url: dbUrl(freshFile()), now })) },
];
if (postgresUrl !== undefined) {
  backends.push({
    name: "postgres",
    open: async (now) => {
      const database = await freshDatabase();
      const pg = await openPostgres(database.url);
      return {
        interrupts: new SqlInterruptStore(pg.db, now),
        close: async () => {
          await pg.close();
          await database.drop();
        },
      };
    },
  });
}

describe.each(backends)("interrupt store ($name)", ({ open }) => {
  let clock = T0;
  let storage: Opened;
  beforeEach(async () => {
    clock = T0;
    storage = await open(() => clock);
  });
  afterEach(() => storage.close());

  it("adds a binding that is live until its TTL, with the details and routing it was given", async () => {
    expect(await storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE)).toBe(true);
    const found = await storage.interrupts.lookup("per_1", "alice");
    expect(found.status).toBe("live");
    if (found.status !== "live") throw new Error("unreachable");
    expect(found.record).toEqual({
      ...interrupt("per_1"),
      createdAt: T0,
      expiresAt: T0 + TTL * 1000,
      tombstoneExpiresAt: T0 + (TTL + TOMBSTONE) * 1000,
    });
    clock = T0 + TTL * 1000 - 1;
    expect((await storage.interrupts.lookup("per_1", "alice")).status).toBe("live");
  });

  it("is expired during the tombstone window, then not found and purged", async () => {
    await storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    clock = T0 + TTL * 1000;
    expect((await storage.interrupts.lookup("per_1", "alice")).status).toBe("expired");
    clock = T0 + (TTL + TOMBSTONE) * 1000 - 1;
    expect((await storage.interrupts.lookup("per_1", "alice")).status).toBe("expired");
    expect(await storage.interrupts.listLive("alice")).toEqual([]);
    clock = T0 + (TTL + TOMBSTONE) * 1000;
    expect((await storage.interrupts.lookup("per_1", "alice")).status).toBe("not_found");
    expect(await storage.interrupts.get("per_1")).toBeUndefined();
  });

  it("a zero tombstone TTL goes straight from live to not found", async () => {
    await storage.interrupts.add(interrupt("per_1"), TTL, 0);
    clock = T0 + TTL * 1000;
    expect((await storage.interrupts.lookup("per_1", "alice")).status).toBe("not_found");
  });

  it("purgeExpired deletes only bindings past their tombstone window", async () => {
    await storage.interrupts.add(interrupt("per_old"), 10, 10);
    clock = T0 + 5_000;
    await storage.interrupts.add(interrupt("per_new"), 10, 10);
    clock = T0 + 20_000; // per_old: tombstone over; per_new: tombstone (expired at 15 s)
    expect(await storage.interrupts.purgeExpired()).toBe(1);
    expect(await storage.interrupts.get("per_old")).toBeUndefined();
    expect((await storage.interrupts.lookup("per_new", "alice")).status).toBe("expired");
    expect(await storage.interrupts.purgeExpired()).toBe(0);
  });

  it("scopes bindings to their owner: another principal gets not found and an empty list", async () => {
    await storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    expect((await storage.interrupts.lookup("per_1", "mallory")).status).toBe("not_found");
    expect(await storage.interrupts.listLive("mallory")).toEqual([]);
    expect((await storage.interrupts.listLive("alice")).map((r) => r.requestId)).toEqual(["per_1"]);
    // even as a tombstone it stays the owner's
    clock = T0 + TTL * 1000;
    expect((await storage.interrupts.lookup("per_1", "mallory")).status).toBe("not_found");
    expect((await storage.interrupts.lookup("per_1", "alice")).status).toBe("expired");
  });

  it("ignores duplicate asked events: the first binding (and its expiry) is kept", async () => {
    expect(await storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE)).toBe(true);
    clock = T0 + 10_000;
    expect(await storage.interrupts.add(interrupt("per_1", { owner: "mallory", taskId: "task-2" }), TTL, TOMBSTONE)).toBe(false);
    const record = await storage.interrupts.get("per_1");
    expect(record).toMatchObject({ owner: "alice", taskId: "task-1", createdAt: T0, expiresAt: T0 + TTL * 1000 });
    // a tombstone is not revived by a late duplicate either
    clock = T0 + TTL * 1000;
    expect(await storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE)).toBe(false);
    expect((await storage.interrupts.lookup("per_1", "alice")).status).toBe("expired");
    // past the tombstone window the id starts afresh
    clock = T0 + (TTL + TOMBSTONE) * 1000;
    expect(await storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE)).toBe(true);
    expect((await storage.interrupts.lookup("per_1", "alice")).status).toBe("live");
  });

  it("remove discards a binding (resolved / answered): a later lookup is not found", async () => {
    await storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    expect(await storage.interrupts.remove("per_1")).toBe(true);
    expect(await storage.interrupts.remove("per_1")).toBe(false);
    expect((await storage.interrupts.lookup("per_1", "alice")).status).toBe("not_found");
  });

  it("lists an owner's live bindings oldest first, optionally by type", async () => {
    await storage.interrupts.add(interrupt("per_b"), TTL, TOMBSTONE);
    clock += 1_000;
    await storage.interrupts.add(interrupt("que_a", { type: "question", details: { questions: [{ question: "Color?", options: [{ label: "blue" }] }] } }), TTL, TOMBSTONE);
    clock += 1_000;
    await storage.interrupts.add(interrupt("per_a"), TTL, TOMBSTONE);
    await storage.interrupts.add(interrupt("per_x", { owner: "bob" }), TTL, TOMBSTONE);
    expect((await storage.interrupts.listLive("alice")).map((r) => r.requestId)).toEqual(["per_b", "que_a", "per_a"]);
    expect((await storage.interrupts.listLive("alice", "permission")).map((r) => r.requestId)).toEqual(["per_b", "per_a"]);
    const questions = await storage.interrupts.listLive("alice", "question");
    expect(questions).toHaveLength(1);
    expect(questions[0]).toMatchObject({ type: "question", details: { questions: [{ question: "Color?", options: [{ label: "blue" }] }] } });
    // the first one expires first
    clock = T0 + TTL * 1000;
    expect((await storage.interrupts.listLive("alice")).map((r) => r.requestId)).toEqual(["que_a", "per_a"]);
  });

  it("returns copies: mutating a record does not change the store", async () => {
    await storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    const found = await storage.interrupts.lookup("per_1", "alice");
    if (found.status !== "live") throw new Error("expected live");
    (found.record.details as Record<string, unknown>).permission = "changed";
    expect((await storage.interrupts.get("per_1"))?.details.permission).toBe("external_directory");
  });

  it("keeps a workspace routing and an empty (default instance) routing", async () => {
    await storage.interrupts.add(interrupt("per_w", { routing: { workspace: "wrk_1" } }), TTL, TOMBSTONE);
    await storage.interrupts.add(interrupt("per_d", { routing: {} }), TTL, TOMBSTONE);
    expect((await storage.interrupts.get("per_w"))?.routing).toEqual({ workspace: "wrk_1" });
    expect((await storage.interrupts.get("per_d"))?.routing).toEqual({});
  });

  it("every owner's live bindings, a task's bindings and the expired ones: oldest first, the same time by id in code-unit order", async () => {
    await storage.interrupts.add(interrupt("per_b", { credentialId: "cred-1" }), 10, TOMBSTONE);
    await storage.interrupts.add(interrupt("per_B", { owner: "bob" }), 10, TOMBSTONE);
    await storage.interrupts.add(interrupt("per_a", { taskId: "task-2" }), 10, TOMBSTONE);
    clock += 1_000;
    await storage.interrupts.add(interrupt("per_0"), TTL, TOMBSTONE);
    expect((await storage.interrupts.listLive(undefined)).map((r) => r.requestId)).toEqual(["per_B", "per_a", "per_b", "per_0"]);
    expect((await storage.interrupts.listLive(undefined, "question")).map((r) => r.requestId)).toEqual([]);
    expect((await storage.interrupts.listForTask("task-1")).map((r) => r.requestId)).toEqual(["per_B", "per_b", "per_0"]);
    expect((await storage.interrupts.get("per_b"))?.credentialId).toBe("cred-1");
    expect(await storage.interrupts.listExpired()).toEqual([]);
    clock = T0 + 10_000; // the first three are tombstones now, still listed for their task
    expect((await storage.interrupts.listExpired()).map((r) => r.requestId)).toEqual(["per_B", "per_a", "per_b"]);
    expect((await storage.interrupts.listForTask("task-1")).map((r) => r.requestId)).toEqual(["per_B", "per_b", "per_0"]);
    expect((await storage.interrupts.listLive(undefined)).map((r) => r.requestId)).toEqual(["per_0"]);
  });
});

describe.skipIf(postgresUrl === undefined)("interrupt store (postgres, two gateways on one database)", () => {
  let clock = T0;
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let a: PostgresDatabase;
  let b: PostgresDatabase;
  let one: SqlInterruptStore;
  let two: SqlInterruptStore;
  beforeEach(async () => {
    clock = T0;
    database = await freshDatabase();
    // two pools: two gateway instances, each with its own connections
    [a, b] = await Promise.all([openPostgres(database.url), openPostgres(database.url)]);
    one = new SqlInterruptStore(a.db, () => clock);
    two = new SqlInterruptStore(b.db, () => clock);
  });
  afterEach(async () => {
    await Promise.all([a.close(), b.close()]);
    await database.drop();
  });

  it("of two gateways resolving the same request at once, exactly one removes it", async () => {
    for (let i = 0; i < 20; i++) {
      const id = `per_race${i}`;
      expect(await one.add(interrupt(id), TTL, TOMBSTONE)).toBe(true);
      const results = await Promise.all([one.remove(id), two.remove(id), one.remove(id), two.remove(id)]);
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await two.get(id)).toBeUndefined();
    }
  });

  it("of two gateways recording the same asked request at once, exactly one creates it; a tombstone is revived once", async () => {
    for (let i = 0; i < 20; i++) {
      const id = `que_race${i}`;
      const results = await Promise.all([one.add(interrupt(id, { taskId: "task-one" }), TTL, TOMBSTONE), two.add(interrupt(id, { taskId: "task-two" }), TTL, TOMBSTONE)]);
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await one.get(id))?.taskId).toBe(results[0] ? "task-one" : "task-two");
    }
    // past the tombstone window: one of them starts the id afresh, the other sees the new binding
    clock = T0 + (TTL + TOMBSTONE) * 1000;
    const results = await Promise.all([one.add(interrupt("que_race0"), TTL, TOMBSTONE), two.add(interrupt("que_race0"), TTL, TOMBSTONE)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect((await two.lookup("que_race0", "alice")).status).toBe("live");
  });

  it("purging and a lookup of an outlived binding on two gateways at once delete it once, never a fresh one", async () => {
    await one.add(interrupt("per_old"), 10, 10);
    clock = T0 + 20_000;
    const [purged, found] = await Promise.all([one.purgeExpired(), two.lookup("per_old", "alice"), two.purgeExpired()]);
    expect(purged).toBeLessThanOrEqual(1);
    expect(found.status).toBe("not_found");
    expect(await one.get("per_old")).toBeUndefined();
    // a lookup that saw the old binding deletes only past the tombstone window: a binding added again stays
    expect(await two.add(interrupt("per_old"), TTL, TOMBSTONE)).toBe(true);
    expect((await one.lookup("per_old", "alice")).status).toBe("live");
  });
});

describe("interrupt store (sqlite only)", () => {
  it("survives a reopen (gateway restart): live bindings and tombstones alike", async () => {
    const file = freshFile();
    let clock = T0;
    const first = await openStorage({ backend: "sqlite", url: dbUrl(file), now: () => clock });
    await first.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    await first.interrupts.add(interrupt("que_1", { type: "question", details: { questions: [{ question: "Q?" }] } }), 10, TOMBSTONE);
    await first.close();

    clock = T0 + 20_000;
    const second = await openStorage({ backend: "sqlite", url: dbUrl(file), now: () => clock });
    try {
      expect(await second.interrupts.lookup("per_1", "alice")).toMatchObject({ status: "live", record: { details: interrupt("per_1").details, routing: { directory: "/srv/work" } } });
      expect((await second.interrupts.lookup("que_1", "alice")).status).toBe("expired");
      expect((await second.interrupts.listLive("alice")).map((r) => r.requestId)).toEqual(["per_1"]);
    } finally {
      await second.close();
    }
  });

  it("migration v2 creates the table and its indexes idempotently, also on a v1 database", () => {
    const raw = pinDatabase(new Database(":memory:"));
    try {
      // a database written by a v1 build
      expect(migrate(raw, MIGRATIONS.slice(0, 1))).toEqual({ from: 0, to: 1, applied: [1] });
      expect(prepare(raw, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'a2a_interrupt_requests'").pluck().get()).toBe(0);
      expect(migrate(raw, MIGRATIONS.slice(0, 2))).toEqual({ from: 1, to: 2, applied: [2] });
      expect(migrate(raw, MIGRATIONS.slice(0, 2))).toEqual({ from: 2, to: 2, applied: [] });
      expect(readSchemaVersion(raw)).toBe(2);
      // applying the v2 statements again (e.g. a racing process) is harmless
      MIGRATIONS[1]!.up(raw);
      const columns = prepare(raw, "SELECT name FROM pragma_table_info('a2a_interrupt_requests') ORDER BY cid").pluck().all();
      expect(columns).toEqual([
        "request_id", "session_id", "interrupt_type", "owner", "credential_id", "task_id", "context_id",
        "details_json", "routing_json", "created_at", "expires_at", "tombstone_expires_at",
      ]);
      const indexes = prepare(raw, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'a2a_interrupt_requests' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .pluck()
        .all();
      expect(indexes).toEqual([
        "a2a_interrupt_requests_owner_expires",
        "a2a_interrupt_requests_owner_type_expires",
        "a2a_interrupt_requests_task",
        "a2a_interrupt_requests_tombstone",
      ]);
      expect(() =>
        prepare(
          raw,
          "INSERT INTO a2a_interrupt_requests (request_id, session_id, interrupt_type, owner, task_id, context_id, details_json, created_at, expires_at, tombstone_expires_at) VALUES ('x', 's', 'other', 'o', 't', 'c', '{}', 0, 0, 0)",
          )
          .run(),
      ).toThrow(/CHECK/);
    } finally {
      raw.close();
    }
  });

  it("turns a failure of the database into TASK_STORE_UNAVAILABLE", async () => {
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(freshFile()) });
    await storage.close();
    const caught = await storage.interrupts.lookup("per_1", "alice").catch((err: unknown) => err);
    expect(caught).toBeInstanceOf(A2AError);
    expect((caught as A2AError).reason).toBe("TASK_STORE_UNAVAILABLE");
    expect((caught as A2AError).data).toMatchObject({ operation: "interrupts.lookup" });
  });
});

describe("registry helpers", () => {
  const message = (...texts: string[]): Message => ({ messageId: "m", role: "user", parts: texts.map((t) => ({ kind: "text" as const, text: t })) });

  it("advertised permission options: permission_options ids, reply_options, or the three defaults", () => {
    expect(advertisedPermissionOptions({ reply_options: ["once", "always", "reject"] })).toEqual(["once", "always", "reject"]);
    expect(advertisedPermissionOptions({ permission_options: [{ id: "once", label: "Allow once" }, { id: "reject", label: "Deny" }] })).toEqual(["once", "reject"]);
    // only known decisions count; a list that names none of them advertises nothing
    expect(advertisedPermissionOptions({ reply_options: ["approved"] })).toEqual([]);
    expect(advertisedPermissionOptions({})).toEqual(["once", "always", "reject"]);
  });

  it("answers from a follow-up message: the text (option labels matched case-insensitively), per part or line for several questions", () => {
    const one = { questions: [{ question: "Color?", options: [{ label: "blue" }, { label: "red" }] }] };
    expect(answersFromMessage(one, message("  BLUE "))).toEqual([["blue"]]);
    expect(answersFromMessage(one, message("green, please"))).toEqual([["green, please"]]);
    expect(answersFromMessage({}, message("anything"))).toEqual([["anything"]]);
    const two = { questions: [{ question: "Color?", options: [{ label: "blue" }] }, { question: "Size?", options: [] }] };
    expect(answersFromMessage(two, message("Blue", "large"))).toEqual([["blue"], ["large"]]);
    expect(answersFromMessage(two, message("blue\nsmall"))).toEqual([["blue"], ["small"]]);
    expect(() => answersFromMessage(two, message("blue"))).toThrow(/2 questions/);
    expect(() => answersFromMessage(one, message("   "))).toThrow(A2AError);
  });
});
