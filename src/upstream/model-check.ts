// Is there a model OpenCode can use? Reads OpenCode's configuration (GET /config: `model`; GET /config/providers: the
// configured providers and their defaults), resolves the default model the way a session without an explicit model
// gets one, and, when its provider names an endpoint (`options.baseURL`), checks that something answers there (a TCP
// connect, no request). The gateway reports the result in /health and the start-up log, and refuses tasks at once with
// UPSTREAM_MODEL_UNAVAILABLE while it is negative, instead of letting OpenCode retry a dead endpoint for a minute.
import net from "node:net";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { UpstreamClient } from "./client.js";
import { isObject } from "../util/object.js";

export interface ModelCheck {
  state: "ok" | "unavailable" | "unknown";
  provider?: string;
  model?: string;
  /** What is wrong and what to configure (unavailable), or why nothing could be checked (unknown). */
  reason?: string;
  /** The endpoint that was probed, when the provider names one (origin only: no path, no credentials). */
  endpoint?: string;
  checked_at: string;
}

/** Resolves within `timeoutMs`: whether a TCP connection to host:port opens. */
function connects(host: string, port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (error: string | undefined): void => {
      socket.destroy();
      resolve(error);
    };
    socket.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs} ms`));
    socket.once("connect", () => done(undefined));
    socket.once("error", (error: NodeJS.ErrnoException) => done(error.code ?? error.message));
  });
}

export async function checkModel(client: UpstreamClient, opts: { timeoutMs?: number } = {}): Promise<ModelCheck> {
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const at = new Date().toISOString();
  let config: unknown;
  let listed: unknown;
  try {
    [config, listed] = await Promise.all([
      client.call("configGet", (c) => sdk.configGet({ ...c }), { timeout: timeoutMs }),
      client.call("configProviders", (c) => sdk.configProviders({ ...c }), { timeout: timeoutMs }),
    ]);
  } catch (error) {
    return { state: "unknown", reason: `OpenCode's configuration could not be read: ${error instanceof Error ? error.message : String(error)}`, checked_at: at };
  }
  const providers = isObject(listed) && Array.isArray(listed.providers) ? listed.providers.filter(isObject) : [];
  const defaults = isObject(listed) && isObject(listed.default) ? listed.default : {};
  if (providers.length === 0) {
    return {
      state: "unavailable",
      reason: "OpenCode has no model provider configured: add one to opencode.json (`provider`, `model`) or run `opencode auth login`, then restart",
      checked_at: at,
    };
  }
  const configured = isObject(config) && typeof config.model === "string" && config.model.includes("/") ? config.model : undefined;
  let providerId: string | undefined;
  let modelId: string | undefined;
  if (configured !== undefined) {
    providerId = configured.slice(0, configured.indexOf("/"));
    modelId = configured.slice(configured.indexOf("/") + 1);
  } else {
    const first = providers[0]!;
    providerId = typeof first.id === "string" ? first.id : undefined;
    const fallback = providerId === undefined ? undefined : defaults[providerId];
    modelId = typeof fallback === "string" ? fallback : undefined;
  }
  const provider = providers.find((p) => p.id === providerId);
  const names = { ...(providerId === undefined ? {} : { provider: providerId }), ...(modelId === undefined ? {} : { model: modelId }) };
  if (provider === undefined) {
    return {
      state: "unavailable",
      ...names,
      reason: `the default model ${configured ?? "(none)"} names provider "${providerId ?? ""}", which OpenCode does not have configured (configured: ${providers.map((p) => String(p.id)).join(", ")}); fix \`model\` in opencode.json`,
      checked_at: at,
    };
  }
  const models = isObject(provider.models) ? provider.models : {};
  if (modelId === undefined || !(modelId in models)) {
    return {
      state: "unavailable",
      ...names,
      reason: `provider "${providerId}" has no model "${modelId ?? ""}" (it has: ${Object.keys(models).slice(0, 10).join(", ") || "none"}); fix \`model\` in opencode.json`,
      checked_at: at,
    };
  }
  const options = isObject(provider.options) ? provider.options : {};
  const baseURL = typeof options.baseURL === "string" ? options.baseURL : undefined;
  if (baseURL === undefined) return { state: "ok", ...names, checked_at: at };
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    return { state: "unavailable", ...names, reason: `provider "${providerId}" has an invalid baseURL`, checked_at: at };
  }
  const port = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const endpoint = `${url.protocol}//${url.host}`;
  const failure = await connects(host, port, timeoutMs);
  if (failure !== undefined) {
    return {
      state: "unavailable",
      ...names,
      endpoint,
      reason: `the default model ${providerId}/${modelId} is served at ${endpoint}, which does not answer (${failure}); start it or fix the provider's baseURL in opencode.json`,
      checked_at: at,
    };
  }
  return { state: "ok", ...names, endpoint, checked_at: at };
}

/** The last model check, refreshed on demand (at most every `maxAgeMs`), one check at a time. */
export class ModelMonitor {
  #last: ModelCheck | undefined;
  #running: Promise<ModelCheck> | undefined;

  constructor(
    private readonly client: UpstreamClient,
    private readonly onResult: (check: ModelCheck, previous: ModelCheck | undefined) => void = () => {},
  ) {}

  get last(): ModelCheck | undefined {
    return this.#last;
  }

  /** The last result if younger than `maxAgeMs`, else a fresh one (joins a check in progress). */
  current(maxAgeMs: number): Promise<ModelCheck> {
    const last = this.#last;
    if (last !== undefined && Date.now() - Date.parse(last.checked_at) < maxAgeMs) return Promise.resolve(last);
    this.#running ??= checkModel(this.client)
      .then((check) => {
        const previous = this.#last;
        this.#last = check;
        this.onResult(check, previous);
        return check;
      })
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }
}
