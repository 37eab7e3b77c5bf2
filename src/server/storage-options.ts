// The store a gateway opens from its configuration (A2A_TASK_STORE_*): main.ts opens it before serving, and
// createGateway opens it when it is given none (tests).
import type { Config } from "../config/index.js";
import type { StorageOptions } from "../storage/index.js";
import { BACKGROUND_START_DELAY_MS } from "../util/background-start.js";

export function gatewayStorageOptions(config: Config): StorageOptions {
  return {
    backend: config.taskStoreBackend === "memory" ? "memory" : "sqlite",
    url: config.taskStoreUrl,
    taskCacheSize: config.taskStoreCacheSize,
    taskReaders: config.taskStoreReaders,
    // The first reader thread boots after the first requests are answered (../util/background-start.ts).
    warmReaders: BACKGROUND_START_DELAY_MS,
  };
}
