// A2A message parts → OpenCode prompt parts (seed 000): text → text; file bytes → a `data:` URL file part;
// file URI → a file part; a data part → a text part holding a framed JSON block (DECISIONS 15, renderDataPart), in
// the part order of the message. The task's history keeps the parts as sent; only the prompt is rendered.
import { A2AError, invalidParams } from "../contract/errors.js";
import type { FilePartInput, TextPartInput } from "../../generated/opencode/types.gen.js";
import type { Message } from "../protocol/model.js";

export type PromptPart = TextPartInput | FilePartInput;

function refuse(field: string, message: string): A2AError {
  return invalidParams(message, field, {}, "field");
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function toPromptParts(message: Message): PromptPart[] {
  if (message.parts.length === 0) throw refuse("message.parts", "a message needs at least one part");
  return message.parts.map((part, i): PromptPart => {
    const field = `message.parts[${i}]`;
    switch (part.kind) {
      case "text":
        return { type: "text", text: part.text };
      case "file": {
        const { bytes, uri, mimeType, name } = part.file;
        const mime = mimeType ?? "application/octet-stream";
        const filename = name === undefined ? {} : { filename: name };
        if (bytes !== undefined) {
          const compact = bytes.replace(/\s+/g, "");
          if (!BASE64.test(compact) || compact.length % 4 !== 0) throw refuse(`${field}.file.bytes`, "file bytes must be base64");
          return { type: "file", mime, url: `data:${mime};base64,${compact}`, ...filename };
        }
        if (uri !== undefined) return { type: "file", mime, url: uri, ...filename };
        throw refuse(`${field}.file`, "a file part needs bytes or uri");
      }
      case "data":
        return { type: "text", text: renderDataPart(part, i, message.parts.length) };
    }
  });
}

type DataPart = Extract<Message["parts"][number], { kind: "data" }>;

/**
 * Above this size (UTF-16 units) a data part is rendered as compact one-line JSON instead of pretty-printed: the
 * request body limit bounds the compact form, but indentation could multiply it (deep nesting, long arrays).
 */
export const DATA_PRETTY_MAX_CHARS = 256 * 1024;

/**
 * How a data part reaches OpenCode: a header line naming it as structured input from the A2A client (its position,
 * and its media type and part metadata when given), then the JSON in a ```json fence. The JSON is pretty-printed
 * with two-space indentation and keys in the order sent, unless that is longer than DATA_PRETTY_MAX_CHARS or twice
 * the compact form (then compact). The fence is longer than any run of backticks in the JSON, so no value can
 * close it. The same part always renders to the same text.
 */
export function renderDataPart(part: DataPart, index: number, count: number): string {
  const compact = JSON.stringify(part.data) ?? "null";
  const pretty = JSON.stringify(part.data, null, 2) ?? "null";
  const json = pretty.length <= DATA_PRETTY_MAX_CHARS && pretty.length <= 2 * compact.length + 64 ? pretty : compact;
  const facts = [`data part ${index + 1} of ${count}`];
  if (part.mimeType !== undefined) facts.push(`media type ${part.mimeType}`);
  if (part.name !== undefined) facts.push(`name ${JSON.stringify(part.name)}`);
  if (part.metadata !== undefined && Object.keys(part.metadata).length > 0) facts.push(`part metadata ${JSON.stringify(part.metadata)}`);
  let longest = 0;
  for (const run of json.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  const fence = "`".repeat(Math.max(3, longest + 1));
  return `Structured input (JSON) from the A2A client (${facts.join("; ")}):\n${fence}json\n${json}\n${fence}`;
}

/** The user's text of a message (text parts joined), for the echo guard and session titles. */
export function userText(message: Message): string {
  return message.parts
    .filter((p): p is Extract<typeof p, { kind: "text" }> => p.kind === "text")
    .map((p) => p.text)
    .join("\n");
}

/** A session title: the user's text cut to 80 characters, else the attached file names. */
export function sessionTitle(message: Message): string {
  const text = userText(message).replace(/\s+/g, " ").trim();
  if (text !== "") return text.length <= 80 ? text : `${text.slice(0, 79)}…`;
  const names = message.parts.flatMap((p) => (p.kind === "file" ? [p.file.name ?? p.file.uri ?? "file"] : []));
  if (names.length === 0) return "Structured data";
  const joined = `Files: ${names.join(", ")}`;
  return joined.length <= 80 ? joined : `${joined.slice(0, 79)}…`;
}
