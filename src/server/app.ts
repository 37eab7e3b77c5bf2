// The gateway's composition: the catalog, credentials and limits, discovery, the store, the task runtime and its
// observers, the method registry and the audit log, built here in dependency order and handed to the HTTP side
// (./http.ts: the router, the Koa app and the JSON-RPC edge).
import type { Logger } from "pino";
import { catalog as generatedCatalog, packageVersion, type Catalog } from "../contract/catalog.js";
import { warmInBackground } from "./warm.js";
import { gatewayStorageOptions } from "./storage-options.js";
import type { Config } from "../config/index.js";
import type { CredentialResolver } from "../auth/index.js";
import { CredentialRegistry } from "../auth/credentials.js";
import { openCluster, type Cluster } from "../cluster/index.js";
import { interruptForwarding } from "../extensions/interrupt-forwarding.js";
import { AccessLimits } from "../auth/limits.js";
import { PostgresLimiter } from "../auth/limits-postgres.js";
import { AddressGuard } from "../auth/address-guard.js";
import type { DeploymentFacts } from "../discovery/facts.js";
import { buildMethodRegistry, gateMethods, type MethodHandler } from "../operations/index.js";
import type { PushService } from "../push/service.js";
import { pushService } from "./push-wiring.js";
import { Discovery } from "./discovery.js";
import { httpSide, type HttpSide } from "./http.js";
import { AuditRecorder } from "../observability/audit.js";
import { DEFAULT_MEMORY_AUDIT_ENTRIES } from "../storage/audit.js";
import type { Upstream } from "../upstream/index.js";
import { SessionResolver } from "../bridge/sessions.js";
import { Metrics } from "../observability/metrics.js";
import { TaskRuntime } from "../runtime/tasks.js";
import { sweepInBackground } from "../runtime/restart.js";
import { extensionHandlers } from "../extensions/index.js";
import { GovernanceTrail, GovernorService, openGovernancePolicies, type GovernancePolicySet } from "../governance/index.js";
import { InterruptRegistry } from "../extensions/interrupt-registry.js";
import { openStorage, sessionRecordsView, type Storage } from "../storage/index.js";
import { StoreHealth } from "../storage/health.js";
import { SubtaskService, subtaskLimits } from "../subtasks/service.js";
import { MessageService } from "../messages/service.js";
import { SessionDirectory } from "../messages/sessions.js";
import { ModelMonitor } from "../upstream/model-check.js";
import { traceFields, type TraceContext } from "../tracing/index.js";
import { startSpanExport } from "../tracing/otel.js";
import { resolveRouting } from "../bridge/directory.js";
import { CallAttribution, type CallerSession } from "../mcp/attribution.js";
import { MessagingTools } from "../mcp/messages-tools.js";
import { OPENCODE_CALLER, withOpencodeCredential } from "../mcp/credential.js";
import { lazyMcp } from "../mcp/lazy.js";

/** The gateway: its HTTP side (the Koa app, the node:http handler, the router) and what it is built from. */
export interface Gateway extends HttpSide {
  registry: ReadonlyMap<string, MethodHandler>;
  discovery: Discovery;
  auth: CredentialResolver;
  upstream: Upstream | undefined;
  runtime: TaskRuntime | undefined;
  /** The store (absent in contract-only setups). */
  storage: Storage | undefined;
  /** Push notification configs and delivery (absent when A2A_PUSH_NOTIFICATIONS_ENABLED=false or without an upstream). */
  push: PushService | undefined;
  metrics: Metrics;
  /** Once the gateway serves: a reader thread, the push outbox's first pass and the validators, in the background (./warm.ts). */
  warm(): void;
  /**
   * Ends live streams (their tasks stay as stored: a restarted gateway fails them as GATEWAY_RESTARTED), stops push
   * delivery (what is queued stays for the next start), flushes the audit log and closes the store the gateway opened
   * itself. Call it before stopping the upstream link: otherwise the turns see their event stream end and fail.
   */
  close(): Promise<void>;
}

/** How often requests past their TTL are looked for (and recorded as expired in their task's trail). */
const EXPIRY_SWEEP_MS = 30_000;

