// The push notification service of a gateway (src/push) as the configuration asks for it.
import type { Logger } from "pino";
import type { Config } from "../config/index.js";
import { packageVersion } from "../contract/catalog.js";
import type { Metrics } from "../observability/metrics.js";
import { PushService } from "../push/service.js";
import type { TaskRuntime } from "../runtime/tasks.js";
import type { Storage } from "../storage/index.js";

/** How often a push worker on PostgreSQL looks at the outbox unprompted (what other gateways queued or left). */
const PUSH_POLL_MS = 5_000;

export function pushService(config: Config, store: Storage, metrics: Metrics, log: Logger, tasks: () => TaskRuntime, now?: () => number): PushService {
  return new PushService({
    configs: store.pushConfigs,
    outbox: store.pushOutbox,
    atomically: (fn) => store.atomically(fn),
    visibleTask: (principal, taskId) => tasks().visible(principal, taskId),
    metrics,
    log,
    timeoutMs: config.pushTimeout * 1000,
    maxAttempts: config.pushMaxAttempts,
    retryInitialMs: config.pushRetryInitial * 1000,
    retryMaxMs: config.pushRetryMax * 1000,
    maxConcurrency: config.pushMaxConcurrency,
    maxConcurrencyPerHost: config.pushMaxConcurrencyPerHost,
    maxConfigsPerTask: config.pushMaxConfigsPerTask,
    maxAgeMs: config.pushMaxAge * 1000,
    allowPrivateNetworks: config.pushAllowPrivateNetworks,
    userAgent: `opencode-a2a/${packageVersion}`,
    // Other gateways may share a PostgreSQL database: look for what they queued (or left behind) now and then.
    ...(store.backend === "postgres" ? { pollMs: PUSH_POLL_MS } : {}),
    // The first pass runs when the gateway warms up (./warm.ts), after its first requests.
    deferFirstPass: true,
    traceOf: (taskId) => tasks().traceOf(taskId),
    ...(now === undefined ? {} : { now }),
  });
}
