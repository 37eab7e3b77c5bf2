// Environment (+ optional .env) → one typed, validated Config. Every variable is declared once in `variables`;
// the README's configuration table is checked against this list by test/unit/config.test.ts.
import fs from "node:fs";
import type { ProtocolLine } from "../contract/catalog.js";
import { DEFAULT_TASK_CACHE_SIZE, DEFAULT_TASK_STORE_READERS, DEFAULT_TASK_STORE_DATABASE_URL, parseStoreUrl } from "./store-url.js";
import { bool, bounded, extensionList, int, jsonObject, list, logLevel, messagesTools, oneOf, seconds, str, transports, url, type Env, type Variable } from "./variables.js";

export type { ClientTransport, LogLevel, MessagesTool } from "./variables.js";
export { MESSAGES_TOOLS } from "./variables.js";

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}


const SANDBOX_MODES = ["unknown", "read-only", "workspace-write", "danger-full-access", "custom"] as const;
const FS_SCOPES = ["unknown", "workspace_only", "workspace_and_declared_roots", "unrestricted", "custom"] as const;
const NETWORK = ["unknown", "disabled", "enabled", "restricted", "custom"] as const;
const APPROVAL = ["unknown", "never", "on-request", "on-failure", "untrusted", "custom"] as const;
const ESCALATION = ["unknown", "manual", "automatic", "unsupported", "custom"] as const;
const WRITE_SCOPE = ["unknown", "none", "workspace_only", "workspace_and_declared_roots", "unrestricted", "custom"] as const;
const OUTSIDE = ["unknown", "allowed", "disallowed", "custom"] as const;

