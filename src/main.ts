// `opencode-a2a serve`: load the configuration, start the Koa gateway, stop cleanly on SIGINT/SIGTERM.
// `opencode-a2a keys …`: manage the credentials file (src/cli/keys.ts).
// `opencode-a2a call …`: one outbound A2A call to a peer agent (src/cli/call.ts).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError, loadConfig, loadDotEnv, type Config } from "./config/index.js";
import { openStorage, StorageError, TASK_STORE_URL_VARIABLE, type Storage } from "./storage/index.js";
import { catalog, packageVersion } from "./contract/catalog.js";
import { createLogger } from "./logging/index.js";
import { createGateway, credentialRegistry } from "./server/app.js";
import { openGovernancePolicies } from "./governance/index.js";
import { CredentialError } from "./auth/credentials.js";
import { startUpstream } from "./upstream/index.js";
import { generateMcpToken, opencodeMcpConfig } from "./mcp/credential.js";
import { configurationHelp } from "./cli/help.js";
import { checkInstallation, InstallationError } from "./cli/preflight.js";
import { logStartupSummary } from "./server/summary.js";
import { capYoungGeneration } from "./util/young-generation.js";
import { boundOldGeneration } from "./util/old-generation.js";
import { gatewayStorageOptions } from "./server/storage-options.js";

const USAGE = `opencode-a2a ${packageVersion}: A2A gateway (0.3 + 1.0, JSON-RPC + HTTP+JSON) in front of OpenCode

Usage:
  opencode-a2a serve        start the gateway (configuration from the environment and ./.env)
  opencode-a2a serve --help the configuration variables of serve
  opencode-a2a keys create --trust LEVEL --principal NAME [--scheme bearer|api_key|basic] [--file PATH] …
                            create a key in A2A_CREDENTIALS_FILE and print its secret once
  opencode-a2a keys list | revoke --id ID | delete --id ID
                            list the keys (no secrets), disable or remove one
  opencode-a2a keys --help  every option of the key commands
  opencode-a2a call [--json] [--task ID] [--context ID] [--line 0.3|1.0] <agent-url|card-url> <text>
                            send a message to another A2A agent and stream its answer (settings and
                            credentials: the A2A_CLIENT_* variables only)
  opencode-a2a call --help  every option, the A2A_CLIENT_* variables and the exit codes of call
  opencode-a2a --version    print the version
  opencode-a2a --help       this help

Credentials: A2A_BEARER_TOKEN, A2A_CREDENTIALS or A2A_CREDENTIALS_FILE (at least one). Without OPENCODE_BASE_URL the gateway starts \`opencode serve\` itself.
Exit codes of serve: 78 when the configuration or the installation cannot work (the message names what and the fix), 1 other start-up failures.
Exit codes of call: 0 completed, 1 call failed, 2 usage or configuration error, 3 failed/canceled/rejected,
4 input-required/auth-required, 5 another state (see call --help).`;

const SERVE_USAGE = `opencode-a2a ${packageVersion}

Usage: opencode-a2a serve

Starts the gateway on A2A_HOST:A2A_PORT and prints \`opencode-a2a listening on URL\` on stdout; SIGINT/SIGTERM stop it.
Exit code 78 when the configuration or the installation cannot work (the message names what and the fix).`;

