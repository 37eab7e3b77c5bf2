// Store fault injection for tests, on the SQLite connection every backend but PostgreSQL has: "full" gives a genuine
// SQLITE_FULL (the connection's max_page_count pinned to the pages it has, so a write that needs a new page fails as
// on a full disk); "read-only" refuses every write (PRAGMA query_only: SQLITE_READONLY), however small, while reads
// go on.
import type { Storage } from "../../src/storage/index.js";

export interface StoreFault {
  storage: Storage;
  /** From now on, writes fail (those that need space, or all of them). */
  fill(): void;
  /** The store takes writes again. */
  free(): void;
}

export function storeFault(storage: Storage, kind: "full" | "read-only" = "full"): StoreFault {
  if (storage.database === undefined) throw new Error("store faults are injected on a SQLite connection");
  const db = storage.database.db;
  return {
    storage,
    fill: () => {
      if (kind === "read-only") db.pragma("query_only = ON");
      else db.pragma(`max_page_count = ${db.pragma("page_count", { simple: true }) as number}`);
    },
    free: () => {
      if (kind === "read-only") db.pragma("query_only = OFF");
      else db.pragma("max_page_count = 1073741823");
    },
  };
}
