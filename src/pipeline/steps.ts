// The HTTP pipeline: the checks every request passes before its route, each declared once as a Step over an
// Exchange (src/pipeline/exchange.ts) and composed in ONE ordered list, httpPipeline(). Both doors run that list:
// the Koa app for every route (src/server/koa-door.ts) and the lean JSON-RPC edge for `POST /`
// (src/server/jsonrpc-edge.ts), so they refuse the same requests with the same answers, headers included:
//
//   version → Host → compression (Vary) → Origin + CORS → extensions → authentication → body → the route
//
// A step that throws refuses the request (the door shapes the error for the line and transport: src/pipeline/
// errors.ts); a step that answers (a CORS preflight) ends it.
import type { ProtocolLine } from "../contract/catalog.js";
import type { RouteLookup } from "../contract/routes.js";
import type { CredentialResolver } from "../auth/index.js";
import type { AccessLimits } from "../auth/limits.js";
import type { AddressGuard } from "../auth/address-guard.js";
import type { ExtensionPolicy } from "../protocol/extensions.js";
import { negotiateVersion, VERSION_HEADER } from "../protocol/version.js";
import { authenticateRequest } from "./auth.js";
import { readBody } from "./body.js";
import type { Exchange, Step } from "./exchange.js";
import { varyOnEncoding } from "./gzip.js";
import { checkHost, checkOrigin } from "./origins.js";

/**
 * The version step: A2A-Version negotiated (header, then query parameter) before routing, and echoed on every
 * answer, refusals included. `/v1/...` always speaks 0.3 REST, errors raised before routing included.
 */
function negotiateLine(defaultLine: ProtocolLine): Step {
  return (ex) => {
    const state = ex.state;
    const pinned: ProtocolLine | undefined = ex.path.startsWith("/v1/") ? "0.3" : undefined;
    state.line = pinned ?? defaultLine;
    ex.vary(VERSION_HEADER);
    ex.setHeader(VERSION_HEADER, state.line);
    const negotiated = negotiateVersion(ex.headers["a2a-version"] || undefined, ex.query(VERSION_HEADER), defaultLine);
    state.line = pinned ?? negotiated.line;
    state.explicitVersion = negotiated.explicit;
    ex.setHeader(VERSION_HEADER, state.line);
  };
}

/** The extensions step: the request's extension headers read into its state (the transports echo and enforce them). */
function activateExtensions(policy: ExtensionPolicy): Step {
  return (ex) => {
    ex.state.extensions = policy.activate((name) => ex.headers[name]);
  };
}

export interface PipelineDeps {
  defaultLine: ProtocolLine;
  /** A2A_ALLOWED_HOSTS, or the default list (src/pipeline/origins.ts defaultAllowedHosts). */
  allowedHosts: string[];
  allowedOrigins: string[];
  publicUrl: string;
  routes: RouteLookup;
  extensions: ExtensionPolicy;
  resolver: CredentialResolver;
  limits: AccessLimits;
  /** Per-address limits before authentication. */
  guard?: AddressGuard;
  maxBodyBytes: number;
}

/** The pipeline, in its order. */
export function httpPipeline(deps: PipelineDeps): readonly Step[] {
  return [
    negotiateLine(deps.defaultLine),
    checkHost(deps.allowedHosts),
    varyOnEncoding,
    checkOrigin(deps.allowedOrigins, deps.publicUrl, deps.routes),
    activateExtensions(deps.extensions),
    authenticateRequest({ resolver: deps.resolver, routes: deps.routes, limits: deps.limits, ...(deps.guard ? { guard: deps.guard } : {}) }),
    readBody(deps.maxBodyBytes),
  ];
}

/**
 * Runs the steps in order: true when the request goes on to its route, false when a step answered it. Synchronous
 * until a step returns a promise (the body step, the last one), so the JSON-RPC edge pays for no extra await.
 */
export function runPipeline(steps: readonly Step[], ex: Exchange, from = 0): boolean | Promise<boolean> {
  for (let i = from; i < steps.length; i++) {
    const outcome = steps[i]!(ex);
    if (outcome === true) return false;
    if (outcome instanceof Promise) return outcome.then(() => runPipeline(steps, ex, i + 1));
  }
  return true;
}
