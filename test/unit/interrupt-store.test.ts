// The interrupt registry store: one behavioural suite (TTL, tombstones, principal scoping, duplicates, removal,
// listing) run against both backends with an injected clock, then SQLite-only checks: durability across reopen,
// migration v2 (idempotent, on top of an existing v1 database) and failure mapping. Last, the registry's pure
// helpers: advertised permission options and answers taken from a follow-up message.
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
  type NewInterrupt,
  type Storage,
} from "../../src/storage/index.js";

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

const backends = [
  { name: "memory", open: (now: () => number) => openStorage({ backend: "memory", now }) },
  { name: "sqlite", open: (now: () => number) => openStorage({ backend: "sqlite", url: dbUrl(freshFile()), now }) },
] as const;

describe.each(backends)("interrupt store ($name)", ({ open }) => {
  let clock = T0;
  let storage: Storage;
  beforeEach(async () => {
    clock = T0;
    storage = await open(() => clock);
  });
  afterEach(() => storage.close());

  it("adds a binding that is live until its TTL, with the details and routing it was given", () => {
    expect(storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE)).toBe(true);
    const found = storage.interrupts.lookup("per_1", "alice");
    expect(found.status).toBe("live");
    if (found.status !== "live") throw new Error("unreachable");
    expect(found.record).toEqual({
      ...interrupt("per_1"),
      createdAt: T0,
      expiresAt: T0 + TTL * 1000,
      tombstoneExpiresAt: T0 + (TTL + TOMBSTONE) * 1000,
    });
    clock = T0 + TTL * 1000 - 1;
    expect(storage.interrupts.lookup("per_1", "alice").status).toBe("live");
  });

  it("is expired during the tombstone window, then not found and purged", () => {
    storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    clock = T0 + TTL * 1000;
    expect(storage.interrupts.lookup("per_1", "alice").status).toBe("expired");
    clock = T0 + (TTL + TOMBSTONE) * 1000 - 1;
    expect(storage.interrupts.lookup("per_1", "alice").status).toBe("expired");
    expect(storage.interrupts.listLive("alice")).toEqual([]);
    clock = T0 + (TTL + TOMBSTONE) * 1000;
    expect(storage.interrupts.lookup("per_1", "alice").status).toBe("not_found");
    expect(storage.interrupts.get("per_1")).toBeUndefined();
  });

  it("a zero tombstone TTL goes straight from live to not found", () => {
    storage.interrupts.add(interrupt("per_1"), TTL, 0);
    clock = T0 + TTL * 1000;
    expect(storage.interrupts.lookup("per_1", "alice").status).toBe("not_found");
  });

  it("purgeExpired deletes only bindings past their tombstone window", () => {
    storage.interrupts.add(interrupt("per_old"), 10, 10);
    clock = T0 + 5_000;
    storage.interrupts.add(interrupt("per_new"), 10, 10);
    clock = T0 + 20_000; // per_old: tombstone over; per_new: tombstone (expired at 15 s)
    expect(storage.interrupts.purgeExpired()).toBe(1);
    expect(storage.interrupts.get("per_old")).toBeUndefined();
    expect(storage.interrupts.lookup("per_new", "alice").status).toBe("expired");
    expect(storage.interrupts.purgeExpired()).toBe(0);
  });

  it("scopes bindings to their owner: another principal gets not found and an empty list", () => {
    storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    expect(storage.interrupts.lookup("per_1", "mallory").status).toBe("not_found");
    expect(storage.interrupts.listLive("mallory")).toEqual([]);
    expect(storage.interrupts.listLive("alice").map((r) => r.requestId)).toEqual(["per_1"]);
    // even as a tombstone it stays the owner's
    clock = T0 + TTL * 1000;
    expect(storage.interrupts.lookup("per_1", "mallory").status).toBe("not_found");
    expect(storage.interrupts.lookup("per_1", "alice").status).toBe("expired");
  });

  it("ignores duplicate asked events: the first binding (and its expiry) is kept", () => {
    expect(storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE)).toBe(true);
    clock = T0 + 10_000;
    expect(storage.interrupts.add(interrupt("per_1", { owner: "mallory", taskId: "task-2" }), TTL, TOMBSTONE)).toBe(false);
    const record = storage.interrupts.get("per_1");
    expect(record).toMatchObject({ owner: "alice", taskId: "task-1", createdAt: T0, expiresAt: T0 + TTL * 1000 });
    // a tombstone is not revived by a late duplicate either
    clock = T0 + TTL * 1000;
    expect(storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE)).toBe(false);
    expect(storage.interrupts.lookup("per_1", "alice").status).toBe("expired");
    // past the tombstone window the id starts afresh
    clock = T0 + (TTL + TOMBSTONE) * 1000;
    expect(storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE)).toBe(true);
    expect(storage.interrupts.lookup("per_1", "alice").status).toBe("live");
  });

  it("remove discards a binding (resolved / answered): a later lookup is not found", () => {
    storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    expect(storage.interrupts.remove("per_1")).toBe(true);
    expect(storage.interrupts.remove("per_1")).toBe(false);
    expect(storage.interrupts.lookup("per_1", "alice").status).toBe("not_found");
  });

  it("lists an owner's live bindings oldest first, optionally by type", () => {
    storage.interrupts.add(interrupt("per_b"), TTL, TOMBSTONE);
    clock += 1_000;
    storage.interrupts.add(interrupt("que_a", { type: "question", details: { questions: [{ question: "Color?", options: [{ label: "blue" }] }] } }), TTL, TOMBSTONE);
    clock += 1_000;
    storage.interrupts.add(interrupt("per_a"), TTL, TOMBSTONE);
    storage.interrupts.add(interrupt("per_x", { owner: "bob" }), TTL, TOMBSTONE);
    expect(storage.interrupts.listLive("alice").map((r) => r.requestId)).toEqual(["per_b", "que_a", "per_a"]);
    expect(storage.interrupts.listLive("alice", "permission").map((r) => r.requestId)).toEqual(["per_b", "per_a"]);
    const questions = storage.interrupts.listLive("alice", "question");
    expect(questions).toHaveLength(1);
    expect(questions[0]).toMatchObject({ type: "question", details: { questions: [{ question: "Color?", options: [{ label: "blue" }] }] } });
    // the first one expires first
    clock = T0 + TTL * 1000;
    expect(storage.interrupts.listLive("alice").map((r) => r.requestId)).toEqual(["que_a", "per_a"]);
  });

  it("returns copies: mutating a record does not change the store", () => {
    storage.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    const found = storage.interrupts.lookup("per_1", "alice");
    if (found.status !== "live") throw new Error("expected live");
    (found.record.details as Record<string, unknown>).permission = "changed";
    expect(storage.interrupts.get("per_1")?.details.permission).toBe("external_directory");
  });

  it("keeps a workspace routing and an empty (default instance) routing", () => {
    storage.interrupts.add(interrupt("per_w", { routing: { workspace: "wrk_1" } }), TTL, TOMBSTONE);
    storage.interrupts.add(interrupt("per_d", { routing: {} }), TTL, TOMBSTONE);
    expect(storage.interrupts.get("per_w")?.routing).toEqual({ workspace: "wrk_1" });
    expect(storage.interrupts.get("per_d")?.routing).toEqual({});
  });
});

describe("interrupt store (sqlite only)", () => {
  it("survives a reopen (gateway restart): live bindings and tombstones alike", async () => {
    const file = freshFile();
    let clock = T0;
    const first = await openStorage({ backend: "sqlite", url: dbUrl(file), now: () => clock });
    first.interrupts.add(interrupt("per_1"), TTL, TOMBSTONE);
    first.interrupts.add(interrupt("que_1", { type: "question", details: { questions: [{ question: "Q?" }] } }), 10, TOMBSTONE);
    first.close();

    clock = T0 + 20_000;
    const second = await openStorage({ backend: "sqlite", url: dbUrl(file), now: () => clock });
    try {
      expect(second.interrupts.lookup("per_1", "alice")).toMatchObject({ status: "live", record: { details: interrupt("per_1").details, routing: { directory: "/srv/work" } } });
      expect(second.interrupts.lookup("que_1", "alice").status).toBe("expired");
      expect(second.interrupts.listLive("alice").map((r) => r.requestId)).toEqual(["per_1"]);
    } finally {
      second.close();
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
    storage.close();
    let caught: unknown;
    try {
      storage.interrupts.lookup("per_1", "alice");
    } catch (err) {
      caught = err;
    }
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