/** Every variable this build reads, in README order. */
export const variables = {
  host: str("A2A_HOST", "127.0.0.1", "Bind address."),
  port: int("A2A_PORT", 8000, 0, 65535, "Bind port (0 picks a free port; the bound URL is logged)."),
  publicUrl: url("A2A_PUBLIC_URL", undefined, "Public base URL advertised by the agent cards; default `http://<A2A_HOST>:<A2A_PORT>`."),
  bearerToken: str("A2A_BEARER_TOKEN", undefined, "Bearer token of one admin credential (principal `admin`). At least one of A2A_BEARER_TOKEN, A2A_CREDENTIALS, A2A_CREDENTIALS_FILE is required.", true),
  credentials: str("A2A_CREDENTIALS", undefined, "Credential registry as a JSON array (id, principal, scheme `bearer`/`api_key`/`basic`, secret or secret_hash, trust_level, scopes, enabled, expires_at, rate_limit); see Access control.", true),
  credentialsFile: str("A2A_CREDENTIALS_FILE", undefined, "Path of a JSON file holding the same array; `opencode-a2a keys create` appends to it (hashed secrets). Re-read when it changes."),
  rateLimitWindow: seconds("A2A_RATE_LIMIT_WINDOW_SECONDS", 60, 1, 86_400, "Sliding window of the per-credential request limit."),
  rateLimitMaxRequests: int("A2A_RATE_LIMIT_MAX_REQUESTS", 600, 0, 100_000_000, "Requests per credential per window (a JSON-RPC batch counts each call; 0 = no limit). Per-credential `rate_limit.max_requests` overrides it."),
  rateLimitLeaseMs: int("A2A_RATE_LIMIT_LEASE_MS", 1_000, 0, 60_000, "With PostgreSQL: how long a gateway may spend units of a busy credential's shared window that it took ahead, without a round trip per request (0 = every request takes from the database). See Limits."),
  rateLimitMaxStreams: int("A2A_RATE_LIMIT_MAX_STREAMS", 10, 0, 1_000_000, "Open SSE streams per credential (0 = no limit). Per-credential `rate_limit.max_streams` overrides it."),
  streamMaxBytes: int("A2A_STREAM_MAX_BYTES", 104_857_600, 0, Number.MAX_SAFE_INTEGER, "An SSE stream is ended with STREAM_BUDGET_EXCEEDED after sending this many bytes (0 = no limit); the task goes on."),
  streamMaxDuration: seconds("A2A_STREAM_MAX_DURATION_SECONDS", 3_600, 0, 604_800, "An SSE stream is ended with STREAM_BUDGET_EXCEEDED after this long (0 = no limit); the task goes on."),
  streamIdleTimeout: seconds("A2A_STREAM_IDLE_TIMEOUT_SECONDS", 900, 0, 604_800, "An SSE stream is ended with STREAM_BUDGET_EXCEEDED when no event was sent for this long (0 = no limit)."),
  authWindow: seconds("A2A_AUTH_WINDOW_SECONDS", 60, 1, 86_400, "Window of the per-address limits before authentication."),
  authFailureLimit: int("A2A_AUTH_FAILURE_LIMIT", 20, 0, 1_000_000, "Failed authentications per client address per window; then that address gets 429 RATE_LIMITED with Retry-After until the window ends, before its credentials are looked at (0 = no limit)."),
  unauthenticatedRateLimit: int("A2A_UNAUTHENTICATED_RATE_LIMIT", 1_200, 0, 100_000_000, "Requests without credentials (public routes such as the cards, and failed authentications) per client address per window; more get 429 RATE_LIMITED (0 = no limit)."),
  auditAuthFailureSample: int("A2A_AUDIT_AUTH_FAILURE_SAMPLE", 5, 0, 1_000_000, "Failed authentications per client address per window written to the audit log; the rest are counted (`a2a_audit_suppressed_total`), and a blocked address gets one entry per window."),
  auditMaxEntries: int("A2A_AUDIT_MAX_ENTRIES", 1_000_000, 0, 1_000_000_000, "The audit log keeps at most this many entries (the oldest are pruned first; 0 = no bound), besides A2A_AUDIT_RETENTION_DAYS."),
  allowedOrigins: list("A2A_ALLOWED_ORIGINS", "Origins (`https://app.example.com`, or `*`) allowed to call authenticated routes from a browser (CORS). A request with any other `Origin` gets 403 ORIGIN_NOT_ALLOWED; requests without `Origin` are not affected."),
  allowedHosts: list("A2A_ALLOWED_HOSTS", "Accepted `Host` header values (`name` for any port, `name:port`, or `*`); others get 421 HOST_NOT_ALLOWED (DNS-rebinding guard). Default: the host of A2A_PUBLIC_URL, the bind address, `localhost`, `127.0.0.1` and `[::1]`."),
  auditEnabled: bool("A2A_AUDIT_LOG_ENABLED", true, "Record every authenticated call (principal, credential, method, task/session, outcome; no bodies, no secrets) in the store; admins read it at `GET /admin/audit`."),
  auditRetentionDays: seconds("A2A_AUDIT_RETENTION_DAYS", 30, 0, 36_500, "Audit entries older than this many days are pruned (0 = keep forever)."),
  defaultLine: oneOf("A2A_DEFAULT_PROTOCOL_VERSION", ["0.3", "1.0"] as const, "0.3", "Protocol line used when a request carries no `A2A-Version` (root REST paths, errors, the contracts in the extended card of both lines). The cards asked without a version serve both lines either way."),
  title: str("A2A_TITLE", "OpenCode A2A", "Agent name in the cards."),
  description: str("A2A_DESCRIPTION", "A2A gateway in front of an OpenCode coding agent", "Agent description in the cards."),
  agentVersion: str("A2A_VERSION", undefined, "Agent version in the cards; default: the package version."),
  documentationUrl: url("A2A_DOCUMENTATION_URL", undefined, "Optional documentation URL in the cards."),
  project: str("A2A_PROJECT", undefined, "Optional project label published in the runtime profile."),
  logLevel: logLevel(),
  logPayloads: bool("A2A_LOG_PAYLOADS", false, "With A2A_LOG_LEVEL=debug, log JSON-RPC and REST request/response bodies (secrets redacted; never for `opencode.sessions.*`) and previews of upstream OpenCode events."),
  logBodyLimit: int("A2A_LOG_BODY_LIMIT", 0, 0, 10_000_000, "Truncate logged bodies and event previews to this many characters (0 = no truncation)."),
  shutdownGrace: seconds("A2A_SHUTDOWN_GRACE_SECONDS", 10, 0, 3_600, "On SIGTERM/SIGINT the gateway stops accepting connections and lets in-flight calls and streams finish for this long; then blocking calls are answered with their task's current state and streams get a final status event. A second signal exits at once."),
  httpHeadersTimeout: seconds("A2A_HTTP_HEADERS_TIMEOUT_SECONDS", 30, 1, 3_600, "A client must send a request's headers within this time, or the connection is closed."),
  httpRequestTimeout: seconds("A2A_HTTP_REQUEST_TIMEOUT_SECONDS", 120, 1, 86_400, "A client must send a whole request (headers and body) within this time, or it gets 408 and the connection is closed (responses, streams included, are not limited by it)."),
  httpKeepAliveTimeout: seconds("A2A_HTTP_KEEP_ALIVE_TIMEOUT_SECONDS", 5, 0, 3_600, "An idle keep-alive connection is closed after this long."),
  logFormat: oneOf("A2A_LOG_FORMAT", ["auto", "json", "pretty"] as const, "auto", "`json`: one JSON object per line; `pretty`: colored, human-readable lines (pino-pretty); `auto`: pretty when the log stream (stderr) is a terminal, else JSON."),
  otlpEndpoint: url("OTEL_EXPORTER_OTLP_ENDPOINT", undefined, "OpenTelemetry: OTLP/HTTP base URL (e.g. `http://127.0.0.1:4318`; spans go to `<url>/v1/traces`, JSON encoding). Unset (and no OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): no export and no SDK loaded; W3C trace context propagation works either way."),
  otlpTracesEndpoint: url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", undefined, "OpenTelemetry: full OTLP/HTTP traces URL (wins over OTEL_EXPORTER_OTLP_ENDPOINT). The SDK's other standard variables (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_*) apply."),
  maxRequestBodyBytes: int("A2A_MAX_REQUEST_BODY_BYTES", 1_048_576, 1, 1_073_741_824, "Request body limit; larger bodies get HTTP 413 before routing."),
  gzipMinimumSize: int("A2A_HTTP_GZIP_MINIMUM_SIZE", 8192, 0, 1_073_741_824, "Gzip non-streaming responses at least this large when the client accepts gzip."),
  requiredExtensions: extensionList("A2A_REQUIRED_EXTENSIONS", "Extension URIs (comma-separated, from the catalog's extensions) every A2A call must activate: the cards mark them `required: true` (the public card lists them), and a task, push-config or extension call whose `A2A-Extensions` / `X-A2A-Extensions` header does not list each of them is refused with EXTENSION_SUPPORT_REQUIRED (-32008; REST 400). Discovery (cards) and operational routes are exempt."),
  cardMaxAgeSeconds: int("A2A_CARD_MAX_AGE_SECONDS", 300, 0, 86_400, "`Cache-Control` max-age of the agent cards."),
  enableSessionShell: bool("A2A_ENABLE_SESSION_SHELL", false, "Enable the high-risk `opencode.sessions.shell` method."),
  enableWorkspaceMutations: bool("A2A_ENABLE_WORKSPACE_MUTATIONS", false, "Enable `opencode.workspaces.create/remove` and `opencode.worktrees.create/remove/reset`."),
  enableMessages: bool("A2A_ENABLE_MESSAGES", true, "Enable `opencode.messages.*` (messages between OpenCode sessions: threads, drafts, buffers; seed 002)."),
  messagesCurrentDirectoryOnly: bool("A2A_MESSAGES_CURRENT_DIRECTORY_ONLY", false, "Messaging: only sessions of the caller's directory can be listed and addressed (the `dir` parameter cannot name another)."),
  messagesActiveOnly: bool("A2A_MESSAGES_ACTIVE_ONLY", false, "Messaging: only working sessions are listed and can be addressed by id or prefix (new and fork sessions still can)."),
  messagesDefaultSession: str("A2A_MESSAGES_DEFAULT_SESSION", "new", "Messaging: where `send` goes when `session` and `fork` are absent: `new`, or a fixed session id."),
  messagesAwaitTimeout: int("A2A_MESSAGES_AWAIT_TIMEOUT_SECONDS", 300, 1, 3_600, "Messaging: how long `send` with `await_reply` waits for the answer when the call gives no `await_timeout_seconds`."),
  messagesTools: messagesTools("A2A_MESSAGES_TOOLS", "Messaging: the tools `POST /mcp` offers the agents inside OpenCode (`list-session`, `send-message`, `buffer`; `none`: none of them). Off with A2A_ENABLE_MESSAGES=false or A2A_MCP_ENABLED=false."),
  messagesToolDefaults: jsonObject("A2A_MESSAGES_TOOL_DEFAULTS", "Messaging: the deployment's defaults of the tools' parameters, per tool, e.g. `{\"send-message\":{\"await_reply\":true},\"list-session\":{\"active\":true}}` (shape: `MessagesToolDefaults`; checked at start). A parameter the call gives wins."),
  enableSubtasks: bool("A2A_ENABLE_SUBTASKS", true, "Enable `opencode.subtasks.run/get/cancel` (named OpenCode agents run as subtasks, one A2A task per item)."),
  maxParallelSubtasks: int("A2A_MAX_PARALLEL_SUBTASKS", 4, 1, 1_000, "Subtasks (`opencode.subtasks.run` items) one caller runs at once over all its calls; more wait, `submitted`, and start in order as running ones end."),
  allowDirectoryOverride: bool("A2A_ALLOW_DIRECTORY_OVERRIDE", true, "Allow `metadata.opencode.directory` inside the workspace root."),
  exposeWorkspaceRoot: bool("A2A_EXPOSE_WORKSPACE_ROOT_IN_CARD", false, "Publish the workspace root path in the runtime profile."),
  workspaceRoot: str("OPENCODE_WORKSPACE_ROOT", undefined, "Default workspace directory of OpenCode and the boundary for directory overrides."),
  opencodeBaseUrl: url("OPENCODE_BASE_URL", undefined, "URL of a running `opencode serve`. Unset: the gateway starts and supervises `opencode serve` itself from the `opencode-ai` dependency (managed mode)."),
  opencodeUsername: str("OPENCODE_SERVER_USERNAME", "opencode", "Basic-auth user name for OpenCode."),
  opencodePassword: str("OPENCODE_SERVER_PASSWORD", undefined, "Basic-auth password for OpenCode. Managed mode passes it to the child; unset there, a random one is generated per run.", true),
  opencodeTimeout: seconds("OPENCODE_TIMEOUT", 120, 0, 86_400, "Timeout of one upstream call in seconds (0 = none)."),
  opencodeStreamTimeout: seconds("OPENCODE_TIMEOUT_STREAM", 900, 0, 86_400, "Timeout of upstream calls made for streaming requests, in seconds (0 = none)."),
  opencodeMaxRequests: int("OPENCODE_MAX_CONCURRENT_REQUESTS", 32, 0, 100_000, "Upstream calls in flight at once (0 = unlimited); more wait for a free slot in arrival order."),
  opencodeMaxQueuedRequests: int("OPENCODE_MAX_QUEUED_REQUESTS", 1_024, 0, 1_000_000, "Upstream calls that may wait for a slot; more (or one whose timeout passes while it waits) fail with UPSTREAM_BACKPRESSURE."),
  opencodeMaxStreams: int("OPENCODE_MAX_CONCURRENT_STREAMS", 512, 0, 1_000_000, "A2A streams open at once (all share one upstream event connection); more fail with UPSTREAM_BACKPRESSURE (0 = unlimited)."),
  opencodeEventIdleTimeout: seconds("OPENCODE_EVENT_IDLE_TIMEOUT_SECONDS", 30, 1, 3_600, "The upstream event stream is reconnected when neither an event nor a heartbeat (every 10 s) arrives for this long."),
  opencodeEventReconnectMax: seconds("OPENCODE_EVENT_RECONNECT_MAX_SECONDS", 5, 0.1, 300, "Upper bound of the event stream's reconnect backoff (starts at 0.25 s, doubles, randomised between half and all of the step)."),
  opencodeEventBufferLimit: int("OPENCODE_EVENT_BUFFER_LIMIT", 10_000, 16, 10_000_000, "Events buffered per subscriber; a subscriber that falls further behind is ended with UPSTREAM_BACKPRESSURE."),
  opencodeBinary: str("OPENCODE_BINARY", undefined, "Managed mode: path of the `opencode` binary; default the platform binary of the `opencode-ai` dependency."),
  opencodePort: int("OPENCODE_MANAGED_PORT", 0, 0, 65535, "Managed mode: port for `opencode serve` (0 lets OpenCode choose; it is read from its output)."),
  opencodeStartTimeout: seconds("OPENCODE_START_TIMEOUT_SECONDS", 60, 1, 600, "Managed mode: time allowed for `opencode serve` to print its listening line and answer /global/health."),
  taskStoreBackend: oneOf("A2A_TASK_STORE_BACKEND", ["database", "sqlite", "memory"] as const, "database", "`database` (SQLite, durable) or `memory` (ephemeral runs)."),
  taskStoreUrl: {
    ...str("A2A_TASK_STORE_DATABASE_URL", DEFAULT_TASK_STORE_DATABASE_URL, "SQLite location: `sqlite:///relative.db`, `sqlite:////absolute.db` (`sqlite+aiosqlite:///…` accepted), `sqlite:///:memory:`."),
    parse(raw: string | undefined): string {
      const value = raw === undefined || raw.trim() === "" ? DEFAULT_TASK_STORE_DATABASE_URL : raw.trim();
      try {
        parseStoreUrl(value);
      } catch (error) {
        throw new Error(error instanceof Error ? error.message : String(error), { cause: error });
      }
      return value;
    },
  },
  taskStoreCacheSize: int("A2A_TASK_STORE_CACHE_SIZE", DEFAULT_TASK_CACHE_SIZE, 0, 10_000_000, "Tasks the SQLite store keeps parsed in memory for GetTask (about 2 KiB each, least recently read dropped first); `0` reads every task from SQLite. Writes by other processes to the same file are noticed within 100 ms (`PRAGMA data_version`). Listings, on SQLite and PostgreSQL, also keep up to 500 rows (a count of rows, not of bytes) listed more than once parsed and encoded, reused only while a row's stored text is unchanged; `0` turns that off too."),
  taskStoreReaders: int("A2A_TASK_STORE_READERS", DEFAULT_TASK_STORE_READERS, 0, 64, "SQLite file store: threads with read-only connections of their own that run task listings and their totals, so a long listing never holds up other requests and streams; started on first use. The first also checkpoints the WAL in place of the gateway's connection. `0` runs listings, and checkpoints, on the gateway's own connection."),
  instanceId: str("A2A_INSTANCE_ID", undefined, "PostgreSQL store: this gateway's name among the gateways of the database (default: a new random id per start). A gateway restarted with the same id fails its previous run's unfinished tasks at once instead of after the lease."),
  instanceLease: seconds("A2A_INSTANCE_LEASE_SECONDS", 15, 0.3, 3_600, "PostgreSQL store: each gateway renews its lease every third of this; when a gateway stops renewing, another one fails the tasks it was running this long after its last renewal."),
  pendingClaimTtl: seconds("A2A_PENDING_SESSION_CLAIM_TTL_SECONDS", 30, 1, 86_400, "How long an explicit `metadata.shared.session.id` is reserved for its caller before its first turn succeeds."),
  cancelAbortTimeout: seconds("A2A_CANCEL_ABORT_TIMEOUT_SECONDS", 2, 0.1, 300, "Cancel answers at once; the upstream abort is given this long."),
  turnReconnectGrace: seconds("A2A_TURN_RECONNECT_GRACE_SECONDS", 30, 1, 3_600, "A running task whose upstream event stream is lost fails if it is not back within this time."),
  maxRunningTasks: int("A2A_MAX_RUNNING_TASKS", 32, 1, 100_000, "Turns running in OpenCode at once (tasks waiting for input do not count); more tasks wait in a queue, `working` with a `queued` progress note."),
  taskQueueLimit: int("A2A_TASK_QUEUE_LIMIT", 1_000, 0, 1_000_000, "Tasks that may wait for a turn (served fairly across principals); beyond it a send is refused before any task is created: TASK_QUEUE_FULL (JSON-RPC -32076, REST 503 + Retry-After)."),
  artifactChanges: bool("A2A_ARTIFACT_CHANGES", true, "At the end of a turn that changed files, add the `changes` artifact: OpenCode's diff of the turn, one `text/x-diff` part per file with its path, status and line counts."),
  artifactFileMaxBytes: int("A2A_ARTIFACT_FILE_MAX_BYTES", 1_048_576, 0, 1_073_741_824, "Files in artifacts (OpenCode file parts and tool attachments, changed files asked for with `metadata.opencode.include_file_contents`) up to this size are sent inline as bytes; larger ones as a `uri` reference with their size."),
  pushEnabled: bool("A2A_PUSH_NOTIFICATIONS_ENABLED", true, "Deliver push notifications (webhooks) and accept `tasks/pushNotificationConfig/*`; `false` declares `pushNotifications: false` and those methods answer PUSH_NOTIFICATION_NOT_SUPPORTED."),
  pushAllowPrivateNetworks: bool("A2A_PUSH_ALLOW_PRIVATE_NETWORKS", false, "Allow webhook URLs that resolve to loopback, private, link-local (cloud metadata) or other reserved addresses. Off: such notifications are refused (SSRF guard)."),
  pushTimeout: seconds("A2A_PUSH_TIMEOUT_SECONDS", 10, 0.1, 300, "Time allowed for one webhook POST."),
  pushMaxAttempts: int("A2A_PUSH_MAX_ATTEMPTS", 8, 1, 1_000, "Attempts per notification (network errors, timeouts, 408/425/429/5xx are retried); then it is dropped and logged."),
  pushRetryInitial: seconds("A2A_PUSH_RETRY_INITIAL_SECONDS", 1, 0.01, 3_600, "First retry delay; it doubles per attempt (randomised between half and all of the step)."),
  pushRetryMax: seconds("A2A_PUSH_RETRY_MAX_SECONDS", 300, 0.01, 86_400, "Longest retry delay (a receiver's Retry-After is honoured up to this)."),
  pushMaxAge: seconds("A2A_PUSH_MAX_AGE_SECONDS", 86_400, 1, 2_592_000, "A notification not delivered within this long of its state change is given up (counted as expired), however many attempts are left; also what a restart after a long stop still sends."),
  pushMaxConcurrency: int("A2A_PUSH_MAX_CONCURRENCY", 8, 1, 1_000, "Webhook POSTs in flight at once (each task+config pair is delivered in order, one at a time)."),
  pushMaxConcurrencyPerHost: int("A2A_PUSH_MAX_CONCURRENCY_PER_HOST", 4, 1, 1_000, "Webhook POSTs in flight to one host (host:port) at once, so a slow or unreachable receiver cannot take every slot."),
  pushMaxConfigsPerTask: int("A2A_PUSH_MAX_CONFIGS_PER_TASK", 10, 1, 1_000, "Push notification configs one task may have; more are refused with INVALID_PARAMS."),
  interruptTtl: seconds("A2A_INTERRUPT_REQUEST_TTL_SECONDS", 10_800, 1, 2_592_000, "How long a permission or question request stays answerable through `a2a.interrupt.*`."),
  interruptTombstoneTtl: seconds("A2A_INTERRUPT_REQUEST_TOMBSTONE_TTL_SECONDS", 600, 0, 2_592_000, "After expiry, replies get INTERRUPT_REQUEST_EXPIRED for this long, then INTERRUPT_REQUEST_NOT_FOUND."),
  clientTimeout: seconds("A2A_CLIENT_TIMEOUT_SECONDS", 30, 0.1, 86_400, "Outbound A2A calls (the `a2a_call` tool, `opencode-a2a call`): time allowed for one request to a peer, and the longest a peer's stream may stay silent."),
  clientCardFetchTimeout: seconds("A2A_CLIENT_CARD_FETCH_TIMEOUT_SECONDS", 5, 0.1, 3_600, "Outbound A2A calls: time allowed for fetching a peer's agent card."),
  clientUseClientPreference: bool("A2A_CLIENT_USE_CLIENT_PREFERENCE", false, "Outbound A2A calls: choose the peer's transport by the order of A2A_CLIENT_SUPPORTED_TRANSPORTS (true) or by the order of the peer's card (false)."),
  clientBearerToken: str("A2A_CLIENT_BEARER_TOKEN", undefined, "Outbound A2A calls: bearer token sent to peers, only to hosts listed in A2A_CLIENT_ALLOWED_HOSTS.", true),
  clientBasicAuth: str("A2A_CLIENT_BASIC_AUTH", undefined, "Outbound A2A calls: Basic credentials (`user:password`, or its base64) sent to peers, only to hosts listed in A2A_CLIENT_ALLOWED_HOSTS; A2A_CLIENT_BEARER_TOKEN wins when both are set.", true),
  clientSupportedTransports: transports("A2A_CLIENT_SUPPORTED_TRANSPORTS", "Outbound A2A calls: the transports the client may use, in order of preference (`JSONRPC`, `HTTP+JSON`)."),
  clientCacheTtl: seconds("A2A_CLIENT_CACHE_TTL_SECONDS", 900, 0, 86_400, "Outbound A2A calls: how long a peer's resolved card and client are reused (0 = not cached)."),
  clientCacheMaxSize: int("A2A_CLIENT_CACHE_MAXSIZE", 256, 1, 100_000, "Outbound A2A calls: peers whose card and client are cached at once (least recently used are dropped)."),
  clientPollingFallback: bool("A2A_CLIENT_POLLING_FALLBACK_ENABLED", false, "Outbound A2A calls: when a peer's answer to a send is a task that is still running, poll it (`tasks/get`) until it is terminal, input-required or auth-required."),
  clientPollingInitialInterval: seconds("A2A_CLIENT_POLLING_FALLBACK_INITIAL_INTERVAL_SECONDS", 0.5, 0.01, 3_600, "Polling fallback: the first wait between polls."),
  clientPollingMaxInterval: seconds("A2A_CLIENT_POLLING_FALLBACK_MAX_INTERVAL_SECONDS", 2, 0.01, 3_600, "Polling fallback: the longest wait between polls."),
  clientPollingBackoff: bounded(/^\d+(\.\d+)?$/, "a number")("A2A_CLIENT_POLLING_FALLBACK_BACKOFF_MULTIPLIER", 2, 1, 100, "Polling fallback: each wait is the previous one times this (at least 1)."),
  clientPollingTimeout: seconds("A2A_CLIENT_POLLING_FALLBACK_TIMEOUT_SECONDS", 10, 0.1, 86_400, "Polling fallback: polling stops after this long and the last state is returned."),
  clientAllowedHosts: list("A2A_CLIENT_ALLOWED_HOSTS", "Outbound A2A calls: the peer hosts that may be called (`name`, `name:port`, `*.domain`); empty: any host whose addresses are public. Credentials are sent only to hosts listed here."),
  clientAllowPrivateHosts: bool("A2A_CLIENT_ALLOW_PRIVATE_HOSTS", false, "Outbound A2A calls: allow peers that resolve to loopback, private, link-local or other reserved addresses (checked at connect time). Off: such calls are refused."),
  mcpEnabled: bool("A2A_MCP_ENABLED", true, "Serve the MCP endpoint `POST /mcp` (tools `a2a_call`, `a2a_discover` and the messaging tools of A2A_MESSAGES_TOOLS for the agents inside OpenCode; scope `peers.call`). Managed mode also registers it in OpenCode's config as the MCP server `a2a`."),
  mcpToken: str("A2A_MCP_TOKEN", undefined, "The OpenCode credential of `POST /mcp` (`Authorization: Bearer <token>`, accepted from loopback addresses only; its calls act for the owner of the task that made them). Managed mode: a random one per run when unset. External mode: unset = only the gateway's own credentials work at /mcp.", true),
  governancePoliciesFile: str("A2A_GOVERNANCE_POLICIES_FILE", undefined, "Path of the governance policy file (JSON, `{\"rules\": [...], \"governors\": [...], \"follow_up\": {...}}`): ordered rules that approve or reject OpenCode permission requests before a client is asked, and the post-run governors that review completed turns (see Governance). Re-read when it changes (a bad version is logged and the last good one stays); a bad file at start stops the gateway. Unset: every request is left to a client and no turn is reviewed."),
  metricsEnabled: bool("A2A_METRICS_ENABLED", true, "Serve Prometheus metrics at `GET /metrics` (authenticated)."),
  sandboxMode: oneOf("A2A_SANDBOX_MODE", SANDBOX_MODES, "unknown", "Declared sandbox mode (published, not enforced)."),
  sandboxFilesystemScope: oneOf("A2A_SANDBOX_FILESYSTEM_SCOPE", FS_SCOPES, "unknown", "Declared filesystem scope."),
  sandboxWritableRoots: list("A2A_SANDBOX_WRITABLE_ROOTS", "Declared writable roots (CSV or JSON array)."),
  networkAccess: oneOf("A2A_NETWORK_ACCESS", NETWORK, "unknown", "Declared network access policy."),
  networkAllowedDomains: list("A2A_NETWORK_ALLOWED_DOMAINS", "Declared network allow-list (CSV or JSON array)."),
  approvalPolicy: oneOf("A2A_APPROVAL_POLICY", APPROVAL, "unknown", "Declared approval policy."),
  approvalEscalation: oneOf("A2A_APPROVAL_ESCALATION_BEHAVIOR", ESCALATION, "unknown", "Declared approval escalation behaviour."),
  writeAccessScope: oneOf("A2A_WRITE_ACCESS_SCOPE", WRITE_SCOPE, "unknown", "Declared write-access scope."),
  writeAccessOutsideWorkspace: oneOf("A2A_WRITE_ACCESS_OUTSIDE_WORKSPACE", OUTSIDE, "unknown", "Declared write access outside the workspace."),
} satisfies Record<string, Variable<unknown>>;

