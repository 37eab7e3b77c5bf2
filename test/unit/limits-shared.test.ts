// The Limiters behind AccessLimits, one suite on both: LocalLimiter (this process; SQLite and memory backends) and
// PostgresLimiter (the windows and stream leases in PostgreSQL, shared by every gateway on the database). The same
// exact sliding window, weights all or nothing, the same verdicts, stream slots. Then what only the shared one does:
// two limiters on two pools of one database (two gateways) share one window and one set of stream slots, concurrent
// takes never pass the limit, leases of a gateway that stopped renewing expire, and a database failure is
// TASK_STORE_UNAVAILABLE (fail closed), not an unlimited credential.
import { sql } from "kysely";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AccessLimits, LocalLimiter, type LimitPolicy, type Limiter } from "../../src/auth/limits.js";
import { PostgresLimiter } from "../../src/auth/limits-postgres.js";
import type { Principal } from "../../src/auth/index.js";
import { A2AError } from "../../src/contract/errors.js";
import { openPostgres, type PostgresDatabase } from "../../src/storage/sql/postgres.js";
import { freshDatabase, openTestPostgres, postgresUrl } from "../support/postgres.js";

const policy: LimitPolicy = { maxRequests: 3, windowMs: 10_000, maxStreams: 2 };

function clock(start = 1_700_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}
type Clock = ReturnType<typeof clock>;

