// The governance trail of a task over HTTP (contract: spec/governance.tsp): seed 004's
// `GET /a2a/tasks/{task_id}/governor/history`, 0.3 `GET /v1/tasks/{id}/governance/history` and 1.0
// `GET /tasks/{id}/governance/history`. The tasks.read scope is checked at the edge; like every extension call they
// need the extensions of A2A_REQUIRED_EXTENSIONS activated; the trail answers TASK_NOT_FOUND for a task the caller may
// not see. JSON-RPC serves the same as opencode.governance.history.
import type Router from "@koa/router";
import type { Context } from "koa";
import { A2AError } from "../contract/errors.js";
import type { RequestState } from "../pipeline/state.js";
import type { Principal } from "../auth/index.js";
import type { GovernanceHistory } from "../../generated/types/extensions.js";
import type { ExtensionPolicy } from "../protocol/extensions.js";
import { json } from "../transport/http.js";

/** Who serves the trail: absent without an upstream (there are no tasks then). */
export type GovernanceHistorySource = ((principal: Principal, taskId: string) => Promise<GovernanceHistory>) | undefined;

export function registerGovernanceRoutes(router: Router, history: GovernanceHistorySource, extensions: ExtensionPolicy): void {
  const serve = (param: "task_id" | "id", route: string) => async (ctx: Context) => {
    const taskId = (ctx.params as Record<string, string>)[param]!;
    const state = ctx.state as RequestState;
    extensions.check(state.extensions, state.line, route);
    const principal = state.principal!;
    if (history === undefined) throw new A2AError("TASK_NOT_FOUND", undefined, { task_id: taskId });
    ctx.set("Cache-Control", "no-store");
    json(ctx, await history(principal, taskId));
  };
  router.get("/a2a/tasks/:task_id/governor/history", serve("task_id", "GET /a2a/tasks/{task_id}/governor/history"));
  router.get("/v1/tasks/:id/governance/history", serve("id", "GET /v1/tasks/{id}/governance/history"));
  router.get("/tasks/:id/governance/history", serve("id", "GET /tasks/{id}/governance/history"));
}