type Parsed = { [K in keyof typeof variables]: ReturnType<(typeof variables)[K]["parse"]> };

export interface Config extends Omit<Parsed, "publicUrl" | "agentVersion" | "defaultLine"> {
  publicUrl: string;
  agentVersion: string;
  defaultLine: ProtocolLine;
  /** Deployment toggles by environment name, as referenced by `@conditional` in spec/. */
  toggles: Record<string, boolean>;
}

/** Names of variables whose values must never be logged. */
export const secretVariables: string[] = Object.values(variables as Record<string, Variable<unknown>>)
  .filter((v) => v.secret)
  .map((v) => v.name);

export function loadConfig(env: Env = process.env, packageVersion = "0.0.0"): Config {
  const problems: string[] = [];
  const parsed: Record<string, unknown> = {};
  for (const [key, variable] of Object.entries(variables as Record<string, Variable<unknown>>)) {
    try {
      parsed[key] = variable.parse(env[variable.name], env);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (
    parsed.bearerToken === undefined &&
    parsed.credentials === undefined &&
    parsed.credentialsFile === undefined &&
    !problems.some((p) => /^A2A_(BEARER_TOKEN|CREDENTIALS)/.test(p))
  )
    problems.push(
      "A2A_BEARER_TOKEN (one admin token clients send as `Authorization: Bearer <token>`), A2A_CREDENTIALS or A2A_CREDENTIALS_FILE is required",
    );
  else if (typeof parsed.bearerToken === "string" && parsed.bearerToken.length < 8)
    problems.push("A2A_BEARER_TOKEN: must be at least 8 characters");
  if (typeof parsed.mcpToken === "string" && parsed.mcpToken.length < 16) problems.push("A2A_MCP_TOKEN: must be at least 16 characters");
  if (problems.length) throw new ConfigError(problems);
  const p = parsed as Parsed;
  return {
    ...p,
    publicUrl: p.publicUrl ?? `http://${p.host!.includes(":") ? `[${p.host}]` : p.host}:${p.port}`,
    agentVersion: p.agentVersion ?? packageVersion,
    defaultLine: p.defaultLine,
    toggles: {
      A2A_ENABLE_SESSION_SHELL: p.enableSessionShell,
      A2A_ENABLE_WORKSPACE_MUTATIONS: p.enableWorkspaceMutations,
      A2A_ENABLE_SUBTASKS: p.enableSubtasks,
      A2A_ENABLE_MESSAGES: p.enableMessages,
    },
  } as Config;
}

/** Reads `.env` from the working directory into process.env (existing variables win). */
export function loadDotEnv(file = ".env"): void {
  if (fs.existsSync(file)) process.loadEnvFile(file);
}
