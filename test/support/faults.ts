// Store fault injection for tests, on both backends: SQLite gets a genuine SQLITE_FULL (the connection's
// max_page_count pinned to the pages it has, so a write that needs a new page fails as on a full disk); the memory
// backend gets a wrapper whose task and subtask-call writes throw the same typed error while the fault is on.
import { A2AError } from "../../src/contract/errors.js";
import type { Storage } from "../../src/storage/index.js";

export interface StoreFault {
  storage: Storage;
  /** From now on, writes that need space fail. */
  fill(): void;
  /** The store takes writes again. */
  free(): void;
}

export function storeFault(storage: Storage): StoreFault {
  if (storage.database !== undefined) {
    const db = storage.database.db;
    return {
      storage,
      fill: () => {
        db.pragma(`max_page_count = ${db.pragma("page_count", { simple: true }) as number}`);
      },
      free: () => {
        db.pragma("max_page_count = 1073741823");
      },
    };
  }
  let full = false;
  const refuse = (operation: string): never => {
    throw new A2AError("TASK_STORE_UNAVAILABLE", `Task store unavailable (${operation}: SQLITE_FULL)`, { operation });
  };
  const tasks = storage.tasks;
  const faulty = Object.create(tasks) as typeof tasks;
  faulty.create = (...args: Parameters<typeof tasks.create>) => (full ? refuse("create") : tasks.create(...args));
  faulty.save = (...args: Parameters<typeof tasks.save>) => (full ? refuse("save") : tasks.save(...args));
  const calls = storage.subtaskCalls;
  const faultyCalls: typeof calls = {
    create: async (call) => (full ? refuse("subtaskCalls.create") : calls.create(call)),
    get: (callId) => calls.get(callId),
  };
  return {
    storage: { ...storage, tasks: faulty, subtaskCalls: faultyCalls },
    fill: () => {
      full = true;
    },
    free: () => {
      full = false;
    },
  };
}
