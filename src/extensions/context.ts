// What every extension family handler may use. Families live in one file each (sessions/, discovery.ts,
// workspace.ts, interrupts.ts, subtasks.ts, messages.ts) and export `handlers(deps)`, an object that satisfies the family's
// generated handler interface (generated/types/methods.ts).
import type { Logger } from "pino";
import type { A2AMessageProjection, A2ATaskProjection } from "../../generated/types/extensions.js";
import type { Config } from "../config/index.js";
import type { RoutingPolicy } from "../bridge/directory.js";
import type { SessionResolver } from "../bridge/sessions.js";
import type { Metrics } from "../observability/metrics.js";
import type { Codec } from "../protocol/codec/index.js";
import type { Message, Task } from "../protocol/model.js";
import type { TaskRuntime } from "../runtime/tasks.js";
import type { InterruptRegistry } from "./interrupt-registry.js";
import type { Storage } from "../storage/index.js";
import type { SubtaskService } from "../subtasks/service.js";
import type { MessageService } from "../messages/service.js";
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
  /** opencode.subtasks.*: named agents run as subtasks. */
  subtasks: SubtaskService;
  /** opencode.messages.*: messages between OpenCode sessions. */
  messages: MessageService;
  routing: RoutingPolicy;
  metrics: Metrics;
  log: Pick<Logger, "info" | "warn" | "error" | "debug">;
}

// The task and message projections of extension results are the caller's line's Task and Message as its codec
// encodes them; the spec's projections (A2ATaskProjection, A2AMessageProjection) declare the fields both lines share.

export function taskProjection(codec: Codec, task: Task): A2ATaskProjection {
  return codec.task(task) as A2ATaskProjection;
}

export function messageProjection(codec: Codec, message: Message): A2AMessageProjection {
  return codec.message(message) as A2AMessageProjection;
}
