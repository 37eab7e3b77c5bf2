// The push notification outbox and push configs (src/storage/push-outbox.ts, src/storage/push-configs.ts): one
// behavioural suite run against every backend — memory, SQLite (Kysely on the gateway's connection) and PostgreSQL
// (the test run's throwaway cluster, one fresh database per case): per-(task, config) queues where only the head is
// due, busy queues skipped, due order and limit, reschedule, nextDueAt, remove, drop, size, entries held for quiet
// hours, the store bound to a transaction, claim() (one per queue, in order, busy skipped, leased); push configs in
// creation order. Then PostgreSQL: two gateways' workers on two pools claim every entry exactly once, each queue in
// order. Then SQLite only: durability across reopen.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import type { Kysely } from "kysely";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { A2AError } from "../../src/contract/errors.js";
import type { PushConfig } from "../../src/protocol/model.js";
import { openStorage, SqlPushConfigStore, type PushConfigStore } from "../../src/storage/index.js";
import { queueKey, SqlPushOutboxStore, type NewDelivery, type PushDelivery, type PushOutboxStore } from "../../src/storage/push-outbox.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";
import type { SqlSchema } from "../../src/storage/sql/schema.js";
import { openPostgres } from "../../src/storage/sql/postgres.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";

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

interface Opened {
  outbox: PushOutboxStore;
  configs: PushConfigStore;
  /** The query builder the stores run on (for transactions). */
  db: Kysely<SqlSchema>;
  close(): Promise<void>;
  /** Makes every later call fail as the database would; false when the backend cannot. */
  break(): Promise<boolean>;
}

const fromStorage = async (backend: "memory" | "sqlite", now: () => number): Promise<Opened> => {
  const storage = await openStorage(backend === "memory" ? { backend, now } : { backend, url: dbUrl(freshFile()), now });
  return {
    outbox: storage.pushOutbox,
    configs: storage.pushConfigs,
    db: storage.sql,
    close: () => storage.close(),
    break: async () => {
      await storage.close();
      return true;
    },
  };
};

const backends: { name: string; open: (now: () => number) => Promise<Opened> }[] = [
  { name: "memory", open: (now) => fromStorage("memory", now) },
  { name: "sqlite", open: (now) => fromStorage("sqlite", now) },
];
if (postgresUrl !== undefined) {
  backends.push({
    name: "postgres",
    open: async (now) => {
      const database = await freshDatabase();
      const pg = await openPostgres(database.url);
      let closed = false;
      const close = async (): Promise<void> => {
        if (!closed) await pg.close();
        closed = true;
      };
      return {
        outbox: new SqlPushOutboxStore(pg.db, now),
        configs: new SqlPushConfigStore(pg.db, now),
        db: pg.db,
        close: async () => {
          await close();
          await database.drop();
        },
        break: async () => {
          await close();
          return true;
        },
      };
    },
  });
}

