// Answers encoded once. A repeated read of a task that has not changed (GetTask, or a listing page: the store hands
// out the same frozen task for an unchanged row, ../storage/listed-rows.ts) is answered with the JSON text written the
// first time instead of encoding the task and stringifying it again.
//
// The version of a task is the identity of the object it is read as: the store's view() hands out a deeply frozen
// snapshot and replaces it (a new object) whenever the task is saved, so bytes cached on that object can never be
// stale. Only frozen sources are cached; anything else (a live task's snapshot, a task carrying a freshly built
// annotation) is encoded per call as before. The cache is a WeakMap on the source: its entries die with the snapshot,
// and each snapshot keeps at most MAX_VARIANTS encodings (line/transport dialect × result scopes × history length).
import type { Task } from "./model.js";

/**
 * A JSON value together with its text. The transports write `text` as it is (or splice it into a JSON-RPC
 * envelope); JSON.stringify of anything holding one writes `value` (toJSON), the same JSON, so a consumer that does
 * not know the type still writes the right bytes. Made without its value (`EncodedJson.ofText`), it keeps the text
 * only and parses it whenever the value is asked for (a listed task: only the payload log asks).
 */
export class EncodedJson {
  /** Undefined when made by ofText (no JSON value is undefined). */
  readonly #value: unknown;

  constructor(
    value: unknown,
    readonly text: string,
  ) {
    this.#value = value;
  }

  /** An EncodedJson that keeps `text` only. */
  static ofText(text: string): EncodedJson {
    return new EncodedJson(undefined, text);
  }

  get value(): unknown {
    return this.#value !== undefined ? this.#value : JSON.parse(this.text);
  }

  toJSON(): unknown {
    return this.value;
  }
}

/** The value inside an EncodedJson, or the value itself (what the audit log and the payload log read). */
export function plainResult(result: unknown): unknown {
  return result instanceof EncodedJson ? result.value : result;
}

/** Encodings kept per snapshot; the map is emptied when a new one would exceed it (a client walking historyLength). */
export const MAX_VARIANTS = 8;

const answers = new WeakMap<Task, Map<string, EncodedJson>>();

/**
 * `encode(task)` as an EncodedJson cached on `task` under `key`, when `task` is frozen (a store snapshot); else the
 * encoded value itself, uncached. `key` must name everything besides the task that the encoding depends on.
 * `keepValue` false: the cached EncodedJson holds the text only (ofText), for answers whose value is rarely read.
 */
export function encodeCached(task: Task, key: string, encode: (task: Task) => unknown, keepValue = true): unknown {
  if (!Object.isFrozen(task)) return encode(task);
  let variants = answers.get(task);
  const hit = variants?.get(key);
  if (hit !== undefined) return hit;
  const value = encode(task);
  const text = JSON.stringify(value);
  const encoded = keepValue ? new EncodedJson(value, text) : EncodedJson.ofText(text);
  if (variants === undefined) answers.set(task, (variants = new Map()));
  else if (variants.size >= MAX_VARIANTS) variants.clear();
  variants.set(key, encoded);
  return encoded;
}

/**
 * A JSON object whose array members may hold EncodedJson items (a listing's tasks): an EncodedJson whose text splices
 * their texts in, the other members stringified (in the object's key order; members JSON.stringify leaves out, such
 * as undefined and functions, left out). Returned as it is when no member holds one.
 */
export function spliceEncoded(value: Record<string, unknown>): unknown {
  const members: string[] = [];
  let spliced = false;
  for (const [key, member] of Object.entries(value)) {
    if (Array.isArray(member) && member.some((item) => item instanceof EncodedJson)) {
      spliced = true;
      members.push(`${JSON.stringify(key)}:[${member.map((item) => (item instanceof EncodedJson ? item.text : (JSON.stringify(item) ?? "null"))).join(",")}]`);
      continue;
    }
    const text = JSON.stringify(member) as string | undefined; // undefined for undefined, functions, symbols: left out
    if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`);
  }
  return spliced ? new EncodedJson(value, `{${members.join(",")}}`) : value;
}
