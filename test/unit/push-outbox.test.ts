// The push notification outbox (src/storage/push-outbox.ts): one behavioural suite run against both backends
// (per-(task, config) queues where only the head is due, busy queues skipped, due order and limit, reschedule,
// nextDueAt, remove, drop, size, entries held for quiet hours), then SQLite only: durability across reopen and rollback inside `atomically`.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { A2AError } from "../../src/contract/errors.js";
import { openStorage, type Storage } from "../../src/storage/index.js";
import { queueKey, type NewDelivery, type PushDelivery, type PushOutboxStore } from "../../src/storage/push-outbox.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-push-outbox-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;
const freshFile = (): string => path.join(tmpRoot, `case-${++seq}`, "a2a.db");
const dbUrl = (file: string): string => `sqlite:///${file}`;

const T0 = Date.UTC(2025, 0, 1);

const item = (taskId: string, configId: string, n: number | string, contentType = "application/json"): NewDelivery => ({
  taskId,
  configId,
  body: JSON.stringify({ n }),
  contentType,
});

const bodies = (ds: PushDelivery[]): unknown[] => ds.map((d) => JSON.parse(d.body).n);
const NONE: ReadonlySet<string> = new Set();

const backends = [
  { name: "memory", open: (now: () => number) => openStorage({ backend: "memory", now }) },
  { name: "sqlite", open: (now: () => number) => openStorage({ backend: "sqlite", url: dbUrl(freshFile()), now }) },
] as const;

