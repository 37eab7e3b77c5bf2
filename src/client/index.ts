// The outbound A2A client (spec: extensions/opencode/peers.tsp): the gateway as a client of other A2A agents. One
// PeerClients per process holds the network policy (./policy.ts) and a cache of peers' clients by URL and line
// (A2A_CLIENT_CACHE_TTL_SECONDS, A2A_CLIENT_CACHE_MAXSIZE; least recently used dropped first); each PeerClient
// (./peer.ts) is the facade over the @a2a-js/sdk client for one peer. Used by the MCP tools (src/mcp) and the
// `opencode-a2a call` command (src/cli/call.ts).
import type { ClientSettings } from "../config/client-settings.js";
import { boundedSet, lruGet } from "../util/lru.js";
import type { Resolver } from "../util/network-policy.js";
import { PeerClient, type PeerLine } from "./peer.js";
import { PeerPolicy } from "./policy.js";

export { PeerCallError, peerError } from "./errors.js";
export { describe as describeEvent, FINAL_STATES, PeerAnswer, stateName, textOf } from "./events.js";
export { chooseInterface, PeerClient, type PeerCallOptions, type PeerLine, type PeerMessage } from "./peer.js";
export { authorizationOf, hostMatches, PeerAddressRefused, PeerPolicy } from "./policy.js";

interface Cached {
  client: Promise<PeerClient>;
  at: number;
}

export class PeerClients {
  readonly policy: PeerPolicy;
  readonly #cache = new Map<string, Cached>();

  constructor(
    readonly settings: ClientSettings,
    opts: { resolve?: Resolver; now?: () => number } = {},
  ) {
    this.policy = new PeerPolicy(settings, opts.resolve);
    this.#now = opts.now ?? Date.now;
  }

  readonly #now: () => number;

  /** The peer's client (its card read once per A2A_CLIENT_CACHE_TTL_SECONDS); a failed open is not cached. */
  async get(url: string, line?: PeerLine, signal?: AbortSignal): Promise<PeerClient> {
    const key = `${line ?? "*"} ${url}`;
    const ttlMs = this.settings.clientCacheTtl * 1000;
    const hit = lruGet(this.#cache, key);
    if (hit !== undefined && this.#now() - hit.at < ttlMs) return hit.client;
    this.#cache.delete(key);
    const client = PeerClient.open(url, this.settings, this.policy, line, signal);
    if (ttlMs > 0) {
      boundedSet(this.#cache, key, { client, at: this.#now() }, this.settings.clientCacheMaxSize);
      client.catch(() => {
        if (this.#cache.get(key)?.client === client) this.#cache.delete(key);
      });
    }
    return client;
  }

  /** Peers cached now. */
  get size(): number {
    return this.#cache.size;
  }

  async close(): Promise<void> {
    this.#cache.clear();
    await this.policy.close();
  }
}
