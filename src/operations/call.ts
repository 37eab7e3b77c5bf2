// One call of a method, as every handler receives it, whichever door (JSON-RPC or REST) and line it came through.
import type { Principal } from "../auth/index.js";
import type { MethodEntry, ProtocolLine } from "../contract/catalog.js";
import type { TraceContext } from "../tracing/index.js";

export interface Call {
  line: ProtocolLine;
  principal: Principal;
  transport: "jsonrpc" | "rest";
  method: MethodEntry;
  /**
   * A REST call on a root path whose request named no A2A-Version (it runs on the default line). The extended card
   * then answers the dual card of both lines, as the GET of the public card does.
   */
  versionless?: boolean;
  /** The request's W3C trace context (every request has one; absent only for calls made outside a request). */
  trace?: TraceContext | undefined;
}

/**
 * A handler as the method registry holds it. Declared through a method so that its params are compared bivariantly:
 * a handler typed with its own method's params (generated/types/methods.ts `Handler<M, Call>`) is one, since
 * the dispatcher validated the params against that method's schema before it runs.
 */
export type MethodHandler = { handle(params: Record<string, unknown>, call: Call): Promise<unknown> }["handle"];
