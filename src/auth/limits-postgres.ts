// The limits of every gateway on one PostgreSQL database (A2A_TASK_STORE_DATABASE_URL=postgres://…): a credential's
// sliding window and its open streams are rows of the database (PostgreSQL migration 10), so N gateways behind one
// load balancer give it its limit once, not N times. Each take and each stream opening is one statement: a function
// that locks the key (pg_advisory_xact_lock), drops what has left the window (or whose lease ran out), counts and
// writes, so concurrent gateways cannot both take the last slot. A window's count is a running total (migration 11),
// so a take costs the same however many requests its window holds. The semantics are LocalLimiter's: an exact sliding
// window (every allowed request's time is kept until it leaves), weights all or nothing, the same verdict fields.
//
// A stream holds a lease row; its gateway renews the leases it holds every streamLeaseMs / 3 while they are open and
// deletes the row on release. A gateway that dies stops renewing, and its leases stop counting after streamLeaseMs.
// A release whose delete fails is left to that expiry too (the lease is no longer renewed).
//
// Allowances (rateLeaseMs > 0, A2A_RATE_LIMIT_LEASE_MS). A statement per request is a round trip and a write on
// the database for every call of every credential: measured at 100,000 tasks, it was half of a GetTask's time. So a
// credential that calls often takes units ahead: a take that goes to the database may ask for extra units
// (PostgreSQL migration 14, a2a_rate_take_leased), which this gateway then spends for that credential's next requests
// without a round trip, for up to its lease time after the take: rateLeaseMs, or a tenth of the window when that is
// shorter (a window of under 10 ms is never leased). How many it asks for follows the demand: none for a credential
// whose last take is more than 2 lease times old, else twice what it spent from its last allowance (the take's own
// weight included), at most LEASE_MAX_UNITS. The database grants at most 1/LEASE_ROOM_SHARE of the room the window
// has left, so allowances shrink to nothing as a window fills and its last slots are taken one request at a time,
// exactly. One take per credential goes to the database at a time: the requests that come meanwhile wait for its
// allowance; those it cannot serve then go to the database side by side and take exactly their weight, and when it
// fails they fail with it (a database that is down answers each of them once, not one after another). What an
// allowance did not spend is given back: in the credential's next take (one statement), or by the sweep of
// allowances once its lease time has passed, or at close (which waits for the takes and give-backs under way). A
// take whose statement itself lasted the lease time leaves units nobody can spend; the sweep gives them back.
// What the approximation costs: leased units count from their take until rateLeaseMs after the last moment they
// can be spent (never more than the limit in any window of the requests' real times), so a credential that
// stopped calling may find up to its last allowance's unspent units still counted until they are given back
// (at most about 2 × rateLeaseMs), and another gateway may be refused while this one holds units it will not use.
// X-RateLimit-Remaining of a request served from an allowance counts this gateway's requests since the take.
import { randomUUID } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { storeCall } from "../storage/sql/rows.js";
import type { SqlSchema } from "../storage/sql/schema.js";
import { streamLimitExceeded, verdictOf, type LimitPolicy, type Limiter, type RateVerdict } from "./limits.js";

/** How long an open stream's lease lasts without renewal (ms): a dead gateway's streams count this long at most. */
export const DEFAULT_STREAM_LEASE_MS = 60_000;
/** How often the expired rows of every key are swept (ms); a take also drops its own key's expired rows. */
const SWEEP_EVERY_MS = 60_000;
/** Default of rateLeaseMs (A2A_RATE_LIMIT_LEASE_MS). */
export const DEFAULT_RATE_LEASE_MS = 1_000;
/** The most units one take leases ahead. */
export const LEASE_MAX_UNITS = 256;
/** A take leases at most 1/LEASE_ROOM_SHARE of the room its window has left after its own weight. */
export const LEASE_ROOM_SHARE = 8;

export interface PostgresLimiterOptions {
  /**
   * The clock (epoch ms) of the windows and leases. Default: the database's (clock_timestamp()), one clock for every
   * gateway, so a gateway whose clock is off neither shortens nor stretches the others' windows. Tests inject one.
   */
  now?: () => number;
  /** Lease of an open stream (ms, default DEFAULT_STREAM_LEASE_MS); renewed every third of it while open. */
  streamLeaseMs?: number;
  /** How long units taken ahead may be spent (ms, default DEFAULT_RATE_LEASE_MS); 0: every take goes to the database. */
  rateLeaseMs?: number;
}

