/** The event streams: `GET /event` (the addressed directory's events) and `GET /global/event` (every directory's). */
import { RESPONDED, type Router } from "../openapi.js";
import type { Parts } from "./index.js";

export function eventRoutes(router: Router, { bus }: Parts): void {
  router.on("event.subscribe", ({ req, res, directory }) => {
    bus.open(req, res, false, directory);
    return RESPONDED;
  });
  router.on("global.event", ({ req, res, directory }) => {
    bus.open(req, res, true, directory);
    return RESPONDED;
  });
}
