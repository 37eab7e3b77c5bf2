// Where a push notification may be sent. Checked twice:
//   - when a config is stored: the URL itself (http/https, a host, no user:password part, no fragment, bounded
//     length) and its header values (token, authentication scheme and credentials: no control characters);
//   - when a notification is sent: every address the host resolves to, inside the connection's own DNS lookup, so
//     the address checked is the address connected to (a name that resolves to a public address when the config is
//     stored and to 127.0.0.1 later — DNS rebinding — is still refused).
// Unless A2A_PUSH_ALLOW_PRIVATE_NETWORKS is set, loopback, private (RFC 1918, RFC 4193), link-local (cloud metadata
// at 169.254.169.254 included), CGNAT, multicast, unspecified and reserved addresses are refused: a caller must not
// be able to make the gateway POST into the network it runs in.
import dns from "node:dns";
import net from "node:net";
import type { LookupFunction } from "node:net";
import { at, invalid } from "../protocol/codec/common.js";
import type { PushConfig } from "../protocol/model.js";

export const MAX_URL_LENGTH = 2048;
export const MAX_HEADER_VALUE_LENGTH = 4096;

/**
 * The config's URL and header values, or INVALID_PARAMS naming the field. Returns the normalised URL. Without
 * `allowPrivateNetworks` a URL whose host is a refused IP literal or a `localhost` name (RFC 6761) is refused here
 * already; other names are checked when they are resolved for sending.
 */
export function checkPushConfig(
  config: Omit<PushConfig, "taskId" | "id">,
  field: string,
  allowPrivateNetworks: boolean,
  /** Where the wire carries the i-th scheme: 0.3 `authentication.schemes[i]`, 1.0 `authentication.scheme`. */
  schemeField: (i: number) => string = (i) => `authentication.schemes[${i}]`,
): string {
  // `field` is "" for a config at the root of the params (1.0): name "url", not ".url".
  const url = checkUrl(config.url, at(field, "url"));
  if (!allowPrivateNetworks) {
    const host = hostOf(new URL(url));
    if ((net.isIP(host) !== 0 && isPrivateAddress(host)) || host === "localhost" || host.endsWith(".localhost")) {
      throw invalid(at(field, "url"), "names a loopback, private or reserved address (A2A_PUSH_ALLOW_PRIVATE_NETWORKS is off)");
    }
  }
  headerValue(config.token, at(field, "token"));
  const auth = config.authentication;
  if (auth !== undefined) {
    auth.schemes.forEach((s, i) => {
      headerValue(s, at(field, schemeField(i)));
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(s)) throw invalid(at(field, schemeField(i)), "must be an HTTP auth scheme token (e.g. Bearer)");
    });
    headerValue(auth.credentials, at(field, "authentication.credentials"));
  }
  return url;
}

function checkUrl(raw: string, field: string): string {
  if (raw.length > MAX_URL_LENGTH) throw invalid(field, `must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(field, "must be an absolute http or https URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalid(field, "must be an absolute http or https URL");
  if (url.hostname === "") throw invalid(field, "must name a host");
  if (url.username !== "" || url.password !== "") throw invalid(field, "must not carry a user name or password (use authentication)");
  if (url.hash !== "") throw invalid(field, "must not carry a fragment");
  return url.href;
}

function headerValue(value: string | undefined, field: string): void {
  if (value === undefined) return;
  if (value.length > MAX_HEADER_VALUE_LENGTH) throw invalid(field, `must be at most ${MAX_HEADER_VALUE_LENGTH} characters`);
  // Visible ASCII and Latin-1, spaces and tabs (RFC 9110 field-value); CR, LF and NUL would split or end the header.
  if (/[^\t\x20-\x7e\x80-\xff]/.test(value)) throw invalid(field, "must not contain control characters");
}

/** The URL's host without IPv6 brackets and without a trailing dot. */
export function hostOf(url: URL): string {
  const h = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return h.endsWith(".") ? h.slice(0, -1).toLowerCase() : h.toLowerCase();
}

// ---- addresses -----------------------------------------------------------------------------------------------

const blocked = new net.BlockList();
for (const [address, prefix] of [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const)
  blocked.addSubnet(address, prefix, "ipv4");
for (const [address, prefix] of [
  ["::", 96], // unspecified, loopback and the deprecated IPv4-compatible ::a.b.c.d
  ["2001::", 32], // Teredo (embeds IPv4)
  ["2001:10::", 28], // ORCHID
  ["2002::", 16], // 6to4 (embeds IPv4)
  ["fec0::", 10], // deprecated site-local
  ["64:ff9b::", 96], // NAT64 (embeds IPv4)
  ["64:ff9b:1::", 48], // local-use NAT64
  ["::ffff:0:0:0", 96], // SIIT (embeds IPv4)
  ["100::", 64], // discard
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["ff00::", 8], // multicast
] as const)
  blocked.addSubnet(address, prefix, "ipv6");

/** True for an address a push notification must not reach unless private networks are allowed. */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return blocked.check(address, "ipv4");
  if (family !== 6) return true; // not an IP address at all: refuse
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return blocked.check(mapped[1]!, "ipv4");
  return blocked.check(address, "ipv6");
}

export class PushTargetRefused extends Error {
  constructor(readonly host: string, readonly address: string) {
    super(`push notification target ${host} resolves to ${address}, a private or reserved address (A2A_PUSH_ALLOW_PRIVATE_NETWORKS is off)`);
    this.name = "PushTargetRefused";
  }
}

/**
 * A DNS lookup for node:http(s) that fails the connection with PushTargetRefused when the host (a name or an IP
 * literal) resolves to a refused address. Every resolved address is checked, not only the one used.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      const list = addresses as dns.LookupAddress[];
      if (!allowPrivate) {
        const refused = list.find((a) => isPrivateAddress(a.address));
        if (refused !== undefined) return callback(new PushTargetRefused(hostname, refused.address), "", 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      const first = list[0];
      if (first === undefined) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
      callback(null, first.address, first.family);
    });
  };
}
