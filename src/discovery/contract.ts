// Wire contract, compatibility profile and runtime profile: built from the generated catalog plus the deployment's
// facts. Pure functions of their inputs (tools/generate uses them with default facts for the OpenAPI document).
import type { Catalog, MethodEntry, ProtocolLine } from "../contract/catalog.js";

export const PROFILE_ID = "opencode-a2a-single-tenant-coding-v1";

/** What the discovery documents need to know about a deployment. */
export interface DeploymentFacts {
  defaultLine: ProtocolLine;
  /** Push notifications delivered (capabilities.pushNotifications); on by default (A2A_PUSH_NOTIFICATIONS_ENABLED). */
  pushNotifications: boolean;
  toggles: Record<string, boolean>;
  /** A2A_REQUIRED_EXTENSIONS: extension URIs every A2A call must activate (cards mark them required). */
  requiredExtensions: string[];
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
  toggles: { A2A_ENABLE_SESSION_SHELL: false, A2A_ENABLE_WORKSPACE_MUTATIONS: false },
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

function httpEndpoints(catalog: Catalog, line: ProtocolLine): string[] {
  return catalog.routes.filter((r) => r.kind === "a2a" && r.line === line).map((r) => `${r.verb} ${r.path}`);
}

export function serviceBehaviors(
  line: ProtocolLine,
  facts: Pick<DeploymentFacts, "pushNotifications" | "requiredExtensions"> = defaultDeploymentFacts,
): Record<string, unknown> {
  return {
    classification: "service-level-semantic-enhancement",
    tracing: {
      standard: "W3C Trace Context Level 1",
      request_headers: ["traceparent", "tracestate"],
      doors: "every HTTP request (JSON-RPC POST /, REST routes, discovery, /health, /metrics, /admin/audit)",
      valid_traceparent: "its trace id is kept; the gateway's work gets a new span id whose parent is the caller's span; tracestate is passed on",
      invalid_or_absent: "a new trace is started (random ids, sampled); tracestate is discarded",
      propagated_to: [
        "every OpenCode call made for the request",
        "every OpenCode call of the task's turn, which runs after the request returned (prompt_async, session, diff, file reads, abort)",
        "push notification deliveries (the trace of the request that set the config, else of the task)",
        "every OpenCode call of an extension method (opencode.*, a2a.interrupt.*, tasks/provideInputAndContinue)",
      ],
      not_propagated: ["the shared OpenCode event stream (one for all requests)"],
      recorded_in: { logs: ["trace_id", "span_id"], audit_entry: "trace_id", audit_filter: "GET /admin/audit?trace_id=" },
      response_headers: "none: Trace Context Level 1 defines no response header, and traceresponse is a draft",
      export: "OpenTelemetry spans over OTLP/HTTP (JSON) when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; off otherwise",
    },
    extension_activation: {
      request_headers: { "1.0": "A2A-Extensions", "0.3": "X-A2A-Extensions", note: "comma-separated URIs; the header may repeat; both are read on both lines" },
      activated: "the requested URIs that are extensions of this gateway (extension_uris); unknown URIs are ignored, not errors",
      response: "the activated URIs, echoed in each extension header the request used (absent when none was activated); JSON-RPC, REST and SSE answers",
      required_extensions: facts.requiredExtensions,
      required_extensions_source: "A2A_REQUIRED_EXTENSIONS",
      requirement_applies_to: ["core A2A task and push-config methods (JSON-RPC and REST)", "extension methods"],
      exempt: ["public agent card", "extended agent card on every transport", "/health", "/metrics", "/admin/audit", "/openapi.*", "/openrpc.json", "/schemas/*", "/docs*"],
      missing_required: { error: "EXTENSION_SUPPORT_REQUIRED", code: -32008, http_status: 400, grpc_status: "FAILED_PRECONDITION", data_fields: ["method", "required_extensions", "requested_extensions", "header"] },
      without_required_extensions: "nothing needs activating: extension methods work without the header",
    },
    discovery: {
      card_without_version: {
        shape: "both_lines",
        note: "GET of /.well-known/agent-card.json (alias /.well-known/agent.json), /agent/authenticatedExtendedCard or /extendedAgentCard without A2A-Version (header or query): one card valid as a 0.3 and as a 1.0 AgentCard, as the @a2a-js/sdk server's header-less card",
        fields_0_3: ["protocolVersion", "url", "preferredTransport", "additionalInterfaces", "supportsAuthenticatedExtendedCard", "security"],
        fields_1_0: ["supportedInterfaces", "securityRequirements", "capabilities.extendedAgentCard"],
        supported_interfaces_order: "1.0 entries first, then 0.3 entries with protocolVersion 0.3",
        security_schemes: "each scheme carries the 0.3 members (type, scheme | in, name) and the 1.0 oneof member",
        extended_card_extension_params: "the default line's (A2A_DEFAULT_PROTOCOL_VERSION)",
      },
      card_with_version: "that line's card alone",
      v0_3_rest_card: "GET /v1/card is always the 0.3 card",
      caching: { vary: "A2A-Version", etag: "weak, one per shape (0.3, 1.0, both lines)", if_none_match: 304 },
    },
    jsonrpc_requests_without_id: {
      extension_method: { behavior: "notification", http_status: 204, note: "a valid call runs and gets no answer, not even its failure" },
      core_method: {
        behavior: "answered",
        id: null,
        note: "A2A defines no notifications on its core methods: the result or error is answered with id null (as the @a2a-js/sdk server does)",
      },
      refused_before_running: {
        behavior: "answered",
        id: null,
        errors: ["INVALID_REQUEST", "METHOD_NOT_SUPPORTED", "SCOPE_INSUFFICIENT", "EXTENSION_SUPPORT_REQUIRED", "INVALID_PARAMS", "RATE_LIMITED"],
      },
      batches: "the same rule per call; a batch answers 204 only when every call is a notification",
    },
    methods: {
      cancel: {
        idempotency: {
          already_canceled: { behavior: "return_current_terminal_task", returns_current_state: "canceled", error: null },
          other_terminal_states: { error: "TASK_NOT_CANCELABLE", code: -32002, http_status: 409 },
        },
        upstream_abort: "best_effort_within_A2A_CANCEL_ABORT_TIMEOUT_SECONDS",
      },
      subscribe: {
        terminal_state_behavior:
          line === "0.3"
            ? { behavior: "replay_terminal_task_once_then_close", delivery: "single_task_snapshot", closes_stream: true }
            : { behavior: "reject", error: "UNSUPPORTED_OPERATION", code: -32004 },
        first_event: "current_task",
      },
      message_to_terminal_task: { error: "UNSUPPORTED_OPERATION", code: -32004 },
      message_to_working_task: {
        behavior: "joins_running_turn",
        delivery: "prompted_into_the_same_opencode_session_while_busy",
        history: "appended_to_the_task_history",
        answer: "the_task",
        ends: "when_opencode_has_answered_every_follow_up",
        stalled_follow_up: "prompted_again_after_1.5_s_of_idle",
      },
      turn_artifacts: {
        changes: {
          artifact_id: "<taskId>:changes",
          name: "changes",
          when: "end_of_a_turn_that_changed_files",
          parts: "one_text/x-diff_file_part_per_file; text_parts_when_acceptedOutputModes_exclude_text/x-diff",
          part_metadata: "opencode.change {path, status, additions, deletions}",
          toggle: "A2A_ARTIFACT_CHANGES",
        },
        files: {
          changed_files: "<taskId>:file:<path> when metadata.opencode.include_file_contents is true",
          opencode_files: "<taskId>:file:<partId> for OpenCode file parts and tool attachments",
          inline_up_to: "A2A_ARTIFACT_FILE_MAX_BYTES",
          larger: "uri reference with metadata.opencode {size, omitted: size}",
        },
        streamed_before_terminal_status: true,
      },
      interrupts: {
        input_required_closes_stream: false,
        note: "An OpenCode permission or question makes the task input-required; the stream stays open until a terminal state.",
      },
    },
    // DECISIONS 13: proto3 JSON rules on the ProtoJSON surfaces (src/protocol/protojson-names.ts).
    request_encoding: {
      protojson_surfaces: ["0.3 HTTP+JSON (/v1/*)", "1.0 JSON-RPC params", "1.0 HTTP+JSON bodies and query parameters"],
      field_names: "lowerCamelCase and the proto field names (snake_case, and the original name where json_name differs) are both accepted",
      duplicate_spelling: { error: "INVALID_PARAMS", note: "both spellings of one field in one object" },
      free_form_values: "metadata, data part payloads and other Struct values keep their keys",
      unknown_fields: "ignored, except another line's fields that change the meaning (e.g. 1.0 configuration.blocking), which are INVALID_PARAMS",
      absent_scalars: "proto3 defaults",
      send_blocking:
        line === "0.3"
          ? { jsonrpc: "blocking unless configuration.blocking is false", http_json: "configuration.blocking absent = false; no configuration = blocking" }
          : { default: "blocking unless configuration.returnImmediately is true" },
      ...(line === "0.3" ? { push_config_create_body: ["{name, pushNotificationConfig}", "{parent, configId, config}"] } : {}),
    },
    // DECISIONS 15: data parts reach OpenCode as framed JSON text (src/bridge/parts.ts renderDataPart).
    data_parts: {
      accepted: true,
      value: line === "0.3" ? "JSON object (INVALID_PARAMS otherwise)" : "any JSON value",
      prompt_rendering:
        "one text part per data part, in part order: a header line 'Structured input (JSON) from the A2A client (data part i of n; media type …; name …; part metadata …):' then the JSON in a ```json fence (longer when the JSON contains backticks), pretty-printed with 2-space indentation and keys as sent; compact one-line JSON when pretty-printing would exceed 256 KiB or twice the compact size",
      history: "the part is kept as sent and shown in the reader's line's shape",
      size_limit: "A2A_MAX_REQUEST_BODY_BYTES",
    },
    push_notifications: facts.pushNotifications
      ? {
          supported: true,
          delivery: "at_least_once",
          ordering: "per_task_and_config",
          events: "task_state_changes",
          payload:
            line === "0.3"
              ? { shape: "Task", content_type: "application/json" }
              : { shape: "StreamResponse", non_terminal: "statusUpdate", terminal: "task", content_type: "application/a2a+json" },
          headers: { token: "X-A2A-Notification-Token", credentials: "Authorization" },
          success: "2xx",
          retried: ["network_error", "timeout", 408, 425, 429, "5xx"],
          retry_policy: "exponential_backoff_with_jitter; Retry-After honoured; A2A_PUSH_MAX_ATTEMPTS; A2A_PUSH_MAX_AGE_SECONDS",
          late_registration: "a config set while the task is terminal or input-required receives the current state at once",
          private_network_targets: "refused unless A2A_PUSH_ALLOW_PRIVATE_NETWORKS",
          concurrency: "A2A_PUSH_MAX_CONCURRENCY in all, A2A_PUSH_MAX_CONCURRENCY_PER_HOST per receiver host",
        }
      : { supported: false, error: "PUSH_NOTIFICATION_NOT_SUPPORTED", code: -32003 },
  };
}

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
    if (m.not_implemented_until) pending[m.name] = { error: "NOT_IMPLEMENTED", delivered_by: m.not_implemented_until };
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
    service_behaviors: serviceBehaviors(line, facts),
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
    insufficient_scope_error: "SCOPE_INSUFFICIENT",
    credential_headers: { bearer: "Authorization: Bearer", api_key: "X-API-Key", basic: "Authorization: Basic" },
  };
}

export function buildRuntimeProfile(facts: DeploymentFacts): Record<string, unknown> {
  const env = facts.executionEnvironment;
  const shell = facts.toggles.A2A_ENABLE_SESSION_SHELL === true;
  const mutations = facts.toggles.A2A_ENABLE_WORKSPACE_MUTATIONS === true;
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
      session_shell: { enabled: shell, availability: shell ? "enabled" : "disabled", toggle: "A2A_ENABLE_SESSION_SHELL" },
      workspace_mutations: {
        enabled: mutations,
        availability: mutations ? "enabled" : "disabled",
        toggle: "A2A_ENABLE_WORKSPACE_MUTATIONS",
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
    service_behaviors: serviceBehaviors(line, facts),
    consumer_guidance: [
      "Treat the core A2A methods as the portable baseline; discover everything else from this profile.",
      "Treat all_jsonrpc_methods of the wire contract as the runtime truth for this deployment.",
      "Deployment-conditional methods answer -32601 METHOD_NOT_SUPPORTED (with the toggle named) while disabled.",
      "Project error types are told apart by their reason (0.3 error.data.type, 1.0 ErrorInfo.reason), never by reused A2A codes.",
    ],
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
