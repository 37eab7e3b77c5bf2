// What the sessions methods read from their params beyond what the schema checks: OpenCode ids, the message-page
// cursor and the prompt parts and format, passed on to OpenCode with only their declared fields. Every refusal is
// INVALID_PARAMS naming the field.
import type * as sdk from "../../../generated/opencode/sdk.gen.js";
import type { OutputFormat } from "../../../generated/opencode/types.gen.js";
import { compact, invalid } from "../../protocol/codec/common.js";
import { isObject, type Obj } from "../../util/object.js";
import { num, str } from "./projection.js";

type Params = Record<string, unknown>;

const SESSION_ID = /^ses[\w-]{1,200}$/;
export const MESSAGE_ID = /^msg[\w-]{1,200}$/;
export const PART_ID = /^prt[\w-]{1,200}$/;

export function sessionIdOf(params: Params): string {
  const id = params.session_id;
  if (typeof id !== "string" || !SESSION_ID.test(id)) throw invalid("session_id", "must be an OpenCode session id (ses_…)");
  return id;
}

export function idParam(value: unknown, field: string, pattern: RegExp, what: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !pattern.test(value)) throw invalid(field, `must be an OpenCode ${what} id`);
  return value;
}

/** Paging/query styles the methods do not take: refused instead of silently ignored. */
export function refuseFields(params: Params, fields: string[], method: string): void {
  for (const f of fields) if (params[f] !== undefined) throw invalid(f, `is not supported by ${method}`);
}

export function request(params: Params): Obj {
  return isObject(params.request) ? params.request : {};
}

/** `{providerID, modelID}` of a request field, both or neither. */
export function modelOf(value: unknown, field: string): { providerID: string; modelID: string } | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value) || typeof value.providerID !== "string" || typeof value.modelID !== "string" || !value.providerID || !value.modelID)
    throw invalid(field, "needs both providerID and modelID");
  return { providerID: value.providerID, modelID: value.modelID };
}

// ---------------------------------------------------------------------------------------------------------------
// Cursor: the upstream `X-Next-Cursor`, bound to its session so that a cursor of another session or a malformed one
// is refused as an invalid `before` instead of reaching OpenCode. It is not signed: it only names a position in a
// session the caller may read anyway (a forged one pages from another message of the same session).

export function encodeCursor(sessionId: string, upstream: string): string {
  return Buffer.from(JSON.stringify({ v: 1, s: sessionId, c: upstream }), "utf8").toString("base64url");
}

export function decodeCursor(sessionId: string, cursor: unknown): string | undefined {
  if (cursor === undefined) return undefined;
  const refuse = () => invalid("before", "is not a next_cursor of this session's messages");
  if (typeof cursor !== "string" || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw refuse();
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw refuse();
  }
  if (!isObject(decoded) || decoded.v !== 1 || decoded.s !== sessionId || typeof decoded.c !== "string" || decoded.c === "") throw refuse();
  return decoded.c;
}

// ---------------------------------------------------------------------------------------------------------------
// Prompt input: OpenCode's own part shapes, passed through with only the declared fields.

type PromptPartInput = Exclude<NonNullable<Parameters<typeof sdk.sessionPromptAsync>[0]["body"]>, undefined>["parts"][number];

export function filePart(raw: unknown, field: string): { type: "file"; mime: string; url: string; filename?: string } {
  if (!isObject(raw) || raw.type !== "file") throw invalid(field, "must be a file part");
  const mime = str(raw.mime);
  const url = str(raw.url);
  if (!mime) throw invalid(`${field}.mime`, "is required");
  if (!url) throw invalid(`${field}.url`, "is required");
  return compact({ type: "file" as const, mime, url, filename: str(raw.filename) });
}

export function promptPart(raw: unknown, field: string): PromptPartInput {
  if (!isObject(raw)) throw invalid(field, "must be an object");
  switch (raw.type) {
    case "text":
      if (typeof raw.text !== "string") throw invalid(`${field}.text`, "is required");
      return { type: "text", text: raw.text };
    case "file":
      return filePart(raw, field);
    case "agent":
      if (!str(raw.name)) throw invalid(`${field}.name`, "is required");
      return { type: "agent", name: raw.name as string };
    case "subtask": {
      for (const key of ["prompt", "description", "agent"] as const)
        if (typeof raw[key] !== "string") throw invalid(`${field}.${key}`, "is required");
      return compact({
        type: "subtask" as const,
        prompt: raw.prompt as string,
        description: raw.description as string,
        agent: raw.agent as string,
        model: modelOf(raw.model, `${field}.model`),
        command: str(raw.command),
      });
    }
    default:
      throw invalid(`${field}.type`, "must be one of text, file, agent, subtask");
  }
}

export function promptFormat(raw: unknown): OutputFormat {
  if (!isObject(raw)) throw invalid("request.format", "must be an object");
  if (raw.type === "text") return { type: "text" };
  if (raw.type === "json_schema") {
    if (!isObject(raw.schema)) throw invalid("request.format.schema", "is required");
    return compact({ type: "json_schema" as const, schema: raw.schema, retryCount: num(raw.retryCount) });
  }
  throw invalid("request.format.type", "must be text or json_schema");
}
