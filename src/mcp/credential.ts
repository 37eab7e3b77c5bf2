// The OpenCode credential of the MCP endpoint (A2A_MCP_TOKEN): a bearer token the gateway gives the OpenCode it
// fronts. It resolves at the edge to one fixed Principal holding only `peers.call`, so every other route refuses it
// (SCOPE_INSUFFICIENT); the endpoint (./endpoint.ts) accepts it only from a loopback address and acts for the owner of
// the task that made the call (./attribution.ts). The token is compared as a SHA-256 digest with timingSafeEqual,
// like the registry's credentials, and is never logged or returned.
import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import type { CredentialResolver, Principal } from "../auth/index.js";

/** The scope the MCP tools need. */
export const PEERS_CALL = "peers.call";

/** The Principal of the OpenCode credential (recognised by identity, never by its id). */
export const OPENCODE_CALLER: Principal = Object.freeze({
  id: "opencode",
  credentialId: "opencode-mcp",
  trustLevel: "opencode",
  scopes: new Set([PEERS_CALL]),
  admin: false,
});

export function isOpencodeCaller(principal: Principal | undefined): boolean {
  return principal === OPENCODE_CALLER;
}

/** A fresh token for one run of a managed OpenCode. */
export function generateMcpToken(): string {
  return `oca2a_mcp_${randomBytes(32).toString("base64url")}`;
}

const digest = (value: string): Buffer => hash("sha256", value, "buffer");

function bearerOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const raw = headers.authorization;
  const value = Array.isArray(raw) ? raw[0] : raw;
  const m = value === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(value);
  return m?.[1];
}

/** The gateway's resolver, plus the OpenCode credential (a token equal to `token`). */
export function withOpencodeCredential(resolver: CredentialResolver, token: string): CredentialResolver {
  const expected = digest(token);
  return {
    get schemes() {
      return resolver.schemes;
    },
    resolve(headers) {
      const presented = bearerOf(headers);
      if (presented !== undefined && timingSafeEqual(digest(presented), expected)) return OPENCODE_CALLER;
      return resolver.resolve(headers);
    },
  };
}

/** Loopback addresses (IPv4 127/8, ::1 and their IPv4-mapped forms). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const a = address.toLowerCase();
  return a === "::1" || /^127\.\d+\.\d+\.\d+$/.test(a) || /^::ffff:127\.\d+\.\d+\.\d+$/.test(a);
}

/** The OpenCode config block that registers the gateway's MCP endpoint as the server `a2a` (managed mode, README). */
export function opencodeMcpConfig(gatewayUrl: string, token: string): { mcp: Record<string, unknown> } {
  return {
    mcp: {
      a2a: {
        type: "remote",
        url: `${gatewayUrl.replace(/\/+$/, "")}/mcp`,
        oauth: false,
        enabled: true,
        timeout: 600_000,
        headers: { Authorization: `Bearer ${token}` },
      },
    },
  };
}
