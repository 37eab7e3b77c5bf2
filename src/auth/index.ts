// Credentials → Principal. Handlers never look at tokens: the edge resolves a Principal and checks the scope the
// contract declares for the method or route. A multi-credential registry (scopes, trust levels) replaces
// `BearerTokenResolver` behind the same `CredentialResolver` interface.
import { createHash, timingSafeEqual } from "node:crypto";

export interface Principal {
  /** Stable identity used for ownership of tasks, sessions and interrupts. */
  id: string;
  credentialId: string;
  scopes: ReadonlySet<string>;
  admin: boolean;
}

export interface CredentialResolver {
  /** Security schemes to advertise in the agent cards (name → scheme). */
  readonly schemes: { name: string; kind: "bearer" | "apiKey" | "basic" }[];
  /** The Principal behind the request's credentials, or null when they are missing or wrong. */
  resolve(headers: Record<string, string | string[] | undefined>): Principal | null;
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

export function hasScope(principal: Principal, scope: string | null): boolean {
  return scope === null || principal.admin || principal.scopes.has(scope);
}

/** `A2A_BEARER_TOKEN`: one admin credential, compared in constant time. */
export class BearerTokenResolver implements CredentialResolver {
  readonly schemes = [{ name: "bearerAuth", kind: "bearer" as const }];
  private readonly expected: Buffer;
  private readonly principal: Principal;

  constructor(token: string, scopes: Iterable<string>) {
    this.expected = digest(token);
    this.principal = { id: "admin", credentialId: "env:A2A_BEARER_TOKEN", scopes: new Set(scopes), admin: true };
  }

  resolve(headers: Record<string, string | string[] | undefined>): Principal | null {
    const raw = headers.authorization;
    const value = Array.isArray(raw) ? raw[0] : raw;
    const match = value ? /^Bearer\s+(\S+)\s*$/i.exec(value) : null;
    if (!match) return null;
    return timingSafeEqual(digest(match[1]!), this.expected) ? this.principal : null;
  }
}

export function wwwAuthenticate(resolver: CredentialResolver): string {
  return resolver.schemes
    .map((s) => (s.kind === "basic" ? 'Basic realm="opencode-a2a"' : s.kind === "bearer" ? 'Bearer realm="opencode-a2a"' : 'ApiKey realm="opencode-a2a"'))
    .join(", ");
}
