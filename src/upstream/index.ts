// The gateway's link to OpenCode: the wrapped generated client, the one shared event subscription, and — when
// OPENCODE_BASE_URL is not set — the supervised `opencode serve` child (managed mode).
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { Config } from "../config/index.js";
import { resolveOpencodeBinary } from "./binary.js";
import { UpstreamClient } from "./client.js";
import { EventHub, type HubStatus } from "./hub.js";
import { ManagedOpencode } from "./managed.js";
import { payloadLog } from "../logging/payloads.js";

export { UpstreamClient, type CallContext, type CallOptions } from "./client.js";
export { EventHub, Subscription, sessionIdOf, type HubItem, type HubEvent, type OpencodeEvent } from "./hub.js";
export { UpstreamError, classifyAssistantError } from "./errors.js";
export { ManagedOpencode } from "./managed.js";

export interface UpstreamStatus {
  mode: "external" | "managed";
  url: string;
  /** Result of the last health probe. */
  healthy: boolean;
  version: string | undefined;
  error: string | undefined;
  events: HubStatus;
  managed?: { pid: number | undefined; guardianPid: number | undefined; restarts: number };
}

export interface Upstream {
  mode: "external" | "managed";
  client: UpstreamClient;
  hub: EventHub;
  managed: ManagedOpencode | undefined;
  /** Probes GET /global/health (short timeout) and reports the link's state. */
  status(): Promise<UpstreamStatus>;
  stop(): Promise<void>;
}

export interface StartUpstreamOptions {
  /** Environment of a managed child (default process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * Managed mode: OpenCode configuration added to the child's OPENCODE_CONFIG_CONTENT (merged into the one the
   * environment gives, key by key at the top level and one level down, ours winning), e.g. the gateway's MCP server.
   */
  opencodeConfig?: Record<string, Record<string, unknown>>;
}

export async function startUpstream(config: Config, log: Logger, opts: StartUpstreamOptions = {}): Promise<Upstream> {
  const upstreamLog = log.child({ component: "upstream" });
  let managed: ManagedOpencode | undefined;
  let baseUrl = config.opencodeBaseUrl;
  let password = config.opencodePassword;
  if (baseUrl === undefined) {
    // Managed mode: the user's own environment (their OpenCode config, providers and auth) plus a password so
    // that no other local process can drive the agent through the child's port.
    password ??= randomBytes(24).toString("base64url");
    const env: NodeJS.ProcessEnv = {
      ...(opts.env ?? process.env),
      OPENCODE_SERVER_PASSWORD: password,
      OPENCODE_SERVER_USERNAME: config.opencodeUsername,
    };
    if (opts.opencodeConfig !== undefined) env.OPENCODE_CONFIG_CONTENT = mergedConfigContent(env.OPENCODE_CONFIG_CONTENT, opts.opencodeConfig);
    managed = new ManagedOpencode({
      binary: resolveOpencodeBinary(config.opencodeBinary),
      cwd: config.workspaceRoot ?? process.cwd(),
      env,
      port: config.opencodePort,
      password,
      username: config.opencodeUsername,
      startTimeoutMs: config.opencodeStartTimeout * 1000,
      onLine: (stream, line) => upstreamLog.debug({ stream }, line),
    });
    managed.on("exit", (code, signal) => upstreamLog.warn({ code, signal }, "managed opencode exited"));
    managed.on("restarting", (delayMs, attempt) => upstreamLog.warn({ delayMs, attempt }, "restarting managed opencode"));
    managed.on("error", (error) => upstreamLog.error({ err: error.message }, "managed opencode failed to start"));
    baseUrl = await managed.start();
    upstreamLog.info({ url: baseUrl, pid: managed.pid, guardianPid: managed.guardianPid }, "managed opencode ready");
  }

  const client = new UpstreamClient({
    baseUrl,
    username: config.opencodeUsername,
    ...(password === undefined ? {} : { password }),
    ...(config.workspaceRoot === undefined ? {} : { directory: config.workspaceRoot }),
    timeoutMs: config.opencodeTimeout * 1000,
    streamTimeoutMs: config.opencodeStreamTimeout * 1000,
    maxConcurrentRequests: config.opencodeMaxRequests,
    maxQueuedRequests: config.opencodeMaxQueuedRequests,
  });
  const hub = new EventHub({
    upstream: client,
    idleTimeoutMs: config.opencodeEventIdleTimeout * 1000,
    bufferLimit: config.opencodeEventBufferLimit,
    reconnectInitialMs: 250,
    reconnectMaxMs: config.opencodeEventReconnectMax * 1000,
    maxStreams: config.opencodeMaxStreams,
    log: upstreamLog,
    payloads: payloadLog(config, upstreamLog),
  });
  managed?.on("ready", (url) => {
    client.setBaseUrl(url);
    hub.reconnectNow();
    upstreamLog.info({ url }, "managed opencode ready");
  });
  hub.start();

  return {
    mode: managed === undefined ? "external" : "managed",
    client,
    hub,
    managed,
    async status() {
      let healthy = false;
      let version: string | undefined;
      let error: string | undefined;
      try {
        const health = await client.health({ timeout: 2_000 });
        healthy = health.healthy;
        version = health.version;
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      }
      return {
        mode: managed === undefined ? "external" : "managed",
        url: client.baseUrl,
        healthy,
        version,
        error,
        events: hub.status(),
        ...(managed === undefined ? {} : { managed: { pid: managed.pid, guardianPid: managed.guardianPid, restarts: managed.restarts } }),
      };
    },
    async stop() {
      await hub.stop();
      client.close();
      await managed?.stop();
    },
  };
}

/** OPENCODE_CONFIG_CONTENT with `extra` merged in (a content that is not a JSON object is replaced). */
export function mergedConfigContent(content: string | undefined, extra: Record<string, Record<string, unknown>>): string {
  let base: Record<string, unknown> = {};
  try {
    const parsed = content === undefined || content.trim() === "" ? {} : (JSON.parse(content) as unknown);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) base = parsed as Record<string, unknown>;
  } catch {
    // not JSON: OpenCode could not have read it either
  }
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(extra)) {
    const before = merged[key];
    merged[key] = typeof before === "object" && before !== null && !Array.isArray(before) ? { ...(before as Record<string, unknown>), ...value } : value;
  }
  return JSON.stringify(merged);
}
