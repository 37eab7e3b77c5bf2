// The task store on every backend: memory and SQLite (the gateway's own storage) and PostgreSQL (the test run's
// throwaway cluster, one fresh database per case) run the same behavioural suite: binding fields, view(), first
// terminal state wins, owner-scoped listings with filters, offset and token pagination, signed page tokens. Then the
// race the SQL guard exists for: two gateways (two pools) saving one task's terminal states at once.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { rejectsA2AError } from "../support/errors.js";
import type { Task, TaskState } from "../../src/protocol/model.js";
import { openStorage, SqlTaskStore, type TaskStore } from "../../src/storage/index.js";
import { sql } from "kysely";
import { openPostgres } from "../../src/storage/sql/postgres.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-task-store-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let seq = 0;

const ts = (second: number): string => new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString();

function makeTask(id: string, opts: { contextId?: string; state?: TaskState; at?: string } = {}): Task {
  return {
    id,
    contextId: opts.contextId ?? "ctx-1",
    status: { state: opts.state ?? "working", timestamp: opts.at ?? ts(0) },
    history: [{ messageId: `m-${id}`, role: "user", parts: [{ kind: "text", text: `hello ${id}` }] }],
  };
}

interface Opened {
  store: TaskStore;
  /** Whether view() shares parsed snapshots between reads (the SQLite read cache). */
  caches: boolean;
  close(): Promise<void>;
}

