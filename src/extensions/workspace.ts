// Extension family: workspace control (`opencode.projects.*`, `opencode.workspaces.*`, `opencode.worktrees.*`).
//
// These methods address the OpenCode deployment's active project: they always use the gateway's default routing
// (OPENCODE_WORKSPACE_ROOT, else OpenCode's cwd); `metadata` is accepted and ignored. The mutating methods are
// declared `@conditional("A2A_ENABLE_WORKSPACE_MUTATIONS")`, so the dispatcher answers METHOD_NOT_SUPPORTED for
// them before a handler runs when the toggle is off.
//
// Path redaction (unless A2A_EXPOSE_WORKSPACE_ROOT_IN_CARD=true → config.exposeWorkspaceRoot):
// - results carry no local paths: project `worktree`, workspace `directory` and worktree `directory` are left out,
//   and so are project `sandboxes` / `icon` / `commands` and workspace `extra` in every case;
// - a worktree is named by the last segment of its directory (OpenCode keeps a project's worktrees side by side in
//   one directory, named after the worktree), and that name is the handle remove/reset accept;
// - absolute paths inside upstream error details (e.g. git's "fatal: '/srv/repo' is a main working tree") are
//   reduced to `…/<last segment>`.
import type { WorkspaceControlHandlers } from "../../generated/types/methods.js";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { Project, Workspace, Worktree } from "../../generated/opencode/types.gen.js";
import type { ProjectSummary, WorkspaceSummary, WorktreeSummary } from "../../generated/types/extensions.js";
import { A2AError, invalidParams } from "../contract/errors.js";
import type { Call } from "../operations/index.js";
import type { TraceContext } from "../tracing/index.js";
import type { CallContext, SdkResult } from "../upstream/client.js";
import { UpstreamError } from "../upstream/errors.js";
import type { ExtensionDeps } from "./context.js";
import { isObject } from "../util/object.js";

const nonEmpty = (v: unknown): v is string => typeof v === "string" && v !== "";

const isProject = (v: unknown): v is Project => isObject(v) && nonEmpty(v.id);
const isWorkspace = (v: unknown): v is Workspace => isObject(v) && nonEmpty(v.id) && nonEmpty(v.type);
const isWorktree = (v: unknown): v is Worktree => isObject(v) && nonEmpty(v.name);

/**
 * Absolute POSIX paths (`/a/b`, not the `//host/x` of a URL nor the `b/c` of a relative path) and Windows drive
 * paths in free text.
 */
