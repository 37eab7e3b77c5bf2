// Shared pieces of the protocol codecs: the Codec interface, the typed readers the decoders use where a request
// reaches them unvalidated (REST path and query parameters, the message of tasks/provideInputAndContinue) or where
// the generated schemas cannot say it (non-empty, base64, http(s) URLs, exactly one of). Each failure is an
// INVALID_PARAMS A2AError naming the offending field in the dotted form of src/contract/validate.ts (e.g.
// `message.parts.0.file`). Also the line-neutral task view (history / artifacts).
import { isObject, type Obj } from "../../util/object.js";
import { A2AError, invalidParams } from "../../contract/errors.js";
import { camelizeKeys } from "../keys.js";
import type { ListParams, Message, Metadata, PushConfig, SendParams, SendResult, StreamEvent, Task } from "../model.js";

/** The three wire dialects: 0.3 JSON-RPC, 0.3 HTTP+JSON (0.3 proto ProtoJSON), 1.0 (ProtoJSON on every binding). */
export type WireLine = "0.3" | "0.3-rest" | "1.0";

/** How much of a task to put on the wire. */
export interface TaskView {
  /**
   * Both lines (spec/ 0.3 and 1.0 §3.2.4): absent = server default, which is the whole history; 0 = no `history`
   * member at all; n > 0 = the n most recent messages.
   */
  historyLength?: number;
  /** Default true for a single task; ListTasks leaves artifacts out unless asked (`includeArtifacts`). */
  includeArtifacts?: boolean;
}

/** One page of ListTasks / tasks/list, line-neutral: the operations layer fills it, the codec shapes it. */
export interface TaskPage {
  /** The tasks of this page, full (the codec trims them per TaskView). */
  tasks: Task[];
  /** Number of matching tasks across all pages. */
  totalSize: number;
  /** Page size applied (0.3 JSON-RPC `limit`). */
  pageSize: number;
  /** 0.3 JSON-RPC offset paging: the offset applied. */
  offset?: number;
  /** Token lines: the next page's cursor, "" (or absent) on the last page. */
  nextPageToken?: string;
}

/** A push config as a request carries it: the id is optional (the server assigns one). */
export type PushConfigInput = Omit<PushConfig, "id"> & { id?: string };

/** Addresses one push config (get/delete; list leaves `id` out). */
export interface PushConfigRef {
  taskId: string;
  id?: string;
}

export interface TaskQuery {
  id: string;
  historyLength?: number;
}

export interface TaskIdParams {
  id: string;
  metadata?: Metadata;
}

/** Where a dialect carries a push config's fields, for the INVALID_PARAMS errors that name them. */
export interface PushFields {
  /** The config object of a set request ("" when its fields are the request's own, as in 1.0). */
  config: string;
  /** The config given with message/send or message/stream. */
  send: string;
  /** The config id of get / delete (on REST, the path parameter). */
  configId: string;
  /** The i-th authentication scheme, relative to the config (0.3 lists schemes, 1.0 has one). */
  scheme(i: number): string;
}

/**
 * One protocol dialect over the internal model (src/protocol/model.ts), in the server's direction: it decodes
 * requests and encodes answers. Decoders accept camelCase and snake_case keys (metadata and data values are left
 * untouched) and throw INVALID_PARAMS naming the field. REST transports merge path and query parameters into the
 * object they pass in (query values may be strings: integers and booleans are coerced).
 */
export interface Codec {
  readonly wire: WireLine;
  readonly pushFields: PushFields;

  // ---- requests
  /** message/send, message/stream, SendMessage, SendStreamingMessage, REST `message:send` / `message:stream` bodies. */
  decodeSendParams(raw: unknown): SendParams;
  decodeMessage(raw: unknown, field?: string): Message;
  /** tasks/get, GetTask, REST `GET tasks/{id}` (`{id, historyLength}`). */
  decodeTaskQuery(raw: unknown): TaskQuery;
  /** tasks/cancel, tasks/resubscribe, CancelTask, SubscribeToTask, REST `{id}` from the path. */
  decodeTaskId(raw: unknown): TaskIdParams;
  /** tasks/list, ListTasks, REST `GET tasks` query; fills the line's default page size (and 0.3 offset 0). */
  decodeListParams(raw: unknown): ListParams;
  /** A push config to create; `taskId` (the REST path's task) wins over the body. */
  decodePushConfig(raw: unknown, taskId?: string): PushConfigInput;
  /** get / delete / list push config params (REST: the path parameters); `needsConfig` (delete): the config id is required. */
  decodePushConfigRef(raw: unknown, needsConfig?: boolean): PushConfigRef;

