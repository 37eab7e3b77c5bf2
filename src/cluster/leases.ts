// Gateway instance leases (PostgreSQL): every gateway on a database has a row in a2a_instances whose lease it renews
// every third of A2A_INSTANCE_LEASE_SECONDS. An instance whose lease ran out is dead: the tasks it ran are failed by
// whichever gateway sweeps first (first terminal state wins, so only one sweep applies), and its row is deleted.
//
// Times are the database's clock (a2a_now_ms()), so gateways whose clocks differ agree on who is alive. Renewal has a
// timer of its own that never waits for the sweep (a long sweep must not let this gateway's own lease run out).
import os from "node:os";
import { sql, type Kysely, type RawBuilder } from "kysely";
import type { Logger } from "pino";
import type { SqlSchema } from "../storage/sql/schema.js";

export interface LeaseOptions {
  sql: Kysely<SqlSchema>;
  instance: string;
  leaseMs: number;
  log: Pick<Logger, "warn" | "error">;
  /** Tests: a clock instead of the database's. */
  now?: () => number;
  /** After a renewal, never two at once: the instances alive now (this one included). */
  tick(alive: readonly string[]): Promise<void>;
  /** Tests: no timers; refresh() renews and ticks. */
  manual?: boolean;
}

export class InstanceLeases {
  #renewTimer: NodeJS.Timeout | undefined;
  #tickTimer: NodeJS.Timeout | undefined;
  #alive: ReadonlySet<string> = new Set();
  #renewing: Promise<void> | undefined;
  #ticking: Promise<void> | undefined;
  #stopped = false;
  #renewed = false;

  constructor(private readonly opts: LeaseOptions) {}

  /** The instances alive at the last renewal. */
  get alive(): ReadonlySet<string> {
    return this.#alive;
  }

  #now(): RawBuilder<bigint> | bigint {
    return this.opts.now === undefined ? sql<bigint>`a2a_now_ms()` : BigInt(this.opts.now());
  }

  /** Takes the lease (throws when the database cannot be written), then renews it and ticks until stop(). */
  async start(): Promise<void> {
    await this.#renew();
    if (this.opts.manual === true) return;
    const every = Math.max(50, Math.floor(this.opts.leaseMs / 3));
    this.#renewTimer = setInterval(() => void this.#renewOnce(), every);
    this.#renewTimer.unref();
    this.#tickTimer = setInterval(() => void this.#tickOnce(), every);
    this.#tickTimer.unref();
  }

  /** Renews the lease now and runs the tick (what the timers do). */
  async refresh(): Promise<void> {
    await this.#renewOnce();
    await this.#tickOnce();
  }

  #renewOnce(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#renewing ??= this.#renew()
      .catch((error: Error) => this.opts.log.warn({ err: error.message }, "the gateway could not renew its instance lease"))
      .finally(() => (this.#renewing = undefined));
    return this.#renewing;
  }

  #tickOnce(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#ticking ??= this.opts
      .tick([...this.#alive])
      .catch(() => undefined)
      .finally(() => (this.#ticking = undefined));
    return this.#ticking;
  }

  /** Whether `instance` holds a lease now (read from the database when it was not alive at the last renewal). */
  async isAlive(instance: string): Promise<boolean> {
    if (this.#alive.has(instance)) return true;
    const row = await this.opts.sql.selectFrom("a2a_instances").select("id").where("id", "=", instance).where("lease_until", ">=", this.#now()).executeTakeFirst();
    return row !== undefined;
  }

  async #renew(): Promise<void> {
    const { sql: db, instance, leaseMs } = this.opts;
    if (this.#renewed) {
      const mine = await db.selectFrom("a2a_instances").select(sql<boolean>`lease_until < ${this.#now()}`.as("lapsed")).where("id", "=", instance).executeTakeFirst();
      if (mine === undefined || mine.lapsed) {
        // The others may have failed its tasks meanwhile; first terminal state wins, so what this gateway saves of
        // them later is not applied.
        this.opts.log.error({ instance }, "this gateway's instance lease had run out: other gateways may have failed the tasks it runs");
      }
    }
    const info = JSON.stringify({ host: os.hostname(), pid: process.pid });
    const until = sql<bigint>`${this.#now()}::bigint + ${BigInt(leaseMs)}::bigint`;
    await db
      .insertInto("a2a_instances")
      .values({ id: instance, started_at: this.#now(), lease_until: until, info })
      .onConflict((oc) => oc.column("id").doUpdateSet({ lease_until: until, info }))
      .execute();
    this.#renewed = true;
    const rows = await db.selectFrom("a2a_instances").select("id").where("lease_until", ">=", this.#now()).execute();
    this.#alive = new Set(rows.map((r) => r.id));
    // Rows of instances dead for a while are removed (their tasks were swept meanwhile).
    await db
      .deleteFrom("a2a_instances")
      .where("lease_until", "<", sql<bigint>`${this.#now()}::bigint - ${BigInt(10 * leaseMs)}::bigint`)
      .execute();
  }

  /** Stops renewing and gives the lease up: the other gateways fail this one's unfinished tasks at their next sweep. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#renewTimer !== undefined) clearInterval(this.#renewTimer);
    if (this.#tickTimer !== undefined) clearInterval(this.#tickTimer);
    await this.#renewing;
    await this.opts.sql
      .deleteFrom("a2a_instances")
      .where("id", "=", this.opts.instance)
      .execute()
      .catch(() => undefined);
  }
}
