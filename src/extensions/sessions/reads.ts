// The reads of the sessions family: status, list, get, children, todo, diff, messages.list and messages.get.
// Sessions the caller may not see are left out of lists and answer SESSION_NOT_FOUND when addressed (access.ts).
import path from "node:path";
import type { SessionsHandlers } from "../../../generated/types/methods.js";
import * as sdk from "../../../generated/opencode/sdk.gen.js";
import { SessionListParamsBounds, SessionMessagesListParamsBounds } from "../../../generated/types/extensions.js";
import type { Call } from "../../operations/index.js";
import { compact } from "../../protocol/codec/common.js";
import { isSession } from "../../upstream/client.js";
import { UpstreamError } from "../../upstream/errors.js";
import { isObject, type Obj } from "../../util/object.js";
import type { SessionAccess } from "./access.js";
import { decodeCursor, encodeCursor, idParam, MESSAGE_ID, refuseFields } from "./input.js";
import { isArray, isUpstreamMessage, num, str, type UpstreamMessage } from "./projection.js";

export function readHandlers(access: SessionAccess) {
  return {
    "opencode.sessions.status": async (params, c) => {
      const routing = access.routingOf(params, c);
      const statuses = await access.call("sessionStatus", (x) => sdk.sessionStatus({ ...x }), { ...routing, validate: isObject });
      const working = Object.entries(statuses as Obj).filter((entry): entry is [string, Obj & { type: string }] => {
        const raw = entry[1];
        return isObject(raw) && typeof raw.type === "string" && raw.type !== "idle";
      });
      const items = (await access.visibleOnes(c.principal, working, ([sessionId]) => sessionId)).map(([sessionId, raw]) =>
        compact({ session_id: sessionId, type: raw.type, attempt: num(raw.attempt), message: str(raw.message), next: num(raw.next) }),
      );
      return { items };
    },

    "opencode.sessions.list": async (params, c) => {
      refuseFields(params, ["cursor", "page", "size", "before", "query"], "opencode.sessions.list");
      const routing = access.routingOf(params, c);
      const limit = typeof params.limit === "number" ? params.limit : SessionListParamsBounds.limit.default;
      // A non-admin sees only its own sessions: OpenCode's newest `limit` may all be someone else's, so the filter
      // runs over the whole list and the limit after it.
      const query = compact({
        limit: c.principal.admin ? limit : undefined,
        roots: typeof params.roots === "boolean" ? params.roots : undefined,
        start: typeof params.start === "number" ? params.start : undefined,
        search: typeof params.search === "string" ? params.search : undefined,
      });
      const sessions = await access.call("sessionList", (x) => sdk.sessionList({ ...x, query: { ...x.query, ...query } }), { ...routing, validate: isArray });
      const items = (await access.visibleOnes(c.principal, (sessions as unknown[]).filter(isSession), (s) => s.id)).slice(0, limit).map((s) => access.task(c, s));
      return { items };
    },

    "opencode.sessions.get": async (params, c) => {
      const sessionId = await access.readableSession(params, c.principal);
      return { item: access.task(c, await access.getSession(sessionId, access.routingOf(params, c))) };
    },

    "opencode.sessions.children": async (params, c) => {
      const sessionId = await access.readableSession(params, c.principal);
      const children = await access.call("sessionChildren", (x) => sdk.sessionChildren({ ...x, path: { sessionID: sessionId } }), {
        ...access.routingOf(params, c),
        sessionId,
        validate: isArray,
      });
      return { items: (await access.visibleOnes(c.principal, (children as unknown[]).filter(isSession), (s) => s.id)).map((s) => access.task(c, s)) };
    },

    "opencode.sessions.todo": async (params, c) => {
      const sessionId = await access.readableSession(params, c.principal);
      const todos = await access.call("sessionTodo", (x) => sdk.sessionTodo({ ...x, path: { sessionID: sessionId } }), {
        ...access.routingOf(params, c),
        sessionId,
        validate: isArray,
      });
      const items = (todos as unknown[]).filter(isObject).map((t) =>
        compact({ id: str(t.id), content: str(t.content) ?? "", status: str(t.status) ?? "", priority: str(t.priority) ?? "" }),
      );
      return { items };
    },

    "opencode.sessions.diff": async (params, c) => {
      const sessionId = await access.readableSession(params, c.principal);
      const messageID = idParam(params.message_id, "message_id", MESSAGE_ID, "message");
      const routing = access.routingOf(params, c);
      // OpenCode answers [] for a session it does not have: the session is read alongside to tell the two apart.
      const [, diffs] = await Promise.all([
        access.getSession(sessionId, routing),
        access.call(
          "sessionDiff",
          (x) => sdk.sessionDiff({ ...x, path: { sessionID: sessionId }, query: { ...x.query, ...(messageID === undefined ? {} : { messageID }) } }),
          { ...routing, sessionId, validate: isArray },
        ),
      ]);
      const items = (diffs as unknown[]).filter(isObject).map((d) => {
        const file = str(d.file) ?? "";
        return compact({
          file: path.isAbsolute(file) ? (access.projection.relative(file) ?? path.basename(file)) : file,
          patch: str(d.patch),
          before: str(d.before),
          after: str(d.after),
          additions: num(d.additions),
          deletions: num(d.deletions),
          status: str(d.status),
        });
      });
      return { items };
    },

    "opencode.sessions.messages.list": async (params, c) => {
      refuseFields(params, ["cursor", "page", "size"], "opencode.sessions.messages.list");
      const sessionId = await access.readableSession(params, c.principal);
      const before = decodeCursor(sessionId, params.before);
      const limit = typeof params.limit === "number" ? params.limit : SessionMessagesListParamsBounds.limit.default;
      let next: string | null = null;
      const messages = await access.call(
        "sessionMessages",
        async (x) => {
          const result = await sdk.sessionMessages({
            ...x,
            path: { sessionID: sessionId },
            query: { ...x.query, limit, ...(before === undefined ? {} : { before }) },
          });
          next = result.response?.headers.get("x-next-cursor") || null;
          return result;
        },
        { ...access.routingOf(params, c), sessionId, validate: isArray },
      );
      const items = (messages as unknown[]).filter(isUpstreamMessage).map((m) => access.message(c, sessionId, m));
      return { items, next_cursor: next === null ? null : encodeCursor(sessionId, next) };
    },

    "opencode.sessions.messages.get": async (params, c) => {
      const sessionId = await access.readableSession(params, c.principal);
      const messageId = idParam(params.message_id, "message_id", MESSAGE_ID, "message")!;
      const routing = access.routingOf(params, c);
      try {
        // No sessionId here: OpenCode's 404 names a missing message as often as a missing session.
        const found = await access.upstream.call(
          "sessionMessage",
          (x) => sdk.sessionMessage({ ...x, path: { sessionID: sessionId, messageID: messageId } }),
          { ...routing, validate: isUpstreamMessage },
        );
        return { item: access.message(c, sessionId, found as UpstreamMessage) };
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        if (error.kind === "http" && error.status === 404) await access.getSession(sessionId, routing); // SESSION_NOT_FOUND wins
        throw error.toA2AError();
      }
    },
  } satisfies Partial<SessionsHandlers<Call>>;
}
