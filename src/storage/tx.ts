// What a store transaction writes through (Storage.atomically): the stores bound to the transaction, so a task's state
// change and the push notifications it queues are committed together or not at all.
import type { PushConfigStore } from "./push-configs.js";
import type { PushOutboxStore } from "./push-outbox.js";
import type { TaskStore } from "./task-records.js";

export interface StoreTx {
  tasks: TaskStore;
  pushConfigs: PushConfigStore;
  pushOutbox: PushOutboxStore;
}
