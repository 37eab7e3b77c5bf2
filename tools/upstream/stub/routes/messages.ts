/**
 * A session's history: its messages (paged newest-first with the real server's `X-Next-Cursor` and `Link`), one
 * message, the todo list and the per-message diffs.
 */
import { isObject, notFound, sendJson, undecodable } from "../common.js";
import { RESPONDED, type Router } from "../openapi.js";
import type { MessageRecord, StubState } from "../state.js";
import type { Parts } from "./index.js";

/** Newest `limit` messages (before the `before` cursor), oldest first; `next` when older ones remain. */
function listMessages(state: StubState, id: string, query: Record<string, string>): { messages: MessageRecord[]; next?: string } {
  let messages = state.session(id).messages;
  if (query.before !== undefined) {
    let cursor: unknown;
    try {
      cursor = JSON.parse(Buffer.from(query.before, "base64url").toString("utf8"));
    } catch {
      cursor = undefined;
    }
    if (!isObject(cursor) || typeof cursor.id !== "string") throw undecodable();
    const cut = messages.findIndex((m) => m.info.id === cursor.id);
    messages = cut < 0 ? [] : messages.slice(0, cut);
  }
  const limit = Number(query.limit);
  if (!Number.isInteger(limit) || limit <= 0 || messages.length <= limit) return { messages };
  const page = messages.slice(-limit);
  const first = page[0]!.info;
  return { messages: page, next: Buffer.from(JSON.stringify({ id: first.id, time: first.time.created })).toString("base64url") };
}

export function messageRoutes(router: Router, { state }: Parts): void {
  router.on("session.messages", ({ res, path, param, query }) => {
    const page = listMessages(state, param("sessionID"), query);
    if (page.next === undefined) return page.messages;
    const link = new URL(`${state.url}${path}`);
    for (const [k, v] of Object.entries(query)) if (k !== "before") link.searchParams.set(k, v);
    link.searchParams.set("before", page.next);
    sendJson(res, 200, page.messages, {
      "access-control-expose-headers": "Link, X-Next-Cursor",
      link: `<${link.toString()}>; rel="next"`,
      "x-next-cursor": page.next,
    });
    return RESPONDED;
  });

  router.on("session.message", ({ param }) => {
    const messageID = param("messageID");
    const found = state.session(param("sessionID")).messages.find((m) => m.info.id === messageID);
    if (found === undefined) throw notFound(`Message not found: ${messageID}`);
    return found;
  });

  router.on("session.todo", ({ param }) => state.session(param("sessionID")).todos);

  // `?messageID=` → that message's `summary.diffs`; without it `[]`, also for unknown sessions (as the real server).
  router.on("session.diff", ({ param, query }) => {
    if (query.messageID === undefined) return [];
    const found = state.sessions.get(param("sessionID"))?.messages.find((m) => m.info.id === query.messageID);
    return found?.info.role === "user" ? (found.info.summary?.diffs ?? []) : [];
  });
}
