// Koa app assembly: every middleware does one thing, composed here in one visible order.
import Koa from "koa";
import Router from "@koa/router";
import compress from "koa-compress";
import type { Logger } from "pino";
import { catalog as generatedCatalog, packageVersion, type Catalog } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";
import { preloadValidators } from "../contract/validate.js";
import type { Config } from "../config/index.js";
import { BearerTokenResolver, type CredentialResolver } from "../auth/index.js";
import type { DeploymentFacts } from "../discovery/contract.js";
import { buildMethodRegistry, type MethodHandler } from "../operations/index.js";
import { createJsonRpcEndpoint } from "../transport/jsonrpc/index.js";
import { koaPath, registerRestRoutes, routeMatcher } from "../transport/rest/index.js";
import { Discovery } from "./discovery.js";
import { authentication } from "./middleware/auth.js";
import { requestBody } from "./middleware/body.js";
import { errorBoundary } from "./middleware/errors.js";
import { versionNegotiation } from "./middleware/version.js";
import type { Upstream } from "../upstream/index.js";
import type { RequestState } from "./state.js";

export interface Gateway {
  app: Koa;
  router: Router;
  registry: ReadonlyMap<string, MethodHandler>;
  discovery: Discovery;
  auth: CredentialResolver;
  upstream: Upstream | undefined;
}

export function deploymentFacts(config: Config): DeploymentFacts {
  return {
    defaultLine: config.defaultLine,
    toggles: config.toggles,
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

function publicMatcher(catalog: Catalog): (method: string, path: string) => boolean {
  const patterns = catalog.routes
    .filter((r) => r.public)
    .map((r) => new RegExp(`^${r.path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{\w+\\?\}|\{\w+\}/g, "[^/]+")}$`));
  return (method, path) => (method === "GET" || method === "HEAD") && patterns.some((p) => p.test(path));
}

function requestLog(log: Logger) {
  return async function logRequest(ctx: Koa.Context, next: Koa.Next): Promise<void> {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log.info(
        { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(ms * 10) / 10, line: (ctx.state as RequestState).line },
        "request",
      );
    }
  };
}

export interface GatewayDeps {
  catalog?: Catalog;
  /** The OpenCode link (src/upstream); absent in contract-only setups. */
  upstream?: Upstream;
}

export async function createGateway(config: Config, log: Logger, deps: GatewayDeps = {}): Promise<Gateway> {
  const catalog = deps.catalog ?? generatedCatalog;
  const facts = deploymentFacts(config);
  const auth = new BearerTokenResolver(config.bearerToken, catalog.scopes);
  const discovery = new Discovery({
    catalog,
    ...(deps.upstream === undefined ? {} : { upstream: deps.upstream }),
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
  const registry = buildMethodRegistry(catalog, { extendedCard: (line) => discovery.cardObject(line, true) });
  await preloadValidators([
    ...catalog.methods.map((m) => m.params_schema),
    ...catalog.routes.flatMap((r) => (r.body_schema ? [r.body_schema] : [])),
  ]);

  const router = new Router();
  discovery.register(router);
  router.post("/", createJsonRpcEndpoint({ catalog, facts, registry, log }));
  registerRestRoutes(router, { catalog, registry });

  const app = new Koa({ proxy: false });
  app.silent = true;
  app.use(requestLog(log));
  app.use(errorBoundary(log));
  app.use(versionNegotiation(config.defaultLine));
  app.use(
    compress({
      threshold: config.gzipMinimumSize,
      filter: (type: string) => !/text\/event-stream/i.test(type) && /json|yaml|text|javascript/i.test(type),
      gzip: true,
      deflate: false,
      br: false,
    }),
  );
  app.use(authentication(auth, publicMatcher(catalog)));
  app.use(requestBody(config.maxRequestBodyBytes));
  app.use(router.routes());
  const allowedVerbs = routeMatcher(catalog);
  app.use(async (ctx) => {
    const allowed = allowedVerbs(ctx.path);
    if (allowed.length)
      throw new A2AError("HTTP_METHOD_NOT_ALLOWED", `${ctx.method} is not allowed on ${ctx.path}`, {
        path: ctx.path,
        method: ctx.method,
        allowed,
      }, { headers: { Allow: allowed.join(", ") } });
    throw new A2AError("ROUTE_NOT_FOUND", `No route ${ctx.method} ${ctx.path}`, { path: ctx.path, method: ctx.method });
  });
  return { app, router, registry, discovery, auth, upstream: deps.upstream };
}

export { koaPath };
