// What the discovery documents know about a deployment (its facts, with the defaults the generated documents use)
// and which methods of the catalog it serves on a line.
import type { TOGGLES } from "../../generated/types/methods.js";
import type { Catalog, MethodEntry, ProtocolLine } from "../contract/catalog.js";

export const PROFILE_ID = "opencode-a2a-single-tenant-coding-v1";

/** A deployment toggle of the contract (`@conditional`). */
export type Toggle = (typeof TOGGLES)[number];

/** What the discovery documents need to know about a deployment. */
export interface DeploymentFacts {
  defaultLine: ProtocolLine;
  /** Push notifications delivered (capabilities.pushNotifications); on by default (A2A_PUSH_NOTIFICATIONS_ENABLED). */
  pushNotifications: boolean;
  toggles: Record<string, boolean>;
  /** A2A_REQUIRED_EXTENSIONS: extension URIs every A2A call must activate (cards mark them required). */
  requiredExtensions: string[];
  /** The limits of an extension's methods on this deployment, by extension name (its `limits` model's shape). */
  extensionLimits?: Record<string, unknown>;
  allowDirectoryOverride: boolean;
  project?: string;
  workspaceRoot?: string;
  exposeWorkspaceRoot: boolean;
  executionEnvironment: {
    sandboxMode: string;
    sandboxFilesystemScope: string;
    sandboxWritableRoots: string[];
    networkAccess: string;
    networkAllowedDomains: string[];
    approvalPolicy: string;
    approvalEscalation: string;
    writeAccessScope: string;
    writeAccessOutsideWorkspace: string;
  };
}

export const defaultDeploymentFacts: DeploymentFacts = {
  defaultLine: "0.3",
  pushNotifications: true,
  // Every toggle off: a toggle the facts do not name is off. (No list here: tools/generate builds the generated
  // documents with these facts before generated/types exists.)
  toggles: {},
  requiredExtensions: [],
  allowDirectoryOverride: true,
  exposeWorkspaceRoot: false,
  executionEnvironment: {
    sandboxMode: "unknown",
    sandboxFilesystemScope: "unknown",
    sandboxWritableRoots: [],
    networkAccess: "unknown",
    networkAllowedDomains: [],
    approvalPolicy: "unknown",
    approvalEscalation: "unknown",
    writeAccessScope: "unknown",
    writeAccessOutsideWorkspace: "unknown",
  },
};

export type MethodAvailability = "available" | "disabled" | "not-implemented";

export function methodAvailability(m: MethodEntry, facts: DeploymentFacts): MethodAvailability {
  if (m.toggle && !facts.toggles[m.toggle]) return "disabled";
  if (m.not_implemented_until) return "not-implemented";
  return "available";
}

/** Methods a caller of `line` can reach on `POST /`: the line's core methods plus every extension method. */
export function methodsOfLine(catalog: Catalog, line: ProtocolLine): MethodEntry[] {
  return catalog.methods.filter((m) => m.line === line || m.surface === "extension");
}

/** The runtime truth: callable, working methods for this line and deployment. */
export function allJsonRpcMethods(catalog: Catalog, line: ProtocolLine, facts: DeploymentFacts): string[] {
  return methodsOfLine(catalog, line)
    .filter((m) => methodAvailability(m, facts) === "available")
    .map((m) => m.name);
}

/** The REST routes of a line, as `VERB /path`. */
export function httpEndpoints(catalog: Catalog, line: ProtocolLine): string[] {
  return catalog.routes.filter((r) => r.kind === "a2a" && r.line === line).map((r) => `${r.verb} ${r.path}`);
}
