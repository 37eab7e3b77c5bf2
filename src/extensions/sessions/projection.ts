// Projections of OpenCode sessions and messages (seed 000). A session becomes an A2A Task (id = session id,
// contextId = ctx:opencode-session:<id>, state completed, metadata.shared.session {id, title}); a message becomes an
// A2A Message with one text part holding its aggregated text; both are line-neutral here and shaped for the caller's
// protocol line by the codec. Lifecycle results carry the provider-private session summary. Nothing carries a local
// filesystem path: session directories appear only relative to the workspace root, and only when they are inside it.
import fs from "node:fs";
import path from "node:path";
import type { Session } from "../../../generated/opencode/types.gen.js";
import type { SessionSummary } from "../../../generated/types/extensions.js";
import { compact } from "../../protocol/codec/common.js";
import type { Message, Task } from "../../protocol/model.js";
import { isObject, type Obj } from "../../util/object.js";

/** A message as OpenCode returns it: `{info, parts}`. */
export interface UpstreamMessage {
  info: Obj;
  parts: Obj[];
}

export const SESSION_CONTEXT_PREFIX = "ctx:opencode-session:";

export const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const isoOf = (ms: unknown): string | undefined => {
  const n = num(ms);
  return n === undefined ? undefined : new Date(n).toISOString();
};

export const isUpstreamMessage = (v: unknown): v is UpstreamMessage =>
  isObject(v) && isObject(v.info) && typeof v.info.id === "string" && Array.isArray(v.parts);
export const isArray = (v: unknown): v is unknown[] => Array.isArray(v);

export const sessionContextId = (sessionId: string): string => `${SESSION_CONTEXT_PREFIX}${sessionId}`;

export interface ProjectionContext {
  /** Session directory → the directory relative to the workspace root, or undefined when outside it. */
  relative(dir: string | undefined): string | undefined;
}

/** Workspace-root-relative directories for projections (the root as configured and as realpath). */
export function workspaceRelative(root: string): ProjectionContext["relative"] {
  let roots: string[] | undefined;
  return (dir) => {
    if (dir === undefined || dir === "") return undefined;
    if (roots === undefined) {
      const configured = path.resolve(root);
      let real = configured;
      try {
        real = fs.realpathSync.native(configured);
      } catch {
        // keep the configured path
      }
      roots = [...new Set([real, configured])];
    }
    for (const r of roots) {
      const rel = path.relative(r, path.resolve(dir));
      if (rel === "") return ".";
      if (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel)) return rel.split(path.sep).join("/");
    }
    return undefined;
  };
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
export function sessionSummary(s: Session): SessionSummary {
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
