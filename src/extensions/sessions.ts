// Extension family: sessions — the `opencode.sessions.*` JSON-RPC methods (spec/extensions/opencode/sessions.tsp).
//
// Reads (status, list, get, children, todo, diff, messages.list, messages.get) and control methods (prompt_async,
// command, shell, fork, share, unshare, summarize, revert, unrevert) over OpenCode's session routes, always through
// the generated SDK and the upstream wrapper (routing, timeouts, budget, error taxonomy).
//
// Projections (seed 000): a session becomes an A2A Task (id = session id, contextId = ctx:opencode-session:<id>,
// state completed, metadata.shared.session {id, title}); a message becomes an A2A Message with one text part
// holding its aggregated text; both are shaped for the caller's protocol line by the codec. Todo, diff, status and
// lifecycle results are provider-private summaries. Nothing carries a local filesystem path: session directories
// appear only relative to the workspace root, and only when they are inside it.
//
// Visibility (issue 6): a session is visible only to the principal that owns it per the session store (or holds the
// pending claim of a still unowned one); an admin credential (a trust level that sees every principal) sees every
// session. Reads of a session the caller may not see — another principal's, or one the gateway never bound to
// anybody — answer SESSION_NOT_FOUND exactly like a session that does not exist (never "forbidden": existence is not
// revealed), before anything reaches OpenCode; `opencode.sessions.list`, `.status` and `.children` leave such
// sessions out.
//
// Control methods enforce the owner guard: a session owned (or claimed) by another principal → SESSION_NOT_FOUND for
// non-admins (the same answer as an unknown session) and SESSION_FORBIDDEN for admins, who may see it but not
// drive it; a session the gateway never saw is claimed for the call (A2A_PENDING_SESSION_CLAIM_TTL_SECONDS), checked
// upstream, and becomes the caller's once the call succeeded (released on failure).
//
// Request and response bodies of these methods are never logged: this module logs nothing about them.
import fs from "node:fs";
import path from "node:path";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { OutputFormat, Session } from "../../generated/opencode/types.gen.js";
import type { Principal } from "../auth/index.js";
import { resolveRouting, type Routing } from "../bridge/directory.js";
import { A2AError } from "../contract/errors.js";
import type { Call, MethodHandler } from "../operations/index.js";
import { withTrace } from "../tracing/index.js";
import { codecFor } from "../protocol/codec/index.js";
import { compact, invalid } from "../protocol/codec/common.js";
import type { Message, Task } from "../protocol/model.js";
import { isSession, type CallContext, type CallOptions, type SdkResult } from "../upstream/client.js";
import { UpstreamError } from "../upstream/errors.js";
import type { ExtensionDeps } from "./context.js";
import { isObject, type Obj } from "../util/object.js";

type Params = Record<string, unknown>;

/** A message as OpenCode returns it: `{info, parts}`. */
interface UpstreamMessage {
  info: Obj;
  parts: Obj[];
}

const DEFAULT_LIMIT = 20;
export const SESSION_CONTEXT_PREFIX = "ctx:opencode-session:";
const SESSION_ID = /^ses[\w-]{1,200}$/;
const MESSAGE_ID = /^msg[\w-]{1,200}$/;
const PART_ID = /^prt[\w-]{1,200}$/;

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const isoOf = (ms: unknown): string | undefined => {
  const n = num(ms);
  return n === undefined ? undefined : new Date(n).toISOString();
};

const isUpstreamMessage = (v: unknown): v is UpstreamMessage =>
  isObject(v) && isObject(v.info) && typeof v.info.id === "string" && Array.isArray(v.parts);
const isArray = (v: unknown): v is unknown[] => Array.isArray(v);

export const sessionContextId = (sessionId: string): string => `${SESSION_CONTEXT_PREFIX}${sessionId}`;

// ---------------------------------------------------------------------------------------------------------------
// Params

function sessionIdOf(params: Params): string {
  const id = params.session_id;
  if (typeof id !== "string" || !SESSION_ID.test(id)) throw invalid("session_id", "must be an OpenCode session id (ses_…)");
  return id;
}

function idParam(value: unknown, field: string, pattern: RegExp, what: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !pattern.test(value)) throw invalid(field, `must be an OpenCode ${what} id`);
  return value;
}

