// The store a gateway opens from its configuration (A2A_TASK_STORE_*): main.ts opens it before serving, and
// createGateway opens it when it is given none (tests).
import type { Config } from "../config/index.js";
import type { StorageOptions } from "../storage/index.js";

export function gatewayStorageOptions(config: Config): StorageOptions {
  return {
    backend: config.taskStoreBackend === "memory" ? "memory" : "sqlite",
    url: config.taskStoreUrl,
    taskCacheSize: config.taskStoreCacheSize,
    taskReaders: config.taskStoreReaders,
  };
}