const ABSOLUTE_PATH = /(?<![\w.~:/\\-])(?:\/|[A-Za-z]:\\)[^\s'"`,;()<>[\]{}]*/g;

/** Replaces every absolute path in `text` by `…/<last segment>`. */
export function redactPaths(text: string): string {
  return text.replace(ABSOLUTE_PATH, (match) => {
    const trimmed = match.replace(/[/\\.:]+$/, "");
    const last = trimmed.split(/[/\\]/).filter((s) => s !== "").at(-1);
    return last === undefined ? match : `…/${last}${match.slice(trimmed.length)}`;
  });
}

/** Last segment of a directory, whatever the OpenCode host's separator. */
function lastSegment(directory: string): string {
  return directory.replace(/[/\\]+$/, "").split(/[/\\]/).at(-1) ?? directory;
}

/** A worktree request names its target by either field. */
const NAME_OR_DIRECTORY = ["request.name", "request.directory"];

export function handlers(deps: ExtensionDeps) {
  const expose = deps.config.exposeWorkspaceRoot;

  /** One upstream call on the default routing; failures become typed A2A errors, with paths redacted. */
  async function call<T>(operation: string, invoke: (c: CallContext) => Promise<SdkResult<T>>, validate: (d: unknown) => boolean, trace?: TraceContext): Promise<T> {
    try {
      return await deps.upstream.call(operation, invoke, { validate, ...(trace === undefined ? {} : { trace }) });
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      const a2a = error.toA2AError();
      if (expose || typeof a2a.data.detail !== "string") throw a2a;
      const message = a2a.hasCustomMessage ? redactPaths(a2a.message) : undefined;
      throw new A2AError(a2a.reason, message, { ...a2a.data, detail: redactPaths(a2a.data.detail) }, a2a.options);
    }
  }

  function project(p: Project): ProjectSummary {
    const out: ProjectSummary = { id: p.id };
    if (nonEmpty(p.name)) out.name = p.name;
    if (nonEmpty(p.vcs)) out.vcs = p.vcs;
    if (expose && nonEmpty(p.worktree)) out.worktree = p.worktree;
    return out;
  }

  function workspace(w: Workspace): WorkspaceSummary {
    const out: WorkspaceSummary = { id: w.id, type: w.type };
    if (nonEmpty(w.name)) out.name = w.name;
    if (w.branch === null || typeof w.branch === "string") out.branch = w.branch;
    if (expose && nonEmpty(w.directory)) out.directory = w.directory;
    return out;
  }

  function worktree(w: { name: string; branch?: string | undefined; directory?: string | undefined }): WorktreeSummary {
    const out: WorktreeSummary = { name: w.name };
    if (nonEmpty(w.branch)) out.branch = w.branch;
    if (expose && nonEmpty(w.directory)) out.directory = w.directory;
    return out;
  }

  const listWorktrees = (trace?: TraceContext): Promise<string[]> =>
    call("worktreeList", (c) => sdk.worktreeList({ ...c }), (d) => Array.isArray(d) && d.every(nonEmpty), trace);

  /** The directory `request` targets: `directory` as given, or the listed worktree whose last segment is `name`. */
  async function targetDirectory(request: Record<string, unknown>, trace?: TraceContext): Promise<string> {
    const { name, directory } = request;
    if (name !== undefined && directory !== undefined) {
      const both = "give either request.name or request.directory, not both";
      throw invalidParams(both, NAME_OR_DIRECTORY, { field: "request", detail: both });
    }
    if (typeof directory === "string") return directory;
    if (typeof name !== "string") {
      const neither = "request.name (or request.directory) is required";
      throw invalidParams(neither, NAME_OR_DIRECTORY, { detail: neither });
    }
    const matches = (await listWorktrees(trace)).filter((d) => lastSegment(d) === name);
    if (matches.length !== 1) {
      const problem =
        matches.length === 0
          ? `no worktree named ${JSON.stringify(name)} in the active OpenCode project`
          : `worktree name ${JSON.stringify(name)} is ambiguous; pass request.directory`;
      throw invalidParams(problem, "request.name", { detail: problem });
    }
    return matches[0]!;
  }

  const requestOf = (params: Record<string, unknown>): Record<string, unknown> => (isObject(params.request) ? params.request : {});

  return {
    "opencode.projects.list": async (_params, k) => {
      const projects = await call("projectList", (c) => sdk.projectList({ ...c }), (d) => Array.isArray(d) && d.every(isProject), k.trace);
      return { items: projects.map(project) };
    },

    "opencode.projects.current": async (_params, k) => {
      const current = await call("projectCurrent", (c) => sdk.projectCurrent({ ...c }), isProject, k.trace);
      return { item: project(current) };
    },

    "opencode.workspaces.list": async (_params, k) => {
      const list = await call(
        "experimentalWorkspaceList",
        (c) => sdk.experimentalWorkspaceList({ ...c }),
        (d) => Array.isArray(d) && d.every(isWorkspace),
       k.trace);
      return { items: list.map(workspace) };
    },

    "opencode.workspaces.create": async (params, k) => {
      const request = requestOf(params);
      const body = {
        type: request.type as string,
        ...(typeof request.id === "string" ? { id: request.id } : {}),
        ...(request.branch === null || typeof request.branch === "string" ? { branch: request.branch } : {}),
        ...(request.extra === undefined ? {} : { extra: request.extra }),
      };
      const created = await call("experimentalWorkspaceCreate", (c) => sdk.experimentalWorkspaceCreate({ ...c, body }), isWorkspace, k.trace);
      return { item: workspace(created) };
    },

    "opencode.workspaces.remove": async (params, k) => {
      const id = params.workspace_id as string;
      const removed = await call(
        "experimentalWorkspaceRemove",
        (c) => sdk.experimentalWorkspaceRemove({ ...c, path: { id } }),
        (d) => d === null || d === undefined || isWorkspace(d),
       k.trace);
      return { item: isWorkspace(removed) ? workspace(removed) : null };
    },

    "opencode.worktrees.list": async (_params, k) => {
      const directories = await listWorktrees(k.trace);
      return { items: directories.map((d) => worktree({ name: lastSegment(d), directory: d })) };
    },

    "opencode.worktrees.create": async (params, k) => {
      const request = requestOf(params);
      const body = {
        ...(typeof request.name === "string" ? { name: request.name } : {}),
        ...(typeof request.startCommand === "string" ? { startCommand: request.startCommand } : {}),
      };
      const created = await call("worktreeCreate", (c) => sdk.worktreeCreate({ ...c, body }), isWorktree, k.trace);
      return { item: worktree(created) };
    },

    "opencode.worktrees.remove": async (params, k) => {
      const directory = await targetDirectory(requestOf(params), k.trace);
      const ok = await call("worktreeRemove", (c) => sdk.worktreeRemove({ ...c, body: { directory } }), (d) => typeof d === "boolean", k.trace);
      return { ok };
    },

    "opencode.worktrees.reset": async (params, k) => {
      const directory = await targetDirectory(requestOf(params), k.trace);
      const ok = await call("worktreeReset", (c) => sdk.worktreeReset({ ...c, body: { directory } }), (d) => typeof d === "boolean", k.trace);
      return { ok };
    },
  } satisfies WorkspaceControlHandlers<Call>;
}
