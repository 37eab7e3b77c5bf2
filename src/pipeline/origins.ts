// Browser-facing edges. Host allow-list: a request whose Host is not this deployment's is refused before anything
// else (DNS rebinding: a hostile page whose name resolves to 127.0.0.1 sends its own name as Host). Origin
// allow-list: a browser request (it carries `Origin`) to an authenticated route must come from an allowed origin;
// allowed origins get CORS answers, including preflights. Public routes (cards, contract artifacts) answer any
// origin. Requests without `Origin` (every non-browser client) are not affected.
import { A2AError } from "../contract/errors.js";
import type { RouteLookup } from "../contract/routes.js";
import { EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER } from "../protocol/extensions.js";
import { VERSION_HEADER } from "../protocol/version.js";
import type { Step } from "./exchange.js";

function splitHost(value: string): { name: string; port: string | undefined } {
  const v = value.trim().toLowerCase();
  const bracket = /^(\[[^\]]+\])(?::(\d+))?$/.exec(v);
  if (bracket) return { name: bracket[1]!, port: bracket[2] };
  const colon = v.lastIndexOf(":");
  if (colon > 0 && /^\d+$/.test(v.slice(colon + 1))) return { name: v.slice(0, colon), port: v.slice(colon + 1) };
  return { name: v, port: undefined };
}

/** The default allow-list: the public URL's host, the bind address and the loopback names. */
export function defaultAllowedHosts(publicUrl: string, bindHost: string): string[] {
  const hosts = new Set(["localhost", "127.0.0.1", "[::1]"]);
  try {
    hosts.add(new URL(publicUrl).host.toLowerCase());
  } catch {
    /* publicUrl is validated by the configuration */
  }
  const bind = bindHost.includes(":") && !bindHost.startsWith("[") ? `[${bindHost}]` : bindHost;
  if (bind !== "0.0.0.0" && bind !== "[::]") hosts.add(bind.toLowerCase());
  return [...hosts];
}

/**
 * The Host step; throws HOST_NOT_ALLOWED. Allow-list entries: `*`, `name` (any port) or `name:port`, IPv6 in
 * brackets.
 */
export function checkHost(allowedHosts: string[]): Step {
  const any = allowedHosts.includes("*");
  const entries = allowedHosts.map(splitHost);
  const accepts = (host: string): boolean => {
    const { name, port } = splitHost(host);
    return entries.some((e) => e.name === name && (e.port === undefined || e.port === port));
  };
  const seen = new Map<string, boolean>();
  return (ex) => {
    const host = ex.headers.host;
    // HTTP/1.0 clients may omit Host; browsers never do, so a missing Host is no rebinding attempt.
    if (any || host === undefined) return;
    let ok = seen.get(host);
    if (ok === undefined) {
      ok = accepts(host);
      if (seen.size < 1024) seen.set(host, ok);
    }
    if (!ok) throw new A2AError("HOST_NOT_ALLOWED", "This Host is not served here; add it to A2A_ALLOWED_HOSTS", { host: host.slice(0, 256) });
  };
}

const ALLOW_HEADERS = ["Authorization", "X-API-Key", "Content-Type", VERSION_HEADER, EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER, "If-None-Match", "traceparent", "tracestate"].join(", ");
const EXPOSE_HEADERS = [VERSION_HEADER, EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER, "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "ETag", "WWW-Authenticate"].join(", ");

/**
 * The Origin step, for requests carrying `Origin`: the CORS headers of an allowed origin (any origin on a public
 * route), ORIGIN_NOT_ALLOWED otherwise; a preflight (OPTIONS with Access-Control-Request-Method) is answered here
 * (204). The response varies on Origin first.
 */
export function checkOrigin(allowedOrigins: string[], publicUrl: string, routes: RouteLookup): Step {
  const any = allowedOrigins.includes("*");
  const allowed = new Set(allowedOrigins.map((o) => o.replace(/\/+$/, "").toLowerCase()));
  try {
    allowed.add(new URL(publicUrl).origin.toLowerCase());
  } catch {
    /* validated by the configuration */
  }
  const cors = (origin: string, publicRoute: boolean): Record<string, string> => {
    if (publicRoute) return { "Access-Control-Allow-Origin": "*" };
    if (!any && !allowed.has(origin.toLowerCase()))
      throw new A2AError("ORIGIN_NOT_ALLOWED", "Cross-origin calls from this origin are not allowed; see A2A_ALLOWED_ORIGINS", {
        origin: origin.slice(0, 256),
      });
    return { "Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": EXPOSE_HEADERS };
  };
  return (ex) => {
    const origin = ex.headers.origin;
    if (origin === undefined) return;
    const requested = ex.headers["access-control-request-method"];
    const preflight = ex.method === "OPTIONS" && requested !== undefined;
    const verb = preflight ? String(requested).toUpperCase() : ex.method;
    const { route, allowed: verbs } = routes(verb, ex.path);
    ex.vary("Origin");
    ex.setHeaders(cors(origin, route?.public === true));
    if (!preflight) return;
    ex.setHeader("Access-Control-Allow-Methods", (verbs.length ? verbs : [verb]).join(", "));
    ex.setHeader("Access-Control-Allow-Headers", ALLOW_HEADERS);
    ex.setHeader("Access-Control-Max-Age", "600");
    ex.answerEmpty(204);
    return true;
  };
}