describe.each(backends)("push outbox ($name)", ({ open }) => {
  let clock: number;
  let opened: Opened;
  let outbox: PushOutboxStore;
  beforeEach(async () => {
    clock = T0;
    opened = await open(() => clock);
    outbox = opened.outbox;
  });
  afterEach(() => opened.close());

  it("starts empty", async () => {
    expect(await outbox.size()).toBe(0);
    expect(await outbox.due(T0, 10, NONE)).toEqual([]);
    expect(await outbox.nextDueAt(NONE, clock)).toBeUndefined();
  });

  it("enqueues entries due at once, with every field, attempts 0 and no lastError", async () => {
    clock = T0 + 5;
    await outbox.enqueue([item("t1", "c1", 1, "application/a2a+json")]);
    const [d] = await outbox.due(clock, 10, NONE);
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
    expect(await outbox.due(T0 + 4, 10, NONE)).toEqual([]);
  });

  it("keeps a notification's trace context (traceparent, tracestate) with it", async () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    await outbox.enqueue([{ ...item("t1", "c1", 1), traceparent, tracestate: "vendor=1" }, item("t2", "c2", 2)]);
    const due = await outbox.due(clock, 10, NONE);
    expect(due.find((d) => d.taskId === "t1")).toMatchObject({ traceparent, tracestate: "vendor=1" });
    const plain = due.find((d) => d.taskId === "t2")!;
    expect(plain).not.toHaveProperty("traceparent");
    expect(plain).not.toHaveProperty("tracestate");
  });

  it("an empty enqueue is a no-op", async () => {
    await outbox.enqueue([]);
    expect(await outbox.size()).toBe(0);
  });

  it("keeps enqueue order within a queue: removing the head makes the next one due", async () => {
    await outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2)]);
    await outbox.enqueue([item("t1", "c1", 3)]);
    const seen: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      const due = await outbox.due(clock, 10, NONE);
      if (due.length === 0) break;
      expect(due).toHaveLength(1); // one queue: only its head
      seen.push(...bodies(due));
      await outbox.remove(due[0]!.id);
    }
    expect(seen).toEqual([1, 2, 3]);
    expect(await outbox.size()).toBe(0);
  });

  it("ids grow in enqueue order", async () => {
    await outbox.enqueue([item("t1", "c1", 1), item("t2", "c1", 2), item("t1", "c2", 3)]);
    const ids = (await outbox.due(clock, 10, NONE)).map((d) => d.id);
    expect(ids).toHaveLength(3);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(3);
  });

  it("only the head of each (task, config) queue is due", async () => {
    await outbox.enqueue([item("t1", "c1", "t1c1-a"), item("t1", "c2", "t1c2-a"), item("t1", "c1", "t1c1-b"), item("t2", "c1", "t2c1-a"), item("t1", "c2", "t1c2-b")]);
    expect(await outbox.size()).toBe(5);
    const due = await outbox.due(clock, 10, NONE);
    expect(bodies(due)).toEqual(["t1c1-a", "t1c2-a", "t2c1-a"]);
    expect(due.map((d) => queueKey(d.taskId, d.configId))).toEqual([queueKey("t1", "c1"), queueKey("t1", "c2"), queueKey("t2", "c1")]);
  });

  it("does not confuse queues whose ids share a prefix", async () => {
    await outbox.enqueue([item("t1", "c1x", "a"), item("t1c", "1x", "b"), item("t1", "c1", "c")]);
    expect(bodies(await outbox.due(clock, 10, NONE))).toEqual(["a", "b", "c"]);
  });

  it("skips busy queues entirely (their later entries are not due either)", async () => {
    await outbox.enqueue([item("t1", "c1", "a1"), item("t1", "c1", "a2"), item("t2", "c1", "b1"), item("t3", "c1", "c1")]);
    const busy = new Set([queueKey("t1", "c1"), queueKey("t3", "c1")]);
    expect(bodies(await outbox.due(clock, 10, busy))).toEqual(["b1"]);
    expect(bodies(await outbox.due(clock, 10, new Set([queueKey("t2", "c1")])))).toEqual(["a1", "c1"]);
    // A key for a queue that does not exist changes nothing.
    expect(bodies(await outbox.due(clock, 10, new Set([queueKey("nope", "c1")])))).toEqual(["a1", "b1", "c1"]);
  });

  it("busy keys do not eat into the limit", async () => {
    await outbox.enqueue([item("t1", "c1", "a"), item("t2", "c1", "b"), item("t3", "c1", "c"), item("t4", "c1", "d")]);
    const busy = new Set([queueKey("t1", "c1"), queueKey("t2", "c1")]);
    expect(bodies(await outbox.due(clock, 2, busy))).toEqual(["c", "d"]);
  });

  it("orders due entries by nextAttemptAt, then id, and caps them by limit", async () => {
    await outbox.enqueue([item("t1", "c1", "a"), item("t2", "c1", "b"), item("t3", "c1", "c"), item("t4", "c1", "d")]);
    const [a, b, c] = await outbox.due(clock, 10, NONE);
    await outbox.reschedule(a!.id, 1, T0 + 300, "x");
    await outbox.reschedule(b!.id, 1, T0 + 100, "x");
    await outbox.reschedule(c!.id, 1, T0 + 100, "x");
    // d stays at T0.
    expect(bodies(await outbox.due(T0 + 1000, 10, NONE))).toEqual(["d", "b", "c", "a"]);
    expect(bodies(await outbox.due(T0 + 1000, 2, NONE))).toEqual(["d", "b"]);
    expect(bodies(await outbox.due(T0 + 1000, 1, NONE))).toEqual(["d"]);
    expect(await outbox.due(T0 + 1000, 0, NONE)).toEqual([]);
    // Only what is due at `now`.
    expect(bodies(await outbox.due(T0 + 100, 10, NONE))).toEqual(["d", "b", "c"]);
    expect(bodies(await outbox.due(T0 + 99, 10, NONE))).toEqual(["d"]);
  });

  it("orders queues enqueued at different times by their time", async () => {
    await outbox.enqueue([item("late", "c", "late")]);
    const [late] = await outbox.due(clock, 1, NONE);
    await outbox.reschedule(late!.id, 0, T0 + 50, "");
    clock = T0 + 10;
    await outbox.enqueue([item("early", "c", "early")]);
    expect(bodies(await outbox.due(T0 + 60, 10, NONE))).toEqual(["early", "late"]);
  });

  it("reschedule moves nextAttemptAt, attempts and lastError, and keeps the queue blocked until due", async () => {
    await outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2)]);
    const [head] = await outbox.due(clock, 10, NONE);
    await outbox.reschedule(head!.id, 3, T0 + 5000, "HTTP 503");
    // Blocked: neither the head nor the entry behind it is due before T0 + 5000.
    expect(await outbox.due(T0, 10, NONE)).toEqual([]);
    expect(await outbox.due(T0 + 4999, 10, NONE)).toEqual([]);
    const [again] = await outbox.due(T0 + 5000, 10, NONE);
    expect(again).toEqual({ ...head, attempts: 3, nextAttemptAt: T0 + 5000, lastError: "HTTP 503" });
    // createdAt is untouched.
    expect(again!.createdAt).toBe(T0);
    expect(await outbox.size()).toBe(2);
    // Rescheduling again overwrites.
    await outbox.reschedule(head!.id, 4, T0 + 9000, "ECONNREFUSED");
    expect((await outbox.due(T0 + 9000, 10, NONE))[0]).toMatchObject({ attempts: 4, nextAttemptAt: T0 + 9000, lastError: "ECONNREFUSED" });
  });

  it("a blocked queue does not block the others", async () => {
    await outbox.enqueue([item("t1", "c1", "a1"), item("t1", "c1", "a2"), item("t2", "c1", "b1")]);
    const [a1] = await outbox.due(clock, 10, NONE);
    await outbox.reschedule(a1!.id, 1, T0 + 1000, "x");
    expect(bodies(await outbox.due(T0, 10, NONE))).toEqual(["b1"]);
  });

  it("reschedule and remove of an unknown id are no-ops", async () => {
    await outbox.enqueue([item("t1", "c1", 1)]);
    await outbox.reschedule(999_999, 1, T0 + 1, "x");
    await outbox.remove(999_999);
    expect(await outbox.size()).toBe(1);
    expect((await outbox.due(T0, 10, NONE))[0]).toMatchObject({ attempts: 0, nextAttemptAt: T0 });
  });

  it("nextDueAt: the earliest queue head, ignoring busy queues and entries behind a head", async () => {
    await outbox.enqueue([item("t1", "c1", "a1"), item("t1", "c1", "a2"), item("t2", "c1", "b1")]);
    const [a1, b1] = await outbox.due(clock, 10, NONE);
    await outbox.reschedule(a1!.id, 1, T0 + 700, "x");
    await outbox.reschedule(b1!.id, 1, T0 + 300, "x");
    // a2 is at T0 but behind a1: it does not count.
    expect(await outbox.nextDueAt(NONE, clock)).toBe(T0 + 300);
    expect(await outbox.nextDueAt(new Set([queueKey("t2", "c1")]), clock)).toBe(T0 + 700);
    expect(await outbox.nextDueAt(new Set([queueKey("t1", "c1")]), clock)).toBe(T0 + 300);
    expect(await outbox.nextDueAt(new Set([queueKey("t1", "c1"), queueKey("t2", "c1")]), clock)).toBeUndefined();
    // Also when the head is already due.
    await outbox.reschedule(b1!.id, 1, T0 - 10, "x");
    expect(await outbox.nextDueAt(NONE, clock)).toBe(T0 - 10);
  });

  it("nextDueAt with many busy queues still finds the free one", async () => {
    const items = Array.from({ length: 6 }, (_, i) => item(`t${i}`, "c", i));
    await outbox.enqueue(items);
    const all = await outbox.due(clock, 10, NONE);
    for (const [i, d] of all.entries()) await outbox.reschedule(d.id, 1, T0 + 10 * (i + 1), "x");
    const busy = new Set(["t0", "t1", "t2", "t3", "t4"].map((t) => queueKey(t, "c")));
    expect(await outbox.nextDueAt(busy, clock)).toBe(T0 + 60);
    expect(bodies(await outbox.due(T0 + 1000, 1, busy))).toEqual([5]);
  });

  it("remove deletes one entry and unblocks the next", async () => {
    await outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2), item("t2", "c1", 3)]);
    const [first] = await outbox.due(clock, 10, NONE);
    await outbox.remove(first!.id);
    expect(await outbox.size()).toBe(2);
    expect(bodies(await outbox.due(clock, 10, NONE))).toEqual([2, 3]);
  });

  it("drop by config removes that queue only and counts", async () => {
    await outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2), item("t1", "c2", 3), item("t2", "c1", 4)]);
    expect(await outbox.drop("t1", "c1")).toBe(2);
    expect(await outbox.size()).toBe(2);
    expect(bodies(await outbox.due(clock, 10, NONE))).toEqual([3, 4]);
    expect(await outbox.drop("t1", "c1")).toBe(0);
    expect(await outbox.drop("t1", "nope")).toBe(0);
  });

  it("drop by task removes every config's queue of the task and counts", async () => {
    await outbox.enqueue([item("t1", "c1", 1), item("t1", "c2", 2), item("t1", "c1", 3), item("t2", "c1", 4), item("t10", "c1", 5)]);
    expect(await outbox.drop("t1")).toBe(3);
    expect(await outbox.size()).toBe(2);
    expect(bodies(await outbox.due(clock, 10, NONE))).toEqual([4, 5]);
    expect(await outbox.drop("t1")).toBe(0);
    expect(await outbox.drop("unknown")).toBe(0);
  });

  it("size counts every entry, heads or not, due or not", async () => {
    await outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2), item("t2", "c1", 3)]);
    const [head] = await outbox.due(clock, 1, NONE);
    await outbox.reschedule(head!.id, 1, T0 + 1_000_000, "x");
    expect(await outbox.size()).toBe(3);
    await outbox.remove(head!.id);
    expect(await outbox.size()).toBe(2);
  });

  it("due hands out copies: changing one does not change the store", async () => {
    await outbox.enqueue([item("t1", "c1", 1)]);
    const [d] = await outbox.due(clock, 1, NONE);
    d!.attempts = 42;
    d!.nextAttemptAt = T0 + 1e9;
    expect((await outbox.due(clock, 1, NONE))[0]).toMatchObject({ attempts: 0, nextAttemptAt: T0 });
  });

  it("a held entry is not due before its heldUntil and does not block the entries after it; then it leads its queue again", async () => {
    await outbox.enqueue([{ ...item("t1", "c1", "held"), heldUntil: T0 + 1000, coalesceKey: "a2a" }, item("t1", "c1", "bypass")], T0);
    expect(bodies(await outbox.due(T0, 10, NONE))).toEqual(["bypass"]);
    expect(await outbox.nextDueAt(NONE, T0)).toBe(T0);
    const [bypass] = await outbox.due(T0, 10, NONE);
    await outbox.remove(bypass!.id);
    expect(await outbox.due(T0 + 999, 10, NONE)).toEqual([]);
    expect(await outbox.nextDueAt(NONE, T0 + 999)).toBe(T0 + 1000);
    const [held] = await outbox.due(T0 + 1000, 10, NONE);
    expect(held).toMatchObject({ body: JSON.stringify({ n: "held" }), heldUntil: T0 + 1000, coalesceKey: "a2a", createdAt: T0, nextAttemptAt: T0 + 1000 });
    // Released: it is again the head of its queue, ahead of what came after it.
    await outbox.enqueue([item("t1", "c1", "later")], T0 + 1000);
    expect(bodies(await outbox.due(T0 + 1000, 10, NONE))).toEqual(["held"]);
  });

  it("held lists a queue's entries still held at now; rewrite replaces a body", async () => {
    await outbox.enqueue([{ ...item("t1", "c1", 1), heldUntil: T0 + 50, coalesceKey: "status_change" }, { ...item("t1", "c1", 2), heldUntil: T0 + 50, coalesceKey: "message" }, item("t1", "c1", 3)], T0);
    await outbox.enqueue([{ ...item("t1", "c2", 4), heldUntil: T0 + 50 }], T0);
    const held = await outbox.held("t1", "c1", T0);
    expect(held.map((d) => d.coalesceKey)).toEqual(["status_change", "message"]);
    await outbox.rewrite(held[1]!.id, JSON.stringify({ n: "rewritten" }));
    expect(bodies(await outbox.held("t1", "c1", T0))).toEqual([1, "rewritten"]);
    expect(await outbox.held("t1", "c1", T0 + 50)).toEqual([]);
  });

  it("bound to a transaction: everything enqueued inside is visible afterwards", async () => {
    await opened.db.transaction().execute(async (trx) => {
      const inside = new SqlPushOutboxStore(trx, () => clock);
      await inside.enqueue([item("t1", "c1", 1)]);
      await inside.enqueue([item("t1", "c2", 2)]);
    });
    expect(await outbox.size()).toBe(2);
  });

  it("bound to a transaction that fails: nothing of it stays (enqueue, drop)", async () => {
    await outbox.enqueue([item("t0", "c1", 0)]);
    const boom = new Error("boom");
    await expect(
      opened.db.transaction().execute(async (trx) => {
        const inside = new SqlPushOutboxStore(trx, () => clock);
        await inside.enqueue([item("t1", "c1", 1), item("t1", "c2", 2)]);
        expect(await inside.size()).toBe(3); // visible inside the transaction
        await inside.drop("t0");
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await outbox.size()).toBe(1);
    expect(bodies(await outbox.due(T0, 10, NONE))).toEqual([0]);
  });

  it("enqueue is all or none: a batch with a bad row writes nothing and is TASK_STORE_UNAVAILABLE", async () => {
    const bad = { ...item("t1", "c2", 2), body: null as unknown as string }; // NOT NULL
    const error = await outbox.enqueue([item("t1", "c1", 1), bad]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(A2AError);
    expect(error).toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation: "pushOutbox.enqueue" } });
    expect(await outbox.size()).toBe(0);
  });

  describe("claim", () => {
    const LEASE = 60_000;

    it("takes the due queue heads, at most one per queue, oldest first, and leases them", async () => {
      await outbox.enqueue([item("t1", "c1", "a1"), item("t1", "c1", "a2"), item("t2", "c1", "b1"), item("t1", "c2", "c1")]);
      const claimed = await outbox.claim(T0, 10, NONE, LEASE);
      expect(bodies(claimed)).toEqual(["a1", "b1", "c1"]);
      expect(claimed.every((d) => d.nextAttemptAt === T0 + LEASE && d.attempts === 0 && d.createdAt === T0)).toBe(true);
      // Leased: neither the heads nor what is behind them is due or claimable before the lease ends.
      expect(await outbox.claim(T0, 10, NONE, LEASE)).toEqual([]);
      expect(await outbox.due(T0 + LEASE - 1, 10, NONE)).toEqual([]);
      expect(await outbox.nextDueAt(NONE, T0)).toBe(T0 + LEASE);
      expect(await outbox.size()).toBe(4);
    });

    it("keeps the order within a queue: the next entry only after the head is removed", async () => {
      await outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2), item("t1", "c1", 3)]);
      const seen: unknown[] = [];
      for (let i = 0; i < 5; i++) {
        const claimed = await outbox.claim(T0, 10, NONE, LEASE);
        if (claimed.length === 0) break;
        expect(claimed).toHaveLength(1);
        seen.push(...bodies(claimed));
        expect(await outbox.claim(T0, 10, NONE, LEASE)).toEqual([]); // the head is leased: nothing else of the queue
        await outbox.remove(claimed[0]!.id);
      }
      expect(seen).toEqual([1, 2, 3]);
    });

    it("skips busy queues, which do not eat into the limit", async () => {
      await outbox.enqueue([item("t1", "c1", "a"), item("t2", "c1", "b"), item("t3", "c1", "c"), item("t4", "c1", "d")]);
      const busy = new Set([queueKey("t1", "c1"), queueKey("t3", "c1")]);
      expect(bodies(await outbox.claim(T0, 1, busy, LEASE))).toEqual(["b"]);
      expect(bodies(await outbox.claim(T0, 10, busy, LEASE))).toEqual(["d"]);
      // The busy ones were not leased.
      expect(bodies(await outbox.claim(T0, 10, NONE, LEASE))).toEqual(["a", "c"]);
      expect(await outbox.claim(T0, 0, NONE, LEASE)).toEqual([]);
    });

    it("a lease hides the entry until it ends; then it is claimable again (a worker that died)", async () => {
      await outbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2)]);
      const [first] = await outbox.claim(T0, 10, NONE, LEASE);
      expect(await outbox.claim(T0 + LEASE - 1, 10, NONE, LEASE)).toEqual([]);
      const [again] = await outbox.claim(T0 + LEASE, 10, NONE, LEASE);
      expect(again).toMatchObject({ id: first!.id, nextAttemptAt: T0 + 2 * LEASE });
      // reschedule ends a lease as the worker decides.
      await outbox.reschedule(first!.id, 1, T0 + 10, "HTTP 503");
      expect(await outbox.claim(T0 + 10, 10, NONE, LEASE)).toMatchObject([{ id: first!.id, attempts: 1, lastError: "HTTP 503", nextAttemptAt: T0 + 10 + LEASE }]);
    });

    it("only what is due: not before its time, and not held entries, which do not block the queue", async () => {
      await outbox.enqueue([{ ...item("t1", "c1", "held"), heldUntil: T0 + 1000, coalesceKey: "a2a" }, item("t1", "c1", "bypass")], T0);
      await outbox.enqueue([item("t2", "c1", "later")], T0 + 5);
      expect(bodies(await outbox.claim(T0, 10, NONE, LEASE))).toEqual(["bypass"]);
      expect(bodies(await outbox.claim(T0 + 5, 10, NONE, LEASE))).toEqual(["later"]);
      expect(bodies(await outbox.claim(T0 + 1000, 10, NONE, LEASE))).toEqual(["held"]);
    });

    it("bound to a caller's transaction, claims inside it (rolled back with it)", async () => {
      await outbox.enqueue([item("t1", "c1", 1)]);
      await expect(
        opened.db.transaction().execute(async (trx) => {
          expect(bodies(await new SqlPushOutboxStore(trx, () => clock).claim(T0, 10, NONE, LEASE))).toEqual([1]);
          throw new Error("undo");
        }),
      ).rejects.toThrow("undo");
      expect(bodies(await outbox.claim(T0, 10, NONE, LEASE))).toEqual([1]);
    });
  });
});