/** What the cards and the contract declare for this deployment. Push delivery needs an upstream (tasks to push). */
export function deploymentFacts(config: Config, hasUpstream: boolean): DeploymentFacts {
  return {
    defaultLine: config.defaultLine,
    pushNotifications: config.pushEnabled && hasUpstream,
    toggles: config.toggles,
    requiredExtensions: config.requiredExtensions,
    extensionLimits: { "opencode-subtasks": subtaskLimits(config.maxParallelSubtasks) },
    allowDirectoryOverride: config.allowDirectoryOverride,
    ...(config.project ? { project: config.project } : {}),
    ...(config.workspaceRoot ? { workspaceRoot: config.workspaceRoot } : {}),
    exposeWorkspaceRoot: config.exposeWorkspaceRoot,
    executionEnvironment: {
      sandboxMode: config.sandboxMode,
      sandboxFilesystemScope: config.sandboxFilesystemScope,
      sandboxWritableRoots: config.sandboxWritableRoots,
      networkAccess: config.networkAccess,
      networkAllowedDomains: config.networkAllowedDomains,
      approvalPolicy: config.approvalPolicy,
      approvalEscalation: config.approvalEscalation,
      writeAccessScope: config.writeAccessScope,
      writeAccessOutsideWorkspace: config.writeAccessOutsideWorkspace,
    },
  };
}

/**
 * pino's log formatter for the task runtime: a line about a task (`taskId`) carries the trace of the request that
 * started it (`trace_id`, `span_id`), read from the live task only when such a line is written.
 */
function taskTraceFields(traceOf: (taskId: string) => TraceContext | undefined): (object: object) => object {
  return (object) => {
    const { taskId, trace_id } = object as { taskId?: unknown; trace_id?: unknown };
    const trace = typeof taskId === "string" && trace_id === undefined ? traceOf(taskId) : undefined;
    return trace === undefined ? object : { ...object, ...traceFields(trace) };
  };
}

/** The registry of A2A_BEARER_TOKEN, A2A_CREDENTIALS and A2A_CREDENTIALS_FILE; throws CredentialError when invalid. */
export function credentialRegistry(config: Config, catalog: Catalog, log: Logger): CredentialRegistry {
  return new CredentialRegistry(
    { bearerToken: config.bearerToken, credentials: config.credentials, credentialsFile: config.credentialsFile },
    {
      access: catalog.access_control,
      onReloadError: (err) => log.error({ err: err.message }, "credentials file changed but cannot be loaded; the previous credentials stay in force"),
    },
  );
}

export interface GatewayDeps {
  catalog?: Catalog;
  /** The OpenCode link (src/upstream); absent in contract-only setups (task operations then answer UPSTREAM_UNREACHABLE). */
  upstream?: Upstream;
  /** The store; default: opened from the configuration when there is an upstream. */
  storage?: Storage;
  /** The credential registry; default: built from A2A_BEARER_TOKEN, A2A_CREDENTIALS and A2A_CREDENTIALS_FILE. */
  credentials?: CredentialResolver;
  /** The push service's clock (epoch ms: quiet hours, retries); default Date.now. Tests move it across quiet windows. */
  pushClock?: () => number;
  /** The governance policies; default: loaded from A2A_GOVERNANCE_POLICIES_FILE when it is set. */
  policies?: GovernancePolicySet;
}

