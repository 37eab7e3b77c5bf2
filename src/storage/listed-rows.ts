// The tasks of listing pages, kept parsed and frozen per row. A row is taken from here only when its stored JSON is
// the same text as when it was parsed, so a listing never shows a stale task, whoever wrote the row (another gateway
// on the same PostgreSQL database, another process on the same SQLite file): nothing needs telling of a change. A
// kept row listed again unchanged (a client polling a page) is the same frozen object as before, so its encoded form
// is reused too (../protocol/encoded.ts encodeCached): no parse, no encoding, no JSON.stringify of it.
//
// A row is kept from the second time it is listed on (so its bytes are reused from its third listing): rows listed
// once (a walk through many contexts, a deep page read once) are parsed as before and die young, instead of filling
// the cache and leaving each entry they push out as garbage in V8's old generation (on Node 24 at 1M tasks, keeping every listed row raised the RSS after
// bench:scale's load from 164 to 233 MB). At most `size` rows are kept, the least recently listed dropped first, and
// the ids of at most 4 × `size` rows listed once are remembered. The bound is in rows, not bytes: a kept row holds its
// text, its parsed task and up to MAX_VARIANTS encodings of it (as a GetTask snapshot does).
import type { Task } from "../protocol/model.js";
import { boundedAdd, boundedSet } from "../util/lru.js";
import { deepFreeze } from "./task-records.js";

/** Rows a store keeps parsed for its listings (unless A2A_TASK_STORE_CACHE_SIZE is 0). */
export const LISTED_ROWS = 500;

export class ListedRows {
  readonly #rows = new Map<string, { json: string; task: Task }>();
  /** Ids listed once and not kept yet, oldest first. */
  readonly #seen = new Set<string>();

  constructor(readonly size: number) {}

  /** The task stored as `json` under `id`: the frozen object parsed before when the text is unchanged. */
  task(id: string, json: string): Task {
    const hit = this.#rows.get(id);
    if (hit !== undefined && hit.json === json) {
      boundedSet(this.#rows, id, hit, this.size); // moved to the end: one move, whether the text changed or not
      return hit.task;
    }
    if (hit === undefined && !this.#seen.delete(id)) {
      boundedAdd(this.#seen, id, 4 * this.size);
      return JSON.parse(json) as Task;
    }
    const task = deepFreeze(JSON.parse(json) as Task);
    boundedSet(this.#rows, id, { json, task }, this.size);
    return task;
  }

  /** Rows held (for tests). */
  get held(): number {
    return this.#rows.size;
  }
}