export async function serve(env: NodeJS.ProcessEnv = process.env): Promise<http.Server> {
  const config = loadConfig(env, packageVersion);
  checkInstallation(config);
  const log = createLogger(config.logLevel, undefined, config.logFormat);
  // Credentials, the governance policies and the store are checked before anything starts, so a bad registry, policy
  // file or database path never leaves a managed OpenCode behind.
  const credentials = credentialRegistry(config, catalog, log);
  const policies = config.governancePoliciesFile === undefined ? undefined : await openGovernancePolicies(config.governancePoliciesFile, catalog, log.child({ component: "governance" }));
  const storage = await openConfiguredStorage(config);
  // A background failure nobody awaited is logged; it never takes the process (and every client) down.
  process.on("unhandledRejection", (reason) => {
    log.error({ err: reason instanceof Error ? reason.message : String(reason), stack: reason instanceof Error ? reason.stack : undefined }, "unhandled rejection (ignored)");
  });
  // The HTTP server binds first, so that a managed OpenCode can be given the gateway's own URL (its MCP server `a2a`).
  // Requests arriving before the gateway is built wait for it (OpenCode's MCP connection among them); the
  // "listening" line still comes once OpenCode is up.
  type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
  let built!: (handler: Handler | undefined) => void;
  const gatewayBuilt = new Promise<Handler | undefined>((resolve) => (built = resolve));
  let server: http.Server;
  try {
    server = http.createServer();
    server.headersTimeout = config.httpHeadersTimeout * 1000;
    server.requestTimeout = config.httpRequestTimeout * 1000;
    server.keepAliveTimeout = config.httpKeepAliveTimeout * 1000;
    // CONNECT is no request this gateway serves: answer it instead of dropping the socket.
    server.on("connect", (_req, socket: import("node:net").Socket) => {
      socket.end("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, POST, DELETE\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
      void gatewayBuilt.then((handler) => {
        if (handler !== undefined) handler(req, res);
        else res.writeHead(503, { Connection: "close" }).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => resolve());
    });
  } catch (err) {
    await storage.close();
    throw err;
  }
  const address = server.address() as AddressInfo;
  const bound = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
  if (!env.A2A_PUBLIC_URL) config.publicUrl = bound;
  // Managed mode: OpenCode gets the MCP endpoint as its server `a2a`, with a token of this run unless one is set.
  const mcpConfig = config.opencodeBaseUrl === undefined && config.mcpEnabled ? opencodeMcpConfig(loopbackUrl(address, log), (config.mcpToken ??= generateMcpToken())) : undefined;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  try {
    upstream = await startUpstream(config, log, { env, ...(mcpConfig === undefined ? {} : { opencodeConfig: mcpConfig }) });
  } catch (err) {
    built(undefined);
    server.close();
    await storage.close();
    throw err;
  }
  const gateway = await createGateway(config, log, { upstream, credentials, storage, ...(policies === undefined ? {} : { policies }) });
  built(gateway.handler);
  // Store, durability, upstream mode and OpenCode version, protocol lines, public URL: logged once the upstream answered.
  void logStartupSummary(log, config, storage, upstream, catalog.protocol_lines);
  log.info(
    {
      url: config.publicUrl,
      card: `${config.publicUrl}/.well-known/agent-card.json`,
      docs: `${config.publicUrl}/docs`,
      openrpc: `${config.publicUrl}/openrpc.json`,
      health: `${config.publicUrl}/health`,
      ...(config.metricsEnabled ? { metrics: `${config.publicUrl}/metrics` } : {}),
      defaultLine: config.defaultLine,
      version: packageVersion,
      upstream: upstream.mode,
    },
    "opencode-a2a listening",
  );
  // A single machine-readable line on stdout so supervisors and tests know where to connect.
  process.stdout.write(`opencode-a2a listening on ${bound}\n`);
  gateway.warm();
  // Node 22+ would let the young generation grow to four times Node 20's size and keep it resident (./util/young-generation.ts).
  const youngGeneration = capYoungGeneration();
  // V8 lets the old generation grow to 4× what survives a full collection; 1.5× here (./util/old-generation.ts).
  boundOldGeneration();
  // In-flight requests (blocking calls and streams included), for the graceful shutdown.
  let inFlight = 0;
  let drained: (() => void) | undefined;
  server.on("request", (_req: http.IncomingMessage, res: http.ServerResponse) => {
    inFlight++;
    res.once("close", () => {
      if (--inFlight === 0) drained?.();
    });
  });
  const allAnswered = (ms: number): Promise<void> =>
    inFlight === 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          drained = () => {
            clearTimeout(timer);
            resolve();
          };
        });
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      log.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    youngGeneration?.stop();
    const graceMs = config.shutdownGrace * 1000;
    log.info({ signal, in_flight: inFlight, grace_seconds: config.shutdownGrace }, "shutting down: no new connections; in-flight calls may finish");
    // Hard deadline: the grace, the answers at its end, then the OpenCode child (SIGTERM, 5 s, SIGKILL in upstream.stop()).
    setTimeout(() => process.exit(1), graceMs + 20_000).unref();
    server.close();
    server.closeIdleConnections();
    void (async () => {
      await allAnswered(graceMs);
      if (inFlight > 0) {
        // The grace is over: whoever still waits gets the task's current state now.
        const released = gateway.runtime?.release() ?? 0;
        log.info({ in_flight: inFlight, released }, "grace over: answering in-flight calls with their tasks' current state");
        await allAnswered(2_000);
      }
      server.closeAllConnections();
      // The gateway first (live turns stop as they are, push delivery stops, the audit log is flushed), then the
      // store and the upstream link: ending the event stream under running turns would fail their tasks.
      await gateway.close().catch((err: unknown) => log.error({ err: err instanceof Error ? err.message : String(err) }, "gateway close failed"));
      await storage.close().catch((err: unknown) => log.error({ err: err instanceof Error ? err.message : String(err) }, "store close failed"));
      await upstream.stop().catch((err: unknown) => log.error({ err: err instanceof Error ? err.message : String(err) }, "upstream stop failed"));
      process.exit(0);
    })();
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
  return server;
}