const backends: [string, () => Promise<Opened>][] = [
  [
    "memory",
    async () => {
      const storage = await openStorage({ backend: "memory" });
      return { store: storage.tasks, caches: true, close: () => storage.close() };
    },
  ],
  [
    "sqlite",
    async () => {
      const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${path.join(tmpRoot, `case-${++seq}`, "a2a.db")}` });
      return { store: storage.tasks, caches: true, close: () => storage.close() };
    },
  ],
];
if (postgresUrl !== undefined) {
  backends.push([
    "postgres",
    async () => {
      const database = await freshDatabase();
      const pg = await openPostgres(database.url);
      return {
        store: await SqlTaskStore.open(pg.db),
        caches: false,
        close: async () => {
          await pg.close();
          await database.drop();
        },
      };
    },
  ]);
}

describe.each(backends)("task store (%s)", (_name, open) => {
  let opened: Opened;
  let store: TaskStore;
  beforeEach(async () => {
    opened = await open();
    store = opened.store;
  });
  afterEach(() => opened.close());

  it("round-trips create/get/save with the binding fields, returning copies", async () => {
    const task = makeTask("t1");
    await store.create(task, "alice", { acceptedOutputModes: ["text/plain"], sessionId: "ses_1", directory: "/w" });
    const got = (await store.get("t1"));
    expect(got).toMatchObject({ task, owner: "alice", acceptedOutputModes: ["text/plain"], sessionId: "ses_1", directory: "/w" });
    expect(typeof got?.createdAt).toBe("string");
    got!.task.status.state = "failed";
    expect((await store.get("t1"))?.task.status.state).toBe("working");

    const next = { ...task, status: { state: "input-required" as const, timestamp: ts(5) }, artifacts: [{ artifactId: "a", parts: [{ kind: "text" as const, text: "x" }] }] };
    expect((await store.save(next))).toEqual({ applied: true });
    expect((await store.get("t1"))?.task).toEqual(next);
    expect((await store.get("nope"))).toBeUndefined();
    expect((await store.count())).toBe(1);
  });

  it("view(): the task and owner as get() has them, read-only, and current after every save", async () => {
    const task = makeTask("t1");
    await store.create(task, "alice", { sessionId: "ses_1" });
    const view = await store.view("t1");
    expect(view).toEqual({ task, owner: "alice" });
    expect(view?.task).toEqual((await store.get("t1"))?.task);
    // SQLite shares the parsed snapshot between reads (its read cache): deeply frozen, it cannot be written through.
    // PostgreSQL, written by other gateways too, reads every time.
    if (opened.caches) {
      expect(await store.view("t1")).toBe(view);
      expect(() => ((view!.task.status as { state: string }).state = "failed")).toThrow(TypeError);
      expect(Object.isFrozen(view!.task.history![0]!.parts[0])).toBe(true);
    }
    expect((await store.view("t1"))?.task.status.state).toBe("working");
    const next = { ...task, status: { state: "completed" as const, timestamp: ts(9) } };
    expect((await store.save(next))).toEqual({ applied: true });
    expect((await store.view("t1"))?.task).toEqual(next);
    expect((await store.view("nope"))).toBeUndefined();
  });

  it("omits absent binding fields and updates them selectively", async () => {
    await store.create(makeTask("t1"), "alice");
    const got = (await store.get("t1"))!;
    expect("sessionId" in got || "directory" in got || "acceptedOutputModes" in got).toBe(false);
    expect((await store.updateExtra("t1", { sessionId: "ses_9" }))).toBe(true);
    expect((await store.updateExtra("t1", { directory: "/d" }))).toBe(true);
    expect((await store.get("t1"))).toMatchObject({ sessionId: "ses_9", directory: "/d" });
    expect((await store.updateExtra("missing", { sessionId: "x" }))).toBe(false);
  });

  it("rejects a duplicate id and reports saves of unknown tasks", async () => {
    await store.create(makeTask("t1"), "alice");
    await rejectsA2AError(() => store.create(makeTask("t1"), "bob"), "INVALID_PARAMS", { field: "id" });
    expect((await store.get("t1"))?.owner).toBe("alice");
    expect((await store.save(makeTask("ghost")))).toEqual({ applied: false, reason: "not_found" });
  });

  it("keeps the first terminal state", async () => {
    await store.create(makeTask("t1"), "alice");
    // Two writers holding the same working snapshot race to finish it.
    const a = structuredClone((await store.get("t1"))!.task);
    const b = structuredClone(a);
    a.status = { state: "completed", timestamp: ts(10) };
    b.status = { state: "canceled", timestamp: ts(11) };
    expect((await store.save(a))).toEqual({ applied: true });
    expect((await store.save(b))).toEqual({ applied: false, reason: "terminal", state: "completed" });
    expect((await store.save({ ...a, status: { state: "working", timestamp: ts(12) } })).applied).toBe(false);
    const stored = (await store.get("t1"))!.task;
    expect(stored.status).toEqual({ state: "completed", timestamp: ts(10) });
    expect((await store.list(undefined, { state: "completed" })).tasks.map((t) => t.id)).toEqual(["t1"]);
    expect((await store.list(undefined, { state: "canceled" })).tasks).toEqual([]);
  });

  it("orphans() without a scope: every unfinished task, at most `limit`", async () => {
    await store.create(makeTask("o-a"), "alice", { instance: "gw-a" });
    await store.create(makeTask("o-none"), "alice");
    await store.create(makeTask("o-asked", { state: "input-required" }), "bob", { instance: "gw-b" });
    await store.create(makeTask("o-done", { state: "completed" }), "alice", { instance: "gw-a" });
    expect((await store.get("o-a"))?.instance).toBe("gw-a");
    expect((await store.get("o-none"))?.instance).toBeUndefined();
    expect((await store.orphans(undefined, 100)).map((t) => t.id).sort()).toEqual(["o-a", "o-asked", "o-none"]);
    expect(await store.orphans(undefined, 2)).toHaveLength(2);
  });

  it("a task created terminal stays terminal", async () => {
    await store.create(makeTask("t1", { state: "rejected" }), "alice");
    expect((await store.save(makeTask("t1", { state: "working" })))).toMatchObject({ applied: false, state: "rejected" });
  });

  describe("list", () => {
    beforeEach(async () => {
      await store.create(makeTask("a1", { contextId: "c1", at: ts(1) }), "alice");
      await store.create(makeTask("a2", { contextId: "c2", at: ts(3), state: "completed" }), "alice");
      await store.create(makeTask("a3", { contextId: "c1", at: ts(2), state: "failed" }), "alice");
      await store.create(makeTask("b1", { contextId: "c1", at: ts(4) }), "bob");
    });

    it("is owner-scoped, admin sees all, newest status first", async () => {
      expect((await store.list("alice")).tasks.map((t) => t.id)).toEqual(["a2", "a3", "a1"]);
      expect((await store.list("bob")).tasks.map((t) => t.id)).toEqual(["b1"]);
      expect((await store.list("carol"))).toMatchObject({ tasks: [], total: 0, totalSize: 0, hasMore: false, nextPageToken: "" });
      const all = (await store.list(undefined));
      expect(all.tasks.map((t) => t.id)).toEqual(["b1", "a2", "a3", "a1"]);
      expect(all).toMatchObject({ total: 4, totalSize: 4, pageSize: 50 });
    });

    it("filters by contextId, state and statusTimestampAfter (strictly after)", async () => {
      expect((await store.list("alice", { contextId: "c1" })).tasks.map((t) => t.id)).toEqual(["a3", "a1"]);
      expect((await store.list(undefined, { contextId: "c1", state: "working" })).tasks.map((t) => t.id)).toEqual(["b1", "a1"]);
      expect((await store.list("alice", { statusTimestampAfter: ts(2) })).tasks.map((t) => t.id)).toEqual(["a2"]);
      // Another spelling of the same instant (no milliseconds, offset) compares the same.
      expect((await store.list("alice", { statusTimestampAfter: "2025-01-01T01:00:01+01:00" })).totalSize).toBe(2);
      expect((await store.list(undefined, { state: "failed" })).tasks.map((t) => t.id)).toEqual(["a3"]);
    });

    it("orders by the status timestamp after saves", async () => {
      await store.save(makeTask("a1", { contextId: "c1", at: ts(9) }));
      expect((await store.list("alice")).tasks.map((t) => t.id)).toEqual(["a1", "a2", "a3"]);
    });

    it("rejects invalid parameters", async () => {
      await rejectsA2AError(() => store.list("alice", { statusTimestampAfter: "yesterday" }), "INVALID_PARAMS", { field: "statusTimestampAfter" });
      await rejectsA2AError(() => store.list("alice", { limit: -1 }), "INVALID_PARAMS", { field: "limit" });
      await rejectsA2AError(() => store.list("alice", { pageSize: 1.5 }), "INVALID_PARAMS", { field: "pageSize" });
      await rejectsA2AError(() => store.list("alice", { offset: -3 }), "INVALID_PARAMS", { field: "offset" });
      await rejectsA2AError(() => store.list("alice", { state: "bogus" as TaskState }), "INVALID_PARAMS", { field: "state" });
    });
  });

  it("paginates by offset (0.3): total and hasMore; limit defaults to 50 and caps at 100", async () => {
    for (let i = 0; i < 120; i++) await store.create(makeTask(`t${String(i).padStart(3, "0")}`, { at: ts(i) }), "alice");
    const first = (await store.list("alice", { limit: 3 }));
    expect(first.tasks.map((t) => t.id)).toEqual(["t119", "t118", "t117"]);
    expect(first).toMatchObject({ total: 120, hasMore: true });
    const last = (await store.list("alice", { limit: 3, offset: 118 }));
    expect(last.tasks.map((t) => t.id)).toEqual(["t001", "t000"]);
    expect(last).toMatchObject({ total: 120, hasMore: false, nextPageToken: "" });
    expect((await store.list("alice", { offset: 500 }))).toMatchObject({ tasks: [], total: 120, hasMore: false });
    expect((await store.list("alice")).tasks).toHaveLength(50);
    expect((await store.list("alice", { limit: 500 })).tasks).toHaveLength(100);
    expect((await store.list("alice", { pageSize: 500 }))).toMatchObject({ pageSize: 100, hasMore: true });
    expect((await store.count())).toBe(120);
  });

  it("paginates by token (1.0): every task exactly once, in a stable order, even with equal timestamps", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const id = `k${(i * 7) % 25}`; // inserted out of id order
      ids.push(id);
      await store.create(makeTask(id, { at: ts(i % 3), contextId: i % 5 === 0 ? "odd" : "c" }), "alice");
    }
    await store.create(makeTask("other", { at: ts(1) }), "bob");
    // Status timestamp descending (ts(i % 3) for the i-th inserted), then id ascending.
    const second = (id: string) => ids.indexOf(id) % 3;
    const expected = [...ids].sort((x, y) => second(y) - second(x) || (x < y ? -1 : 1));
    const seen: string[] = [];
    let token = "";
    let pages = 0;
    do {
      const page = (await store.list("alice", { pageSize: 4, pageToken: token }));
      expect(page.totalSize).toBe(25);
      expect(page.tasks.length).toBeLessThanOrEqual(4);
      seen.push(...page.tasks.map((t) => t.id));
      token = page.nextPageToken;
      pages++;
    } while (token !== "" && pages < 50);
    expect(pages).toBe(7);
    expect(seen).toEqual(expected);

    // With a filter: the token walk stays within it.
    const filtered: string[] = [];
    let t2 = "";
    do {
      const page = (await store.list("alice", { contextId: "odd", pageSize: 2, pageToken: t2 }));
      filtered.push(...page.tasks.map((t) => t.id));
      t2 = page.nextPageToken;
    } while (t2 !== "");
    expect(filtered).toEqual(expected.filter((id) => ["k0", "k10", "k20", "k5", "k15"].includes(id)));
  });

  it("rejects tampered, foreign or garbage page tokens", async () => {
    for (let i = 0; i < 5; i++) await store.create(makeTask(`t${i}`, { at: ts(i) }), "alice");
    const token = (await store.list("alice", { pageSize: 2 })).nextPageToken;
    expect(token).not.toBe("");
    expect((await store.list("alice", { pageSize: 2, pageToken: token })).tasks.map((t) => t.id)).toEqual(["t2", "t1"]);
    const [payload, sig] = token.split(".") as [string, string];
    const forged = Buffer.from(JSON.stringify([ts(9), "t0"])).toString("base64url");
    const flip = (s: string) => (s[0] === "A" ? "B" : "A") + s.slice(1);
    for (const bad of [`${forged}.${sig}`, `${payload}.${flip(sig)}`, `${flip(payload)}.${sig}`, "garbage", `${token}.x`, payload]) {
      await rejectsA2AError(() => store.list("alice", { pageSize: 2, pageToken: bad }), "INVALID_PARAMS", { field: "pageToken" });
    }
    // Bound to the query: another owner or another filter cannot reuse it.
    await rejectsA2AError(() => store.list("bob", { pageSize: 2, pageToken: token }), "INVALID_PARAMS");
    await rejectsA2AError(() => store.list(undefined, { pageSize: 2, pageToken: token }), "INVALID_PARAMS");
    await rejectsA2AError(() => store.list("alice", { contextId: "ctx-1", pageSize: 2, pageToken: token }), "INVALID_PARAMS");
    await rejectsA2AError(() => store.list("alice", { pageToken: token, offset: 2 }), "INVALID_PARAMS", { field: "offset" });
  });
});

describe.skipIf(postgresUrl === undefined)("task store on PostgreSQL, two gateways", () => {
  it("first terminal state wins when two pools save one task's terminal states at once", async () => {
    const database = await freshDatabase();
    const a = await openPostgres(database.url);
    const b = await openPostgres(database.url);
    try {
      const [storeA, storeB] = await Promise.all([SqlTaskStore.open(a.db), SqlTaskStore.open(b.db)]);
      for (let i = 0; i < 20; i++) {
        const id = `race-${i}`;
        await storeA.create(makeTask(id), "alice");
        const [ra, rb] = await Promise.all([storeA.save(makeTask(id, { state: "completed", at: ts(5) })), storeB.save(makeTask(id, { state: "canceled", at: ts(6) }))]);
        const applied = [ra, rb].filter((r) => r.applied);
        expect(applied).toHaveLength(1);
        const winner = ra.applied ? "completed" : "canceled";
        expect([ra, rb].find((r) => !r.applied)).toEqual({ applied: false, reason: "terminal", state: winner });
        expect((await storeB.get(id))?.task.status.state).toBe(winner);
      }
      // Both opened the same page token key: a token one gateway gives, the other takes.
      for (let i = 0; i < 3; i++) await storeA.create(makeTask(`p${i}`, { contextId: "pages", at: ts(10 + i) }), "bob");
      const first = await storeA.list("bob", { pageSize: 2 });
      const second = await storeB.list("bob", { pageSize: 2, pageToken: first.nextPageToken });
      expect([...first.tasks, ...second.tasks].map((t) => t.id)).toEqual(["p2", "p1", "p0"]);
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  });

  it("orphans() with a scope: tasks of instances without a live lease now (the database's clock), of the stale one, or of none", async () => {
    const database = await freshDatabase();
    const pg = await openPostgres(database.url);
    try {
      const store = await SqlTaskStore.open(pg.db);
      const lease = (id: string, ms: number) => sql`INSERT INTO a2a_instances (id, started_at, lease_until, info) VALUES (${id}, 0, a2a_now_ms() + ${ms}, '{}')`.execute(pg.db);
      await lease("gw-alive", 60_000);
      await lease("gw-expired", -1_000);
      await lease("gw-restarted", 60_000);
      for (const [id, instance] of [["t-alive", "gw-alive"], ["t-expired", "gw-expired"], ["t-gone", "gw-gone"], ["t-restarted", "gw-restarted"], ["t-none", undefined]] as const) {
        await store.create(makeTask(id), "alice", instance === undefined ? {} : { instance });
      }
      await store.create(makeTask("t-done", { state: "completed" }), "alice", { instance: "gw-expired" });
      const ids = async (scope: { stale?: string }) => (await store.orphans(scope, 100)).map((t) => t.id).sort();
      expect(await ids({})).toEqual(["t-expired", "t-gone", "t-none"]);
      expect(await ids({ stale: "gw-restarted" })).toEqual(["t-expired", "t-gone", "t-none", "t-restarted"]);
      await store.save({ ...makeTask("t-expired"), status: { state: "failed", timestamp: ts(5) } });
      expect(await ids({})).toEqual(["t-gone", "t-none"]);
    } finally {
      await pg.close();
      await database.drop();
    }
  });
});
