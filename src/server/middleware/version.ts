// A2A-Version negotiation before routing; the negotiated line is echoed on every response.
import type { Context, Next } from "koa";
import type { ProtocolLine } from "../../contract/catalog.js";
import { negotiateVersion, VERSION_HEADER } from "../../protocol/version.js";
import type { RequestState } from "../../pipeline/state.js";

export function versionNegotiation(defaultLine: ProtocolLine) {
  return async function version(ctx: Context, next: Next): Promise<void> {
    const state = ctx.state as RequestState;
    // `/v1/...` always speaks 0.3 REST, errors raised before routing included.
    const pinned: ProtocolLine | undefined = ctx.path.startsWith("/v1/") ? "0.3" : undefined;
    state.line = pinned ?? defaultLine;
    state.explicitVersion = false;
    state.jsonrpc = ctx.path === "/" && ctx.method === "POST";
    ctx.vary(VERSION_HEADER);
    ctx.set(VERSION_HEADER, state.line);
    const negotiated = negotiateVersion(ctx.get(VERSION_HEADER) || undefined, ctx.query[VERSION_HEADER], defaultLine);
    state.line = pinned ?? negotiated.line;
    state.explicitVersion = negotiated.explicit;
    ctx.set(VERSION_HEADER, state.line);
    await next();
  };
}
