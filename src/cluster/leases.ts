// Gateway instance leases (PostgreSQL): every gateway on a database has a row in a2a_instances whose lease it renews
// every third of A2A_INSTANCE_LEASE_SECONDS. An instance whose lease ran out is dead: the tasks it ran are failed by
// whichever gateway sweeps first (first terminal state wins, so only one sweep applies), and its row is deleted.
import os from "node:os";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { SqlSchema } from "../storage/sql/schema.js";

export interface LeaseOptions {
  sql: Kysely<SqlSchema>;
  instance: string;
  leaseMs: number;
  log: Pick<Logger, "warn">;
  now?: () => number;
  /** After each renewal: the instances alive now (this one included). */
  tick(alive: readonly string[]): Promise<void>;
}

export class InstanceLeases {
  #timer: NodeJS.Timeout | undefined;
  #alive: ReadonlySet<string> = new Set();
  #ticking: Promise<void> = Promise.resolve();
  #stopped = false;
  readonly #now: () => number;
  readonly #started: number;

  constructor(private readonly opts: LeaseOptions) {
    this.#now = opts.now ?? Date.now;
    this.#started = this.#now();
  }

  /** The instances alive at the last renewal. */
  get alive(): ReadonlySet<string> {
    return this.#alive;
  }

  /** Takes the lease (throws when the database cannot be written), then renews it until stop(). */
  async start(): Promise<void> {
    await this.#renew();
    this.#timer = setInterval(() => {
      this.#ticking = this.#ticking.then(() => this.refresh()).catch(() => undefined);
    }, Math.max(50, Math.floor(this.opts.leaseMs / 3)));
    this.#timer.unref();
  }

  /** Renews the lease now and runs the tick (what the timer does). */
  async refresh(): Promise<void> {
    if (this.#stopped) return;
    try {
      await this.#renew();
    } catch (error) {
      this.opts.log.warn({ err: (error as Error).message }, "the gateway could not renew its instance lease");
      return;
    }
    await this.opts.tick([...this.#alive]);
  }

  /** Whether `instance` holds a lease now (read from the database when it was not alive at the last renewal). */
  async isAlive(instance: string): Promise<boolean> {
    if (this.#alive.has(instance)) return true;
    const row = await this.opts.sql
      .selectFrom("a2a_instances")
      .select("id")
      .where("id", "=", instance)
      .where("lease_until", ">=", BigInt(this.#now()))
      .executeTakeFirst();
    return row !== undefined;
  }

  async #renew(): Promise<void> {
    const now = this.#now();
    const info = JSON.stringify({ host: os.hostname(), pid: process.pid });
    await this.opts.sql
      .insertInto("a2a_instances")
      .values({ id: this.opts.instance, started_at: BigInt(this.#started), lease_until: BigInt(now + this.opts.leaseMs), info })
      .onConflict((oc) => oc.column("id").doUpdateSet({ lease_until: BigInt(now + this.opts.leaseMs), info }))
      .execute();
    const rows = await this.opts.sql.selectFrom("a2a_instances").select("id").where("lease_until", ">=", BigInt(now)).execute();
    this.#alive = new Set(rows.map((r) => r.id));
    // Rows of instances dead for a while are removed (their tasks were swept meanwhile).
    await this.opts.sql
      .deleteFrom("a2a_instances")
      .where("lease_until", "<", BigInt(now - 10 * this.opts.leaseMs))
      .execute();
  }

  /** Stops renewing and gives the lease up: the other gateways fail this one's unfinished tasks at their next sweep. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.#ticking;
    await this.opts.sql
      .deleteFrom("a2a_instances")
      .where("id", "=", this.opts.instance)
      .execute()
      .catch(() => undefined);
  }
}
