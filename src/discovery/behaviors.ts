// The service behaviours a deployment publishes in its wire contract and compatibility profile: how tracing,
// extension activation, discovery, notifications, the core methods, request encoding, data parts and push
// notifications behave on a line. Error codes and statuses are the catalog's.
import type { ErrorReason } from "../../generated/types/methods.js";
import type { Catalog, ProtocolLine } from "../contract/catalog.js";
import type { DeploymentFacts } from "./facts.js";

export function serviceBehaviors(
  catalog: Catalog,
  line: ProtocolLine,
  facts: Pick<DeploymentFacts, "pushNotifications" | "requiredExtensions">,
): Record<string, unknown> {
  const entry = (reason: ErrorReason) => catalog.errors[line].find((e) => e.reason === reason)!;
  /** An error as the behaviours name it: its reason and JSON-RPC code. */
  const error = (reason: ErrorReason) => ({ error: reason, code: entry(reason).code });
  const extensionRequired = entry("EXTENSION_SUPPORT_REQUIRED");
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
      missing_required: {
        ...error(extensionRequired.reason),
        http_status: extensionRequired.http,
        grpc_status: extensionRequired.grpc,
        data_fields: extensionRequired.fields,
      },
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
        errors: ["INVALID_REQUEST", "METHOD_NOT_SUPPORTED", "SCOPE_INSUFFICIENT", "EXTENSION_SUPPORT_REQUIRED", "INVALID_PARAMS", "RATE_LIMITED"] satisfies ErrorReason[],
      },
      batches: "the same rule per call; a batch answers 204 only when every call is a notification",
    },
    methods: {
      cancel: {
        idempotency: {
          already_canceled: { behavior: "return_current_terminal_task", returns_current_state: "canceled", error: null },
          other_terminal_states: { ...error("TASK_NOT_CANCELABLE"), http_status: entry("TASK_NOT_CANCELABLE").http },
        },
        upstream_abort: "best_effort_within_A2A_CANCEL_ABORT_TIMEOUT_SECONDS",
      },
      subscribe: {
        terminal_state_behavior:
          line === "0.3"
            ? { behavior: "replay_terminal_task_once_then_close", delivery: "single_task_snapshot", closes_stream: true }
            : { behavior: "reject", ...error("UNSUPPORTED_OPERATION") },
        first_event: "current_task",
      },
      message_to_terminal_task: error("UNSUPPORTED_OPERATION"),
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
      duplicate_spelling: { error: "INVALID_PARAMS" satisfies ErrorReason, note: "both spellings of one field in one object" },
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
      : { supported: false, ...error("PUSH_NOTIFICATION_NOT_SUPPORTED") },
  };
}

