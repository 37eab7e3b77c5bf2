/**
 * Registers every route group of the stub on the snapshot-driven router: each group serves the operations of one
 * part of the real server's API by operationId.
 */
import type { StubUpstream } from "../api.js";
import type { EventBus } from "../events.js";
import type { Interactions } from "../interactions.js";
import type { Router } from "../openapi.js";
import type { StubState } from "../state.js";
import type { Turns } from "../turns.js";
import { appRoutes } from "./app.js";
import { controlRoutes } from "./control.js";
import { eventRoutes } from "./events.js";
import { fileRoutes } from "./files.js";
import { interactionRoutes } from "./interactions.js";
import { messageRoutes } from "./messages.js";
import { promptRoutes } from "./prompt.js";
import { sessionRoutes } from "./sessions.js";

/** The parts of the stub the route groups work with. */
export interface Parts {
  state: StubState;
  bus: EventBus;
  turns: Turns;
  interactions: Interactions;
}

/** `doc` is the snapshot text `GET /doc` serves; `controls` answer the stub's own `/__stub/*` routes. */
export function registerRoutes(router: Router, parts: Parts, controls: StubUpstream, doc: string): void {
  appRoutes(router, parts, doc);
  eventRoutes(router, parts);
  fileRoutes(router, parts);
  sessionRoutes(router, parts);
  messageRoutes(router, parts);
  promptRoutes(router, parts);
  interactionRoutes(router, parts);
  controlRoutes(router, parts, controls);
}
