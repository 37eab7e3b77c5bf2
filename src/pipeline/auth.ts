// Authentication at the edge. Public catalog routes pass. Everything else needs a credential that resolves to a
// Principal; for REST and operations routes the edge also counts the request against the credential's rate limit
// and checks the scope the contract declares for the route, so no handler ever looks at a token or a scope. The
// JSON-RPC endpoint (whose method is only known once the body is read) gets its limit and scope checked per call by
// the JSON-RPC transport, with the same AccessLimits.
import { A2AError } from "../contract/errors.js";
import type { RouteLookup } from "../contract/routes.js";
import { hasScope, wwwAuthenticate, type CredentialResolver, type Principal } from "../auth/index.js";
import type { AccessLimits } from "../auth/limits.js";
import type { AddressGuard } from "../auth/address-guard.js";
import type { Step } from "./exchange.js";
import type { RequestState } from "./state.js";

export interface AuthDeps {
  resolver: CredentialResolver;
  routes: RouteLookup;
  limits: AccessLimits;
  /** Per-address limits before authentication (absent: none). */
  guard?: AddressGuard;
}

/** The caller's Principal, or UNAUTHENTICATED (with its WWW-Authenticate challenge). */
function authenticate(resolver: CredentialResolver, headers: Record<string, string | string[] | undefined>): Principal {
  const principal = resolver.resolve(headers);
  if (!principal) throw new A2AError("UNAUTHENTICATED", "Missing or invalid credentials", {}, { headers: { "WWW-Authenticate": wwwAuthenticate(resolver) } });
  return principal;
}

/**
 * authenticate() behind the per-address guard: an address that failed too often is refused (RATE_LIMITED) before its
 * credentials are looked at; a failure is counted. `state.auditSkip` is set when the guard does not want the refusal
 * or failure audited (beyond the address's sample), so floods write nothing to disk.
 */
function authenticateGuarded(
  resolver: CredentialResolver,
  guard: AddressGuard | undefined,
  headers: Record<string, string | string[] | undefined>,
  address: string,
  state: Pick<RequestState, "auditSkip">,
): Principal {
  if (guard !== undefined) {
    try {
      guard.admit(address);
    } catch (error) {
      state.auditSkip = !guard.auditRefusal(address);
      throw error;
    }
  }
  try {
    return authenticate(resolver, headers);
  } catch (error) {
    if (guard !== undefined) state.auditSkip = !guard.failed(address);
    throw error;
  }
}

/** The authentication step: the request's route (state.route) and, unless it is public, its Principal. */
export function authenticateRequest(deps: AuthDeps): Step {
  return (ex) => {
    const state = ex.state;
    const { route } = deps.routes(ex.method, ex.path);
    state.route = route;
    const address = ex.address;
    if (route?.public) {
      deps.guard?.anonymous(address);
      return;
    }
    const principal = authenticateGuarded(deps.resolver, deps.guard, ex.headers, address, state);
    state.principal = principal;
    if (route?.kind === "jsonrpc") return;
    // The charge is a promise (the windows of a shared limiter are in PostgreSQL); JSON-RPC charges in its endpoint.
    return deps.limits.charge(principal).then(({ headers, error }) => {
      ex.setHeaders(headers);
      if (error) throw error;
      if (route && !hasScope(principal, route.scope))
        throw new A2AError("SCOPE_INSUFFICIENT", `${route.verb} ${route.path} needs the ${route.scope} scope`, {
          method: route.id,
          required_scope: route.scope,
        });
    });
  };
}
