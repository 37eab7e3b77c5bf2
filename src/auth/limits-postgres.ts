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
import { randomUUID } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { storeCall } from "../storage/sql/rows.js";
import type { SqlSchema } from "../storage/sql/schema.js";
import { streamLimitExceeded, verdictOf, type LimitPolicy, type Limiter, type RateVerdict } from "./limits.js";

/** How long an open stream's lease lasts without renewal (ms): a dead gateway's streams count this long at most. */
export const DEFAULT_STREAM_LEASE_MS = 60_000;
/** How often the expired rows of every key are swept (ms); a take also drops its own key's expired rows. */
const SWEEP_EVERY_MS = 60_000;

export interface PostgresLimiterOptions {
  /**
   * The clock (epoch ms) of the windows and leases. Default: the database's (clock_timestamp()), one clock for every
   * gateway, so a gateway whose clock is off neither shortens nor stretches the others' windows. Tests inject one.
   */
  now?: () => number;
  /** Lease of an open stream (ms, default DEFAULT_STREAM_LEASE_MS); renewed every third of it while open. */
  streamLeaseMs?: number;
}

type Int = number | string | bigint;
type TakeRow = { now_ms: Int; allowed: boolean; used: Int; oldest: Int | null; freeing: Int | null };

export class PostgresLimiter implements Limiter {
  readonly #db: Kysely<SqlSchema>;
  readonly #now: (() => number) | undefined;
  readonly #leaseMs: number;
  /** The leases this gateway holds open (renewed by the heartbeat). */
  readonly #leases = new Set<string>();
  #heartbeat: NodeJS.Timeout | undefined;
  #sweptAt = 0;
  #closed = false;

  constructor(db: Kysely<SqlSchema>, options: PostgresLimiterOptions = {}) {
    this.#db = db;
    this.#now = options.now;
    this.#leaseMs = options.streamLeaseMs ?? DEFAULT_STREAM_LEASE_MS;
  }

  async take(key: string, policy: LimitPolicy, weight = 1): Promise<RateVerdict | null> {
    if (policy.maxRequests <= 0) return null;
    const policyKey = `${policy.maxRequests}/${policy.windowMs}`;
    const row = await storeCall("limits.take", async () => {
      const { rows } = await sql<TakeRow>`SELECT * FROM a2a_rate_take(${lockKey(`${key}\u0000${policyKey}`)}, ${key}, ${policyKey}, ${this.#clock()},
        ${policy.windowMs}, ${policy.maxRequests}, ${weight})`.execute(this.#db);
      return rows[0]!;
    });
    const now = Number(row.now_ms);
    this.#sweep(now);
    const oldest = row.oldest === null ? undefined : Number(row.oldest);
    const freeing = row.freeing === null ? undefined : Number(row.freeing);
    return verdictOf(policy, weight, now, row.allowed, Number(row.used), oldest, freeing);
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

  /** Stops the heartbeat; the leases still held expire on their own (the database may be closing too). */
  close(): Promise<void> {
    this.#closed = true;
    this.#leases.clear();
    this.#beat();
    return Promise.resolve();
  }

  /** The injected clock's time (whole ms), or null: the database's clock. */
  #clock(): number | null {
    return this.#now === undefined ? null : Math.floor(this.#now());
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
