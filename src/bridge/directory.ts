// Where a turn runs: the directory boundary of `metadata.opencode.directory` and the workspace override.
//
// - `metadata.opencode.workspace.id` wins over any directory (OpenCode routes by `?workspace=`).
// - A directory override must resolve (realpath: symlinks and `..` resolved) to OPENCODE_WORKSPACE_ROOT or below
//   it; with A2A_ALLOW_DIRECTORY_OVERRIDE=false only the default directory itself is accepted.
// - Without an override the default directory (the workspace root) is used.
import fs from "node:fs";
import path from "node:path";
import { A2AError, invalidParams } from "../contract/errors.js";
import type { Metadata } from "../protocol/model.js";
import { isObject } from "../util/object.js";

export interface RoutingPolicy {
  /** OPENCODE_WORKSPACE_ROOT, or the gateway's cwd. */
  root: string;
  allowOverride: boolean;
}

/** Instance routing for one request: a workspace id, or a realpath directory, or nothing (OpenCode's default). */
export type Routing = { workspace: string } | { directory: string } | Record<string, never>;

function refuse(field: string, message: string): A2AError {
  return invalidParams(message, field, {}, "field");
}

function realpath(p: string, field: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    throw refuse(field, `directory does not exist: ${p}`);
  }
}

/** The canonical root (computed once per policy; the root itself may be a symlink). */
const roots = new Map<string, string>();
function canonicalRoot(root: string): string {
  let hit = roots.get(root);
  if (hit === undefined) {
    hit = fs.realpathSync.native(path.resolve(root));
    roots.set(root, hit);
  }
  return hit;
}

/** Resolves `metadata.opencode.{workspace.id, directory}` of a message/request into instance routing. */
export function resolveRouting(metadata: Metadata | undefined, policy: RoutingPolicy): Routing {
  const opencode = isObject(metadata?.opencode) ? metadata.opencode : undefined;
  const workspace = isObject(opencode?.workspace) ? opencode.workspace.id : undefined;
  if (workspace !== undefined) {
    if (typeof workspace !== "string" || workspace.trim() === "") {
      throw refuse("metadata.opencode.workspace.id", "workspace.id must be a non-empty string");
    }
    return { workspace };
  }
  const requested = opencode?.directory;
  if (requested === undefined || requested === null) return {};
  const field = "metadata.opencode.directory";
  if (typeof requested !== "string" || requested.trim() === "") throw refuse(field, "directory must be a non-empty string");
  if (requested.includes("\0")) throw refuse(field, "directory contains a NUL byte");
  const root = canonicalRoot(policy.root);
  const resolved = realpath(path.resolve(root, requested), field);
  // The root itself is the default instance: same routing, same session binding.
  if (resolved === root) return {};
  if (!policy.allowOverride) throw refuse(field, "directory overrides are disabled (A2A_ALLOW_DIRECTORY_OVERRIDE=false)");
  const relative = path.relative(root, resolved);
  if (relative.startsWith("..") || path.isAbsolute(relative)) {
    throw refuse(field, "directory is outside the workspace root");
  }
  if (!fs.statSync(resolved).isDirectory()) throw refuse(field, "directory is not a directory");
  return { directory: resolved };
}

/** A stable key for session binding: "" (default), "directory:<path>" or "workspace:<id>". */
export function routingKey(routing: Routing): string {
  if ("workspace" in routing) return `workspace:${routing.workspace}`;
  if ("directory" in routing) return `directory:${routing.directory}`;
  return "";
}