  // ---- answers
  task(task: Task, view?: TaskView): unknown;
  message(message: Message): unknown;
  sendResult(result: SendResult, view?: TaskView): unknown;
  streamEvent(event: StreamEvent): unknown;
  /** `encodeTask` (default: task() with the view) encodes each task of the page, e.g. from a cache (../encoded.ts). */
  listResult(page: TaskPage, view?: TaskView, encodeTask?: (task: Task) => unknown): unknown;
  pushConfig(config: PushConfig): unknown;
  /** The answer to a push config set request `raw` (0.3 JSON-RPC: seed 004's `{id, status, createdAt}` for its shape). */
  pushConfigSet(config: PushConfig, raw: unknown): unknown;
  /** Where a push config set request `raw` carries the config (0.3 JSON-RPC: `pushNotificationConfig` or `config`). */
  pushSetField(raw: unknown): string;
  /** A list of configs; `nextPageToken` (1.0, and 0.3 REST where it is always empty) names the next page. */
  pushConfigList(configs: PushConfig[], nextPageToken?: string): unknown;
  /** Result of a push config delete: 0.3 JSON-RPC `null`, otherwise `{}` (google.protobuf.Empty). */
  pushConfigDeleted(): unknown;
}

// ---------------------------------------------------------------------------------------------------------------
// Errors and readers
// ---------------------------------------------------------------------------------------------------------------

export type { Obj };

export function invalid(field: string, description: string): A2AError {
  const f = field || "(root)";
  return invalidParams(`Invalid params: ${f} ${description}`, [{ field: f, description }], { detail: description });
}

export const at = (path: string, key: string | number): string => (path ? `${path}.${key}` : String(key));

/** camelCase keys (snake_case accepted), then require an object. */
export function root(raw: unknown, field = ""): Obj {
  const v = camelizeKeys(raw ?? {});
  if (!isObject(v)) throw invalid(field, "must be an object");
  return v;
}

export function obj(v: unknown, field: string): Obj {
  if (!isObject(v)) throw invalid(field, "must be an object");
  return v;
}

/** Present = neither undefined nor null (ProtoJSON null means "default"). */
export const has = (o: Obj, key: string): boolean => o[key] !== undefined && o[key] !== null;

export function optObj(o: Obj, key: string, path: string): Obj | undefined {
  return has(o, key) ? obj(o[key], at(path, key)) : undefined;
}

export function reqObj(o: Obj, key: string, path: string): Obj {
  if (!has(o, key)) throw invalid(at(path, key), "is required");
  return obj(o[key], at(path, key));
}

export function optStr(o: Obj, key: string, path: string): string | undefined {
  if (!has(o, key)) return undefined;
  if (typeof o[key] !== "string") throw invalid(at(path, key), "must be a string");
  return o[key] as string;
}

export function reqStr(o: Obj, key: string, path: string): string {
  const v = optStr(o, key, path);
  if (v === undefined || v === "") throw invalid(at(path, key), v === "" ? "must not be empty" : "is required");
  return v;
}

/** An integer (ProtoJSON also allows a numeric string; REST query values are strings). */
export function optInt(o: Obj, key: string, path: string, min?: number, max?: number): number | undefined {
  if (!has(o, key)) return undefined;
  const raw = o[key];
  const n = typeof raw === "string" && /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw;
  if (typeof n !== "number" || !Number.isSafeInteger(n)) throw invalid(at(path, key), "must be an integer");
  if (min !== undefined && n < min) throw invalid(at(path, key), `must be >= ${min}`);
  if (max !== undefined && n > max) throw invalid(at(path, key), `must be <= ${max}`);
  return n;
}

export function optBool(o: Obj, key: string, path: string): boolean | undefined {
  if (!has(o, key)) return undefined;
  const v = o[key];
  if (typeof v === "boolean") return v;
  if (v === "true") return true;
  if (v === "false") return false;
  throw invalid(at(path, key), "must be a boolean");
}

