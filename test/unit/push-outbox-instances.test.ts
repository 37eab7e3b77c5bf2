// The push outbox shared by several gateways on one PostgreSQL database (src/storage/push-outbox.ts claim(),
// serialize(); src/push/worker.ts): two pools on one database stand for two gateways. Claims in parallel never take
// two entries of one (task, config) queue, and never the entry behind a head another claim holds; a queue's later
// entry cannot commit while an earlier one of its task is uncommitted; a lease that ran out hands the entry (not the
// one behind it) to the next claimer, and the stalled worker's late verdict no longer counts. Then two real workers
// with a real receiver on 127.0.0.1 that fails now and then: every notification delivered exactly once, each queue
// in order, one POST at a time, and both workers delivered some.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Metrics } from "../../src/observability/metrics.js";
import type { PushConfig } from "../../src/protocol/model.js";
import { OutboxWorker } from "../../src/push/worker.js";
import { SqlPushConfigStore } from "../../src/storage/index.js";
import { queueKey, SqlPushOutboxStore, type NewDelivery, type PushDelivery } from "../../src/storage/push-outbox.js";
import { openPostgres } from "../../src/storage/sql/postgres.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";

const T0 = Date.UTC(2025, 0, 1);
const LEASE = 60_000;
const NONE: ReadonlySet<string> = new Set();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const item = (taskId: string, configId: string, n: number): NewDelivery => ({ taskId, configId, body: JSON.stringify({ q: queueKey(taskId, configId), n }), contentType: "application/json" });
const nOf = (d: PushDelivery): number => (JSON.parse(d.body) as { n: number }).n;

/** Whether `promise` is still pending after `ms`. */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await sleep(ms);
  return !settled;
}

