// Authentication at the edge: public routes pass, everything else needs a credential that resolves to a Principal.
import type { Context, Next } from "koa";
import { A2AError } from "../../contract/errors.js";
import { wwwAuthenticate, type CredentialResolver } from "../../auth/index.js";
import type { RequestState } from "../state.js";

export function authentication(resolver: CredentialResolver, isPublic: (method: string, path: string) => boolean) {
  const challenge = wwwAuthenticate(resolver);
  return async function auth(ctx: Context, next: Next): Promise<void> {
    if (isPublic(ctx.method, ctx.path)) return next();
    const principal = resolver.resolve(ctx.headers);
    if (!principal)
      throw new A2AError("UNAUTHENTICATED", "Missing or invalid credentials", {}, { headers: { "WWW-Authenticate": challenge } });
    (ctx.state as RequestState).principal = principal;
    await next();
  };
}