/** A credential's running total of its window (a2a_rate_windows.used). */
async function windowUsed(db: PostgresDatabase["db"], credential: string): Promise<number> {
  return Number((await sql<{ used: string }>`SELECT used FROM a2a_rate_windows WHERE credential = ${credential}`.execute(db)).rows[0]!.used);
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** Two pools on one fresh database: what two gateways on one PostgreSQL have. */
async function twoPools(): Promise<[PostgresDatabase, PostgresDatabase]> {
  const database = await freshDatabase();
  cleanups.push(database.drop);
  const a = await openPostgres(database.url);
  cleanups.push(() => a.close());
  const b = await openPostgres(database.url);
  cleanups.push(() => b.close());
  return [a, b];
}

/**
 * Every connection of both pools open first, so that concurrent calls run side by side in the database rather than
 * one after another as each waits for a new connection (without it, the concurrency cases pass even with no lock).
 */
async function warm(...pools: PostgresDatabase[]): Promise<void> {
  await Promise.all(pools.flatMap((pg) => Array.from({ length: 10 }, () => sql`SELECT pg_sleep(0.05)`.execute(pg.db))));
}

const kinds: [string, (c: Clock) => Promise<Limiter>, boolean][] = [
  ["LocalLimiter", async (c) => new LocalLimiter(policy, c.now), true],
  [
    "PostgresLimiter",
    async (c) => {
      const pg = await openTestPostgres();
      cleanups.push(pg.close);
      const limiter = new PostgresLimiter(pg.db, { now: c.now });
      cleanups.push(() => limiter.close());
      return limiter;
    },
    postgresUrl !== undefined,
  ],
];

describe.each(kinds)("%s", (_name, make, available) => {
  describe.skipIf(!available)("the sliding window", () => {
    it("counts down, refuses at the limit, frees one slot per request leaving the window", async () => {
      const c = clock();
      const l = await make(c);
      expect((await l.take("k", policy))!.remaining).toBe(2);
      c.advance(3000);
      expect((await l.take("k", policy))!.remaining).toBe(1);
      expect((await l.take("k", policy))!.remaining).toBe(0);
      const refused = (await l.take("k", policy))!;
      expect(refused).toEqual({ allowed: false, limit: 3, remaining: 0, resetAt: Math.ceil((c.now() - 3000 + 10_000) / 1000), retryAfter: 7 });
      c.advance(7000);
      expect((await l.take("k", policy))!.allowed).toBe(true);
      expect((await l.take("k", policy))!.allowed).toBe(false);
      c.advance(3000);
      expect((await l.take("k", policy))!.remaining).toBe(1);
    });

    it("a refused request is not counted; keys and policies are independent", async () => {
      const c = clock();
      const l = await make(c);
      for (let i = 0; i < 3; i++) await l.take("a", policy);
      for (let i = 0; i < 5; i++) expect((await l.take("a", policy))!.allowed).toBe(false);
      expect((await l.take("b", policy))!.remaining).toBe(2);
      expect((await l.take("a", { ...policy, maxRequests: 5 }))!.remaining).toBe(4);
      c.advance(10_001);
      expect((await l.take("a", policy))!.remaining).toBe(2);
    });

    it("a weighted take is all or nothing and waits for as many requests to leave as it needs", async () => {
      const c = clock();
      const l = await make(c);
      await l.take("k", policy);
      c.advance(3000);
      await l.take("k", policy);
      c.advance(3000);
      const one = (await l.take("k", policy, 2))!;
      expect(one).toMatchObject({ allowed: false, remaining: 1 });
      // One free slot, two wanted: the oldest request must leave (4 s from now).
      expect(one.retryAfter).toBe(4);
      expect((await l.take("k", policy, 1))!.remaining).toBe(0);
      c.advance(1000);
      // Full, two wanted: the second oldest must leave (at +13 s, 6 s from now).
      expect((await l.take("k", policy, 2))!.retryAfter).toBe(6);
      const never = (await l.take("x", policy, 4))!;
      expect(never).toMatchObject({ allowed: false, remaining: 3, retryAfter: 10 });
      expect((await l.take("x", policy, 3))!.remaining).toBe(0);
    });

    it("0 means no limit", async () => {
      const l = await make(clock());
      expect(await l.take("k", { ...policy, maxRequests: 0 })).toBeNull();
    });
  });

  describe.skipIf(!available)("stream slots", () => {
    it("refused when full (STREAM_LIMIT_EXCEEDED), released once, unlimited at 0", async () => {
      const l = await make(clock());
      const r1 = await l.openStream("k", policy);
      const r2 = await l.openStream("k", policy);
      const err = await l.openStream("k", policy).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(A2AError);
      expect(err).toMatchObject({ reason: "STREAM_LIMIT_EXCEEDED", data: { limit: 2, open_streams: 2 } });
      r1();
      r1();
      await vi.waitFor(async () => expect(await l.openStreams("k")).toBe(1));
      await l.openStream("k", policy);
      r2();
      await vi.waitFor(async () => expect(await l.openStreams("k")).toBe(1));
      for (let i = 0; i < 5; i++) await l.openStream("k", { ...policy, maxStreams: 0 });
    });

    it("AccessLimits on it: per-credential overrides, RATE_LIMITED with its headers", async () => {
      const limits = new AccessLimits({ maxRequests: 100, windowMs: 60_000, maxStreams: 1 }, await make(clock()));
      const p: Principal = { id: "p", credentialId: "c", trustLevel: "execute", scopes: new Set(), admin: false, rateLimit: { max_requests: 2, window_seconds: 5, max_streams: 1 } };
      expect((await limits.charge(p)).headers).toMatchObject({ "X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "1" });
      await limits.charge(p);
      const { error, headers } = await limits.charge(p);
      expect(error).toMatchObject({ reason: "RATE_LIMITED", data: { limit: 2, window_seconds: 5 } });
      expect(headers["X-RateLimit-Remaining"]).toBe("0");
      expect(error?.options.headers?.["Retry-After"]).toBe("5");
      await limits.openStream(p);
      await expect(limits.openStream(p)).rejects.toMatchObject({ reason: "STREAM_LIMIT_EXCEEDED" });
    });
  });
});

describe.skipIf(postgresUrl === undefined)("PostgresLimiter: gateways on one database", () => {
  it("two gateways share one window: requests on A and on B are refused past the limit together", async () => {
    const c = clock();
    const [pa, pb] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now });
    const b = new PostgresLimiter(pb.db, { now: c.now });
    const p = { ...policy, maxRequests: 5 };
    expect((await a.take("k", p))!.remaining).toBe(4);
    expect((await a.take("k", p))!.remaining).toBe(3);
    expect((await b.take("k", p))!.remaining).toBe(2);
    expect((await b.take("k", p, 2))!.remaining).toBe(0);
    expect((await a.take("k", p))!.allowed).toBe(false);
    expect((await b.take("k", p))!).toMatchObject({ allowed: false, remaining: 0, retryAfter: 10 });
    c.advance(10_000);
    expect((await b.take("k", p))!.remaining).toBe(4);
  });

  it("concurrent takes from both gateways never pass the limit (the database's clock)", async () => {
    const [pa, pb] = await twoPools();
    // One statement per take (no units taken ahead): every verdict is the database's, so exactly the limit passes.
    const a = new PostgresLimiter(pa.db, { rateLeaseMs: 0 });
    const b = new PostgresLimiter(pb.db, { rateLeaseMs: 0 });
    await warm(pa, pb);
    const p = { maxRequests: 15, windowMs: 60_000, maxStreams: 0 };
    const verdicts = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).take("k", p)));
    expect(verdicts.filter((v) => v!.allowed)).toHaveLength(15);
    expect(verdicts.filter((v) => !v!.allowed).every((v) => v!.remaining === 0 && v!.retryAfter >= 59)).toBe(true);
    const weighted = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).take("w", p, 4)));
    expect(weighted.filter((v) => v!.allowed)).toHaveLength(3);
  });

  it("stream slots are shared, taken concurrently at most up to the limit, and freed by release", async () => {
    const [pa, pb] = await twoPools();
    const a = new PostgresLimiter(pa.db);
    const b = new PostgresLimiter(pb.db);
    cleanups.push(() => a.close(), () => b.close());
    await warm(pa, pb);
    const p = { ...policy, maxStreams: 3 };
    const opened = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).openStream("k", p)));
    const releases = opened.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    expect(releases).toHaveLength(3);
    expect(opened.filter((o) => o.status === "rejected").every((o) => (o as PromiseRejectedResult).reason.reason === "STREAM_LIMIT_EXCEEDED")).toBe(true);
    expect(await a.openStreams("k")).toBe(3);
    await expect(b.openStream("k", p)).rejects.toMatchObject({ reason: "STREAM_LIMIT_EXCEEDED", data: { open_streams: 3 } });
    releases[0]!();
    await vi.waitFor(async () => expect(await b.openStreams("k")).toBe(2));
    await b.openStream("k", p);
    await expect(a.openStream("k", p)).rejects.toMatchObject({ reason: "STREAM_LIMIT_EXCEEDED" });
    expect(await a.openStreams("other")).toBe(0);
  });

  it("a gateway's leases count while it renews them, and stop counting once it stops (it died)", async () => {
    const c = clock();
    const [pa, pb] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now, streamLeaseMs: 30_000 });
    const b = new PostgresLimiter(pb.db, { now: c.now, streamLeaseMs: 30_000 });
    cleanups.push(() => b.close());
    await a.openStream("k", policy);
    await a.openStream("k", policy);
    c.advance(25_000);
    await a.renew();
    c.advance(25_000);
    await expect(b.openStream("k", policy)).rejects.toMatchObject({ reason: "STREAM_LIMIT_EXCEEDED" });
    await a.close(); // no more renewals, no release: as a gateway that was killed
    c.advance(5_001);
    expect(await b.openStreams("k")).toBe(0);
    await b.openStream("k", policy);
    await b.openStream("k", policy);
    expect(await a.openStreams("k")).toBe(2);
  });

  it("the rows of a window are dropped once they leave it", async () => {
    const c = clock();
    const [pa] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now });
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 5; i++) await a.take("k", policy);
      c.advance(10_000);
    }
    await a.take("k", policy);
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM a2a_rate_events`.execute(pa.db);
    expect(Number(rows[0]!.n)).toBe(1);
  });

  it("a window's running total stays the sum of its rows, whoever deletes them (a take, a sweep, any DELETE)", async () => {
    const c = clock();
    const [pa, pb] = await twoPools();
    const [a, b] = [new PostgresLimiter(pa.db, { now: c.now }), new PostgresLimiter(pb.db, { now: c.now })];
    const wide: LimitPolicy = { maxRequests: 1000, windowMs: 10_000, maxStreams: 2 };
    const check = async (): Promise<void> => {
      const { rows } = await sql<{ credential: string; used: string; summed: string | null }>`
        SELECT w.credential, w.used, (SELECT sum(e.weight) FROM a2a_rate_events e WHERE e.credential = w.credential AND e.policy = w.policy) AS summed
        FROM a2a_rate_windows w`.execute(pa.db);
      for (const row of rows) expect(Number(row.used)).toBe(Number(row.summed ?? 0));
    };
    for (let round = 0; round < 3; round++) {
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).take(`k${i % 3}`, wide, 1 + (i % 4))));
      await check();
      c.advance(4_000);
    }
    // Another gateway's sweep (or one of version 10) deletes rows of several windows in one statement.
    await sql`DELETE FROM a2a_rate_events WHERE expires_at <= ${c.now()}`.execute(pb.db);
    await check();
    const verdict = await a.take("k0", wide);
    const { rows } = await sql<{ n: string | null }>`SELECT sum(weight) AS n FROM a2a_rate_events WHERE credential = 'k0'`.execute(pa.db);
    expect(verdict?.remaining).toBe(wide.maxRequests - Number(rows[0]!.n));
    await check();
  });

  it("a busy credential's takes are answered from units taken ahead: few statements, the same verdicts", async () => {
    const c = clock();
    const [pa] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now });
    const wide: LimitPolicy = { maxRequests: 10_000, windowMs: 60_000, maxStreams: 0 };
    const remaining: number[] = [];
    for (let i = 0; i < 450; i++) remaining.push((await a.take("k", wide))!.remaining);
    // Counted down one by one, as takes of one request each from the database would be.
    expect(remaining).toEqual(Array.from({ length: 450 }, (_, i) => wide.maxRequests - 1 - i));
    // Units per statement: 1, then 1 + 2, 1 + 6, 1 + 14, … (twice what the last allowance served): 8 statements.
    expect(a.takes).toEqual({ database: 8, allowance: 442 });
    const used = async (): Promise<{ window: number; rows: number }> => {
      const { rows } = await sql<{ used: string; summed: string }>`SELECT w.used, (SELECT sum(e.weight) FROM a2a_rate_events e WHERE e.credential = w.credential) AS summed
        FROM a2a_rate_windows w WHERE w.credential = 'k'`.execute(pa.db);
      return { window: Number(rows[0]!.used), rows: Number(rows[0]!.summed) };
    };
    // Units not spent yet count in the window until they are given back…
    const held = await used();
    expect(held.window).toBe(held.rows);
    expect(held.window).toBe(1 + 3 + 7 + 15 + 31 + 63 + 127 + 255);
    // …which the sweep does once their time has passed: then the window holds what was spent, no more.
    c.advance(1_000);
    await a.sweepAllowances();
    expect(await used()).toEqual({ window: 450, rows: 450 });
    // A take after that goes to the database (its allowance's time is over) and sees the same count.
    const database = a.takes.database;
    expect((await a.take("k", wide))!.remaining).toBe(wide.maxRequests - 451);
    expect(a.takes.database).toBe(database + 1);
  });

  it("units taken ahead are not spent after their time, and what is left goes back with the next take", async () => {
    const c = clock();
    const [pa] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now });
    const wide: LimitPolicy = { maxRequests: 1_000, windowMs: 60_000, maxStreams: 0 };
    // The first take is exact; the second takes 2 units ahead.
    await a.take("k", wide);
    await a.take("k", wide);
    expect(a.takes).toEqual({ database: 2, allowance: 0 });
    c.advance(999);
    await a.take("k", wide);
    expect(a.takes).toEqual({ database: 2, allowance: 1 });
    // One unit is left, but its time is over: the take goes to the database, gives it back and takes 4 ahead.
    c.advance(1);
    expect((await a.take("k", wide))!.remaining).toBe(wide.maxRequests - 4);
    expect(a.takes).toEqual({ database: 3, allowance: 1 });
    expect(await windowUsed(pa.db, "k")).toBe(4 + 4);
    // Closing gives those 4 back: the window counts the 4 requests.
    await a.close();
    expect(await windowUsed(pa.db, "k")).toBe(4);
  });

  it("close() waits for a take on its way and gives back the units it took ahead", async () => {
    const c = clock();
    const [pa] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now });
    const wide: LimitPolicy = { maxRequests: 1_000, windowMs: 60_000, maxStreams: 0 };
    await a.take("k", wide);
    const second = a.take("k", wide); // asks for 2 units ahead
    await a.close();
    // Read before the take's own promise is awaited: close() alone saw it through and gave its 2 units back.
    expect(await windowUsed(pa.db, "k")).toBe(2);
    expect(a.takes).toEqual({ database: 2, allowance: 0 });
    expect((await second)!.allowed).toBe(true);
  });

  it("units spent late in their lease count as long as a request made then would: another gateway still sees them", async () => {
    const c = clock();
    const [pa, pb] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now });
    const b = new PostgresLimiter(pb.db, { now: c.now, rateLeaseMs: 0 });
    const p: LimitPolicy = { maxRequests: 1_000, windowMs: 10_000, maxStreams: 0 };
    await a.take("k", p);
    await a.take("k", p); // 2 units ahead, their row at +1 s
    c.advance(999);
    await a.take("k", p); // spent at +999 ms
    expect(a.takes).toEqual({ database: 2, allowance: 1 });
    c.advance(1);
    await a.sweepAllowances(); // the unspent unit goes back
    // The two takes made at 0 have left the window; the request made at +999 ms has not (it leaves at +10,999).
    c.advance(10_000 - 1_000);
    expect((await b.take("k", p))!.remaining).toBe(p.maxRequests - 2);
  });

  it("a window shorter than ten lease times is leased for a tenth of it", async () => {
    const c = clock();
    const [pa] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now });
    const p: LimitPolicy = { maxRequests: 1_000, windowMs: 1_000, maxStreams: 0 };
    await a.take("k", p);
    await a.take("k", p);
    c.advance(99);
    await a.take("k", p);
    expect(a.takes).toEqual({ database: 2, allowance: 1 });
    c.advance(1);
    await a.take("k", p);
    expect(a.takes).toEqual({ database: 3, allowance: 1 });
    const tiny = { ...p, windowMs: 9 };
    for (let i = 0; i < 5; i++) await a.take("t", tiny);
    expect(a.takes).toEqual({ database: 8, allowance: 1 });
  });

  it("a weight the allowance cannot cover goes to the database, and what was left goes back", async () => {
    const c = clock();
    const [pa] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now });
    const p: LimitPolicy = { maxRequests: 1_000, windowMs: 60_000, maxStreams: 0 };
    await a.take("k", p);
    await a.take("k", p); // 2 ahead
    expect((await a.take("k", p, 3))!.remaining).toBe(p.maxRequests - 5);
    await a.close();
    expect(await windowUsed(pa.db, "k")).toBe(5);
  });

  it("a take that fails fails the takes that waited for it, at once and with its error", async () => {
    const pg = await openTestPostgres();
    cleanups.push(pg.close);
    const a = new PostgresLimiter(pg.db);
    await pg.break();
    const p: LimitPolicy = { maxRequests: 1_000, windowMs: 60_000, maxStreams: 0 };
    const settled = await Promise.allSettled(Array.from({ length: 10 }, () => a.take("k", p)));
    expect(settled.every((s) => s.status === "rejected")).toBe(true);
    // One statement was tried; the nine requests that waited for it were given its failure, not a statement each.
    expect(new Set(settled.map((s) => (s as PromiseRejectedResult).reason)).size).toBe(1);
  });

  it("the sweep gives back on its own once the lease time has passed", async () => {
    const [pa] = await twoPools();
    const a = new PostgresLimiter(pa.db, { rateLeaseMs: 200 });
    const p: LimitPolicy = { maxRequests: 1_000, windowMs: 60_000, maxStreams: 0 };
    await a.take("k", p);
    await a.take("k", p); // leases 2 ahead, unless 400 ms passed between the two takes
    await vi.waitFor(async () => expect(await windowUsed(pa.db, "k")).toBe(2), { timeout: 5_000, interval: 20 });
  });

  it("a give-back takes its units from every row of its time, whichever gateway's lease they came from", async () => {
    const [pa] = await twoPools();
    await sql`INSERT INTO a2a_rate_events (credential, policy, at_ms, weight, expires_at) VALUES ('k', 'p', 5, 10, 100), ('k', 'p', 5, 20, 100)`.execute(pa.db);
    await sql`INSERT INTO a2a_rate_windows (credential, policy, used) VALUES ('k', 'p', 30)`.execute(pa.db);
    const back = async (units: number): Promise<number> =>
      Number((await sql<{ n: string }>`SELECT a2a_rate_give_back(1, 'k', 'p', 5, ${units}) AS n`.execute(pa.db)).rows[0]!.n);
    expect(await back(3)).toBe(3); // from the larger row: 10 and 17 left
    expect(await back(20)).toBe(20); // 17 from one row, 3 from the other: 7 left
    expect(await back(50)).toBe(7);
    const { rows } = await sql<{ used: string; n: string }>`SELECT (SELECT used FROM a2a_rate_windows) AS used, (SELECT count(*) FROM a2a_rate_events) AS n`.execute(pa.db);
    expect(rows[0]).toEqual({ used: "0", n: "0" });
  });

  it("a quiet credential's takes each go to the database, and so does every take with A2A_RATE_LIMIT_LEASE_MS=0", async () => {
    const c = clock();
    const [pa, pb] = await twoPools();
    const quiet = new PostgresLimiter(pa.db, { now: c.now });
    const exact = new PostgresLimiter(pb.db, { now: c.now, rateLeaseMs: 0 });
    const wide: LimitPolicy = { maxRequests: 1_000, windowMs: 60_000, maxStreams: 0 };
    for (let i = 0; i < 5; i++) {
      await quiet.take("q", wide);
      c.advance(2_000);
    }
    for (let i = 0; i < 20; i++) await exact.take("e", wide);
    expect(quiet.takes).toEqual({ database: 5, allowance: 0 });
    expect(exact.takes).toEqual({ database: 20, allowance: 0 });
  });

  it("near the limit the last slots are taken one by one: exactly the limit passes, and nothing is held at the refusal", async () => {
    const c = clock();
    const [pa] = await twoPools();
    const a = new PostgresLimiter(pa.db, { now: c.now });
    const p: LimitPolicy = { maxRequests: 100, windowMs: 60_000, maxStreams: 0 };
    let allowed = 0;
    for (let i = 0; i < 120; i++) if ((await a.take("k", p))!.allowed) allowed++;
    expect(allowed).toBe(100);
    expect(a.takes.allowance).toBeGreaterThan(0);
    expect(await windowUsed(pa.db, "k")).toBe(100);
  });

  it("two gateways taking ahead at once never pass the limit, and give back what they did not spend", async () => {
    const [pa, pb] = await twoPools();
    const a = new PostgresLimiter(pa.db);
    const b = new PostgresLimiter(pb.db);
    await warm(pa, pb);
    const p: LimitPolicy = { maxRequests: 300, windowMs: 60_000, maxStreams: 0 };
    let allowed = 0;
    await Promise.all(
      [a, b].map(async (limiter) => {
        for (let i = 0; i < 25; i++) {
          const verdicts = await Promise.all(Array.from({ length: 8 }, () => limiter.take("k", p)));
          allowed += verdicts.filter((v) => v!.allowed).length;
        }
      }),
    );
    expect(a.takes.allowance + b.takes.allowance).toBeGreaterThan(0);
    expect(allowed).toBeLessThanOrEqual(300);
    await Promise.all([a.close(), b.close()]);
    // Given back: the window counts exactly what passed, and a third gateway gets the rest, not one more.
    expect(await windowUsed(pa.db, "k")).toBe(allowed);
    const third = new PostgresLimiter(pa.db, { rateLeaseMs: 0 });
    let more = 0;
    while ((await third.take("k", p))!.allowed) more++;
    expect(allowed + more).toBe(300);
  });

  it("a database failure is TASK_STORE_UNAVAILABLE, for a charge and for a stream (fail closed)", async () => {
    const pg = await openTestPostgres();
    cleanups.push(pg.close);
    const limits = new AccessLimits(policy, new PostgresLimiter(pg.db));
    const p: Principal = { id: "p", credentialId: "c", trustLevel: "execute", scopes: new Set(), admin: false };
    expect((await limits.charge(p)).error).toBeUndefined();
    await pg.break();
    const { error, headers } = await limits.charge(p);
    expect(error).toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation: "limits.take" } });
    expect(headers).toEqual({});
    await expect(limits.openStream(p)).rejects.toMatchObject({ reason: "TASK_STORE_UNAVAILABLE" });
  });
});
