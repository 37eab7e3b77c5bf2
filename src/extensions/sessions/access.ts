// How the sessions methods reach OpenCode and who may see and drive a session.
//
// Every OpenCode call goes through the generated SDK and the upstream wrapper (routing, timeouts, budget, error
// taxonomy); UpstreamErrors leave as the project's typed A2A errors.
//
// Visibility (issue 6): a session is visible only to the principal that owns it per the session store (or holds the
// pending claim of a still unowned one); an admin credential (a trust level that sees every principal) sees every
// session. Reads of a session the caller may not see — another principal's, or one the gateway never bound to
// anybody — answer SESSION_NOT_FOUND exactly like a session that does not exist (never "forbidden": existence is not
// revealed), before anything reaches OpenCode.
//
// Control methods enforce the owner guard: a session owned (or claimed) by another principal → SESSION_NOT_FOUND for
// non-admins (the same answer as an unknown session) and SESSION_FORBIDDEN for admins, who may see it but not
// drive it; a session the gateway never saw is claimed for the call (A2A_PENDING_SESSION_CLAIM_TTL_SECONDS), checked
// upstream, and becomes the caller's once the call succeeded (released on failure).
import * as sdk from "../../../generated/opencode/sdk.gen.js";
import type { Session } from "../../../generated/opencode/types.gen.js";
import type { A2AMessageProjection, A2ATaskProjection } from "../../../generated/types/extensions.js";
import type { Principal } from "../../auth/index.js";
import { resolveRouting, type Routing } from "../../bridge/directory.js";
import { mayUseSession, usableSessions } from "../../bridge/sessions.js";
import { A2AError } from "../../contract/errors.js";
import type { Call } from "../../operations/index.js";
import { codecFor } from "../../protocol/codec/index.js";
import { invalid } from "../../protocol/codec/common.js";
import { withTrace } from "../../tracing/index.js";
import { isSession, type CallContext, type CallOptions, type SdkResult } from "../../upstream/client.js";
import { UpstreamError } from "../../upstream/errors.js";
import { isObject } from "../../util/object.js";
import { messageProjection, taskProjection, type ExtensionDeps } from "../context.js";
import { sessionIdOf } from "./input.js";
import { isArray, isUpstreamMessage, sessionMessage, sessionTask, str, workspaceRelative, type ProjectionContext, type UpstreamMessage } from "./projection.js";

type Params = Record<string, unknown>;

/** How many recent messages a summary looks through for the model the session last used. */
const RECENT_MESSAGES = 20;

export class SessionAccess {
  readonly upstream: ExtensionDeps["upstream"];
  readonly owners: ExtensionDeps["storage"]["sessions"];
  readonly projection: ProjectionContext;

  constructor(private readonly deps: ExtensionDeps) {
    this.upstream = deps.upstream;
    this.owners = deps.storage.sessions;
    this.projection = { relative: workspaceRelative(deps.routing.root) };
  }

  /** One upstream call; UpstreamErrors leave as the project's typed A2A errors. */
  async call<T>(operation: string, invoke: (c: CallContext) => Promise<SdkResult<T>>, opts: CallOptions): Promise<T> {
    try {
      return await this.upstream.call(operation, invoke, opts);
    } catch (error) {
      if (error instanceof UpstreamError) throw error.toA2AError();
      throw error;
    }
  }

  /**
   * Instance routing: `metadata.opencode.workspace.id` wins, then the `directory` param, then
   * `metadata.opencode.directory`; it carries the request's trace, so every OpenCode call made with it sends it.
   */
  routingOf(params: Params, c: Call): Routing {
    const policy = this.deps.routing;
    const metadata = isObject(params.metadata) ? params.metadata : undefined;
    const opencode = isObject(metadata?.opencode) ? metadata.opencode : undefined;
    if (opencode?.workspace !== undefined || params.directory === undefined) return withTrace(resolveRouting(metadata, policy), c.trace);
    try {
      return withTrace(resolveRouting({ opencode: { directory: params.directory } }, policy), c.trace);
    } catch (error) {
      if (error instanceof A2AError && error.reason === "INVALID_PARAMS") throw invalid("directory", error.message.replace(/^directory /, ""));
      throw error;
    }
  }

  /** The session is the caller's to see: admin, its owner, or (unowned) the holder of its pending claim. */
  visible(principal: Principal, sessionId: string): Promise<boolean> {
    return mayUseSession(this.owners, principal, sessionId);
  }

