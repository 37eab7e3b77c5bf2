// The network policy of the gateway's outbound connections made on a caller's behalf (push deliveries, the outbound
// A2A client): which addresses are private or reserved, and a DNS lookup for the connection itself that refuses them,
// so the address that is checked is the address connected to (a name that resolves to a public address once and to
// 127.0.0.1 later, DNS rebinding, is still refused). Refused unless the caller's setting allows private networks:
// loopback, private (RFC 1918, RFC 4193), link-local (cloud metadata at 169.254.169.254 included), CGNAT, multicast,
// unspecified, documentation and reserved addresses, and the IPv6 forms that embed an IPv4 address.
import dns from "node:dns";
import net from "node:net";
import type { LookupFunction } from "node:net";

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

/** True for an address the gateway must not connect to on a caller's behalf unless private networks are allowed. */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return blocked.check(address, "ipv4");
  if (family !== 6) return true; // not an IP address at all: refuse
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return blocked.check(mapped[1]!, "ipv4");
  return blocked.check(address, "ipv6");
}

/** A host that resolves to an address the policy refuses. */
export class AddressRefused extends Error {
  constructor(
    readonly host: string,
    readonly address: string,
    what: string,
    /** The setting that would allow it. */
    readonly setting: string,
  ) {
    super(`${what} ${host} resolves to ${address}, a private or reserved address (${setting} is off)`);
    this.name = "AddressRefused";
  }
}

/** How names are resolved (dns.lookup with `all: true`; tests give their own). */
export type Resolver = (hostname: string, options: dns.LookupAllOptions, callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void) => void;

/**
 * A DNS lookup for node:http(s) (or any socket connect) that fails the connection with `refuse(host, address)` when
 * the host (a name or an IP literal) resolves to a refused address. Every resolved address is checked, not only the
 * one used, and the connection goes to an address that was checked.
 */
export function guardedLookup(allowPrivate: boolean, refuse: (host: string, address: string) => Error, resolve: Resolver = dns.lookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      const list = addresses as dns.LookupAddress[];
      if (!allowPrivate) {
        const refused = list.find((a) => isPrivateAddress(a.address));
        if (refused !== undefined) return callback(refuse(hostname, refused.address) as NodeJS.ErrnoException, "", 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      const first = list[0];
      if (first === undefined) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
      callback(null, first.address, first.family);
    });
  };
}
