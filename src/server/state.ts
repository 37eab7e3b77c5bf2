import type { ProtocolLine } from "../contract/catalog.js";
import type { Principal } from "../auth/index.js";

/** Per-request state shared by the middleware chain (ctx.state). */
export interface RequestState {
  line: ProtocolLine;
  explicitVersion: boolean;
  /** True for the JSON-RPC endpoint: errors are shaped as JSON-RPC responses. */
  jsonrpc: boolean;
  principal?: Principal;
  rawBody?: Buffer;
}