type Int = number | string | bigint;
type TakeRow = { now_ms: Int; allowed: boolean; used: Int; oldest: Int | null; freeing: Int | null; leased: Int; lease_at: Int };

/** One credential's (and policy's) units taken ahead, and what its last take from the database says of its window. */
interface Allowance {
  readonly key: string;
  readonly policyKey: string;
  readonly lock: number;
  /** How long after the take its units may be spent (ms). */
  readonly leaseMs: number;
  /** The database's time of the take, and this process's clock then: the time of a verdict served from it. */
  readonly takenAt: number;
  readonly localAt: number;
  /** The window's total after the take (the leased units included) and its oldest request then. */
  readonly used: number;
  readonly oldest: number | undefined;
  /** The lease row's time (where unspent units are given back). */
  readonly leaseAt: number;
  /** Units not spent yet. */
  left: number;
  /** Units spent from it, the take's own weight included. */
  spent: number;
}

export class PostgresLimiter implements Limiter {
  readonly #db: Kysely<SqlSchema>;
  readonly #now: (() => number) | undefined;
  readonly #leaseMs: number;
  readonly #rateLeaseMs: number;
  /** The leases this gateway holds open (renewed by the heartbeat). */
  readonly #leases = new Set<string>();
  #heartbeat: NodeJS.Timeout | undefined;
  #sweptAt = 0;
  #closed = false;
  /** Per credential and policy: the last take's allowance (see the header). */
  readonly #allowances = new Map<string, Allowance>();
  /** Per credential and policy: the take from the database in flight. */
  readonly #taking = new Map<string, Promise<RateVerdict>>();
  #allowanceSweep: NodeJS.Timeout | undefined;
  /** The sweep's give-backs under way (close() waits for them). */
  #sweeping: Promise<void> | undefined;
  /** Takes answered by the database and by an allowance (for tests and metrics). */
  readonly takes = { database: 0, allowance: 0 };

  constructor(db: Kysely<SqlSchema>, options: PostgresLimiterOptions = {}) {
    this.#db = db;
    this.#now = options.now;
    this.#leaseMs = options.streamLeaseMs ?? DEFAULT_STREAM_LEASE_MS;
    this.#rateLeaseMs = Math.max(0, options.rateLeaseMs ?? DEFAULT_RATE_LEASE_MS);
  }