  /** The items whose session the caller may see (`visible`), in their order. */
  visibleOnes<T>(principal: Principal, items: readonly T[], sessionOf: (item: T) => string): Promise<T[]> {
    return usableSessions(this.owners, principal, items, sessionOf);
  }

  /** The one answer for a session that does not exist and a session the caller may not see. */
  sessionNotFound(sessionId: string): A2AError {
    return new A2AError("SESSION_NOT_FOUND", undefined, { session_id: sessionId });
  }

  /** The session id of a read, refused as not found when the caller may not see the session. */
  async readableSession(params: Params, principal: Principal): Promise<string> {
    const sessionId = sessionIdOf(params);
    if (!(await this.visible(principal, sessionId))) throw this.sessionNotFound(sessionId);
    return sessionId;
  }

  getSession(sessionId: string, routing: Routing): Promise<Session> {
    return this.call("sessionGet", (c) => sdk.sessionGet({ ...c, path: { sessionID: sessionId } }), { ...routing, sessionId, validate: isSession });
  }

  /**
   * The owner guard of control methods. Owned by the caller → run. Owned (or claimed) by another principal →
   * SESSION_NOT_FOUND for non-admins (they may not even see it), SESSION_FORBIDDEN for admins. Unknown to the gateway → claimed, checked upstream (SESSION_NOT_FOUND), run, and the caller
   * owns it afterwards; a failed run releases the claim.
   */
  async guarded<T>(principal: Principal, sessionId: string, routing: Routing, run: (session?: Session) => Promise<T>): Promise<T> {
    const outcome = await this.owners.claim(sessionId, principal.id, this.deps.config.pendingClaimTtl);
    if (outcome.status === "forbidden") {
      if (!principal.admin) throw this.sessionNotFound(sessionId);
      throw new A2AError("SESSION_FORBIDDEN", undefined, { session_id: sessionId });
    }
    if (outcome.status === "owned") return run();
    try {
      const session = await this.getSession(sessionId, routing);
      const result = await run(session);
      await this.owners.finalize(sessionId, principal.id);
      return result;
    } catch (error) {
      await this.owners.release(sessionId, principal.id);
      throw error;
    }
  }

  /** A session as the caller's line's task. */
  task(c: Call, s: Session): A2ATaskProjection {
    return taskProjection(codecFor(c.line, c.transport), sessionTask(s, this.projection));
  }

  /** An OpenCode message as the caller's line's message. */
  message(c: Call, sessionId: string, m: UpstreamMessage): A2AMessageProjection {
    return messageProjection(codecFor(c.line, c.transport), sessionMessage(sessionId, m));
  }

  /** The model a summary runs with when the request names none: the session's, else its latest message's. */
  async currentModel(sessionId: string, routing: Routing, known?: Session): Promise<{ providerID: string; modelID: string }> {
    const session = known ?? (await this.getSession(sessionId, routing));
    if (session.model?.providerID && session.model.id) return { providerID: session.model.providerID, modelID: session.model.id };
    const recent = await this.call(
      "sessionMessages",
      (c) => sdk.sessionMessages({ ...c, path: { sessionID: sessionId }, query: { ...c.query, limit: RECENT_MESSAGES } }),
      { ...routing, sessionId, validate: isArray },
    );
    for (const item of [...(recent as unknown[])].reverse()) {
      if (!isUpstreamMessage(item)) continue;
      const info = item.info;
      const user = isObject(info.model) ? info.model : undefined;
      const providerID = str(user?.providerID) ?? str(info.providerID);
      const modelID = str(user?.modelID) ?? str(info.modelID);
      if (providerID && modelID) return { providerID, modelID };
    }
    throw invalid("request.providerID", "is required: the session has no model yet (give providerID and modelID)");
  }

  /** After an upstream 500 of a named command/agent: a name OpenCode does not know is the caller's mistake. */
  async unknownName(error: unknown, kind: "command" | "agent", name: string, routing: Routing): Promise<A2AError | undefined> {
    if (!(error instanceof A2AError) || error.reason !== "UPSTREAM_HTTP_ERROR" || error.data.upstream_status !== 500) return undefined;
    try {
      const list =
        kind === "command"
          ? await this.upstream.call("commandList", (c) => sdk.commandList({ ...c }), { ...routing, validate: isArray })
          : await this.upstream.call("appAgents", (c) => sdk.appAgents({ ...c }), { ...routing, validate: isArray });
      const known = (list as unknown[]).some((x) => isObject(x) && x.name === name);
      return known ? undefined : invalid(`request.${kind}`, `OpenCode has no ${kind} named ${JSON.stringify(name)}`);
    } catch {
      return undefined;
    }
  }
}
