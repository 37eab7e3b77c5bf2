/**
 * The stub's own routes (not OpenCode's): the benchmark controls `POST /__stub/burst`, `GET /__stub/stats` and
 * `POST /__stub/script`, for a stub running in another process.
 */
import type { Reply } from "../../script.js";
import type { StubUpstream } from "../api.js";
import { badRequest, isObject } from "../common.js";
import type { Router } from "../openapi.js";
import type { Parts } from "./index.js";

export function controlRoutes(router: Router, { state }: Parts, controls: StubUpstream): void {
  router.extra("POST", "/__stub/burst", ({ body }) => {
    if (!isObject(body) || !Array.isArray(body.sessions) || typeof body.eventsPerSession !== "number") {
      throw badRequest("expected {sessions: string[], eventsPerSession: number, deltaBytes?: number}");
    }
    const deltaBytes = typeof body.deltaBytes === "number" ? body.deltaBytes : undefined;
    const sessions = body.sessions.filter((s): s is string => typeof s === "string");
    return controls.burst({ sessions, eventsPerSession: body.eventsPerSession, ...(deltaBytes === undefined ? {} : { deltaBytes }) });
  });

  router.extra("GET", "/__stub/stats", () => controls.stats());

  router.extra("POST", "/__stub/script", ({ body }) => {
    const replies = isObject(body) && Array.isArray(body.replies) ? (body.replies as Reply[]) : undefined;
    if (replies === undefined) throw badRequest("expected {replies: Reply[], sessionID?: string}");
    if (isObject(body) && typeof body.sessionID === "string") state.session(body.sessionID).script.push(...replies);
    else state.globalScript.push(...replies);
    return true;
  });
}
