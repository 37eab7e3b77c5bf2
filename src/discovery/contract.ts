// Wire contract of a line and the `x-opencode-a2a-*` OpenAPI extensions: built from the generated catalog plus the
// deployment's facts (facts.ts). Pure functions of their inputs (tools/generate uses them with default facts for the
// OpenAPI document).
import type { ErrorReason } from "../../generated/types/methods.js";
import type { Catalog, ProtocolLine } from "../contract/catalog.js";
import { serviceBehaviors } from "./behaviors.js";
import { allJsonRpcMethods, httpEndpoints, methodAvailability, methodsOfLine, PROFILE_ID, type DeploymentFacts } from "./facts.js";
import { buildCompatibilityProfile, buildRuntimeProfile } from "./profiles.js";

export function buildWireContract(catalog: Catalog, line: ProtocolLine, facts: DeploymentFacts): Record<string, unknown> {
  const lineMethods = methodsOfLine(catalog, line);
  const conditional: Record<string, unknown> = {};
  const pending: Record<string, unknown> = {};
  for (const m of lineMethods) {
    const availability = methodAvailability(m, facts);
    if (m.toggle)
      conditional[m.name] = {
        reason: availability === "disabled" ? "disabled_by_configuration" : "enabled_by_configuration",
        toggle: m.toggle,
        available: availability !== "disabled",
      };
    if (m.not_implemented_until) pending[m.name] = { error: "NOT_IMPLEMENTED" satisfies ErrorReason, delivered_by: m.not_implemented_until };
  }
  const unsupported = catalog.errors[line].find((e) => e.reason === "METHOD_NOT_SUPPORTED")!;
  return {
    protocol_version: line,
    default_protocol_version: facts.defaultLine,
    supported_protocol_versions: [...catalog.protocol_lines],
    profile: PROFILE_ID,
    preferred_transport: "HTTP+JSON",
    additional_transports: ["JSONRPC"],
    core: {
      jsonrpc_methods: lineMethods.filter((m) => m.surface === "core").map((m) => m.name),
      http_endpoints: httpEndpoints(catalog, line),
    },
    extensions: {
      jsonrpc_methods: lineMethods
        .filter((m) => m.surface === "extension" && methodAvailability(m, facts) !== "disabled")
        .map((m) => m.name),
      conditionally_available_methods: conditional,
      extension_uris: catalog.extensions.map((e) => e.uri),
      required_extensions: facts.requiredExtensions,
    },
    all_jsonrpc_methods: allJsonRpcMethods(catalog, line, facts),
    pending_methods: pending,
    service_behaviors: serviceBehaviors(catalog, line, facts),
    unsupported_method_error: {
      code: unsupported.code,
      type: unsupported.reason,
      data_fields: ["type", "method", "supported_methods", "protocol_version"],
    },
    errors: catalog.errors[line].map((e) => ({ code: e.code, reason: e.reason, http_status: e.http, grpc_status: e.grpc, origin: e.origin })),
    authorization: authorizationContract(catalog, line),
  };
}

/** What a credential needs: the scope of every method and route of the line, the scopes and the trust levels. */
function authorizationContract(catalog: Catalog, line: ProtocolLine): Record<string, unknown> {
  return {
    method_scopes: Object.fromEntries(methodsOfLine(catalog, line).map((m) => [m.name, m.scope])),
    route_scopes: Object.fromEntries(
      catalog.routes.filter((r) => !r.public && r.kind !== "jsonrpc" && (r.line === null || r.line === line)).map((r) => [`${r.verb} ${r.path}`, r.scope]),
    ),
    public_routes: catalog.routes.filter((r) => r.public).map((r) => `${r.verb} ${r.path}`),
    scopes: catalog.access_control.scopes,
    trust_levels: catalog.access_control.trust_levels.map((l) => ({ name: l.name, scopes: l.scopes, sees_all_principals: l.sees_all_principals })),
    insufficient_scope_error: "SCOPE_INSUFFICIENT" satisfies ErrorReason,
    credential_headers: { bearer: "Authorization: Bearer", api_key: "X-API-Key", basic: "Authorization: Basic" },
  };
}

/** The `x-opencode-a2a-*` OpenAPI extensions describing a deployment (generated defaults or a running server). */
export function openApiContractExtensions(catalog: Catalog, facts: DeploymentFacts): Record<string, unknown> {
  return {
    "x-opencode-a2a-wire-contract": Object.fromEntries(catalog.protocol_lines.map((l) => [l, buildWireContract(catalog, l, facts)])),
    "x-opencode-a2a-compatibility-profile": Object.fromEntries(
      catalog.protocol_lines.map((l) => [l, buildCompatibilityProfile(catalog, l, facts)]),
    ),
    "x-opencode-a2a-runtime-profile": buildRuntimeProfile(facts),
  };
}