describe.each(backends)("push configs ($name)", ({ open }) => {
  let opened: Opened;
  beforeEach(async () => {
    opened = await open(() => T0);
  });
  afterEach(() => opened.close());
  const cfg = (taskId: string, id: string, url = `https://hook.example/${id}`): PushConfig => ({ taskId, id, url, token: "tok" });

  it("sets, gets, lists in creation order, upserts in place, deletes", async () => {
    const p = opened.configs;
    await p.set(cfg("t1", "a"));
    await p.set({ ...cfg("t1", "b"), authentication: { schemes: ["Bearer"], credentials: "c" } });
    await p.set(cfg("t2", "a"));
    expect(await p.get("t1", "b")).toEqual({ ...cfg("t1", "b"), authentication: { schemes: ["Bearer"], credentials: "c" } });
    expect(await p.get("t1", "zzz")).toBeUndefined();
    expect((await p.list("t1")).map((c) => c.id)).toEqual(["a", "b"]);
    await p.set(cfg("t1", "a", "https://other.example/"));
    expect((await p.list("t1")).map((c) => c.url)).toEqual(["https://other.example/", "https://hook.example/b"]);
    expect(await p.delete("t1", "a")).toBe(true);
    expect(await p.delete("t1", "a")).toBe(false);
    await p.set(cfg("t1", "a"));
    expect((await p.list("t1")).map((c) => c.id)).toEqual(["b", "a"]);
    expect(await p.list("t2")).toEqual([cfg("t2", "a")]);
    expect(await p.has("t1")).toBe(true);
    expect(await p.deleteAll("t1")).toBe(2);
    expect(await p.has("t1")).toBe(false);
    expect(await p.list("t1")).toEqual([]);
    expect(await p.list("t2")).toHaveLength(1);
  });

  it("the creation order is not the id order (ids in code-unit order would say otherwise)", async () => {
    for (const id of ["z", "B", "a", "Z"]) await opened.configs.set(cfg("t1", id));
    expect((await opened.configs.list("t1")).map((c) => c.id)).toEqual(["z", "B", "a", "Z"]);
  });

  it("a database failure is TASK_STORE_UNAVAILABLE naming the operation", async () => {
    if (!(await opened.break())) return;
    for (const [call, operation] of [
      [() => opened.configs.list("t1"), "pushConfigs.list"],
      [() => opened.configs.set(cfg("t1", "a")), "pushConfigs.set"],
      [() => opened.outbox.size(), "pushOutbox.size"],
      [() => opened.outbox.claim(T0, 1, NONE, 1), "pushOutbox.claim"],
    ] as const) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(A2AError);
      expect(error).toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation } });
    }
  });
});

