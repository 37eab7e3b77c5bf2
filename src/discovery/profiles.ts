// The runtime profile of a deployment and the compatibility profile of a line: what the deployment is, which
// features it turns on, and how long each extension and method is meant to stay.
import type { Catalog, ProtocolLine } from "../contract/catalog.js";
import { serviceBehaviors } from "./behaviors.js";
import { httpEndpoints, methodAvailability, methodsOfLine, PROFILE_ID, type DeploymentFacts, type Toggle } from "./facts.js";

/** The toggles of the runtime features the profile names (a toggle the spec no longer declares is a compile error). */
const SESSION_SHELL: Toggle = "A2A_ENABLE_SESSION_SHELL";
const WORKSPACE_MUTATIONS: Toggle = "A2A_ENABLE_WORKSPACE_MUTATIONS";

export function buildRuntimeProfile(facts: DeploymentFacts): Record<string, unknown> {
  const env = facts.executionEnvironment;
  const shell = facts.toggles[SESSION_SHELL] === true;
  const mutations = facts.toggles[WORKSPACE_MUTATIONS] === true;
  const sandbox: Record<string, unknown> = { mode: env.sandboxMode, filesystem_scope: env.sandboxFilesystemScope };
  if (env.sandboxWritableRoots.length) sandbox.writable_roots = env.sandboxWritableRoots;
  const network: Record<string, unknown> = { access: env.networkAccess };
  if (env.networkAllowedDomains.length) network.allowed_domains = env.networkAllowedDomains;
  const context: Record<string, unknown> = {};
  if (facts.project) context.project = facts.project;
  if (facts.exposeWorkspaceRoot && facts.workspaceRoot) context.workspace_root = facts.workspaceRoot;
  return {
    profile_id: PROFILE_ID,
    deployment: {
      id: "single_tenant_shared_workspace",
      single_tenant: true,
      shared_workspace_across_consumers: true,
      tenant_isolation: "none",
    },
    runtime_features: {
      directory_binding: {
        allow_override: facts.allowDirectoryOverride,
        scope: facts.allowDirectoryOverride ? "workspace_root_or_descendant" : "workspace_root_only",
        metadata_field: "metadata.opencode.directory",
      },
      workspace_binding: {
        enabled: true,
        metadata_field: "metadata.opencode.workspace.id",
        upstream_query_param: "workspace",
        precedence: "prefer_workspace_else_directory",
      },
      session_shell: { enabled: shell, availability: shell ? "enabled" : "disabled", toggle: SESSION_SHELL },
      workspace_mutations: {
        enabled: mutations,
        availability: mutations ? "enabled" : "disabled",
        toggle: WORKSPACE_MUTATIONS,
      },
      execution_environment: {
        sandbox,
        network,
        approval: { policy: env.approvalPolicy, escalation_behavior: env.approvalEscalation },
        write_access: { scope: env.writeAccessScope, outside_workspace: env.writeAccessOutsideWorkspace },
      },
      service_features: {
        streaming: { enabled: true },
        health_endpoint: { enabled: true, path: "/health" },
      },
    },
    runtime_context: context,
  };
}

function lineStatus(catalog: Catalog, line: ProtocolLine, facts: DeploymentFacts) {
  const core = catalog.methods.filter((m) => m.line === line);
  const pending = core.filter((m) => methodAvailability(m, facts) === "not-implemented").map((m) => m.name);
  return {
    status: pending.length ? "partial" : "supported",
    supported_features: [
      "version_negotiation",
      "agent_card",
      "extended_agent_card",
      "error_shaping",
      ...core.filter((m) => methodAvailability(m, facts) === "available").map((m) => `method:${m.name}`),
    ],
    known_gaps: pending.map((m) => `method:${m} (answers NOT_IMPLEMENTED in this build)`),
  };
}

export function buildCompatibilityProfile(catalog: Catalog, line: ProtocolLine, facts: DeploymentFacts): Record<string, unknown> {
  const extensionRetention: Record<string, unknown> = {};
  for (const e of catalog.extensions)
    extensionRetention[e.uri] = {
      surface: e.kind === "metadata" ? "core-runtime-metadata" : "jsonrpc-extension",
      audience: e.audience,
      availability: "always",
      retention: e.retention,
    };
  const methodRetention: Record<string, unknown> = {};
  for (const m of methodsOfLine(catalog, line)) {
    const availability = methodAvailability(m, facts);
    methodRetention[m.name] = {
      surface: m.surface,
      availability: m.toggle ? (availability === "disabled" ? "disabled" : "enabled") : availability === "not-implemented" ? "pending" : "always",
      retention: m.retention,
      ...(m.extension_uri ? { extension_uri: m.extension_uri } : {}),
      ...(m.toggle ? { toggle: m.toggle } : {}),
      ...(m.scope ? { scope: m.scope } : {}),
    };
  }
  return {
    ...buildRuntimeProfile(facts),
    protocol_version: line,
    default_protocol_version: facts.defaultLine,
    supported_protocol_versions: [...catalog.protocol_lines],
    protocol_compatibility: {
      versions: Object.fromEntries(catalog.protocol_lines.map((l) => [l, lineStatus(catalog, l, facts)])),
    },
    core: {
      jsonrpc_methods: catalog.methods.filter((m) => m.line === line).map((m) => m.name),
      http_endpoints: httpEndpoints(catalog, line),
    },
    extension_retention: extensionRetention,
    method_retention: methodRetention,
    service_behaviors: serviceBehaviors(catalog, line, facts),
    consumer_guidance: [
      "Treat the core A2A methods as the portable baseline; discover everything else from this profile.",
      "Treat all_jsonrpc_methods of the wire contract as the runtime truth for this deployment.",
      "Deployment-conditional methods answer -32601 METHOD_NOT_SUPPORTED (with the toggle named) while disabled.",
      "Project error types are told apart by their reason (0.3 error.data.type, 1.0 ErrorInfo.reason), never by reused A2A codes.",
    ],
  };
}

