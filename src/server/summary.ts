// The start-up summary (seed 000): one log line saying what this gateway runs on — the store (backend, redacted URL,
// durability), the upstream (managed or external, OpenCode's version as its health endpoint reports it), the
// protocol lines and transports, the public URL, and whether traces are exported.
import type { Logger } from "pino";
import type { Config } from "../config/index.js";
import type { ProtocolLine } from "../contract/catalog.js";
import type { Storage } from "../storage/index.js";
import type { Upstream } from "../upstream/index.js";
import { tracesUrl } from "../tracing/otel.js";

/** A URL fit for a log line: user info reduced to the user name, every query value and the fragment dropped. */
export function redactUrl(url: string): string {
  return url
    .replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/@?#]*)@/i, (_m, scheme: string, info: string) => `${scheme}${info.includes(":") ? `${info.slice(0, info.indexOf(":"))}:[redacted]` : info}@`)
    .replace(/\?.*$/s, (q) => (q.length > 1 ? "?[redacted]" : ""))
    .replace(/#.*$/s, "");
}

export interface StartupSummary {
  store: { backend: string; url: string | undefined; durability: string };
  upstream: { mode: "managed" | "external"; url: string; opencode_version: string | undefined; healthy: boolean; error?: string };
  protocol: { lines: ProtocolLine[]; default_line: ProtocolLine; transports: string[] };
  public_url: string;
  tracing: { propagation: "w3c-trace-context"; otlp_endpoint: string | undefined };
}

/** What the summary says (the upstream's health is asked once, with its short timeout). */
export async function startupSummary(config: Config, storage: Storage, upstream: Upstream, lines: ProtocolLine[]): Promise<StartupSummary> {
  let durability: string;
  if (storage.backend === "memory") durability = "memory (ephemeral: tasks are lost on restart)";
  else if (storage.database?.location.kind === "memory") durability = "sqlite in-memory (ephemeral: tasks are lost on restart)";
  else if (storage.backend === "postgres") durability = `${storage.description} (durability as the server is configured)`;
  else {
    let journal = "unknown";
    try {
      const row = storage.database?.statement("PRAGMA journal_mode").get() as { journal_mode?: string } | undefined;
      journal = row?.journal_mode?.toUpperCase() ?? journal;
    } catch {
      // the store answers later; the summary does not fail start-up
    }
    durability = `sqlite file (${storage.description.replace(/^sqlite file /, "")}), journal ${journal}, synchronous NORMAL`;
  }
  const status = await upstream.status();
  const otlp = tracesUrl({ endpoint: config.otlpEndpoint, tracesEndpoint: config.otlpTracesEndpoint });
  return {
    store: { backend: storage.backend, url: storage.backend === "memory" ? undefined : redactUrl(config.taskStoreUrl), durability },
    upstream: {
      mode: status.mode,
      url: redactUrl(status.url),
      opencode_version: status.version,
      healthy: status.healthy,
      ...(status.error === undefined ? {} : { error: status.error }),
    },
    protocol: { lines, default_line: config.defaultLine, transports: ["jsonrpc", "http+json"] },
    public_url: config.publicUrl,
    tracing: { propagation: "w3c-trace-context", otlp_endpoint: otlp === undefined ? undefined : redactUrl(otlp) },
  };
}

/** Logs the summary (info); never throws (a failure is logged as a warning). */
export async function logStartupSummary(log: Pick<Logger, "info" | "warn">, config: Config, storage: Storage, upstream: Upstream, lines: ProtocolLine[]): Promise<void> {
  try {
    const summary = await startupSummary(config, storage, upstream, lines);
    const version = summary.upstream.opencode_version ?? "version unknown";
    log.info(
      summary,
      `opencode-a2a ready: store ${summary.store.backend} (${summary.store.durability}); OpenCode ${summary.upstream.mode} ${version}; A2A ${summary.protocol.lines.join(" + ")} over JSON-RPC + HTTP+JSON at ${summary.public_url}`,
    );
  } catch (err) {
    log.warn({ err: err instanceof Error ? err.message : String(err) }, "start-up summary unavailable");
  }
}