describe.each(backends)("push outbox ($name)", ({ open }) => {
  let clock: number;
  let storage: Storage;
  let outbox: PushOutboxStore;
  beforeEach(async () => {
    clock = T0;
    storage = await open(() => clock);
    outbox = storage.pushOutbox;
  });
  afterEach(() => storage.close());

  it("starts empty", () => {
    expect(outbox.size()).toBe(0);
    expect(outbox.due(T0, 10, NONE)).toEqual([]);
    expect(outbox.nextDueAt(NONE, clock)).toBeUndefined();
  });

  it("enqueues entries due at once, with every field, attempts 0 and no lastError", () => {
    clock = T0 + 5;
    outbox.enqueue([item("t1", "c1", 1, "application/a2a+json")]);
    const [d] = outbox.due(clock, 10, NONE);
    expect(d).toEqual({
      id: expect.any(Number),
      taskId: "t1",
      configId: "c1",
      body: '{"n":1}',
      contentType: "application/a2a+json",
      attempts: 0,
      nextAttemptAt: T0 + 5,
      createdAt: T0 + 5,
    });
    expect(d).not.toHaveProperty("lastError");
    // Not due before it was enqueued.
    expect(outbox.due(T0 + 4, 10, NONE)).toEqual([]);
  });

  it("keeps a notification's trace context (traceparent, tracestate) with it", () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    outbox.enqueue([{ ...item("t1", "c1", 1), traceparent, tracestate: "vendor=1" }, item("t2", "c2", 2)]);
    const due = outbox.due(clock, 10, NONE);
    expect(due.find((d) => d.taskId === "t1")).toMatchObject({ traceparent, tracestate: "vendor=1" });
    const plain = due.find((d) => d.taskId === "t2")!;
    expect(plain).not.toHaveProperty("traceparent");
    expect(plain).not.toHaveProperty("tracestate");
  });

  it("an empty enqueue is a no-op", () => {
    outbox.enqueue([]);
    expect(outbox.size()).toBe(0);
  });

  it("keeps enqueue order within a queue: removing the head makes the next one due", () => {
    outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2)]);
    outbox.enqueue([item("t1", "c1", 3)]);
    const seen: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      const due = outbox.due(clock, 10, NONE);
      if (due.length === 0) break;
      expect(due).toHaveLength(1); // one queue: only its head
      seen.push(...bodies(due));
      outbox.remove(due[0]!.id);
    }
    expect(seen).toEqual([1, 2, 3]);
    expect(outbox.size()).toBe(0);
  });

  it("ids grow in enqueue order", () => {
    outbox.enqueue([item("t1", "c1", 1), item("t2", "c1", 2), item("t1", "c2", 3)]);
    const ids = outbox.due(clock, 10, NONE).map((d) => d.id);
    expect(ids).toHaveLength(3);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(3);
  });

  it("only the head of each (task, config) queue is due", () => {
    outbox.enqueue([item("t1", "c1", "t1c1-a"), item("t1", "c2", "t1c2-a"), item("t1", "c1", "t1c1-b"), item("t2", "c1", "t2c1-a"), item("t1", "c2", "t1c2-b")]);
    expect(outbox.size()).toBe(5);
    const due = outbox.due(clock, 10, NONE);
    expect(bodies(due)).toEqual(["t1c1-a", "t1c2-a", "t2c1-a"]);
    expect(due.map((d) => queueKey(d.taskId, d.configId))).toEqual([queueKey("t1", "c1"), queueKey("t1", "c2"), queueKey("t2", "c1")]);
  });

  it("does not confuse queues whose ids share a prefix", () => {
    outbox.enqueue([item("t1", "c1x", "a"), item("t1c", "1x", "b"), item("t1", "c1", "c")]);
    expect(bodies(outbox.due(clock, 10, NONE))).toEqual(["a", "b", "c"]);
  });

  it("skips busy queues entirely (their later entries are not due either)", () => {
    outbox.enqueue([item("t1", "c1", "a1"), item("t1", "c1", "a2"), item("t2", "c1", "b1"), item("t3", "c1", "c1")]);
    const busy = new Set([queueKey("t1", "c1"), queueKey("t3", "c1")]);
    expect(bodies(outbox.due(clock, 10, busy))).toEqual(["b1"]);
    expect(bodies(outbox.due(clock, 10, new Set([queueKey("t2", "c1")])))).toEqual(["a1", "c1"]);
    // A key for a queue that does not exist changes nothing.
    expect(bodies(outbox.due(clock, 10, new Set([queueKey("nope", "c1")])))).toEqual(["a1", "b1", "c1"]);
  });

  it("busy keys do not eat into the limit", () => {
    outbox.enqueue([item("t1", "c1", "a"), item("t2", "c1", "b"), item("t3", "c1", "c"), item("t4", "c1", "d")]);
    const busy = new Set([queueKey("t1", "c1"), queueKey("t2", "c1")]);
    expect(bodies(outbox.due(clock, 2, busy))).toEqual(["c", "d"]);
  });

  it("orders due entries by nextAttemptAt, then id, and caps them by limit", () => {
    outbox.enqueue([item("t1", "c1", "a"), item("t2", "c1", "b"), item("t3", "c1", "c"), item("t4", "c1", "d")]);
    const [a, b, c] = outbox.due(clock, 10, NONE);
    outbox.reschedule(a!.id, 1, T0 + 300, "x");
    outbox.reschedule(b!.id, 1, T0 + 100, "x");
    outbox.reschedule(c!.id, 1, T0 + 100, "x");
    // d stays at T0.
    expect(bodies(outbox.due(T0 + 1000, 10, NONE))).toEqual(["d", "b", "c", "a"]);
    expect(bodies(outbox.due(T0 + 1000, 2, NONE))).toEqual(["d", "b"]);
    expect(bodies(outbox.due(T0 + 1000, 1, NONE))).toEqual(["d"]);
    expect(outbox.due(T0 + 1000, 0, NONE)).toEqual([]);
    // Only what is due at `now`.
    expect(bodies(outbox.due(T0 + 100, 10, NONE))).toEqual(["d", "b", "c"]);
    expect(bodies(outbox.due(T0 + 99, 10, NONE))).toEqual(["d"]);
  });

  it("orders queues enqueued at different times by their time", () => {
    outbox.enqueue([item("late", "c", "late")]);
    const [late] = outbox.due(clock, 1, NONE);
    outbox.reschedule(late!.id, 0, T0 + 50, "");
    clock = T0 + 10;
    outbox.enqueue([item("early", "c", "early")]);
    expect(bodies(outbox.due(T0 + 60, 10, NONE))).toEqual(["early", "late"]);
  });

  it("reschedule moves nextAttemptAt, attempts and lastError, and keeps the queue blocked until due", () => {
    outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2)]);
    const [head] = outbox.due(clock, 10, NONE);
    outbox.reschedule(head!.id, 3, T0 + 5000, "HTTP 503");
    // Blocked: neither the head nor the entry behind it is due before T0 + 5000.
    expect(outbox.due(T0, 10, NONE)).toEqual([]);
    expect(outbox.due(T0 + 4999, 10, NONE)).toEqual([]);
    const [again] = outbox.due(T0 + 5000, 10, NONE);
    expect(again).toEqual({ ...head, attempts: 3, nextAttemptAt: T0 + 5000, lastError: "HTTP 503" });
    // createdAt is untouched.
    expect(again!.createdAt).toBe(T0);
    expect(outbox.size()).toBe(2);
    // Rescheduling again overwrites.
    outbox.reschedule(head!.id, 4, T0 + 9000, "ECONNREFUSED");
    expect(outbox.due(T0 + 9000, 10, NONE)[0]).toMatchObject({ attempts: 4, nextAttemptAt: T0 + 9000, lastError: "ECONNREFUSED" });
  });

  it("a blocked queue does not block the others", () => {
    outbox.enqueue([item("t1", "c1", "a1"), item("t1", "c1", "a2"), item("t2", "c1", "b1")]);
    const [a1] = outbox.due(clock, 10, NONE);
    outbox.reschedule(a1!.id, 1, T0 + 1000, "x");
    expect(bodies(outbox.due(T0, 10, NONE))).toEqual(["b1"]);
  });

  it("reschedule and remove of an unknown id are no-ops", () => {
    outbox.enqueue([item("t1", "c1", 1)]);
    outbox.reschedule(999_999, 1, T0 + 1, "x");
    outbox.remove(999_999);
    expect(outbox.size()).toBe(1);
    expect(outbox.due(T0, 10, NONE)[0]).toMatchObject({ attempts: 0, nextAttemptAt: T0 });
  });

  it("nextDueAt: the earliest queue head, ignoring busy queues and entries behind a head", () => {
    outbox.enqueue([item("t1", "c1", "a1"), item("t1", "c1", "a2"), item("t2", "c1", "b1")]);
    const [a1, b1] = outbox.due(clock, 10, NONE);
    outbox.reschedule(a1!.id, 1, T0 + 700, "x");
    outbox.reschedule(b1!.id, 1, T0 + 300, "x");
    // a2 is at T0 but behind a1: it does not count.
    expect(outbox.nextDueAt(NONE, clock)).toBe(T0 + 300);
    expect(outbox.nextDueAt(new Set([queueKey("t2", "c1")]), clock)).toBe(T0 + 700);
    expect(outbox.nextDueAt(new Set([queueKey("t1", "c1")]), clock)).toBe(T0 + 300);
    expect(outbox.nextDueAt(new Set([queueKey("t1", "c1"), queueKey("t2", "c1")]), clock)).toBeUndefined();
    // Also when the head is already due.
    outbox.reschedule(b1!.id, 1, T0 - 10, "x");
    expect(outbox.nextDueAt(NONE, clock)).toBe(T0 - 10);
  });

  it("nextDueAt with many busy queues still finds the free one", () => {
    const items = Array.from({ length: 6 }, (_, i) => item(`t${i}`, "c", i));
    outbox.enqueue(items);
    const all = outbox.due(clock, 10, NONE);
    all.forEach((d, i) => outbox.reschedule(d.id, 1, T0 + 10 * (i + 1), "x"));
    const busy = new Set(["t0", "t1", "t2", "t3", "t4"].map((t) => queueKey(t, "c")));
    expect(outbox.nextDueAt(busy, clock)).toBe(T0 + 60);
    expect(bodies(outbox.due(T0 + 1000, 1, busy))).toEqual([5]);
  });

  it("remove deletes one entry and unblocks the next", () => {
    outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2), item("t2", "c1", 3)]);
    const [first] = outbox.due(clock, 10, NONE);
    outbox.remove(first!.id);
    expect(outbox.size()).toBe(2);
    expect(bodies(outbox.due(clock, 10, NONE))).toEqual([2, 3]);
  });

  it("drop by config removes that queue only and counts", () => {
    outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2), item("t1", "c2", 3), item("t2", "c1", 4)]);
    expect(outbox.drop("t1", "c1")).toBe(2);
    expect(outbox.size()).toBe(2);
    expect(bodies(outbox.due(clock, 10, NONE))).toEqual([3, 4]);
    expect(outbox.drop("t1", "c1")).toBe(0);
    expect(outbox.drop("t1", "nope")).toBe(0);
  });

  it("drop by task removes every config's queue of the task and counts", () => {
    outbox.enqueue([item("t1", "c1", 1), item("t1", "c2", 2), item("t1", "c1", 3), item("t2", "c1", 4), item("t10", "c1", 5)]);
    expect(outbox.drop("t1")).toBe(3);
    expect(outbox.size()).toBe(2);
    expect(bodies(outbox.due(clock, 10, NONE))).toEqual([4, 5]);
    expect(outbox.drop("t1")).toBe(0);
    expect(outbox.drop("unknown")).toBe(0);
  });

  it("size counts every entry, heads or not, due or not", () => {
    outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2), item("t2", "c1", 3)]);
    const [head] = outbox.due(clock, 1, NONE);
    outbox.reschedule(head!.id, 1, T0 + 1_000_000, "x");
    expect(outbox.size()).toBe(3);
    outbox.remove(head!.id);
    expect(outbox.size()).toBe(2);
  });

  it("due hands out copies: changing one does not change the store", () => {
    outbox.enqueue([item("t1", "c1", 1)]);
    const [d] = outbox.due(clock, 1, NONE);
    d!.attempts = 42;
    d!.nextAttemptAt = T0 + 1e9;
    expect(outbox.due(clock, 1, NONE)[0]).toMatchObject({ attempts: 0, nextAttemptAt: T0 });
  });

  it("a held entry is not due before its heldUntil and does not block the entries after it; then it leads its queue again", () => {
    outbox.enqueue([{ ...item("t1", "c1", "held"), heldUntil: T0 + 1000, coalesceKey: "a2a" }, item("t1", "c1", "bypass")], T0);
    expect(bodies(outbox.due(T0, 10, NONE))).toEqual(["bypass"]);
    expect(outbox.nextDueAt(NONE, T0)).toBe(T0);
    const [bypass] = outbox.due(T0, 10, NONE);
    outbox.remove(bypass!.id);
    expect(outbox.due(T0 + 999, 10, NONE)).toEqual([]);
    expect(outbox.nextDueAt(NONE, T0 + 999)).toBe(T0 + 1000);
    const [held] = outbox.due(T0 + 1000, 10, NONE);
    expect(held).toMatchObject({ body: JSON.stringify({ n: "held" }), heldUntil: T0 + 1000, coalesceKey: "a2a", createdAt: T0, nextAttemptAt: T0 + 1000 });
    // Released: it is again the head of its queue, ahead of what came after it.
    outbox.enqueue([item("t1", "c1", "later")], T0 + 1000);
    expect(bodies(outbox.due(T0 + 1000, 10, NONE))).toEqual(["held"]);
  });

  it("held lists a queue's entries still held at now; rewrite replaces a body", () => {
    outbox.enqueue([{ ...item("t1", "c1", 1), heldUntil: T0 + 50, coalesceKey: "status_change" }, { ...item("t1", "c1", 2), heldUntil: T0 + 50, coalesceKey: "message" }, item("t1", "c1", 3)], T0);
    outbox.enqueue([{ ...item("t1", "c2", 4), heldUntil: T0 + 50 }], T0);
    const held = outbox.held("t1", "c1", T0);
    expect(held.map((d) => d.coalesceKey)).toEqual(["status_change", "message"]);
    outbox.rewrite(held[1]!.id, JSON.stringify({ n: "rewritten" }));
    expect(bodies(outbox.held("t1", "c1", T0))).toEqual([1, "rewritten"]);
    expect(outbox.held("t1", "c1", T0 + 50)).toEqual([]);
  });

  it("atomically: everything enqueued inside is visible afterwards", () => {
    storage.atomically(() => {
      outbox.enqueue([item("t1", "c1", 1)]);
      outbox.enqueue([item("t1", "c2", 2)]);
    });
    expect(outbox.size()).toBe(2);
  });
});

