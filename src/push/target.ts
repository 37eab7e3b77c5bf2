// Where a push notification may be sent. Checked twice:
//   - when a config is stored: the URL itself (http/https, a host, no user:password part, no fragment, bounded
//     length) and its header values (token, authentication scheme and credentials: no control characters);
//   - when a notification is sent: every address the host resolves to, inside the connection's own DNS lookup, so
//     the address checked is the address connected to (a name that resolves to a public address when the config is
//     stored and to 127.0.0.1 later — DNS rebinding — is still refused).
// Unless A2A_PUSH_ALLOW_PRIVATE_NETWORKS is set, loopback, private (RFC 1918, RFC 4193), link-local (cloud metadata
// at 169.254.169.254 included), CGNAT, multicast, unspecified and reserved addresses are refused: a caller must not
// be able to make the gateway POST into the network it runs in.
import net from "node:net";
import type { LookupFunction } from "node:net";
import { at, invalid } from "../protocol/codec/common.js";
import type { PushConfig } from "../protocol/model.js";
import { AddressRefused, guardedLookup as addressGuard, hostOf, isPrivateAddress } from "../util/network-policy.js";

export { hostOf, isPrivateAddress };

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

/** A push target that resolves to a refused address (A2A_PUSH_ALLOW_PRIVATE_NETWORKS is off). */
export class PushTargetRefused extends AddressRefused {
  constructor(host: string, address: string) {
    super(host, address, "push notification target", "A2A_PUSH_ALLOW_PRIVATE_NETWORKS");
    this.name = "PushTargetRefused";
  }
}

/** The connect-time DNS check of push deliveries (util/network-policy.ts), failing with PushTargetRefused. */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return addressGuard(allowPrivate, (host, address) => new PushTargetRefused(host, address));
}
