// HTTP+JSON routes of both lines, registered from the generated catalog. `/v1/...` speaks 0.3 REST; root routes
// speak the negotiated line. A route decodes its path/query/body into the params of its logical operation,
// validates the body with the generated validator, checks the declared scope and calls the same handler as
// JSON-RPC. No business logic here.
import type Router from "@koa/router";
import type { Context, Next } from "koa";
import type { Catalog, ProtocolLine, RouteEntry } from "../../contract/catalog.js";
import { A2AError, invalidParams, invalidPayload, toA2AError } from "../../contract/errors.js";
import { validate } from "../../contract/validate.js";
import { normalizeProtoJson } from "../../protocol/protojson-names.js";
import type { Principal } from "../../auth/index.js";
import type { AccessLimits } from "../../auth/limits.js";
import { methodForOperation, type MethodHandler } from "../../operations/index.js";
import type { AuditCall, RequestState } from "../../pipeline/state.js";
import { plainResult } from "../../protocol/encoded.js";
import { restError } from "../../protocol/errors.js";
import { EventStream } from "../../operations/stream.js";
import { invoke, json } from "../http.js";
import { sendEventStream, type StreamBudget } from "../sse.js";
import type { PayloadLog } from "../../logging/payloads.js";
import { DISCOVERY_OPERATIONS, type ExtensionPolicy } from "../../protocol/extensions.js";

export interface RestDeps {
  catalog: Catalog;
  registry: ReadonlyMap<string, MethodHandler>;
  /** Stream slots per credential (the request itself was counted and scope-checked at the edge). */
  limits: AccessLimits;
  /** Budgets of every SSE response. */
  streamBudget: StreamBudget;
  /** A2A_LOG_PAYLOADS at debug: every route call's request and response bodies (absent = off; see src/logging/payloads.ts). */
  payloads?: PayloadLog | undefined;
  /** Required extensions (A2A_REQUIRED_EXTENSIONS); the request's activation is in its state. */
  extensions: ExtensionPolicy;
}

type RouteHandler = (ctx: Context, next: Next) => Promise<unknown>;

/** A request body for the payload log: parsed JSON, or a size note when it is not JSON (it cannot be redacted). */
function loggedBody(ctx: Context): unknown {
  const raw = (ctx.state as RequestState).rawBody;
  if (!raw || raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    return `[not JSON, ${raw.length} bytes]`;
  }
}

/** The response body `json()` wrote (a JSON string) as a value for the payload log. */
function loggedResponse(body: unknown): unknown {
  if (typeof body !== "string") return body;
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/**
 * `handle` with its request and response bodies logged at debug. Only installed when payload logging is on, so the
 * routes of the default configuration run without it.
 */
function withPayloadLog(log: PayloadLog, route: string, methodOf: (line: ProtocolLine) => string | undefined, handle: RouteHandler): RouteHandler {
  return async (ctx, next) => {
    let passed = false;
    const pass = (): Promise<unknown> => {
      passed = true;
      return next();
    };
    try {
      await handle(ctx, pass);
    } catch (err) {
      if (!passed) {
        const line = (ctx.state as RequestState).line;
        log.restCall(route, ctx.path, methodOf(line), loggedBody(ctx), { error: restError(line, toA2AError(err)).body });
      }
      throw err;
    }
    if (passed) return; // another route answered (and logged) the request
    const method = methodOf((ctx.state as RequestState).line);
    if (ctx.respond === false) log.restCall(route, ctx.path, method, loggedBody(ctx), { stream: true });
    else log.restCall(route, ctx.path, method, loggedBody(ctx), { body: loggedResponse(ctx.body) });
  };
}

/** `/v1/tasks/{id}:cancel` → `/v1/tasks/:id\:cancel` (path-to-regexp syntax of @koa/router). */
export function koaPath(path: string): string {
  return path.replace(/:/g, "\\:").replace(/\{(\w+)\}/g, ":$1");
}

/** The body schema a route validates against on `line` (root routes under 0.3 use their `/v1` twin's schema). */
function bodySchemaFor(catalog: Catalog, route: RouteEntry, line: ProtocolLine): string | null {
  if (route.line === line) return route.body_schema;
  const twin = catalog.routes.find((r) => r.kind === "a2a" && r.line === line && r.operation === route.operation && r.verb === route.verb);
  return twin?.body_schema ?? route.body_schema;
}

function parseBody(ctx: Context): unknown {
  const raw = (ctx.state as RequestState).rawBody;
  if (!raw || raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new A2AError("PARSE_ERROR", "Request body is not valid JSON");
  }
}

/**
 * Path, query and body of a route call. Query parameter names follow the proto3 JSON rules like bodies do: the
 * proto field names (`history_length`, `page_size`, …) are folded into the declared names of the operation's 1.0
 * request message (`querySchema`; the `/v1` routes take the same query fields).
 */
function routeParams(ctx: Context, body: unknown, querySchema: string | undefined): Record<string, unknown> {
  const path = ctx.params as Record<string, string>;
  let query: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(ctx.query)) if (k !== "A2A-Version" && v !== undefined) query[k] = v;
  if (querySchema !== undefined) query = normalizeProtoJson(querySchema, query) as Record<string, unknown>;
  const params: Record<string, unknown> = {};
  // The path names the resource: a query parameter of the same name never overrides it.
  for (const [k, v] of Object.entries(query)) if (!(k in path)) params[k] = v;
  Object.assign(params, path);
  if (body !== undefined) params.body = body;
  return params;
}