describe.skipIf(postgresUrl === undefined)("push outbox claims across gateways (postgres)", () => {
  it("two workers on two pools claim 200 entries of 10 queues: each exactly once, each queue in id order", async () => {
    const database = await freshDatabase();
    const [a, b] = [await openPostgres(database.url), await openPostgres(database.url)];
    try {
      const now = () => T0;
      const stores = [new SqlPushOutboxStore(a.db, now), new SqlPushOutboxStore(b.db, now)];
      const items = Array.from({ length: 200 }, (_, i) => item(`t${i % 10}`, "c", i));
      await stores[0]!.enqueue(items);
      const claimedBy = new Map<number, number>(); // id → how many times claimed
      const order = new Map<string, number[]>(); // queue → ids in claim order
      const worker = async (store: SqlPushOutboxStore): Promise<void> => {
        for (let round = 0; round < 2000; round++) {
          // A long lease: nothing is ever claimable twice; a head is removed before the next of its queue may go.
          const claimed = await store.claim(T0, 4, NONE, 3_600_000);
          if (claimed.length === 0) {
            if ((await store.size()) === 0) return;
            await new Promise((resolve) => setTimeout(resolve, 1));
            continue;
          }
          for (const d of claimed) {
            claimedBy.set(d.id, (claimedBy.get(d.id) ?? 0) + 1);
            const key = queueKey(d.taskId, d.configId);
            order.set(key, [...(order.get(key) ?? []), d.id]);
          }
          await Promise.all(claimed.map((d) => store.remove(d.id)));
        }
        throw new Error("the workers did not empty the outbox");
      };
      await Promise.all([worker(stores[0]!), worker(stores[1]!), worker(stores[0]!), worker(stores[1]!)]);
      expect(claimedBy.size).toBe(200);
      expect([...claimedBy.values()].every((n) => n === 1)).toBe(true);
      expect(order.size).toBe(10);
      for (const ids of order.values()) {
        expect(ids).toHaveLength(20);
        expect(ids).toEqual([...ids].sort((x, y) => x - y));
      }
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  });
});

describe("push outbox (sqlite only)", () => {
  it("entries survive closing and reopening the store", async () => {
    const file = freshFile();
    let clock = T0;
    const first = await openStorage({ backend: "sqlite", url: dbUrl(file), now: () => clock });
    await first.pushOutbox.enqueue([item("t1", "c1", 1), item("t1", "c1", 2), item("t2", "c1", 3)]);
    const [head] = await first.pushOutbox.due(clock, 10, NONE);
    await first.pushOutbox.reschedule(head!.id, 2, T0 + 500, "HTTP 502");
    const before = await first.pushOutbox.due(T0 + 500, 10, NONE);
    await first.close();

    clock = T0 + 10_000;
    const second = await openStorage({ backend: "sqlite", url: dbUrl(file), now: () => clock });
    try {
      expect(await second.pushOutbox.size()).toBe(3);
      expect(await second.pushOutbox.due(T0 + 500, 10, NONE)).toEqual(before);
      expect((await second.pushOutbox.due(T0 + 499, 10, NONE)).map((d) => d.taskId)).toEqual(["t2"]);
      expect(bodies(before)).toEqual([3, 1]);
      expect(before[1]).toMatchObject({ taskId: "t1", attempts: 2, nextAttemptAt: T0 + 500, lastError: "HTTP 502", createdAt: T0 });
      // New entries after the reopen get fresh ids, behind the old ones.
      await second.pushOutbox.enqueue([item("t1", "c1", 4)]);
      await second.pushOutbox.remove(head!.id);
      expect(bodies(await second.pushOutbox.due(clock, 10, NONE))).toEqual([2, 3]);
    } finally {
      await second.close();
    }
  });

  it("ids are not reused after the newest entry is removed (the queue order stays the enqueue order)", async () => {
    const storage = await openStorage({ backend: "sqlite", url: dbUrl(freshFile()), now: () => T0 });
    try {
      await storage.pushOutbox.enqueue([item("t1", "c1", 1)]);
      const [a] = await storage.pushOutbox.due(T0, 1, NONE);
      await storage.pushOutbox.remove(a!.id);
      await storage.pushOutbox.enqueue([item("t1", "c1", 2)]);
      const [b] = await storage.pushOutbox.due(T0, 1, NONE);
      expect(b!.id).toBeGreaterThan(a!.id);
    } finally {
      await storage.close();
    }
  });

  it("held entries survive closing and reopening the store", async () => {
    const file = freshFile();
    const first = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    await first.pushOutbox.enqueue([{ ...item("t1", "c1", "night"), heldUntil: T0 + 5000, coalesceKey: "a2a" }], T0);
    await first.close();
    const second = await openStorage({ backend: "sqlite", url: dbUrl(file) });
    try {
      expect(await second.pushOutbox.due(T0 + 4999, 10, NONE)).toEqual([]);
      expect(await second.pushOutbox.nextDueAt(NONE, T0)).toBe(T0 + 5000);
      expect(await second.pushOutbox.held("t1", "c1", T0)).toMatchObject([{ heldUntil: T0 + 5000, coalesceKey: "a2a" }]);
      expect(bodies(await second.pushOutbox.due(T0 + 5000, 10, NONE))).toEqual(["night"]);
    } finally {
      await second.close();
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