describe.skipIf(postgresUrl === undefined)("push outbox shared by two gateways (postgres)", () => {
  let clock: number;
  let close: () => Promise<void>;
  let pools: Awaited<ReturnType<typeof openPostgres>>[];
  let a: SqlPushOutboxStore;
  let b: SqlPushOutboxStore;
  beforeEach(async () => {
    clock = T0;
    const database = await freshDatabase();
    pools = [await openPostgres(database.url), await openPostgres(database.url)];
    a = new SqlPushOutboxStore(pools[0]!.db, () => clock);
    b = new SqlPushOutboxStore(pools[1]!.db, () => clock);
    close = async () => {
      for (const p of pools) await p.close();
      await database.drop();
    };
  });
  afterEach(() => close());

  it("claims in parallel on two pools never take two entries of one queue; each takes its queue's oldest", async () => {
    const queues = Array.from({ length: 6 }, (_, i) => ({ task: `t${i % 3}`, config: `c${i % 2}` }));
    await a.enqueue(queues.flatMap((q) => Array.from({ length: 5 }, (_, n) => item(q.task, q.config, n))));
    const next = new Map(queues.map((q) => [queueKey(q.task, q.config), 0]));
    for (let round = 0; round < 40 && (await a.size()) > 0; round++) {
      // Four claims at once, two per pool, limits small enough that they compete for the same heads.
      const claims = await Promise.all([a, b, a, b].map((store) => store.claim(T0, 3, NONE, LEASE)));
      const taken = claims.flat();
      const keys = taken.map((d) => queueKey(d.taskId, d.configId));
      expect(new Set(keys).size).toBe(keys.length); // one entry per queue across every claim
      for (const d of taken) expect(nOf(d)).toBe(next.get(queueKey(d.taskId, d.configId))); // the queue's oldest
      // Nothing of a leased queue is due while the lease lasts (the entries behind its head neither).
      expect((await b.due(T0, 100, NONE)).filter((d) => keys.includes(queueKey(d.taskId, d.configId)))).toEqual([]);
      await Promise.all(taken.map((d, i) => (i % 2 === 0 ? a : b).remove(d.id, d.nextAttemptAt)));
      for (const key of keys) next.set(key, next.get(key)! + 1);
    }
    expect(await a.size()).toBe(0);
    expect([...next.values()]).toEqual(queues.map(() => 5));
  });

  it("a head locked by a claim in progress on one pool is skipped on the other, and the entry behind it is not taken instead", async () => {
    await a.enqueue([item("t1", "c1", 0), item("t1", "c1", 1), item("t2", "c1", 0)]);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let claimedInside: PushDelivery[] = [];
    const inProgress = pools[0]!.db.transaction().execute(async (trx) => {
      claimedInside = await new SqlPushOutboxStore(trx, () => clock).claim(T0, 1, NONE, LEASE);
      await held; // the claim's row lock stays until the transaction ends
    });
    for (let i = 0; i < 100 && claimedInside.length === 0; i++) await sleep(10);
    expect(claimedInside.map((d) => [d.taskId, nOf(d)])).toEqual([["t1", 0]]);
    // The other pool gets the other queue's head, never t1's entry 1.
    expect((await b.claim(T0, 10, NONE, LEASE)).map((d) => [d.taskId, nOf(d)])).toEqual([["t2", 0]]);
    release();
    await inProgress;
    expect(await b.claim(T0, 10, NONE, LEASE)).toEqual([]); // t1's head is leased now
  });

  it("an entry cannot commit while an earlier one of its task is uncommitted on another pool (ids in commit order)", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let queued = false;
    const first = pools[1]!.db.transaction().execute(async (trx) => {
      await new SqlPushOutboxStore(trx, () => clock).enqueue([item("t1", "c1", 0)]);
      queued = true;
      await held;
    });
    for (let i = 0; i < 100 && !queued; i++) await sleep(10);
    expect(queued).toBe(true);
    // Another task's entries are not held up.
    await a.enqueue([item("t2", "c1", 0)]);
    const second = a.enqueue([item("t1", "c1", 1)]);
    expect(await pendingAfter(second, 300)).toBe(true); // waits for the task's lock
    expect((await a.claim(T0, 10, NONE, LEASE)).map((d) => d.taskId)).toEqual(["t2"]); // so nothing of t1 to send yet
    release();
    await Promise.all([first, second]);
    const [head] = await a.claim(T0, 10, NONE, LEASE);
    expect(nOf(head!)).toBe(0);
    await a.remove(head!.id, head!.nextAttemptAt);
    expect((await b.claim(T0, 10, NONE, LEASE)).map(nOf)).toEqual([1]);
  });

  it("a config write that takes the task's lock first and a state change that queues for the task do not deadlock", async () => {
    // As PushService.set() (the task's lock, the config, then its announcement) and a state change (changed(): the
    // notification, then the config's mark) in parallel on two gateways, for the same config.
    const config: PushConfig = { taskId: "t1", id: "c1", url: "https://example.com/hook" };
    const writes = Array.from({ length: 10 }, (_, i) =>
      pools[i % 2]!.db.transaction().execute(async (trx) => {
        const outbox = new SqlPushOutboxStore(trx, () => clock);
        const configs = new SqlPushConfigStore(trx, () => clock);
        if (i % 2 === 0) {
          await outbox.serialize("t1");
          await configs.set(config);
          await sleep(5);
          await outbox.enqueue([item("t1", "c1", i)]);
        } else {
          await outbox.enqueue([item("t1", "c1", i)]);
          await sleep(5);
          await configs.set(config);
        }
      }),
    );
    await Promise.all(writes);
    expect(await a.size()).toBe(10);
  });

  it("a lease that ran out hands the entry, not the one behind it, to another worker; the stalled worker's verdict no longer counts", async () => {
    await a.enqueue([item("t1", "c1", 0), item("t1", "c1", 1)]);
    const [mine] = await a.claim(T0, 10, NONE, LEASE);
    expect(await b.claim(T0 + LEASE - 1, 10, NONE, LEASE)).toEqual([]);
    const [theirs] = await b.claim(T0 + LEASE, 10, NONE, LEASE);
    expect(theirs).toMatchObject({ id: mine!.id, nextAttemptAt: T0 + 2 * LEASE });
    // The first worker comes back late: neither its removal nor its retry applies; the entry stays the other's.
    expect(await a.remove(mine!.id, mine!.nextAttemptAt)).toBe(false);
    await a.reschedule(mine!.id, 1, T0 + LEASE, "HTTP 503", mine!.nextAttemptAt);
    expect(await a.claim(T0 + LEASE + 1, 10, NONE, LEASE)).toEqual([]);
    expect(await b.remove(theirs!.id, theirs!.nextAttemptAt)).toBe(true);
    expect((await a.claim(T0 + LEASE + 1, 10, NONE, LEASE)).map(nOf)).toEqual([1]);
  });
});

// ---- two real workers ---------------------------------------------------------------------------------------------