export function registerRestRoutes(router: Router, deps: RestDeps): RouteEntry[] {
  const routes = deps.catalog.routes.filter((r) => r.kind === "a2a");
  // Literal suffix routes (`{id}:cancel`) must be tried before the bare `{id}` route they would otherwise match.
  const ordered = [...routes].sort((a, b) => Number(b.path.includes("}:")) - Number(a.path.includes("}:")));
  for (const route of ordered) {
    // What a route needs per protocol line is fixed by the catalog: resolved once here, not per request.
    const perLine = new Map(
      deps.catalog.protocol_lines.map((l) => [l, { method: methodForOperation(deps.catalog, l, route.operation!), schema: bodySchemaFor(deps.catalog, route, l) }]),
    );
    const querySchema = route.body_schema === null ? methodForOperation(deps.catalog, "1.0", route.operation!)?.params_schema : undefined;
    const handle: RouteHandler = async (ctx: Context, next: Next) => {
      // `{id}` never swallows a literal suffix: `GET /tasks/x:cancel` is not `GET /tasks/{id}` with id "x:cancel".
      if (Object.values(ctx.params as Record<string, string>).some((v) => v.includes(":"))) return next();
      const state = ctx.state as RequestState;
      const line: ProtocolLine = route.path.startsWith("/v1/") ? "0.3" : state.line;
      state.line = line;
      ctx.set("A2A-Version", line);
      if (state.extensions !== undefined) ctx.set(state.extensions.echo);
      const { method, schema } = perLine.get(line)!;
      if (!method) throw new A2AError("UNSUPPORTED_OPERATION", `${route.operation} is not part of the ${line} line`);
      if (!DISCOVERY_OPERATIONS.has(route.operation!)) deps.extensions.check(state.extensions, line, `${route.verb} ${route.path}`);
      let body = parseBody(ctx);
      if (schema) {
        if (body === undefined) throw invalidParams("A JSON request body is required", [], { field: "(body)" });
        // ProtoJSON (0.3 REST and 1.0): proto field names folded into the declared ones before validation.
        body = normalizeProtoJson(schema, body);
        const verdict = await validate(schema, body);
        if (!verdict.ok) throw invalidPayload("Invalid request body", verdict.violations);
      }
      const principal = state.principal as Principal;
      const handler = deps.registry.get(method.name);
      if (!handler) throw new Error(`no handler registered for ${method.name}`);
      const params = routeParams(ctx, body, querySchema);
      const audit: AuditCall = { method: `${route.verb} ${route.path}`, params };
      state.calls?.push(audit);
      const versionless = !route.path.startsWith("/v1/") && !state.explicitVersion;
      const result = await invoke(handler, params, { line, principal, transport: "rest", method, trace: state.trace, ...(versionless ? { versionless } : {}) }, deps.limits, route.streaming);
      if (result instanceof EventStream) {
        ctx.status = 200;
        ctx.respond = false;
        sendEventStream(ctx.req, ctx.res, result, {
          event: (value) => value,
          error: (error) => restError(line, toA2AError(error)).body,
        }, deps.streamBudget);
        return;
      }
      audit.result = plainResult(result);
      ctx.status = 200;
      json(ctx, result ?? {});
    };
    const name = `${route.verb} ${route.path}`;
    router.register(
      koaPath(route.path),
      [route.verb],
      deps.payloads === undefined ? handle : withPayloadLog(deps.payloads, name, (l) => perLine.get(l)?.method?.name, handle),
    );
  }
  return routes;
}
