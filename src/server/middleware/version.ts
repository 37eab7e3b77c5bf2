// A2A-Version negotiation before routing; the negotiated line is echoed on every response.
import type { Context, Next } from "koa";
import type { ProtocolLine } from "../../contract/catalog.js";
import { negotiateVersion, VERSION_HEADER } from "../../protocol/version.js";
import type { RequestState } from "../state.js";

export function versionNegotiation(defaultLine: ProtocolLine) {
  return async function version(ctx: Context, next: Next): Promise<void> {
    const state = ctx.state as RequestState;
    state.line = defaultLine;
    state.explicitVersion = false;
    state.jsonrpc = ctx.path === "/" && ctx.method === "POST";
    ctx.vary(VERSION_HEADER);
    ctx.set(VERSION_HEADER, defaultLine);
    const negotiated = negotiateVersion(ctx.get(VERSION_HEADER) || undefined, ctx.query[VERSION_HEADER], defaultLine);
    state.line = negotiated.line;
    state.explicitVersion = negotiated.explicit;
    ctx.set(VERSION_HEADER, negotiated.line);
    await next();
  };
}
