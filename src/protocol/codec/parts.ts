// Part shapes, one of the two strategies of the codec (push configs, src/protocol/codec/push.ts, are the other).
// 0.3 JSON-RPC tags a part with `kind` and nests file contents as `file: {bytes | uri, name, mimeType}`; 0.3
// HTTP+JSON is a oneof `{text}` | `{file: {fileWithBytes | fileWithUri, mimeType, name}}` | `{data: {data}}`; 1.0
// is a oneof `{text}` | `{raw}` (base64, ↔ file bytes) | `{url}` (↔ file uri) | `{data}` (any JSON), with
// `mediaType` / `filename` beside the member. Decoding checks everything: tasks/provideInputAndContinue hands its
// message over without a line's schema (its `parts` are free-form), and the schemas cannot say "exactly one
// member" or "base64" anyway.
import type { Part } from "../model.js";
import { isObject } from "../../util/object.js";
import { at, base64, compact, emit, has, invalid, obj, oneOf, optMeta, optStr, reqObj, reqStr, reqText, type Obj } from "./common.js";

export interface PartStrategy {
  /** Where a message keeps its parts (0.3 HTTP+JSON: `content`; an artifact's are `parts` everywhere). */
  readonly messageKey: string;
  decode(raw: unknown, path: string): Part;
  encode(part: Part): Obj;
}

/** How a 0.3 dialect spells a part. */
export interface Parts03 {
  /** JSON-RPC: `kind` names the part; else the one content member does. */
  tagged: boolean;
  messageKey: string;
  /** The file content members (inline base64 bytes, URI). */
  bytes: string;
  uri: string;
  /** The file object's declared properties (the key order of its generated schema). */
  file: readonly string[];
  /** ProtoJSON nests the data object once more: `{data: {data: {…}}}`. */
  wrapData: boolean;
}

export function parts03(s: Parts03): PartStrategy {
  return {
    messageKey: s.messageKey,
    decode(raw, path) {
      const o = obj(raw, path);
      const kind = s.tagged && has(o, "kind") ? o.kind : oneOf(o, ["text", "file", "data"], path, "a part");
      const metadata = optMeta(o, "metadata", path);
      switch (kind) {
        case "text":
          return compact({ kind: "text", text: reqText(o, "text", path), metadata });
        case "file": {
          const fp = at(path, "file");
          const f = reqObj(o, "file", path);
          const which = oneOf(f, [s.bytes, s.uri], fp, "a file");
          const bytes = which === s.bytes ? base64(f, s.bytes, fp) : undefined;
          const uri = which === s.uri ? reqStr(f, s.uri, fp) : undefined;
          return compact({ kind: "file", file: compact({ bytes, uri, mimeType: optStr(f, "mimeType", fp), name: optStr(f, "name", fp) }), metadata });
        }
        case "data": {
          const holder = s.wrapData ? reqObj(o, "data", path) : o;
          return compact({ kind: "data", data: reqObj(holder, "data", s.wrapData ? at(path, "data") : path), metadata });
        }
        default:
          throw invalid(at(path, "kind"), 'must be "text", "file" or "data"');
      }
    },
    encode(p) {
      const kind = s.tagged ? p.kind : undefined;
      switch (p.kind) {
        case "text":
          return compact({ kind, text: p.text, metadata: p.metadata });
        case "file": {
          const { bytes, uri, name, mimeType } = p.file;
          return compact({ kind, file: emit(s.file, { [s.bytes]: bytes, [s.uri]: bytes === undefined ? uri : undefined, name, mimeType }), metadata: p.metadata });
        }
        case "data": {
          // 0.3 has object-only data parts: a non-object value (possible from a 1.0 client) travels as `{value: …}`.
          const data = isObject(p.data) ? p.data : { value: p.data };
          return compact({ kind, data: s.wrapData ? { data } : data, metadata: p.metadata });
        }
      }
    },
  };
}

export const parts10: PartStrategy = {
  messageKey: "parts",
  decode(raw, path) {
    const o = obj(raw, path);
    const metadata = optMeta(o, "metadata", path);
    const mimeType = optStr(o, "mediaType", path);
    const name = optStr(o, "filename", path);
    switch (oneOf(o, ["text", "raw", "url", "data"], path, "a part")) {
      case "text":
        return compact({ kind: "text", text: reqText(o, "text", path), metadata });
      case "raw":
        return compact({ kind: "file", file: compact({ bytes: base64(o, "raw", path), mimeType, name }), metadata });
      case "url":
        return compact({ kind: "file", file: compact({ uri: reqStr(o, "url", path), mimeType, name }), metadata });
      case "data":
        return compact({ kind: "data", data: o.data, mimeType, name, metadata });
    }
  },
  encode(p) {
    switch (p.kind) {
      case "text":
        return compact({ text: p.text, metadata: p.metadata });
      case "file": {
        const { bytes, uri, mimeType, name } = p.file;
        return compact({ raw: bytes, url: bytes === undefined ? uri : undefined, mediaType: mimeType, filename: name, metadata: p.metadata });
      }
      case "data":
        return compact({ data: p.data, mediaType: p.mimeType, filename: p.name, metadata: p.metadata });
    }
  },
};
