// Which OpenCode sessions a principal may message (seed 002 addressing; the service is ./service.ts): its own
// sessions (the session store's owner; an admin: every session), listed per directory with their activity, and
// resolved from what a call names: an exact id, a unique prefix of one of them (several → SESSION_AMBIGUOUS, none →
// SESSION_NOT_FOUND, exactly as for a session the caller may not see), `new` (a new session of the caller) or a fork
// of a session of the caller (whole, or N messages back). A2A_MESSAGES_ACTIVE_ONLY limits ids and prefixes to
// working sessions.
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { Session } from "../../generated/opencode/types.gen.js";
import type { Principal } from "../auth/index.js";
import type { Routing } from "../bridge/directory.js";
import { mayUseSession, usableSessions, type SessionResolver } from "../bridge/sessions.js";
import { A2AError } from "../contract/errors.js";
import { invalid } from "../protocol/codec/common.js";
import type { SessionStore } from "../storage/sessions.js";
import { isSession, type UpstreamClient } from "../upstream/client.js";
import { UpstreamError } from "../upstream/errors.js";
import { isObject } from "../util/object.js";

/** The most sessions one listing reads from OpenCode. */
const LIST_LIMIT = 1_000;

export interface SessionDirectoryDeps {
  upstream: UpstreamClient;
  sessions: Pick<SessionResolver, "createOwned">;
  owners: Pick<SessionStore, "getOwner" | "getClaim" | "setOwner">;
  activeOnly: boolean;
}

/** One upstream call; UpstreamErrors leave as the project's typed errors. */
export async function upstreamCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof UpstreamError) throw error.toA2AError();
    throw error;
  }
}

const notFound = (session: string): A2AError => new A2AError("SESSION_NOT_FOUND", undefined, { session_id: session });

export class SessionDirectory {
  constructor(private readonly deps: SessionDirectoryDeps) {}

  /** Whether the principal may message (and read the messages of) the session (the sessions methods' rule). */
  mayUse(principal: Principal, sessionId: string): Promise<boolean> {
    return mayUseSession(this.deps.owners, principal, sessionId);
  }

  /** The caller's sessions of the routing's directory, newest first. */
  async list(principal: Principal, routing: Routing): Promise<Session[]> {
    const listed = await upstreamCall(() =>
      this.deps.upstream.call("sessionList", (c) => sdk.sessionList({ ...c, query: { ...c.query, limit: LIST_LIMIT } }), { ...routing, validate: Array.isArray }),
    );
    return usableSessions(this.deps.owners, principal, (listed as unknown[]).filter(isSession), (s) => s.id);
  }

  /** The ids of the routing's sessions that are working now. */
  async busy(routing: Routing): Promise<Set<string>> {
    const status = await upstreamCall(() => this.deps.upstream.call("sessionStatus", (c) => sdk.sessionStatus({ ...c }), { ...routing }));
    const busy = new Set<string>();
    if (isObject(status)) for (const [id, s] of Object.entries(status)) if (isObject(s) && s.type !== "idle") busy.add(id);
    return busy;
  }

  /**
   * The session a call names: an id of one of the caller's sessions, else a unique prefix of one. `field` names the
   * parameter in errors.
   */
  async resolve(principal: Principal, named: string, routing: Routing, field: string): Promise<string> {
    const busy = this.deps.activeOnly ? await this.busy(routing) : undefined;
    const usable = async (id: string): Promise<boolean> => (busy === undefined || busy.has(id)) && (await this.mayUse(principal, id));
    if (await usable(named)) {
      // An exact id: it must still exist upstream. An admin may use any session, so for it any name passes `usable`:
      // a name OpenCode does not know as a session is then matched as a prefix.
      try {
        await upstreamCall(() =>
          this.deps.upstream.call("sessionGet", (c) => sdk.sessionGet({ ...c, path: { sessionID: named } }), { ...routing, sessionId: named, validate: isSession }),
        );
        return named;
      } catch (error) {
        // (OpenCode answers 404 for an unknown id, 400 for a string that is no session id at all.)
        const unknown = error instanceof A2AError && (error.reason === "SESSION_NOT_FOUND" || (error.reason === "UPSTREAM_HTTP_ERROR" && error.data.upstream_status === 400));
        if (!principal.admin || !unknown) throw error;
      }
    }
    // (list gives only sessions the caller may use.)
    const matches = (await this.list(principal, routing)).map((s) => s.id).filter((id) => id.startsWith(named) && (busy === undefined || busy.has(id)));
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1) {
      throw new A2AError("SESSION_AMBIGUOUS", `${field} "${named}" matches ${matches.length} of your sessions; give more of the id`, { session: named, matches: matches.slice(0, 20) });
    }
    throw notFound(named);
  }

  /** A new session of the caller, titled after the message it is made for. */
  create(principal: Principal, title: string, routing: Routing): Promise<string> {
    return upstreamCall(() => this.deps.sessions.createOwned(principal, { title }, routing));
  }

  /**
   * A fork of `source` (the caller's): `true` forks it whole; N forks it N messages back (every message before the
   * Nth last). The fork is the caller's.
   */
  async fork(principal: Principal, source: string, back: true | number, routing: Routing): Promise<string> {
    let messageID: string | undefined;
    if (back !== true) {
      const messages = await upstreamCall(() =>
        this.deps.upstream.call("sessionMessages", (c) => sdk.sessionMessages({ ...c, path: { sessionID: source } }), { ...routing, sessionId: source, validate: Array.isArray }),
      );
      const ids = (messages as unknown[]).flatMap((m) => (isObject(m) && isObject(m.info) && typeof m.info.id === "string" ? [m.info.id] : []));
      if (back > ids.length) throw invalid("fork", `session ${source} has ${ids.length} messages; cannot fork ${back} back`);
      messageID = ids[ids.length - back];
    }
    const forked = await upstreamCall(() =>
      this.deps.upstream.call("sessionFork", (c) => sdk.sessionFork({ ...c, path: { sessionID: source }, body: messageID === undefined ? {} : { messageID } }), {
        ...routing,
        sessionId: source,
        validate: isSession,
      }),
    );
    const id = (forked as Session).id;
    // The fork is the caller's, like the session it came from.
    await this.deps.owners.setOwner(id, principal.id);
    return id;
  }
}
