// Credentials → Principal. Handlers never look at tokens: the edge resolves a Principal from the credential registry
// (src/auth/credentials.ts) and checks the scope the contract declares for the method or route.

export type Scheme = "bearer" | "api_key" | "basic";

export interface SchemeInfo {
  /** Key in the cards' securitySchemes. */
  name: string;
  kind: "bearer" | "apiKey" | "basic";
}

export interface Principal {
  /** Stable identity used for ownership of tasks, sessions and interrupts. */
  id: string;
  credentialId: string;
  trustLevel: string;
  scopes: ReadonlySet<string>;
  /** The trust level sees every principal's tasks, sessions and interrupts (admin). */
  admin: boolean;
  /** Per-credential overrides of the deployment's rate limits. */
  rateLimit?: { max_requests?: number; window_seconds?: number; max_streams?: number };
}

export interface CredentialResolver {
  /** Security schemes to advertise in the agent cards: exactly the schemes of the enabled credentials. */
  readonly schemes: SchemeInfo[];
  /** The Principal behind the request's credentials, or null when they are missing or wrong. */
  resolve(headers: Record<string, string | string[] | undefined>): Principal | null;
}

export function hasScope(principal: Principal, scope: string | null): boolean {
  return scope === null || principal.scopes.has(scope);
}

export function wwwAuthenticate(resolver: CredentialResolver): string {
  return resolver.schemes
    .map((s) => (s.kind === "basic" ? 'Basic realm="opencode-a2a"' : s.kind === "bearer" ? 'Bearer realm="opencode-a2a"' : 'ApiKey realm="opencode-a2a"'))
    .join(", ");
}
