// The network policy of outbound A2A calls (spec: extensions/opencode/peers.tsp) and the fetch every one of them goes
// through. A peer URL must be http or https, without user:password or fragment; when A2A_CLIENT_ALLOWED_HOSTS is set
// its host must match it. Every connection resolves the host inside its own DNS lookup and refuses any private or
// reserved address unless A2A_CLIENT_ALLOW_PRIVATE_HOSTS (util/network-policy.ts: the address checked is the address
// connected to, so DNS rebinding cannot slip through); an IP literal is checked before the connection. Redirects are
// not followed. Credentials are bound to hosts: they are added only for a host listed in A2A_CLIENT_ALLOWED_HOSTS.
import net from "node:net";
import { Agent, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from "undici";
import type { ClientSettings } from "../config/client-settings.js";
import { AddressRefused, guardedLookup, hostOf, isPrivateAddress, type Resolver } from "../util/network-policy.js";
import { PeerCallError } from "./errors.js";

/** The most a peer URL may be. */
const MAX_URL_LENGTH = 2048;

/** A peer host refused by the policy (an address that is private or reserved). */
export class PeerAddressRefused extends AddressRefused {
  constructor(host: string, address: string) {
    super(host, address, "peer", "A2A_CLIENT_ALLOW_PRIVATE_HOSTS");
    this.name = "PeerAddressRefused";
  }
}

/** The port a URL connects to (its own, else the scheme's). */
function portOf(url: URL): string {
  return url.port !== "" ? url.port : url.protocol === "https:" ? "443" : "80";
}

/** Whether `host:port` matches one allowlist entry: `name` (any port), `name:port`, `*.domain` (sub-domains only), `*`. */
export function hostMatches(entry: string, host: string, port: string): boolean {
  let name = entry.trim().toLowerCase();
  if (name === "*") return true;
  let wantPort: string | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(name);
  if (bracket) {
    name = bracket[1]!;
    wantPort = bracket[2];
  } else if (net.isIP(name) !== 6) {
    const colon = name.lastIndexOf(":");
    if (colon > 0 && /^\d+$/.test(name.slice(colon + 1))) {
      wantPort = name.slice(colon + 1);
      name = name.slice(0, colon);
    }
  }
  if (name.endsWith(".")) name = name.slice(0, -1);
  if (wantPort !== undefined && wantPort !== port) return false;
  if (name.startsWith("*.")) return host.endsWith(name.slice(1)) && host.length > name.length - 1;
  return host === name;
}

export class PeerPolicy {
  readonly #allowed: string[];
  readonly #agent: Agent;
  readonly #authorization: string | undefined;

  constructor(
    private readonly settings: Pick<ClientSettings, "clientAllowedHosts" | "clientAllowPrivateHosts" | "clientBearerToken" | "clientBasicAuth">,
    /** How host names are resolved (tests: a resolver that changes its answer). */
    resolve?: Resolver,
  ) {
    this.#allowed = settings.clientAllowedHosts;
    const refuse = (host: string, address: string): Error => new PeerAddressRefused(host, address);
    this.#agent = new Agent({ connect: { lookup: guardedLookup(settings.clientAllowPrivateHosts, refuse, resolve) } });
    this.#authorization = authorizationOf(settings);
  }

  /** Whether A2A_CLIENT_ALLOWED_HOSTS lists the URL's host (the hosts that get credentials). */
  listed(url: URL): boolean {
    const host = hostOf(url);
    return this.#allowed.some((entry) => hostMatches(entry, host, portOf(url)));
  }

  /**
   * The URL as the policy takes it, or PeerCallError: a2a_invalid_input (not an absolute http(s) URL, user:password,
   * a fragment, too long) or a2a_target_refused (a host outside the allowlist, a private or reserved IP literal, a
   * `localhost` name).
   */
  check(raw: string): URL {
    if (raw.length > MAX_URL_LENGTH) throw new PeerCallError("a2a_invalid_input", `the peer URL is longer than ${MAX_URL_LENGTH} characters`);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new PeerCallError("a2a_invalid_input", `${JSON.stringify(raw)} is not an absolute http or https URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new PeerCallError("a2a_invalid_input", `the peer URL must be http or https, not ${url.protocol.slice(0, -1)}`);
    if (url.username !== "" || url.password !== "") throw new PeerCallError("a2a_invalid_input", "the peer URL must not carry a user name or password (credentials come from A2A_CLIENT_BEARER_TOKEN / A2A_CLIENT_BASIC_AUTH)");
    if (url.hash !== "") throw new PeerCallError("a2a_invalid_input", "the peer URL must not carry a fragment");
    const host = hostOf(url);
    if (this.#allowed.length > 0 && !this.listed(url)) {
      throw new PeerCallError("a2a_target_refused", `${host}:${portOf(url)} is not in A2A_CLIENT_ALLOWED_HOSTS`, { host });
    }
    if (!this.settings.clientAllowPrivateHosts && ((net.isIP(host) !== 0 && isPrivateAddress(host)) || host === "localhost" || host.endsWith(".localhost"))) {
      throw new PeerCallError("a2a_target_refused", `${host} is a loopback, private or reserved address (A2A_CLIENT_ALLOW_PRIVATE_HOSTS is off)`, { host });
    }
    return url;
  }

  /** The Authorization header for a URL: the configured credential for a listed host, else none. */
  authorizationFor(url: URL): string | undefined {
    return this.#authorization !== undefined && this.listed(url) ? this.#authorization : undefined;
  }

  /**
   * The fetch of every outbound request: checked by the policy (each request, not only the first of a peer), through
   * the guarded connection, never following a redirect, credentials added only for listed hosts.
   */
  readonly fetch: typeof fetch = async (input, init) => {
    const url = this.check(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    // A header set by a caller (an interceptor) for a host without the right to credentials is dropped.
    headers.delete("authorization");
    const authorization = this.authorizationFor(url);
    if (authorization !== undefined) headers.set("authorization", authorization);
    const request: UndiciRequestInit = {
      ...(init as UndiciRequestInit | undefined),
      headers: Object.fromEntries([...(headers as unknown as Iterable<[string, string]>)]),
      redirect: "manual",
      dispatcher: this.#agent,
    };
    if (input instanceof Request && init?.body === undefined && input.body !== null) {
      request.body = await input.text();
      request.method = input.method;
    }
    const response = await undiciFetch(url.href, request);
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel();
      throw new PeerCallError("a2a_peer_protocol_error", `the peer answered ${response.status} (a redirect, not followed) for ${url.href}`, { status: response.status });
    }
    return response as unknown as Response;
  };

  /** Closes the connections (once; later calls do nothing). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#agent.close();
  }

  #closed = false;
}

/** `Bearer <token>` or `Basic <base64>` from the settings (the bearer token wins), else undefined. */
export function authorizationOf(settings: Pick<ClientSettings, "clientBearerToken" | "clientBasicAuth">): string | undefined {
  if (settings.clientBearerToken !== undefined) return `Bearer ${settings.clientBearerToken}`;
  const basic = settings.clientBasicAuth;
  if (basic === undefined) return undefined;
  // `user:password`, or already its base64.
  return `Basic ${basic.includes(":") ? Buffer.from(basic, "utf8").toString("base64") : basic}`;
}
