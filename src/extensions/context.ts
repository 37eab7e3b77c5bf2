// What every extension family handler may use. Families live in one file each (sessions.ts, discovery.ts,
// workspace.ts, interrupts.ts) and export `handlers(deps): Record<methodName, MethodHandler>`.
import type { Logger } from "pino";
import type { Config } from "../config/index.js";
import type { RoutingPolicy } from "../bridge/directory.js";
import type { SessionResolver } from "../bridge/sessions.js";
import type { Metrics } from "../observability/metrics.js";
import type { TaskRuntime } from "../runtime/tasks.js";
import type { InterruptRegistry } from "./interrupt-registry.js";
import type { Storage } from "../storage/index.js";
import type { EventHub } from "../upstream/hub.js";
import type { UpstreamClient } from "../upstream/client.js";

export interface ExtensionDeps {
  config: Config;
  upstream: UpstreamClient;
  hub: EventHub;
  storage: Storage;
  runtime: TaskRuntime;
  /** The interrupt registry the runtime reports asked/resolved interrupts to (built before the runtime). */
  interrupts: InterruptRegistry;
  sessions: SessionResolver;
  routing: RoutingPolicy;
  metrics: Metrics;
  log: Pick<Logger, "info" | "warn" | "error" | "debug">;
}
