// The docs pages (public, like the contract artifacts: DECISIONS 7): `/docs` (Swagger UI over /openapi.json),
// `/docs/jsonrpc` (the JSON-RPC methods of both lines, rendered from the OpenRPC documents) and their static files
// under `/docs/assets/`. Every byte comes from this gateway: the Content-Security-Policy allows only 'self' (plus data:
// images and fonts, which Swagger UI's stylesheet embeds) and the public URL's origin for Swagger UI's "Try it out".
// No 'unsafe-inline' and no 'unsafe-eval': Swagger UI sets its styles through the CSSOM, which the policy allows, and
// the browser test (test/browser/docs.test.ts) fails on any violation.
import type Router from "@koa/router";
import type { Context } from "koa";
import { A2AError } from "../../contract/errors.js";
import type { ProtocolLine } from "../../contract/catalog.js";
import type { OpenRpcDocument } from "../../discovery/openrpc.js";
import { docsAsset } from "./assets.js";
import { apiReferencePage, jsonRpcPage } from "./pages.js";

export interface DocsDeps {
  lines: readonly ProtocolLine[];
  openrpc: (line: ProtocolLine) => OpenRpcDocument;
  publicUrl: string;
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** The pages' policy: scripts and styles from this origin only; data: images and fonts for Swagger UI. */
export function docsCsp(publicUrl: string, page: "api" | "jsonrpc"): string {
  const connect = ["'self'", originOf(publicUrl)].filter((v, i, all) => v && all.indexOf(v) === i).join(" ");
  const common = ["default-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"];
  return page === "api"
    ? [...common, "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "font-src 'self' data:", `connect-src ${connect}`].join("; ")
    : [...common, "style-src 'self'", "img-src 'self'"].join("; ");
}

function html(ctx: Context, body: string, csp: string): void {
  ctx.set("Content-Security-Policy", csp);
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("Referrer-Policy", "no-referrer");
  ctx.set("Cache-Control", "no-cache");
  ctx.type = "text/html; charset=utf-8";
  ctx.body = body;
}

export function registerDocs(router: Router, deps: DocsDeps): void {
  let api: string | undefined;
  let rpc: string | undefined;
  router.get("/docs", (ctx) => {
    api ??= apiReferencePage(deps.lines);
    html(ctx, api, docsCsp(deps.publicUrl, "api"));
  });
  router.get("/docs/jsonrpc", (ctx) => {
    rpc ??= jsonRpcPage(deps.lines.map(deps.openrpc), deps.publicUrl);
    html(ctx, rpc, docsCsp(deps.publicUrl, "jsonrpc"));
  });
  router.get("/docs/assets/:name", (ctx) => {
    const { name } = ctx.params as { name: string };
    const asset = docsAsset(name);
    if (!asset) throw new A2AError("ROUTE_NOT_FOUND", `No docs asset ${name}`, { path: ctx.path, method: ctx.method });
    ctx.set("ETag", asset.etag);
    // The pages link each file with ?v=<its ETag prefix>: that URL never changes content, so it may be kept a year.
    const versioned = ctx.query.v === asset.etag.slice(1, 13);
    ctx.set("Cache-Control", versioned ? "public, max-age=31536000, immutable" : "public, max-age=300");
    ctx.set("X-Content-Type-Options", "nosniff");
    const match = ctx.get("If-None-Match");
    if (match && match.split(",").some((t) => t.trim().replace(/^W\//, "") === asset.etag)) {
      ctx.status = 304;
      return;
    }
    ctx.type = asset.type;
    ctx.body = asset.body;
  });
}
