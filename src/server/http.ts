// The gateway's HTTP side: the router (every catalog route, each mounted once: discovery, docs, audit, governance,
// metrics, JSON-RPC on `POST /`, REST), the Koa app (its door → compression → the routes → 404/405), and the node:http
// handler that sends `POST /` to the lean JSON-RPC edge instead. Both doors run the one pipeline
// (src/pipeline/steps.ts) and record their requests the same way (src/pipeline/request.ts).
import type { IncomingMessage, ServerResponse } from "node:http";
import Koa from "koa";
import Router from "@koa/router";
import type { Logger } from "pino";
import type { Catalog } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";
import { catalogRoutes } from "../contract/routes.js";
import type { Config } from "../config/index.js";
import type { CredentialResolver } from "../auth/index.js";
import type { AccessLimits } from "../auth/limits.js";
import type { AddressGuard } from "../auth/address-guard.js";
import type { DeploymentFacts } from "../discovery/facts.js";
import type { MethodHandler } from "../operations/index.js";
import type { AuditRecorder } from "../observability/audit.js";
import type { Metrics } from "../observability/metrics.js";
import { payloadLog } from "../logging/payloads.js";
import { ExtensionPolicy } from "../protocol/extensions.js";
import { defaultAllowedHosts } from "../pipeline/origins.js";
import { httpPipeline } from "../pipeline/steps.js";
import { createJsonRpcEndpoint, koaExchange } from "../transport/jsonrpc/index.js";
import { registerRestRoutes } from "../transport/rest/index.js";
import type { StreamBudget } from "../transport/sse.js";
import { registerAuditRoutes } from "./audit-routes.js";
import { registerGovernanceRoutes, type GovernanceHistorySource } from "./governance-routes.js";
import type { McpEndpoint } from "../mcp/endpoint.js";
import type { Discovery } from "./discovery.js";
import { registerDocs } from "./docs/index.js";
import { jsonRpcEdge } from "./jsonrpc-edge.js";
import { compression, koaDoor, noRoute } from "./koa-door.js";

export interface HttpDeps {
  config: Config;
  log: Logger;
  catalog: Catalog;
  facts: DeploymentFacts;
  registry: ReadonlyMap<string, MethodHandler>;
  discovery: Discovery;
  recorder: AuditRecorder;
  metrics: Metrics;
  auth: CredentialResolver;
  limits: AccessLimits;
  guard: AddressGuard;
  /** The governance trail of a task (absent without an upstream). */
  governanceHistory?: GovernanceHistorySource;
  /** The MCP endpoint `POST /mcp` (absent when A2A_MCP_ENABLED=false: the route answers 404). */
  mcp?: Pick<McpEndpoint, "handle" | "close"> | undefined;
}

export interface HttpSide {
  /** The Koa app: serves every route, `POST /` included. */
  app: Koa;
  /** What the HTTP server runs: `POST /` through the JSON-RPC edge (no Koa on the hot path), the rest through `app`. */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  router: Router;
}

export function httpSide(deps: HttpDeps): HttpSide {
  const { config, log, catalog, registry, discovery, metrics, limits } = deps;
  const routes = catalogRoutes(catalog);
  const streamBudget: StreamBudget = {
    maxBytes: config.streamMaxBytes,
    maxDurationMs: config.streamMaxDuration * 1000,
    idleMs: config.streamIdleTimeout * 1000,
  };
  // A2A_LOG_PAYLOADS: decided once here (undefined unless on and the logger is at debug).
  const payloads = payloadLog(config, log);
  const extensions = new ExtensionPolicy(
    catalog.extensions.map((e) => e.uri),
    config.requiredExtensions,
  );
  const endpoint = createJsonRpcEndpoint({ catalog, facts: deps.facts, registry, log, limits, streamBudget, payloads, extensions });

  const router = new Router();
  discovery.register(router);
  registerDocs(router, { lines: catalog.protocol_lines, openrpc: (line) => discovery.openrpcDocument(line), publicUrl: config.publicUrl });
  registerAuditRoutes(router, { recorder: deps.recorder });
  registerGovernanceRoutes(router, deps.governanceHistory, extensions);
  router.get("/metrics", async (ctx) => {
    if (!config.metricsEnabled) throw new A2AError("ROUTE_NOT_FOUND", "Metrics are disabled (A2A_METRICS_ENABLED=false)", { path: ctx.path, method: ctx.method });
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  router.post("/mcp", async (ctx) => {
    if (deps.mcp === undefined) throw new A2AError("ROUTE_NOT_FOUND", "The MCP endpoint is disabled (A2A_MCP_ENABLED=false)", { path: ctx.path, method: ctx.method });
    await deps.mcp.handle(ctx);
  });
  router.post("/", (ctx) => endpoint(koaExchange(ctx)));
  registerRestRoutes(router, { catalog, registry, limits, streamBudget, payloads, extensions });

  const steps = httpPipeline({
    defaultLine: config.defaultLine,
    allowedHosts: config.allowedHosts.length ? config.allowedHosts : defaultAllowedHosts(config.publicUrl, config.host!),
    allowedOrigins: config.allowedOrigins,
    publicUrl: config.publicUrl,
    routes,
    extensions,
    resolver: deps.auth,
    limits,
    guard: deps.guard,
    maxBodyBytes: config.maxRequestBodyBytes,
  });
  const records = { recorder: config.auditEnabled ? deps.recorder : undefined, log };

  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(koaDoor({ steps, defaultLine: config.defaultLine, records, log }));
  app.use(compression(config.gzipMinimumSize));
  app.use(router.routes());
  app.use(noRoute(routes));

  const edge = jsonRpcEdge({ steps, defaultLine: config.defaultLine, gzipThreshold: config.gzipMinimumSize, records, log, endpoint });
  const koa = app.callback();
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method === "POST") {
      const url = req.url ?? "";
      const q = url.indexOf("?");
      // Origin-form targets only (what clients send); anything else is left to Koa's URL handling.
      if (url.charCodeAt(0) === 47 /* / */ && (q < 0 ? url.length === 1 : q === 1)) {
        edge(req, res, q < 0 ? "" : url.slice(q + 1));
        return;
      }
    }
    void koa(req, res);
  };
  return { app, handler, router };
}