/** Paging/query styles the methods do not take: refused instead of silently ignored. */
function refuseFields(params: Params, fields: string[], method: string): void {
  for (const f of fields) if (params[f] !== undefined) throw invalid(f, `is not supported by ${method}`);
}

function request(params: Params): Obj {
  return isObject(params.request) ? params.request : {};
}

/** `{providerID, modelID}` of a request field, both or neither. */
function modelOf(value: unknown, field: string): { providerID: string; modelID: string } | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value) || typeof value.providerID !== "string" || typeof value.modelID !== "string" || !value.providerID || !value.modelID)
    throw invalid(field, "needs both providerID and modelID");
  return { providerID: value.providerID, modelID: value.modelID };
}

// ---------------------------------------------------------------------------------------------------------------
// Projections

interface ProjectionContext {
  /** Session directory → the directory relative to the workspace root, or undefined when outside it. */
  relative(dir: string | undefined): string | undefined;
}

/** A session as an A2A task (line-neutral; the codec shapes it). */
export function sessionTask(s: Session, ctx: ProjectionContext): Task {
  const timestamp = isoOf(s.time?.updated) ?? isoOf(s.time?.created) ?? new Date().toISOString();
  const opencode = compact({
    project_id: str(s.projectID),
    parent_id: str(s.parentID),
    directory: ctx.relative(str(s.directory)),
    created_at: isoOf(s.time?.created),
    updated_at: isoOf(s.time?.updated),
    archived_at: isoOf(s.time?.archived),
    share_url: str(s.share?.url),
    version: str(s.version),
  });
  return {
    id: s.id,
    contextId: sessionContextId(s.id),
    status: { state: "completed", timestamp },
    metadata: { shared: { session: compact({ id: s.id, title: str(s.title) }) }, opencode: { session: opencode } },
  };
}

/** The text of a message: its text parts; else tool outputs (shell); else sub-task prompts; else synthetic text. */
export function messageText(parts: Obj[]): string {
  const texts = (synthetic: boolean) =>
    parts.filter((p) => p.type === "text" && typeof p.text === "string" && p.ignored !== true && (p.synthetic === true) === synthetic).map((p) => p.text as string);
  const own = texts(false);
  if (own.length > 0) return own.join("\n");
  const outputs = parts.flatMap((p) => {
    const state = isObject(p.state) ? p.state : undefined;
    if (p.type !== "tool" || state === undefined) return [];
    if (state.status === "completed" && typeof state.output === "string") return [state.output];
    if (state.status === "error" && typeof state.error === "string") return [state.error];
    return [];
  });
  if (outputs.length > 0) return outputs.join("\n");
  const prompts = parts.flatMap((p) => (p.type === "subtask" && typeof p.prompt === "string" ? [p.prompt] : []));
  if (prompts.length > 0) return prompts.join("\n");
  return texts(true).join("\n");
}

/** An OpenCode message as an A2A message (line-neutral). Assistant paths (cwd/root) are left out. */
export function sessionMessage(sessionId: string, m: UpstreamMessage): Message {
  const info = m.info;
  const role = info.role === "user" ? "user" : "agent";
  const time = isObject(info.time) ? info.time : {};
  const userModel = isObject(info.model) ? info.model : undefined;
  const model =
    userModel !== undefined
      ? compact({ providerID: str(userModel.providerID), modelID: str(userModel.modelID) })
      : typeof info.providerID === "string" || typeof info.modelID === "string"
        ? compact({ providerID: str(info.providerID), modelID: str(info.modelID) })
        : undefined;
  const error = isObject(info.error) ? str(info.error.name) : undefined;
  const opencode = compact({
    role: str(info.role),
    agent: str(info.agent),
    parent_id: str(info.parentID),
    model,
    finish: str(info.finish),
    error,
    created_at: isoOf(time.created),
    completed_at: isoOf(time.completed),
  });
  return {
    messageId: String(info.id),
    role,
    parts: [{ kind: "text", text: messageText(m.parts.filter(isObject)) }],
    contextId: sessionContextId(sessionId),
    metadata: { shared: { session: { id: sessionId } }, opencode: { message: opencode } },
  };
}

