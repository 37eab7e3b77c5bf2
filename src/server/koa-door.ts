// The Koa app's own middleware, around its routes: the door, compression, and the 404/405 of what no route answered.
// The door is the first middleware of every request the Koa app serves: it opens the request (state, trace), runs
// the HTTP pipeline (src/pipeline/steps.ts) over the Koa context, hands the request on to compression and the routes,
// answers any failure in the request's line and transport, and closes the request (audit, span, log) once its
// status is final. The JSON-RPC edge (./jsonrpc-edge.ts) does the same on the raw node:http request.
import type { Context, Middleware, Next } from "koa";
import compress from "koa-compress";
import type { Logger } from "pino";
import type { ProtocolLine } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";
import type { RouteLookup } from "../contract/routes.js";
import { failureAnswer, failureOf } from "../pipeline/errors.js";
import type { Exchange, Step } from "../pipeline/exchange.js";
import { acceptsGzip } from "../pipeline/gzip.js";
import { closeRequest, openRequest, type RequestRecords } from "../pipeline/request.js";
import type { RequestState } from "../pipeline/state.js";
import { runPipeline } from "../pipeline/steps.js";

/** The pipeline's view of a Koa request. */
function koaRequest(ctx: Context, state: RequestState): Exchange {
  return {
    method: ctx.method,
    path: ctx.path,
    headers: ctx.headers,
    address: ctx.req.socket.remoteAddress ?? "",
    state,
    body: ctx.req,
    query: (name) => ctx.query[name],
    setHeader: (name, value) => ctx.set(name, value),
    setHeaders: (headers) => ctx.set(headers),
    vary: (field) => ctx.vary(field),
    answerEmpty: (status) => void (ctx.status = status),
  };
}

export interface KoaDoorDeps {
  steps: readonly Step[];
  defaultLine: ProtocolLine;
  records: RequestRecords;
  log: Logger;
}

export function koaDoor(deps: KoaDoorDeps): Middleware {
  return async function door(ctx: Context, next: Next): Promise<void> {
    const started = performance.now();
    const state = openRequest(ctx.method, ctx.path, ctx.headers, deps.defaultLine);
    ctx.state = state;
    const ex = koaRequest(ctx, state);
    try {
      if (await runPipeline(deps.steps, ex)) await next();
    } catch (raw) {
      const err = failureOf(raw, deps.log, ctx.path);
      if (!ctx.headerSent && ctx.writable) {
        const answer = failureAnswer(err, state);
        ctx.set(answer.headers);
        ctx.status = answer.status;
        ctx.body = answer.body;
      }
    } finally {
      closeRequest(deps.records, state, { method: ctx.method, path: ctx.path, status: ctx.status, address: ex.address, durationMs: performance.now() - started });
    }
  };
}

/**
 * Compression: koa-compress (gzip only, no streams) for JSON/YAML/text bodies of at least A2A_HTTP_GZIP_MINIMUM_SIZE
 * bytes, told not to compress when the client does not accept gzip as the pipeline negotiates it
 * (src/pipeline/gzip.ts, which the JSON-RPC edge's writer uses too). It sits after the door: failure answers, which
 * the door writes, are never compressed.
 */
export function compression(threshold: number): Middleware {
  const gzip = compress({
    threshold,
    filter: (type: string) => !/text\/event-stream/i.test(type) && /json|yaml|text|javascript/i.test(type),
    gzip: true,
    deflate: false,
    br: false,
    zstd: false,
  });
  return function compressResponse(ctx: Context, next: Next): Promise<void> {
    if (!acceptsGzip(ctx.get("accept-encoding"))) ctx.compress = false;
    return gzip(ctx, next);
  };
}

/** The last middleware: what no route answered is 405 (with Allow) when the path serves other verbs, else 404. */
export function noRoute(routes: RouteLookup): Middleware {
  return function unrouted(ctx: Context): never {
    const { allowed } = routes(ctx.method, ctx.path);
    if (allowed.length)
      throw new A2AError("HTTP_METHOD_NOT_ALLOWED", `${ctx.method} is not allowed on ${ctx.path}`, {
        path: ctx.path,
        method: ctx.method,
        allowed,
      }, { headers: { Allow: allowed.join(", ") } });
    throw new A2AError("ROUTE_NOT_FOUND", `No route ${ctx.method} ${ctx.path}`, { path: ctx.path, method: ctx.method });
  };
}
