// A2A message parts → OpenCode prompt parts (seed 000): text → text; file bytes → a `data:` URL file part;
// file URI → a file part; data parts are refused with a clear error before anything is created.
import { A2AError } from "../contract/errors.js";
import type { FilePartInput, TextPartInput } from "../../generated/opencode/types.gen.js";
import type { Message } from "../protocol/model.js";

export type PromptPart = TextPartInput | FilePartInput;

function refuse(field: string, message: string): A2AError {
  return new A2AError("INVALID_PARAMS", message, { field }, { fieldViolations: [{ field, description: message }] });
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
        throw refuse(field, "DataPart input is not supported: send text or files");
    }
  });
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
  const joined = `Files: ${names.join(", ")}`;
  return joined.length <= 80 ? joined : `${joined.slice(0, 79)}…`;
}