/** The provider-private session summary of lifecycle results (no local paths). */
export function sessionSummary(s: Session): Obj {
  const revert = isObject(s.revert)
    ? compact({ message_id: str(s.revert.messageID), part_id: str(s.revert.partID), snapshot: str(s.revert.snapshot), diff: str(s.revert.diff) })
    : undefined;
  return compact({
    id: s.id,
    title: str(s.title) ?? "",
    project_id: str(s.projectID),
    parent_id: str(s.parentID),
    version: str(s.version),
    share_url: str(s.share?.url),
    revert,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Cursor: the upstream `X-Next-Cursor`, bound to its session so that a cursor of another session or a malformed one
// is refused as an invalid `before` instead of reaching OpenCode. It is not signed: it only names a position in a
// session the caller may read anyway (a forged one pages from another message of the same session).

function encodeCursor(sessionId: string, upstream: string): string {
  return Buffer.from(JSON.stringify({ v: 1, s: sessionId, c: upstream }), "utf8").toString("base64url");
}

function decodeCursor(sessionId: string, cursor: unknown): string | undefined {
  if (cursor === undefined) return undefined;
  const refuse = () => invalid("before", "is not a next_cursor of this session's messages");
  if (typeof cursor !== "string" || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw refuse();
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw refuse();
  }
  if (!isObject(decoded) || decoded.v !== 1 || decoded.s !== sessionId || typeof decoded.c !== "string" || decoded.c === "") throw refuse();
  return decoded.c;
}

// ---------------------------------------------------------------------------------------------------------------

export function handlers(deps: ExtensionDeps): Record<string, MethodHandler> {
  const { upstream, routing: policy } = deps;
  const owners = deps.storage.sessions;

  // Workspace-root-relative directories for projections (the root as configured and as realpath).
  let roots: string[] | undefined;
  const relative = (dir: string | undefined): string | undefined => {
    if (dir === undefined || dir === "") return undefined;
    if (roots === undefined) {
      const configured = path.resolve(policy.root);
      let real = configured;
      try {
        real = fs.realpathSync.native(configured);
      } catch {
        // keep the configured path
      }
      roots = [...new Set([real, configured])];
    }
    for (const root of roots) {
      const rel = path.relative(root, path.resolve(dir));
      if (rel === "") return ".";
      if (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel)) return rel.split(path.sep).join("/");
    }
    return undefined;
  };
  const projection: ProjectionContext = { relative };

  /** One upstream call; UpstreamErrors leave as the project's typed A2A errors. */
  async function call<T>(operation: string, invoke: (c: CallContext) => Promise<SdkResult<T>>, opts: CallOptions): Promise<T> {
    try {
      return await upstream.call(operation, invoke, opts);
    } catch (error) {
      if (error instanceof UpstreamError) throw error.toA2AError();
      throw error;
    }
  }

  /**
   * Instance routing: `metadata.opencode.workspace.id` wins, then the `directory` param, then
   * `metadata.opencode.directory`; it carries the request's trace, so every OpenCode call made with it sends it.
   */
  function routingOf(params: Params, c: Call): Routing {
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
  const visible = (principal: Principal, sessionId: string): boolean => {
    if (principal.admin) return true;
    const owner = owners.getOwner(sessionId);
    if (owner !== undefined) return owner === principal.id;
    return owners.getClaim(sessionId)?.owner === principal.id;
  };
  /** The one answer for a session that does not exist and a session the caller may not see. */
  const sessionNotFound = (sessionId: string): A2AError => new A2AError("SESSION_NOT_FOUND", undefined, { session_id: sessionId });
  /** The session id of a read, refused as not found when the caller may not see the session. */
  const readableSession = (params: Params, principal: Principal): string => {
    const sessionId = sessionIdOf(params);
    if (!visible(principal, sessionId)) throw sessionNotFound(sessionId);
    return sessionId;
  };

  const getSession = (sessionId: string, routing: Routing): Promise<Session> =>
    call("sessionGet", (c) => sdk.sessionGet({ ...c, path: { sessionID: sessionId } }), { ...routing, sessionId, validate: isSession });

  /**
   * The owner guard of control methods. Owned by the caller → run. Owned (or claimed) by another principal →
   * SESSION_NOT_FOUND for non-admins (they may not even see it), SESSION_FORBIDDEN for admins. Unknown to the gateway → claimed, checked upstream (SESSION_NOT_FOUND), run, and the caller
   * owns it afterwards; a failed run releases the claim.
   */
  async function guarded<T>(principal: Principal, sessionId: string, routing: Routing, run: (session?: Session) => Promise<T>): Promise<T> {
    const outcome = owners.claim(sessionId, principal.id, deps.config.pendingClaimTtl);
    if (outcome.status === "forbidden") {
      if (!principal.admin) throw sessionNotFound(sessionId);
      throw new A2AError("SESSION_FORBIDDEN", undefined, { session_id: sessionId });
    }
    if (outcome.status === "owned") return run();
    try {
      const session = await getSession(sessionId, routing);
      const result = await run(session);
      owners.finalize(sessionId, principal.id);
      return result;
    } catch (error) {
      owners.release(sessionId, principal.id);
      throw error;
    }
  }

  const codec = (c: Call) => codecFor(c.line, c.transport);
  const task = (c: Call, s: Session): unknown => codec(c).task(sessionTask(s, projection));
  const message = (c: Call, sessionId: string, m: UpstreamMessage): unknown => codec(c).message(sessionMessage(sessionId, m));

  /** The model a summary runs with when the request names none: the session's, else its latest message's. */
  async function currentModel(sessionId: string, routing: Routing, known?: Session): Promise<{ providerID: string; modelID: string }> {
    const session = known ?? (await getSession(sessionId, routing));
    if (session.model?.providerID && session.model.id) return { providerID: session.model.providerID, modelID: session.model.id };
    const recent = await call(
      "sessionMessages",
      (c) => sdk.sessionMessages({ ...c, path: { sessionID: sessionId }, query: { ...c.query, limit: 20 } }),
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
  async function unknownName(error: unknown, kind: "command" | "agent", name: string, routing: Routing): Promise<A2AError | undefined> {
    if (!(error instanceof A2AError) || error.reason !== "UPSTREAM_HTTP_ERROR" || error.data.upstream_status !== 500) return undefined;
    try {
      const list =
        kind === "command"
          ? await upstream.call("commandList", (c) => sdk.commandList({ ...c }), { ...routing, validate: isArray })
          : await upstream.call("appAgents", (c) => sdk.appAgents({ ...c }), { ...routing, validate: isArray });
      const known = (list as unknown[]).some((x) => isObject(x) && x.name === name);
      return known ? undefined : invalid(`request.${kind}`, `OpenCode has no ${kind} named ${JSON.stringify(name)}`);
    } catch {
      return undefined;
    }
  }

  return {
    // ---- reads ----------------------------------------------------------------------------------------------------

    "opencode.sessions.status": async (params, c) => {
      const routing = routingOf(params, c);
      const statuses = await call("sessionStatus", (x) => sdk.sessionStatus({ ...x }), { ...routing, validate: isObject });
      const items = Object.entries(statuses as Obj).flatMap(([sessionId, raw]) => {
        if (!isObject(raw) || typeof raw.type !== "string" || raw.type === "idle") return [];
        if (!visible(c.principal, sessionId)) return [];
        return [compact({ session_id: sessionId, type: raw.type, attempt: num(raw.attempt), message: str(raw.message), next: num(raw.next) })];
      });
      return { items };
    },

    "opencode.sessions.list": async (params, c) => {
      refuseFields(params, ["cursor", "page", "size", "before", "query"], "opencode.sessions.list");
      const routing = routingOf(params, c);
      const limit = typeof params.limit === "number" ? params.limit : DEFAULT_LIMIT;
      // A non-admin sees only its own sessions: OpenCode's newest `limit` may all be someone else's, so the filter
      // runs over the whole list and the limit after it.
      const query = compact({
        limit: c.principal.admin ? limit : undefined,
        roots: typeof params.roots === "boolean" ? params.roots : undefined,
        start: typeof params.start === "number" ? params.start : undefined,
        search: typeof params.search === "string" ? params.search : undefined,
      });
      const sessions = await call("sessionList", (x) => sdk.sessionList({ ...x, query: { ...x.query, ...query } }), { ...routing, validate: isArray });
      const items = (sessions as unknown[])
        .filter(isSession)
        .filter((s) => visible(c.principal, s.id))
        .slice(0, limit)
        .map((s) => task(c, s));
      return { items };
    },

    "opencode.sessions.get": async (params, c) => {
      const sessionId = readableSession(params, c.principal);
      return { item: task(c, await getSession(sessionId, routingOf(params, c))) };
    },

    "opencode.sessions.children": async (params, c) => {
      const sessionId = readableSession(params, c.principal);
      const children = await call("sessionChildren", (x) => sdk.sessionChildren({ ...x, path: { sessionID: sessionId } }), {
        ...routingOf(params, c),
        sessionId,
        validate: isArray,
      });
      return {
        items: (children as unknown[])
          .filter(isSession)
          .filter((s) => visible(c.principal, s.id))
          .map((s) => task(c, s)),
      };
    },

    "opencode.sessions.todo": async (params, c) => {
      const sessionId = readableSession(params, c.principal);
      const todos = await call("sessionTodo", (x) => sdk.sessionTodo({ ...x, path: { sessionID: sessionId } }), {
        ...routingOf(params, c),
        sessionId,
        validate: isArray,
      });
      const items = (todos as unknown[]).filter(isObject).map((t) =>
        compact({ id: str(t.id), content: str(t.content) ?? "", status: str(t.status) ?? "", priority: str(t.priority) ?? "" }),
      );
      return { items };
    },

    "opencode.sessions.diff": async (params, c) => {
      const sessionId = readableSession(params, c.principal);
      const messageID = idParam(params.message_id, "message_id", MESSAGE_ID, "message");
      const routing = routingOf(params, c);
      // OpenCode answers [] for a session it does not have: the session is read alongside to tell the two apart.
      const [, diffs] = await Promise.all([
        getSession(sessionId, routing),
        call(
          "sessionDiff",
          (x) => sdk.sessionDiff({ ...x, path: { sessionID: sessionId }, query: { ...x.query, ...(messageID === undefined ? {} : { messageID }) } }),
          { ...routing, sessionId, validate: isArray },
        ),
      ]);
      const items = (diffs as unknown[]).filter(isObject).map((d) => {
        const file = str(d.file) ?? "";
        return compact({
          file: path.isAbsolute(file) ? (relative(file) ?? path.basename(file)) : file,
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
      const sessionId = readableSession(params, c.principal);
      const before = decodeCursor(sessionId, params.before);
      const limit = typeof params.limit === "number" ? params.limit : DEFAULT_LIMIT;
      let next: string | null = null;
      const messages = await call(
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
        { ...routingOf(params, c), sessionId, validate: isArray },
      );
      const items = (messages as unknown[]).filter(isUpstreamMessage).map((m) => message(c, sessionId, m));
      return { items, next_cursor: next === null ? null : encodeCursor(sessionId, next) };
    },

    "opencode.sessions.messages.get": async (params, c) => {
      const sessionId = readableSession(params, c.principal);
      const messageId = idParam(params.message_id, "message_id", MESSAGE_ID, "message")!;
      const routing = routingOf(params, c);
      try {
        // No sessionId here: OpenCode's 404 names a missing message as often as a missing session.
        const found = await upstream.call(
          "sessionMessage",
          (x) => sdk.sessionMessage({ ...x, path: { sessionID: sessionId, messageID: messageId } }),
          { ...routing, validate: isUpstreamMessage },
        );
        return { item: message(c, sessionId, found as UpstreamMessage) };
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        if (error.kind === "http" && error.status === 404) await getSession(sessionId, routing); // SESSION_NOT_FOUND wins
        throw error.toA2AError();
      }
    },

    // ---- control --------------------------------------------------------------------------------------------------

    "opencode.sessions.prompt_async": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = routingOf(params, c);
      const r = request(params);
      const parts = (Array.isArray(r.parts) ? r.parts : []).map((raw, i) => promptPart(raw, `request.parts.${i}`));
      const format = r.format === undefined ? undefined : promptFormat(r.format);
      const body = compact({
        parts,
        messageID: str(r.messageID),
        model: modelOf(r.model, "request.model"),
        agent: str(r.agent),
        noReply: typeof r.noReply === "boolean" ? r.noReply : undefined,
        tools: isObject(r.tools) ? (r.tools as Record<string, boolean>) : undefined,
        format,
        system: str(r.system),
        variant: str(r.variant),
      });
      return guarded(c.principal, sessionId, routing, async () => {
        let status: number | undefined;
        await call(
          "sessionPromptAsync",
          async (x) => {
            const result = await sdk.sessionPromptAsync({ ...x, path: { sessionID: sessionId }, body });
            status = result.response?.status;
            return result;
          },
          { ...routing, sessionId },
        );
        if (status !== 204) {
          throw new UpstreamError({ kind: "payload", operation: "sessionPromptAsync", detail: `expected 204, got ${status}`, ...(status === undefined ? {} : { status }) }).toA2AError();
        }
        return { ok: true, session_id: sessionId };
      });
    },

    "opencode.sessions.command": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = routingOf(params, c);
      const r = request(params);
      const name = (str(r.command) ?? "").replace(/^\//, "");
      if (name === "") throw invalid("request.command", "must name a command");
      const model = modelOf(r.model, "request.model");
      const files = Array.isArray(r.parts) ? r.parts.map((p, i) => filePart(p, `request.parts.${i}`)) : undefined;
      const body = compact({
        command: name,
        arguments: str(r.arguments) ?? "",
        messageID: str(r.messageID),
        agent: str(r.agent),
        model: model === undefined ? undefined : `${model.providerID}/${model.modelID}`,
        variant: str(r.variant),
        parts: files,
      });
      return guarded(c.principal, sessionId, routing, async () => {
        try {
          const result = await call("sessionCommand", (x) => sdk.sessionCommand({ ...x, path: { sessionID: sessionId }, body }), {
            ...routing,
            sessionId,
            validate: isUpstreamMessage,
          });
          return { item: message(c, sessionId, result as unknown as UpstreamMessage) };
        } catch (error) {
          throw (await unknownName(error, "command", name, routing)) ?? error;
        }
      });
    },

    "opencode.sessions.shell": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = routingOf(params, c);
      const r = request(params);
      const agent = str(r.agent) ?? "";
      const command = str(r.command) ?? "";
      if (agent === "") throw invalid("request.agent", "is required");
      if (command === "") throw invalid("request.command", "is required");
      const body = compact({ agent, command, model: modelOf(r.model, "request.model") });
      return guarded(c.principal, sessionId, routing, async () => {
        try {
          const result = await call("sessionShell", (x) => sdk.sessionShell({ ...x, path: { sessionID: sessionId }, body }), {
            ...routing,
            sessionId,
            validate: isUpstreamMessage,
          });
          return { item: message(c, sessionId, result as unknown as UpstreamMessage) };
        } catch (error) {
          throw (await unknownName(error, "agent", agent, routing)) ?? error;
        }
      });
    },

    "opencode.sessions.fork": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = routingOf(params, c);
      const messageID = idParam(request(params).messageID, "request.messageID", MESSAGE_ID, "message");
      return guarded(c.principal, sessionId, routing, async () => {
        const fork = await call(
          "sessionFork",
          (x) => sdk.sessionFork({ ...x, path: { sessionID: sessionId }, body: messageID === undefined ? {} : { messageID } }),
          { ...routing, sessionId, validate: isSession },
        );
        // The gateway created the fork for the caller: the caller owns it.
        owners.setOwner(fork.id, c.principal.id);
        return { item: sessionSummary(fork) };
      });
    },

    "opencode.sessions.share": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = routingOf(params, c);
      return guarded(c.principal, sessionId, routing, async () => {
        const s = await call("sessionShare", (x) => sdk.sessionShare({ ...x, path: { sessionID: sessionId } }), { ...routing, sessionId, validate: isSession });
        return { item: sessionSummary(s) };
      });
    },

    "opencode.sessions.unshare": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = routingOf(params, c);
      return guarded(c.principal, sessionId, routing, async () => {
        const s = await call("sessionUnshare", (x) => sdk.sessionUnshare({ ...x, path: { sessionID: sessionId } }), { ...routing, sessionId, validate: isSession });
        return { item: sessionSummary(s) };
      });
    },

    "opencode.sessions.summarize": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = routingOf(params, c);
      const r = request(params);
      const providerID = str(r.providerID);
      const modelID = str(r.modelID);
      if ((providerID === undefined) !== (modelID === undefined))
        throw invalid(providerID === undefined ? "request.providerID" : "request.modelID", "is required together with the other half of the model");
      const auto = typeof r.auto === "boolean" ? r.auto : undefined;
      return guarded(c.principal, sessionId, routing, async (known) => {
        const model = providerID !== undefined && modelID !== undefined ? { providerID, modelID } : await currentModel(sessionId, routing, known);
        await call(
          "sessionSummarize",
          (x) => sdk.sessionSummarize({ ...x, path: { sessionID: sessionId }, body: compact({ ...model, auto }) }),
          { ...routing, sessionId, validate: (d) => d === true },
        );
        return { ok: true, session_id: sessionId };
      });
    },

    "opencode.sessions.revert": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = routingOf(params, c);
      const r = request(params);
      const messageID = idParam(r.messageID, "request.messageID", MESSAGE_ID, "message");
      if (messageID === undefined) throw invalid("request.messageID", "is required");
      const partID = idParam(r.partID, "request.partID", PART_ID, "part");
      return guarded(c.principal, sessionId, routing, async () => {
        const s = await call(
          "sessionRevert",
          (x) => sdk.sessionRevert({ ...x, path: { sessionID: sessionId }, body: compact({ messageID, partID }) }),
          { ...routing, sessionId, validate: isSession },
        );
        return { item: sessionSummary(s) };
      });
    },

    "opencode.sessions.unrevert": async (params, c) => {
      const sessionId = sessionIdOf(params);
      const routing = routingOf(params, c);
      return guarded(c.principal, sessionId, routing, async () => {
        const s = await call("sessionUnrevert", (x) => sdk.sessionUnrevert({ ...x, path: { sessionID: sessionId } }), { ...routing, sessionId, validate: isSession });
        return { item: sessionSummary(s) };
      });
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Prompt input: OpenCode's own part shapes, passed through with only the declared fields.

type PromptPartInput = Exclude<NonNullable<Parameters<typeof sdk.sessionPromptAsync>[0]["body"]>, undefined>["parts"][number];

function filePart(raw: unknown, field: string): { type: "file"; mime: string; url: string; filename?: string } {
  if (!isObject(raw) || raw.type !== "file") throw invalid(field, "must be a file part");
  const mime = str(raw.mime);
  const url = str(raw.url);
  if (!mime) throw invalid(`${field}.mime`, "is required");
  if (!url) throw invalid(`${field}.url`, "is required");
  return compact({ type: "file" as const, mime, url, filename: str(raw.filename) });
}

function promptPart(raw: unknown, field: string): PromptPartInput {
  if (!isObject(raw)) throw invalid(field, "must be an object");
  switch (raw.type) {
    case "text":
      if (typeof raw.text !== "string") throw invalid(`${field}.text`, "is required");
      return { type: "text", text: raw.text };
    case "file":
      return filePart(raw, field);
    case "agent":
      if (!str(raw.name)) throw invalid(`${field}.name`, "is required");
      return { type: "agent", name: raw.name as string };
    case "subtask": {
      for (const key of ["prompt", "description", "agent"] as const)
        if (typeof raw[key] !== "string") throw invalid(`${field}.${key}`, "is required");
      return compact({
        type: "subtask" as const,
        prompt: raw.prompt as string,
        description: raw.description as string,
        agent: raw.agent as string,
        model: modelOf(raw.model, `${field}.model`),
        command: str(raw.command),
      });
    }
    default:
      throw invalid(`${field}.type`, "must be one of text, file, agent, subtask");
  }
}

function promptFormat(raw: unknown): OutputFormat {
  if (!isObject(raw)) throw invalid("request.format", "must be an object");
  if (raw.type === "text") return { type: "text" };
  if (raw.type === "json_schema") {
    if (!isObject(raw.schema)) throw invalid("request.format.schema", "is required");
    return compact({ type: "json_schema" as const, schema: raw.schema, retryCount: num(raw.retryCount) });
  }
  throw invalid("request.format.type", "must be text or json_schema");
}