export function optStrArr(o: Obj, key: string, path: string): string[] | undefined {
  if (!has(o, key)) return undefined;
  const v = o[key];
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) throw invalid(at(path, key), "must be an array of strings");
  return [...(v as string[])];
}

export function optMeta(o: Obj, key: string, path: string): Metadata | undefined {
  return optObj(o, key, path);
}

export function arr(o: Obj, key: string, path: string, nonEmpty: boolean): unknown[] {
  if (!has(o, key)) {
    if (nonEmpty) throw invalid(at(path, key), "is required");
    return [];
  }
  const v = o[key];
  if (!Array.isArray(v)) throw invalid(at(path, key), "must be an array");
  if (nonEmpty && v.length === 0) throw invalid(at(path, key), "must not be empty");
  return v;
}

/** A string that may be empty but must be present (text parts). */
export function reqText(o: Obj, key: string, path: string): string {
  const v = optStr(o, key, path);
  if (v === undefined) throw invalid(at(path, key), "is required");
  return v;
}

/** An absolute http(s) URL (webhooks). */
export function httpUrl(o: Obj, key: string, path: string): string {
  const v = reqStr(o, key, path);
  let u: URL | undefined;
  try {
    u = new URL(v);
  } catch {
    u = undefined;
  }
  if (!u || (u.protocol !== "http:" && u.protocol !== "https:")) throw invalid(at(path, key), "must be an absolute http(s) URL");
  return v;
}

/** Exactly one of `keys` is present in `o`; returns it. */
export function oneOf<K extends string>(o: Obj, keys: readonly K[], path: string, what: string): K {
  const present = keys.filter((k) => has(o, k));
  if (present.length !== 1)
    throw invalid(path, `${what} must carry exactly one of ${keys.join(", ")}${present.length ? ` (got ${present.join(", ")})` : ""}`);
  return present[0]!;
}

const BASE64 = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$/;

export function base64(o: Obj, key: string, path: string): string {
  const v = optStr(o, key, path);
  if (v === undefined) throw invalid(at(path, key), "is required");
  if (!BASE64.test(v)) throw invalid(at(path, key), "must be base64");
  return v;
}

/** An RFC 3339 / ISO 8601 instant, normalized to UTC `…Z` with milliseconds. */
export function optTimestamp(o: Obj, key: string, path: string): string | undefined {
  const v = optStr(o, key, path);
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(v) || Number.isNaN(t)) throw invalid(at(path, key), "must be an ISO 8601 date-time");
  return new Date(t).toISOString();
}

/** Encode side: ISO 8601 UTC with `Z`; a value that does not parse is passed through untouched. */
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function iso(ts: string): string {
  if (CANONICAL_ISO.test(ts)) return ts; // what the runtime writes: no Date round trip per field
  const t = Date.parse(ts);
  return Number.isNaN(t) ? ts : new Date(t).toISOString();
}

/** Drops undefined members so encoders never emit `key: undefined`. */
export function compact<const T extends Obj>(o: T): T {
  // A copy rather than `delete`, which would turn the object into a slow dictionary for the JSON serializer.
  let clean = true;
  for (const k in o) {
    if (o[k] === undefined) {
      clean = false;
      break;
    }
  }
  if (clean) return o;
  const out: Obj = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out as T;
}

/**
 * `values` with the members of `fields`, in that order, undefined left out. Encoders pass a generated schema's
 * declared properties (src/protocol/codec/dialects.ts): the order of the keys on the wire, and which of a model's
 * members a dialect has at all (`kind`, `referenceTaskIds`).
 */
export function emit(fields: readonly string[], values: Obj): Obj {
  const out: Obj = {};
  for (let i = 0; i < fields.length; i++) {
    const k = fields[i]!;
    const v = values[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------------------------------

/** History of a task as the view asks for it; undefined = leave the member out. */
export function viewHistory(task: Task, view: TaskView = {}): Message[] | undefined {
  const { historyLength } = view;
  if (!task.history) return undefined;
  if (historyLength === undefined) return task.history;
  if (historyLength <= 0) return undefined;
  return task.history.slice(-historyLength);
}

export function viewArtifacts(task: Task, view: TaskView = {}): Task["artifacts"] {
  return view.includeArtifacts === false ? undefined : task.artifacts;
}