interface Post {
  q: string;
  n: number;
  worker: string;
  status: number;
}

/** A webhook receiver that answers 503 to about one POST in five (seeded), records every POST and notes overlaps. */
async function flakyReceiver(): Promise<{ url: string; posts: Post[]; overlaps: string[]; close(): Promise<void> }> {
  const posts: Post[] = [];
  const overlaps: string[] = [];
  const inFlight = new Set<string>();
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const { q, n } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { q: string; n: number };
      if (inFlight.has(q)) overlaps.push(`${q} #${n}`);
      inFlight.add(q);
      const status = random() < 0.2 ? 503 : 200;
      // A little latency, so the two workers' POSTs interleave.
      setTimeout(() => {
        inFlight.delete(q);
        posts.push({ q, n, worker: String(req.headers["x-a2a-notification-token"]), status });
        res.writeHead(status).end();
      }, Math.floor(random() * 5));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    posts,
    overlaps,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.skipIf(postgresUrl === undefined)("two push workers on one PostgreSQL database", () => {
  it("deliver every notification exactly once, each (task, config) in order, one POST per queue at a time, both doing some", async () => {
    const database = await freshDatabase();
    const pools = [await openPostgres(database.url), await openPostgres(database.url)];
    const receiver = await flakyReceiver();
    const silent = { info: () => undefined, warn: () => undefined, debug: () => undefined };
    const workers = pools.map((pool, i) => {
      const name = i === 0 ? "A" : "B";
      const config = (taskId: string, id: string): PushConfig => ({ taskId, id, url: receiver.url, token: name });
      return new OutboxWorker({
        configs: { get: (taskId, id) => Promise.resolve(config(taskId, id)) },
        outbox: new SqlPushOutboxStore(pool.db),
        metrics: new Metrics({ defaultMetrics: false }),
        log: silent,
        timeoutMs: 5_000,
        maxAttempts: 100,
        retryInitialMs: 5,
        retryMaxMs: 30,
        maxConcurrency: 4,
        maxConcurrencyPerHost: 4,
        maxAgeMs: 3_600_000,
        allowPrivateNetworks: true,
        userAgent: "test",
        pollMs: 20,
      });
    });
    const tasks = ["t0", "t1", "t2", "t3"];
    const configs = ["c0", "c1", "c2"];
    const PER_QUEUE = 12;
    try {
      for (const w of workers) w.start();
      // Each task's notifications come from one gateway (its turn's), a state change at a time, to all its configs.
      await Promise.all(
        tasks.map(async (task, t) => {
          const outbox = new SqlPushOutboxStore(pools[t % 2]!.db);
          for (let n = 0; n < PER_QUEUE; n++) {
            await outbox.enqueue(configs.map((c) => item(task, c, n)));
            workers[t % 2]!.kick();
            if (n % 3 === 0) await sleep(5);
          }
        }),
      );
      const total = tasks.length * configs.length * PER_QUEUE;
      const delivered = () => receiver.posts.filter((p) => p.status === 200).length;
      for (let i = 0; i < 1500 && delivered() < total; i++) await sleep(10);
      await sleep(100); // anything more (a duplicate) would arrive now
      await Promise.all(workers.map((w) => w.idle()));

      expect(receiver.overlaps).toEqual([]);
      expect(delivered()).toBe(total);
      expect(receiver.posts.some((p) => p.status === 503)).toBe(true); // retries happened
      for (const task of tasks) {
        for (const c of configs) {
          const q = queueKey(task, c);
          const attempts = receiver.posts.filter((p) => p.q === q);
          // Exactly once and in order; every attempt (failed ones too) is of the oldest notification not yet delivered.
          expect(attempts.filter((p) => p.status === 200).map((p) => p.n)).toEqual(Array.from({ length: PER_QUEUE }, (_, n) => n));
          let next = 0;
          for (const p of attempts) {
            expect(p.n).toBe(next);
            if (p.status === 200) next++;
          }
        }
      }
      const by = (w: string) => receiver.posts.filter((p) => p.status === 200 && p.worker === w).length;
      expect(by("A")).toBeGreaterThan(0);
      expect(by("B")).toBeGreaterThan(0);
      expect(await new SqlPushOutboxStore(pools[0]!.db).size()).toBe(0);
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
      await receiver.close();
      for (const p of pools) await p.close();
      await database.drop();
    }
  }, 30_000);
});
