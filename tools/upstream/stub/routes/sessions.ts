/**
 * The session routes: create, list, get, update and delete sessions, their busy status and children, and share,
 * fork, revert and unrevert (§7.8, §7.9 of the upstream reference).
 */
import { relative } from "node:path";
import type { PermissionRule, Session, SessionStatus } from "../../../../generated/opencode/types.gen.js";
import { badRequest, ev, isObject, newId, unexpected } from "../common.js";
import type { Router } from "../openapi.js";
import type { SessionRecord } from "../state.js";
import type { Parts } from "./index.js";

const ADJECTIVES = ["curious", "stellar", "crisp", "jolly", "neon", "shiny", "quiet", "brave", "swift", "lucky"];
const NOUNS = ["mountain", "meadow", "rocket", "tiger", "panda", "wolf", "river", "comet", "falcon", "harbor"];
const pick = (list: string[]): string => list[Math.floor(Math.random() * list.length)] ?? "stub";

/** A new session in `directory` (also a command's sub-agent session and a fork). */
export function createSession({ state, bus }: Parts, body: unknown, directory: string): SessionRecord {
  const input = body === undefined ? {} : body;
  if (!isObject(input)) throw badRequest("Expected an object");
  const now = Date.now();
  const info: Session = {
    id: newId("ses", true),
    slug: `${pick(ADJECTIVES)}-${pick(NOUNS)}`,
    projectID: state.projectOf(directory),
    directory,
    path: directory === state.directory ? "" : relative("/", directory),
    cost: 0,
    tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } },
    title: typeof input.title === "string" ? input.title : `New session - ${new Date(now).toISOString()}`,
    version: state.version,
    time: { created: now, updated: now },
  };
  if (typeof input.parentID === "string") info.parentID = input.parentID;
  if (Array.isArray(input.permission)) info.permission = input.permission as PermissionRule[];
  if (isObject(input.metadata)) info.metadata = input.metadata;
  if (typeof input.workspaceID === "string") info.workspaceID = input.workspaceID;
  const rec: SessionRecord = { info, messages: [], script: [], prompted: false, seq: 0, loop: undefined, approved: [], deleted: false, todos: [], forks: 0 };
  state.sessions.set(info.id, rec);
  bus.broadcast(ev("session.created", { sessionID: info.id, info }), directory);
  return rec;
}

export function sessionRoutes(router: Router, parts: Parts): void {
  const { state, bus, turns, interactions } = parts;
  /** A change to the session itself: a newer `updated` time and a `session.updated` event. */
  const changed = (rec: SessionRecord): Session => {
    state.touch(rec);
    bus.session(rec);
    return rec.info;
  };

  router.on("session.list", ({ directory, query }) => {
    let list = [...state.sessions.values()].filter((s) => s.info.directory === directory).map((s) => s.info);
    if (query.roots === "true") list = list.filter((s) => s.parentID === undefined);
    if (query.search !== undefined) {
      const needle = query.search.toLowerCase();
      list = list.filter((s) => s.title.toLowerCase().includes(needle));
    }
    list.sort((a, b) => b.time.updated - a.time.updated);
    const limit = Number(query.limit);
    return Number.isInteger(limit) && limit > 0 ? list.slice(0, limit) : list;
  });

  router.on("session.create", ({ body, directory }) => createSession(parts, body, directory).info);

  router.on("session.status", ({ directory }) => {
    const out: Record<string, SessionStatus> = {};
    for (const rec of state.sessions.values()) {
      if (rec.loop !== undefined && rec.info.directory === directory) out[rec.info.id] = { type: "busy" };
    }
    return out;
  });

  router.on("session.get", ({ param }) => state.session(param("sessionID")).info);

  router.on("session.update", ({ param, body }) => {
    const rec = state.session(param("sessionID"));
    if (isObject(body)) {
      if (typeof body.title === "string") rec.info.title = body.title;
      if (Array.isArray(body.permission)) rec.info.permission = body.permission as PermissionRule[];
      if (isObject(body.metadata)) rec.info.metadata = body.metadata;
      if (isObject(body.time) && typeof body.time.archived === "number") rec.info.time.archived = body.time.archived;
    }
    return changed(rec);
  });

  router.on("session.delete", ({ param }) => {
    const id = param("sessionID");
    const rec = state.session(id);
    // The real server keeps a busy session's turn (and its "busy" status) running; the stub ends it silently.
    turns.cancelLoop(rec);
    rec.deleted = true;
    state.sessions.delete(id);
    interactions.forget(id);
    bus.broadcast(ev("session.deleted", { sessionID: id, info: rec.info }), rec.info.directory);
    return true;
  });

  router.on("session.children", ({ param }) => {
    const id = param("sessionID");
    state.session(id);
    return [...state.sessions.values()].filter((s) => s.info.parentID === id).map((s) => s.info);
  });

  router.on("session.share", ({ param }) => {
    const rec = state.session(param("sessionID"));
    if (!state.sharing) throw unexpected();
    rec.info.share = { url: `${state.url}/share/${rec.info.slug}` };
    return changed(rec);
  });

  router.on("session.unshare", ({ param }) => {
    const rec = state.session(param("sessionID"));
    delete rec.info.share;
    return changed(rec);
  });

  // §7.8: a new root session with the messages before `messageID` (all without it), titled "<title> (fork #n)".
  router.on("session.fork", ({ param, body }) => {
    const rec = state.session(param("sessionID"));
    const messageID = isObject(body) && typeof body.messageID === "string" ? body.messageID : undefined;
    const cut = messageID === undefined ? -1 : rec.messages.findIndex((m) => m.info.id === messageID);
    const copied = cut < 0 ? rec.messages : rec.messages.slice(0, cut);
    rec.forks++;
    const fork = createSession(parts, { title: `${rec.info.title} (fork #${rec.forks})` }, rec.info.directory);
    const sessionID = fork.info.id;
    const ids = new Map<string, string>();
    for (const m of copied) ids.set(m.info.id, newId("msg"));
    for (const m of copied) {
      const copy = structuredClone(m);
      copy.info.id = ids.get(m.info.id)!;
      copy.info.sessionID = sessionID;
      if (copy.info.role === "assistant") copy.info.parentID = ids.get(copy.info.parentID) ?? copy.info.parentID;
      for (const part of copy.parts) {
        part.id = newId("prt");
        part.sessionID = sessionID;
        part.messageID = copy.info.id;
      }
      fork.messages.push(copy);
    }
    return fork.info;
  });

  // §7.9: marks the revert (the stub touches no files); 409 while busy.
  router.on("session.revert", ({ param, body }) => {
    const rec = state.session(param("sessionID"));
    if (!isObject(body) || typeof body.messageID !== "string") throw badRequest('Missing key\n  at ["messageID"]');
    state.notBusy(rec);
    const from = rec.messages.findIndex((m) => m.info.id === body.messageID);
    if (from < 0) return rec.info;
    const diffs = rec.messages.slice(from).flatMap((m) => (m.info.role === "user" ? (m.info.summary?.diffs ?? []) : []));
    const diff = diffs.map((d) => `diff --git a/${d.file} b/${d.file}\ndeleted file mode 100644\n--- a/${d.file}\n+++ /dev/null`).join("\n");
    rec.info.revert = { messageID: body.messageID, snapshot: state.snapshot(rec), diff };
    if (typeof body.partID === "string") rec.info.revert.partID = body.partID;
    return changed(rec);
  });

  router.on("session.unrevert", ({ param }) => {
    const rec = state.session(param("sessionID"));
    state.notBusy(rec);
    delete rec.info.revert;
    return changed(rec);
  });
}
