// Several gateways on one PostgreSQL database: each is an instance (A2A_INSTANCE_ID) with a lease (./leases.ts), and
// they reach each other over LISTEN/NOTIFY (./bus.ts, ./peers.ts) for what only the instance running a task's turn
// can do: stream its events, cancel it, take its interrupt replies. On SQLite (and the memory store) the gateway is
// alone: the cluster is this one instance and nothing goes anywhere.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { OrphanScope, Storage } from "../storage/index.js";
import { PgBus } from "./bus.js";
import { InstanceLeases } from "./leases.js";
import { Peers } from "./peers.js";

export { peerUnreachable, Peers, type StreamSink, type StreamSource } from "./peers.js";
export { principalFromWire, principalToWire, type WirePrincipal } from "./wire.js";

/** A2A_INSTANCE_LEASE_SECONDS default. */
export const DEFAULT_INSTANCE_LEASE_SECONDS = 15;

export interface ClusterOptions {
  storage: Storage;
  /** A2A_INSTANCE_ID (default: a new random id per process). */
  instance?: string;
  /** A2A_INSTANCE_LEASE_SECONDS in ms. */
  leaseMs: number;
  log: Pick<Logger, "warn" | "info" | "error">;
}

/**
 * What the sweep fails: the unfinished tasks of no live instance, and those of `stale` (this instance's previous run);
 * undefined: this gateway is alone, every unfinished task is left over.
 */
export type Sweep = (scope: OrphanScope | undefined) => Promise<void>;

export interface Cluster {
  readonly instance: string;
  /** Calls and streams to other instances (PostgreSQL); undefined when the gateway is alone. */
  readonly peers: Peers | undefined;
  /** Whether `instance` is alive (this one always is). */
  isAlive(instance: string): Promise<boolean>;
  /** Joins: takes the lease, listens, and runs `sweep` now and after every lease renewal. */
  start(sweep: Sweep): Promise<void>;
  stop(): Promise<void>;
}

export function openCluster(opts: ClusterOptions): Cluster {
  const instance = opts.instance ?? randomUUID();
  const postgres = opts.storage.postgres;
  if (postgres === undefined) {
    return {
      instance,
      peers: undefined,
      isAlive: async (id) => id === instance,
      start: (sweep) => sweep(undefined),
      stop: async () => undefined,
    };
  }
  // The bus exists before anything is sent (peers send only once start() ran).
  const peers = new Peers(instance, (to, message) => bus.send(to, message));
  const bus: PgBus = new PgBus({
    url: postgres.url,
    pool: postgres.pool,
    instance,
    log: opts.log,
    receive: (message) => peers.receive(message),
    onDown: () => peers.lost(undefined, "the bus between the gateways lost its database connection"),
  });
  let sweep: Sweep = async () => undefined;
  let ticks = 0;
  const leases = new InstanceLeases({
    sql: opts.storage.sql,
    instance,
    leaseMs: opts.leaseMs,
    log: opts.log,
    tick: async (alive) => {
      const living = new Set(alive);
      // A peer missing from the last renewal's list may have joined since: asked before it is given up.
      for (const peer of peers.waitingOn()) if (!living.has(peer) && !(await leases.isAlive(peer).catch(() => true))) peers.lost(peer, "its lease ran out");
      await sweep({}).catch((error: Error) => opts.log.warn({ err: error.message }, "the sweep of dead gateways' tasks failed"));
      if (++ticks % 30 === 0) await bus.prune(Date.now()).catch(() => undefined);
    },
  });
  return {
    instance,
    peers,
    isAlive: async (id) => id === instance || (await leases.isAlive(id)),
    start: async (s) => {
      await bus.start();
      await leases.start();
      opts.log.info({ instance, gateways: [...leases.alive].sort(), lease_ms: opts.leaseMs }, "joined the gateways of the PostgreSQL database");
      sweep = s;
      // This instance's tasks from before a restart (the same A2A_INSTANCE_ID) are stale too.
      await s({ stale: instance });
    },
    stop: async () => {
      await leases.stop();
      peers.lost(undefined, "the gateway is stopping");
      await bus.stop();
    },
  };
}