/**
 * The gateway's URL as a local OpenCode reaches it: loopback when the gateway listens on a wildcard or loopback
 * address (the OpenCode credential is accepted from loopback only), else the bound address (with a warning).
 */
function loopbackUrl(address: AddressInfo, log: { warn(obj: object, msg: string): void }): string {
  const a = address.address;
  if (a === "0.0.0.0" || a.startsWith("127.")) return `http://127.0.0.1:${address.port}`;
  if (a === "::" || a === "::1") return `http://[::1]:${address.port}`;
  log.warn({ address: a }, "A2A_HOST is not a loopback or wildcard address: OpenCode's MCP calls will not come from loopback and are refused");
  return `http://${address.family === "IPv6" ? `[${a}]` : a}:${address.port}`;
}

/** The store A2A_TASK_STORE_BACKEND / A2A_TASK_STORE_DATABASE_URL name; a path that cannot be opened is a configuration error. */
async function openConfiguredStorage(config: Config): Promise<Storage> {
  try {
    return await openStorage(gatewayStorageOptions(config));
  } catch (err) {
    if (err instanceof StorageError) {
      const message = err.message.includes(TASK_STORE_URL_VARIABLE) ? err.message : `${TASK_STORE_URL_VARIABLE}=${JSON.stringify(config.taskStoreUrl)}: ${err.message}`;
      throw new ConfigError([message]);
    }
    throw err;
  }
}

export async function main(argv: string[]): Promise<number> {
  const [command = "serve"] = argv;
  if (command === "--version" || command === "-v") {
    process.stdout.write(`${packageVersion}\n`);
    return 0;
  }
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(`${USAGE}\n\n${configurationHelp()}\n`);
    return 0;
  }
  if (command === "serve" && argv.slice(1).some((a) => a === "--help" || a === "-h")) {
    process.stdout.write(`${SERVE_USAGE}\n\n${configurationHelp()}\n`);
    return 0;
  }
  if (command === "keys") {
    try {
      loadDotEnv(); // A2A_CREDENTIALS_FILE may come from ./.env, as for serve
    } catch (err) {
      process.stderr.write(`opencode-a2a: cannot read .env: ${err instanceof Error ? err.message : String(err)}\n`);
      return 78;
    }
    // The command modules are loaded for their command only (call brings the A2A client): serve starts without them.
    return (await import("./cli/keys.js")).keysCommand(argv.slice(1));
  }
  if (command === "call") return (await import("./cli/call.js")).callCommand(argv.slice(1));
  if (command !== "serve") {
    process.stderr.write(`unknown command: ${command}\n\n${USAGE}\n`);
    return 2;
  }
  try {
    loadDotEnv();
    await serve();
    return -1;
  } catch (err) {
    if (err instanceof ConfigError || err instanceof CredentialError) {
      process.stderr.write(`opencode-a2a: ${err.message}\n\nSee README.md (Configuration) for every variable.\n`);
      return 78;
    }
    if (err instanceof InstallationError) {
      process.stderr.write(`opencode-a2a: ${err.message}\n`);
      return 78;
    }
    process.stderr.write(`opencode-a2a: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

const isEntry = process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry) {
  const code = await main(process.argv.slice(2));
  if (code >= 0) process.exit(code);
}
