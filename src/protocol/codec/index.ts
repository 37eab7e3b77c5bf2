// The protocol codecs: one Codec per wire dialect over the internal model (src/protocol/model.ts). Pick one with
// `codecFor(line, transport)`: 0.3 JSON-RPC (`kind` shapes), 0.3 HTTP+JSON (0.3 proto ProtoJSON), 1.0 (ProtoJSON,
// the same codec for JSON-RPC and HTTP+JSON).
import type { Codec, WireLine } from "./common.js";
import { v0_3 } from "./v0_3.js";
import { v0_3Rest } from "./v0_3_rest.js";
import { v1_0 } from "./v1_0.js";

export type { Codec, CodecSchemas, PushConfigInput, PushConfigRef, PushFields, TaskIdParams, TaskPage, TaskQuery, TaskView, WireLine } from "./common.js";
export { v0_3, v0_3Rest, v1_0 };

export const CODECS: Readonly<Record<WireLine, Codec>> = { "0.3": v0_3, "0.3-rest": v0_3Rest, "1.0": v1_0 };

export function codecFor(line: "0.3" | "1.0", transport: "jsonrpc" | "rest"): Codec {
  if (line === "1.0") return v1_0;
  return transport === "rest" ? v0_3Rest : v0_3;
}