  async take(key: string, policy: LimitPolicy, weight = 1): Promise<RateVerdict | null> {
    if (policy.maxRequests <= 0) return null;
    const policyKey = `${policy.maxRequests}/${policy.windowMs}`;
    const id = `${key}\u0000${policyKey}`;
    const served = this.#spend(id, policy, weight);
    if (served !== undefined) return served;
    const inFlight = this.#taking.get(id);
    if (inFlight !== undefined) {
      // One take from the database per credential at a time: this request waits for its allowance (and fails with
      // it: the same database), then, if the allowance cannot serve it, takes exactly its weight side by side with
      // the others that waited.
      await inFlight;
      return this.#spend(id, policy, weight) ?? this.#fromDatabase(id, key, policyKey, policy, weight, false);
    }
    const taking = this.#fromDatabase(id, key, policyKey, policy, weight, true);
    // Without allowances (no lease time for this policy) there is nothing to wait for: every take goes side by side.
    if (this.#leaseFor(policy) > 0) this.#taking.set(id, taking);
    try {
      return await taking;
    } finally {
      if (this.#taking.get(id) === taking) this.#taking.delete(id);
    }
  }

  /** The lease time of a policy's allowances: rateLeaseMs, at most a tenth of its window (0: none). */
  #leaseFor(policy: LimitPolicy): number {
    return Math.min(this.#rateLeaseMs, Math.floor(policy.windowMs / 10));
  }

  /** The verdict of `weight` units spent from the credential's allowance, or undefined when it cannot serve them. */
  #spend(id: string, policy: LimitPolicy, weight: number): RateVerdict | undefined {
    const a = this.#allowances.get(id);
    if (a === undefined || a.left < weight) return undefined;
    const elapsed = this.#local() - a.localAt;
    if (elapsed >= a.leaseMs) return undefined;
    a.left -= weight;
    a.spent += weight;
    this.takes.allowance++;
    return verdictOf(policy, weight, a.takenAt + elapsed, true, a.used - a.left, a.oldest, undefined);
  }

  /**
   * A take from the database. `lead`: this is the credential's one take in flight, which may lease units ahead and
   * installs the allowance; the others take exactly their weight and leave the allowance to it.
   */
  async #fromDatabase(id: string, key: string, policyKey: string, policy: LimitPolicy, weight: number, lead: boolean): Promise<RateVerdict> {
    const previous = this.#allowances.get(id);
    const local = this.#local();
    const leaseMs = this.#leaseFor(policy);
    // Demand: twice what the last allowance served; none when the credential has been quiet.
    let extra = 0;
    if (lead && leaseMs > 0 && !this.#closed && previous !== undefined && local - previous.localAt < 2 * previous.leaseMs) {
      extra = Math.min(LEASE_MAX_UNITS, 2 * previous.spent);
    }
    // Its unspent units go back in this statement: nothing spends them from now on, and the sweep does not give them
    // back a second time. If the statement fails they stay counted until they leave the window.
    const back = previous?.left ?? 0;
    if (previous !== undefined) previous.left = 0;
    const row = await storeCall("limits.take", async () => {
      const { rows } = await sql<TakeRow>`SELECT * FROM a2a_rate_take_leased(${lockKey(id)}, ${key}, ${policyKey}, ${this.#clock()},
        ${policy.windowMs}, ${policy.maxRequests}, ${weight}, ${extra}, ${LEASE_ROOM_SHARE}, ${leaseMs},
        ${previous?.leaseAt ?? 0}, ${back})`.execute(this.#db);
      return rows[0]!;
    });
    this.takes.database++;
    // The previous allowance's unspent units went back in this statement: the lead take replaces it below, or drops it
    // when refused (a take that waited leaves it to the lead).
    if (lead && previous !== undefined && this.#allowances.get(id) === previous) this.#allowances.delete(id);
    const now = Number(row.now_ms);
    this.#sweep(now);
    const oldest = row.oldest === null ? undefined : Number(row.oldest);
    const freeing = row.freeing === null ? undefined : Number(row.freeing);
    const leased = Number(row.leased);
    const used = Number(row.used);
    if (lead && leaseMs > 0 && row.allowed && !this.#closed) {
      this.#allowances.set(id, { key, policyKey, lock: lockKey(id), leaseMs, takenAt: now, localAt: local, used, oldest, leaseAt: Number(row.lease_at), left: leased, spent: weight });
      this.#sweepAllowancesLater();
    } else if (leased > 0) {
      // Closed while this take was on its way (close() waits for it): nothing will spend these units.
      await this.#giveBack(lockKey(id), key, policyKey, Number(row.lease_at), leased);
    }
    return verdictOf(policy, weight, now, row.allowed, used - leased, oldest, freeing);
  }

  /** Gives back what each allowance past its time did not spend, and forgets the credentials that went quiet. */
  async sweepAllowances(all = false): Promise<void> {
    const local = this.#local();
    const backs: Promise<unknown>[] = [];
    for (const [id, a] of this.#allowances) {
      const age = local - a.localAt;
      if (!all && age < a.leaseMs) continue;
      if (a.left > 0) {
        const units = a.left;
        a.left = 0;
        backs.push(this.#giveBack(a.lock, a.key, a.policyKey, a.leaseAt, units));
      }
      // Kept for one more lease time after its own: the next take's demand reads what it spent.
      if (all || age >= 2 * a.leaseMs) this.#allowances.delete(id);
    }
    await Promise.all(backs);
    if (this.#allowances.size > 0) this.#sweepAllowancesLater();
  }

  /** Gives `units` back to the lease row at `leaseAt`; a failure leaves them counted until they leave the window. */
  #giveBack(lock: number, key: string, policyKey: string, leaseAt: number, units: number): Promise<unknown> {
    return sql`SELECT a2a_rate_give_back(${lock}, ${key}, ${policyKey}, ${leaseAt}, ${units})`.execute(this.#db).catch(() => undefined);
  }

  #sweepAllowancesLater(): void {
    if (this.#allowanceSweep !== undefined || this.#closed) return;
    this.#allowanceSweep = setTimeout(() => {
      this.#allowanceSweep = undefined;
      const sweeping = this.sweepAllowances();
      this.#sweeping = sweeping;
      void sweeping.finally(() => {
        if (this.#sweeping === sweeping) this.#sweeping = undefined;
      });
    }, this.#rateLeaseMs);
    this.#allowanceSweep.unref();
  }

  async openStream(key: string, policy: LimitPolicy): Promise<() => void> {
    // Unlimited: nothing to count against, so nothing is written.
    if (policy.maxStreams <= 0) return () => undefined;
    const id = randomUUID();
    const row = await storeCall("limits.openStream", async () => {
      const { rows } = await sql<{ opened: boolean; open_streams: Int }>`SELECT * FROM a2a_stream_open(${lockKey(key)}, ${id}, ${key}, ${this.#clock()},
        ${this.#leaseMs}, ${policy.maxStreams})`.execute(this.#db);
      return rows[0]!;
    });
    if (!row.opened) throw streamLimitExceeded(Number(row.open_streams), policy.maxStreams);
    this.#leases.add(id);
    this.#beat();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#leases.delete(id);
      this.#beat();
      void sql`DELETE FROM a2a_stream_leases WHERE id = ${id}`.execute(this.#db).catch(() => undefined);
    };
  }

  /** The credential's open streams on every gateway (leases not yet expired). */
  async openStreams(key: string): Promise<number> {
    return storeCall("limits.openStreams", async () => {
      const { rows } = await sql<{ n: Int }>`SELECT count(*) AS n FROM a2a_stream_leases
        WHERE credential = ${key} AND expires_at > COALESCE(${this.#clock()}::BIGINT, a2a_now_ms())`.execute(this.#db);
      return Number(rows[0]!.n);
    });
  }

  /** Renew this gateway's leases now (the heartbeat does it every third of the lease). */
  async renew(): Promise<void> {
    if (this.#leases.size === 0 || this.#closed) return;
    const ids = [...this.#leases];
    await storeCall("limits.renew", () =>
      sql`UPDATE a2a_stream_leases SET expires_at = COALESCE(${this.#clock()}::BIGINT, a2a_now_ms()) + ${this.#leaseMs}
          WHERE id = ANY(${ids}::TEXT[])`.execute(this.#db),
    );
  }

  /**
   * Stops the heartbeat, waits for the takes on their way and gives back the allowances' unspent units; the stream
   * leases still held expire on their own (the database may be closing too).
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#leases.clear();
    this.#beat();
    if (this.#allowanceSweep !== undefined) clearTimeout(this.#allowanceSweep);
    this.#allowanceSweep = undefined;
    await Promise.allSettled([...this.#taking.values(), this.#sweeping]);
    await this.sweepAllowances(true);
  }

  /** The injected clock's time (whole ms), or null: the database's clock. */
  #clock(): number | null {
    return this.#now === undefined ? null : Math.floor(this.#now());
  }

  /** This process's clock for the allowances' ages: the injected one when there is one. */
  #local(): number {
    return this.#now === undefined ? performance.now() : this.#now();
  }

  /** The heartbeat runs while this gateway holds a lease (and does not keep the process alive). */
  #beat(): void {
    if (this.#leases.size > 0 && this.#heartbeat === undefined && !this.#closed) {
      this.#heartbeat = setInterval(() => void this.renew().catch(() => undefined), Math.max(1, Math.floor(this.#leaseMs / 3)));
      this.#heartbeat.unref();
    } else if ((this.#leases.size === 0 || this.#closed) && this.#heartbeat !== undefined) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
    }
  }

  /** Now and then, delete the rows of every key that has left its window or lease (keys nobody takes any more). */
  #sweep(now: number): void {
    if (now - this.#sweptAt < SWEEP_EVERY_MS) return;
    this.#sweptAt = now;
    void sql`DELETE FROM a2a_rate_events WHERE expires_at <= ${now}`
      .execute(this.#db)
      // Windows left empty (their total is kept by a trigger on a2a_rate_events, PostgreSQL migration 11): a take that
      // comes later makes its window again.
      .then(() => sql`DELETE FROM a2a_rate_windows WHERE used = 0`.execute(this.#db))
      .then(() => sql`DELETE FROM a2a_stream_leases WHERE expires_at <= ${now}`.execute(this.#db))
      .catch(() => undefined);
  }
}

/** The 32-bit advisory lock key of a limit key (FNV-1a; a collision only makes two keys wait for each other). */
export function lockKey(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h | 0;
}
