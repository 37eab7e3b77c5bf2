// The protocol codecs: one Codec per wire dialect over the internal model (src/protocol/model.ts), all of them the
// one codec of src/protocol/codec/codec.ts over a dialect table (src/protocol/codec/dialects.ts). Pick one with
// `codecFor(line, transport)`: 0.3 JSON-RPC (`kind` shapes), 0.3 HTTP+JSON (0.3 proto ProtoJSON), 1.0 (ProtoJSON,
// the same codec for JSON-RPC and HTTP+JSON).
import { codecOf } from "./codec.js";
import type { Codec, WireLine } from "./common.js";
import { DIALECTS } from "./dialects.js";

export type { Codec, PushConfigInput, PushConfigRef, PushFields, TaskIdParams, TaskPage, TaskQuery, TaskView, WireLine } from "./common.js";

export const v0_3: Codec = codecOf(DIALECTS["0.3"]);
export const v0_3Rest: Codec = codecOf(DIALECTS["0.3-rest"]);
export const v1_0: Codec = codecOf(DIALECTS["1.0"]);

export const CODECS: Readonly<Record<WireLine, Codec>> = { "0.3": v0_3, "0.3-rest": v0_3Rest, "1.0": v1_0 };

export function codecFor(line: "0.3" | "1.0", transport: "jsonrpc" | "rest"): Codec {
  if (line === "1.0") return v1_0;
  return transport === "rest" ? v0_3Rest : v0_3;
}