describe("push outbox (sqlite only)", () => {
  it("entries survive closing and reopening the store", async () => {
    const file = freshFile();
    let clock = T0;
    const first = await openStorage({ backend: "sqlite", url: dbUrl(file), now: () => clock });
    first.pushOutbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2), item("t2", "c1", 3)]);
    const [head] = first.pushOutbox.due(clock, 10, NONE);
    first.pushOutbox.reschedule(head!.id, 2, T0 + 500, "HTTP 502");
    const before = first.pushOutbox.due(T0 + 500, 10, NONE);
    first.close();

    clock = T0 + 10_000;
    const second = await openStorage({ backend: "sqlite", url: dbUrl(file), now: () => clock });
    try {
      expect(second.pushOutbox.size()).toBe(3);
      expect(second.pushOutbox.due(T0 + 500, 10, NONE)).toEqual(before);
      expect(second.pushOutbox.due(T0 + 499, 10, NONE).map((d) => d.taskId)).toEqual(["t2"]);
      expect(bodies(before)).toEqual([3, 1]);
      expect(before[1]).toMatchObject({ taskId: "t1", attempts: 2, nextAttemptAt: T0 + 500, lastError: "HTTP 502", createdAt: T0 });
      // New entries after the reopen get fresh ids, behind the old ones.
      second.pushOutbox.enqueue([item("t1", "c1", 4)]);
      second.pushOutbox.remove(head!.id);
      expect(bodies(second.pushOutbox.due(clock, 10, NONE))).toEqual([2, 3]);
    } finally {
      second.close();
    }
  });

  it("ids are not reused after the newest entry is removed (the queue order stays the enqueue order)", async () => {
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(freshFile()), now: () => T0 });
    try {
      storage.pushOutbox.enqueue([item("t1", "c1", 1)]);
      const [a] = storage.pushOutbox.due(T0, 1, NONE);
      storage.pushOutbox.remove(a!.id);
      storage.pushOutbox.enqueue([item("t1", "c1", 2)]);
      const [b] = storage.pushOutbox.due(T0, 1, NONE);
      expect(b!.id).toBeGreaterThan(a!.id);
    } finally {
      storage.close();
    }
  });

  it("atomically rolls back an enqueue when the callback throws", async () => {
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(freshFile()), now: () => T0 });
    try {
      storage.pushOutbox.enqueue([item("t0", "c1", 0)]);
      const boom = new A2AError("INVALID_PARAMS", "boom");
      expect(() =>
        storage.atomically(() => {
          storage.pushOutbox.enqueue([item("t1", "c1", 1), item("t1", "c2", 2)]);
          expect(storage.pushOutbox.size()).toBe(3); // visible inside the transaction
          throw boom;
        }),
      ).toThrow(boom);
      expect(storage.pushOutbox.size()).toBe(1);
      expect(bodies(storage.pushOutbox.due(T0, 10, NONE))).toEqual([0]);

      // A plain error rolls back just the same (it surfaces wrapped as a store error).
      expect(() =>
        storage.atomically(() => {
          storage.pushOutbox.enqueue([item("t2", "c1", 3)]);
          storage.pushOutbox.drop("t0");
          throw new Error("boom");
        }),
      ).toThrow();
      expect(storage.pushOutbox.size()).toBe(1);
      expect(bodies(storage.pushOutbox.due(T0, 10, NONE))).toEqual([0]);
    } finally {
      storage.close();
    }
  });

  it("held entries survive closing and reopening the store", async () => {
    const file = freshFile();
    const first = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    first.pushOutbox.enqueue([{ ...item("t1", "c1", "night"), heldUntil: T0 + 5000, coalesceKey: "a2a" }], T0);
    first.close();
    const second = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    try {
      expect(second.pushOutbox.due(T0 + 4999, 10, NONE)).toEqual([]);
      expect(second.pushOutbox.nextDueAt(NONE, T0)).toBe(T0 + 5000);
      expect(second.pushOutbox.held("t1", "c1", T0)).toMatchObject([{ heldUntil: T0 + 5000, coalesceKey: "a2a" }]);
      expect(bodies(second.pushOutbox.due(T0 + 5000, 10, NONE))).toEqual(["night"]);
    } finally {
      second.close();
    }
  });

  it("is created by migration 5 with its queue index", async () => {
    const file = freshFile();
    await (await openStorage({ backend: "sqlite", url: dbUrl(file) })).close();
    const db = pinDatabase(new Database(file, { readonly: true }));
    try {
      const names = (prepare(db, "SELECT name FROM sqlite_master WHERE tbl_name = 'a2a_push_outbox'").all() as { name: string }[]).map((r) => r.name);
      expect(names).toEqual(expect.arrayContaining(["a2a_push_outbox", "a2a_push_outbox_queue"]));
    } finally {
      db.close();
    }
  });
});