export async function createGateway(config: Config, log: Logger, deps: GatewayDeps = {}): Promise<Gateway> {
  const catalog = deps.catalog ?? generatedCatalog;
  // OpenTelemetry export: the SDK is loaded only when an OTLP endpoint is configured (src/tracing/otel.ts).
  const stopSpanExport = await startSpanExport(
    { endpoint: config.otlpEndpoint, tracesEndpoint: config.otlpTracesEndpoint, serviceVersion: packageVersion },
    log.child({ component: "tracing" }),
  );
  // Push notifications need the task runtime (which needs an upstream).
  const facts = deploymentFacts(config, deps.upstream !== undefined);
  const registryAuth = deps.credentials ?? credentialRegistry(config, catalog, log);
  // The OpenCode credential of POST /mcp (A2A_MCP_TOKEN) resolves to a principal holding only peers.call.
  const auth = config.mcpEnabled && config.mcpToken !== undefined ? withOpencodeCredential(registryAuth, config.mcpToken) : registryAuth;
  // A bad policy file stops the start here (ConfigError), before anything is opened.
  const governanceLog = log.child({ component: "governance" });
  const policies =
    deps.policies ?? (config.governancePoliciesFile === undefined ? undefined : await openGovernancePolicies(config.governancePoliciesFile, catalog, governanceLog));
  let expirySweep: NodeJS.Timeout | undefined;
  const guard = new AddressGuard({
    windowMs: config.authWindow * 1000,
    maxFailures: config.authFailureLimit,
    maxUnauthenticated: config.unauthenticatedRateLimit,
    auditSample: config.auditAuthFailureSample,
  });
  const storeHealth = new StoreHealth();
  const discovery = new Discovery({
    catalog,
    ...(deps.upstream === undefined
      ? {}
      : { upstream: deps.upstream, store: () => storeHealth.status(), tasks: () => runtime?.admission(), model: () => model?.current(model.last?.state === "ok" ? 10_000 : 1_000) }),
    facts,
    auth,
    cardMaxAgeSeconds: config.cardMaxAgeSeconds,
    version: packageVersion,
    identity: {
      name: config.title!,
      description: config.description!,
      version: config.agentVersion,
      publicUrl: config.publicUrl,
      ...(config.documentationUrl ? { documentationUrl: config.documentationUrl } : {}),
    },
  });
  let runtime: TaskRuntime | undefined;
  let cluster: Cluster | undefined;
  let model: ModelMonitor | undefined;
  let push: PushService | undefined;
  let sessions: SessionResolver | undefined;
  let interrupts: InterruptRegistry | undefined;
  let restartSweep: ReturnType<typeof sweepInBackground> | undefined;
  const routing = { root: config.workspaceRoot ?? process.cwd(), allowOverride: config.allowDirectoryOverride };
  let storage = deps.storage;
  const ownsStorage = storage === undefined && deps.upstream !== undefined;
  const metrics = new Metrics(deps.upstream === undefined ? {} : { streamRetries: () => deps.upstream!.hub.status().reconnects });
  metrics.readAtScrape("a2a_auth_refused_total", "Requests refused per client address before authentication (A2A_AUTH_FAILURE_LIMIT, A2A_UNAUTHENTICATED_RATE_LIMIT)", () => guard.refused);
  metrics.readAtScrape("a2a_audit_suppressed_total", "Failed authentications not written to the audit log (beyond A2A_AUDIT_AUTH_FAILURE_SAMPLE)", () => guard.suppressed);
  if (deps.upstream !== undefined) storage ??= await openStorage(gatewayStorageOptions(config));
  // On PostgreSQL the rate windows and stream slots live in the database: every gateway on it shares each credential's.
  const shared = storage?.backend === "postgres" ? new PostgresLimiter(storage.sql, { rateLeaseMs: config.rateLimitLeaseMs }) : undefined;
  const limits = new AccessLimits({ maxRequests: config.rateLimitMaxRequests, windowMs: config.rateLimitWindow * 1000, maxStreams: config.rateLimitMaxStreams }, shared);
  if (shared !== undefined) metrics.rateLimitTakes(shared.takes);
  if (deps.upstream !== undefined && storage !== undefined) {
    const upstream = deps.upstream;
    const modelLog = log.child({ component: "model" });
    model = new ModelMonitor(upstream.client, (check, previous) => {
      if (check.state === previous?.state) return;
      if (check.state === "unavailable") modelLog.warn({ provider: check.provider, model: check.model, endpoint: check.endpoint }, `no usable model: ${check.reason ?? ""}`);
      else if (check.state === "ok") modelLog.info({ provider: check.provider, model: check.model }, "default model available");
    });
    void model.current(0);
    sessions = new SessionResolver(sessionRecordsView(storage.sessions), upstream.client, config.pendingClaimTtl * 1000, log.child({ component: "sessions" }));
    // The observers the runtime reports to are built first and handed to its constructor; the ones that read tasks
    // back (push: a config's task must be visible to its caller; the interrupt registry: a reply resumes its task)
    // reach the runtime through a closure, called only after construction.
    const tasks = (): TaskRuntime => runtime!;
    const store = storage;
    const trail = new GovernanceTrail({ storage: store, log: governanceLog });
    const governance = { trail, ...(policies === undefined ? {} : { policies }) };
    // The gateways of the database (PostgreSQL): this one's lease and the bus to the others (src/cluster).
    cluster = openCluster({
      storage: store,
      ...(config.instanceId === undefined ? {} : { instance: config.instanceId }),
      leaseMs: config.instanceLease * 1000,
      log: log.child({ component: "cluster" }),
    });
    const peers = cluster.peers;
    const forward = peers === undefined ? undefined : interruptForwarding(peers, (taskId, principal) => tasks().runnerOf(taskId, principal), () => interrupts!);
    interrupts = new InterruptRegistry({
      config,
      storage: store,
      upstream: upstream.client,
      log: log.child({ component: "extensions" }),
      tasks,
      governance,
      ...(forward === undefined ? {} : { forward }),
    });
    // Requests nobody answered land in their task's trail as `expired` soon after their TTL, read or not.
    expirySweep = setInterval(() => {
      trail.sweepExpired().catch((error: unknown) => {
        governanceLog.error({ err: error instanceof Error ? error.message : String(error) }, "governance expiry sweep failed");
      });
    }, EXPIRY_SWEEP_MS);
    expirySweep.unref();
    if (facts.pushNotifications) {
      push = pushService(config, store, metrics, log.child({ component: "push" }), tasks, deps.pushClock);
    }
    // Post-run governors review completed turns whenever a policy file is in use (its governors may change on reload).
    const governors =
      policies === undefined
        ? undefined
        : await GovernorService.create({ policies, trail, upstream: upstream.client, sessions, routing, metrics, log: governanceLog });
    runtime = new TaskRuntime({
      store: storage.tasks,
      cluster,
      upstream: upstream.client,
      hub: upstream.hub,
      sessions,
      routing,
      metrics,
      log: log.child({ component: "tasks" }, { formatters: { log: taskTraceFields((taskId) => runtime?.traceOf(taskId)) } }),
      cancelAbortTimeoutMs: config.cancelAbortTimeout * 1000,
      turnTimeoutMs: config.opencodeStreamTimeout * 1000,
      reconnectGraceMs: config.turnReconnectGrace * 1000,
      artifacts: { changes: config.artifactChanges, fileMaxBytes: config.artifactFileMaxBytes },
      storeHealth,
      admission: { maxRunning: config.maxRunningTasks, queueLimit: config.taskQueueLimit },
      model,
      interrupts,
      ...(push === undefined ? {} : { transitions: push }),
      ...(governors === undefined ? {} : { review: governors }),
    });
    const admitted = runtime;
    metrics.readAtScrape("a2a_tasks_running", "Turns running in OpenCode (working tasks; A2A_MAX_RUNNING_TASKS)", () => admitted.admission().running);
    metrics.readAtScrape("a2a_tasks_waiting", "Tasks waiting for a free turn (A2A_TASK_QUEUE_LIMIT)", () => admitted.admission().queued);
    // A managed OpenCode that dies takes its running turns with it: they fail at once (UPSTREAM_TURN_LOST) instead of
    // waiting for the event stream's reconnect grace.
    const tasksOf = runtime;
    upstream.managed?.on("exit", (code, signal) => {
      if (tasksOf.active === 0) return;
      tasksOf.upstreamLost(`the OpenCode process exited (${signal ?? `code ${String(code)}`}) while the turn ran`);
    });
    // Tasks a previous process (or a dead gateway) left running fail, in the background; methods wait (gateMethods).
    restartSweep = sweepInBackground((alive) => tasks().failOrphans(alive), log.child({ component: "tasks" }));
    await cluster.start(restartSweep.sweep);
    push?.start();
  }
  // Messages between OpenCode sessions (seed 002): the opencode.messages.* methods and the MCP messaging tools.
  const messages =
    deps.upstream === undefined || storage === undefined || sessions === undefined
      ? undefined
      : new MessageService({
          store: storage.messages,
          directory: new SessionDirectory({ upstream: deps.upstream.client, sessions, owners: storage.sessions, activeOnly: config.messagesActiveOnly }),
          upstream: deps.upstream.client,
          hub: deps.upstream.hub,
          defaultSession: config.messagesDefaultSession!,
          awaitTimeoutMs: config.messagesAwaitTimeout * 1000,
          currentDirectoryOnly: config.messagesCurrentDirectoryOnly,
          activeOnly: config.messagesActiveOnly,
          root: routing.root,
          log: log.child({ component: "messages" }),
        });
  const extensions =
    runtime === undefined || messages === undefined || deps.upstream === undefined || storage === undefined || sessions === undefined || interrupts === undefined
      ? undefined
      : extensionHandlers({
          config,
          upstream: deps.upstream.client,
          hub: deps.upstream.hub,
          storage,
          runtime,
          interrupts,
          sessions,
          subtasks: new SubtaskService({
            runtime,
            sessions,
            upstream: deps.upstream.client,
            calls: storage.subtaskCalls,
            routing,
            maxParallel: config.maxParallelSubtasks,
            limits,
            metrics,
            log: log.child({ component: "subtasks" }),
          }),
          messages,
          routing,
          metrics,
          log: log.child({ component: "extensions" }),
        });
  const registry = buildMethodRegistry(catalog, {
    extendedCard: (shape) => discovery.cardObject(shape, true),
    ...(runtime === undefined ? {} : { tasks: runtime }),
    ...(push === undefined ? {} : { push }),
    ...(extensions === undefined ? {} : { extensions }),
  });
  if (restartSweep !== undefined) gateMethods(registry, restartSweep.pending);

  // The audit log lives in the task store; contract-only setups (no upstream, no store) keep it in a private
  // in-memory store (the memory backend: SQLite in memory), bounded to DEFAULT_MEMORY_AUDIT_ENTRIES, closed with the gateway.
  const auditStorage = storage ?? (await openStorage({ backend: "memory" }));
  const ownsAuditStorage = auditStorage !== storage;
  const recorder = new AuditRecorder({
    store: auditStorage.audit,
    log: log.child({ component: "audit" }),
    retentionDays: config.auditRetentionDays,
    maxEntries: ownsAuditStorage ? Math.min(config.auditMaxEntries || DEFAULT_MEMORY_AUDIT_ENTRIES, DEFAULT_MEMORY_AUDIT_ENTRIES) : config.auditMaxEntries,
  });
  metrics.readAtScrape("a2a_audit_write_failures_total", "Audit log batches the store failed to write (logged; their entries dropped)", () => recorder.failedWrites);
  metrics.readAtScrape("a2a_audit_entries_dropped_total", "Audit entries lost: in a batch the store failed to write, or malformed", () => recorder.droppedEntries);
  if (storage?.walCheckpoints !== undefined) metrics.sqliteWal(storage.walCheckpoints);
  const registryOf = interrupts;
  const governanceHistory = registryOf === undefined ? undefined : registryOf.history.bind(registryOf);
  // The MCP tools for the agents inside OpenCode (one outbound client set per gateway: the A2A_CLIENT_* settings).
  // The OpenCode credential's calls act for the turn that made them: a live task's, or one a delivered message started.
  const live = runtime;
  const callers = (): CallerSession[] => [
    ...(live?.onSessions() ?? []).map((t) => ({
      sessionId: t.sessionId!,
      principal: { id: t.owner, credentialId: OPENCODE_CALLER.credentialId, trustLevel: t.trustLevel ?? "unknown", scopes: t.scopes ?? new Set<string>(), admin: t.admin },
      routing: t.routing,
      taskId: t.id,
      contextId: t.contextId,
    })),
    ...(messages?.deliveredTurns() ?? []),
  ];
  const attribution = deps.upstream === undefined || live === undefined ? undefined : new CallAttribution({ callers, hub: deps.upstream.hub, upstream: deps.upstream.client });
  // Checked whether or not the tools are offered: a bad A2A_MESSAGES_TOOL_DEFAULTS stops every start.
  const toolDefaults = await MessagingTools.checkDefaults(config.messagesToolDefaults);
  const messaging =
    messages === undefined || !config.enableMessages || config.messagesTools.length === 0
      ? undefined
      : new MessagingTools({
          service: messages,
          enabled: config.messagesTools,
          defaults: toolDefaults,
          defaultSession: config.messagesDefaultSession!,
          rootRouting: resolveRouting(undefined, routing),
          reroute: (dir) => resolveRouting({ opencode: { directory: dir } }, routing),
        });
  const mcpDeps = { settings: config, attribution, messaging, recorder: config.auditEnabled ? recorder : undefined, log: log.child({ component: "mcp" }) };
  const mcp = config.mcpEnabled ? lazyMcp(async () => new (await import("../mcp/endpoint.js")).McpEndpoint(mcpDeps)) : undefined;
  const { app, handler, router } = httpSide({ config, log, catalog, facts, registry, discovery, recorder, metrics, auth, limits, guard, governanceHistory, mcp });
  return {
    app,
    handler,
    router,
    registry,
    discovery,
    auth,
    upstream: deps.upstream,
    runtime,
    storage,
    metrics,
    push,
    warm: () => warmInBackground({ storage, push, catalog, log }),
    async close() {
      if (expirySweep !== undefined) clearInterval(expirySweep);
      await runtime?.shutdown();
      await cluster?.stop();
      await push?.stop();
      await recorder.close();
      await mcp?.close();
      await limits.close();
      if (ownsStorage) await storage?.close();
      if (ownsAuditStorage) await auditStorage.close();
      await stopSpanExport?.();
    },
  };
}
