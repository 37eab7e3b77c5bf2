// One matcher over the catalog's HTTP routes, used by the edge (public or not, required scope), the REST transport's
// 404/405 decision and the audit log. Path parameters never contain `/` or `:`, so `GET /tasks/x:cancel` is never
// `GET /tasks/{id}`.
import type { Catalog, RouteEntry } from "./catalog.js";

export interface RouteMatch {
  /** The route serving this verb and path (HEAD is served by GET routes). */
  route: RouteEntry | undefined;
  /** Every verb some route serves on this path (for 405 + Allow). */
  allowed: string[];
}

export type RouteLookup = (verb: string, path: string) => RouteMatch;

const escape = (s: string): string => s.replace(/[.*+?^$()|[\]\\]/g, "\\$&");

export function catalogRoutes(catalog: Catalog): RouteLookup {
  const compiled = catalog.routes.map((route) => ({
    route,
    re: new RegExp(`^${route.path.split(/\{\w+\}/).map(escape).join("[^/:]+")}$`),
  }));
  const exact = new Map<string, RouteMatch>();
  return (verb, path) => {
    const v = verb === "HEAD" ? "GET" : verb;
    const key = `${v} ${path}`;
    const hit = exact.get(key);
    if (hit !== undefined) return hit;
    const matching = compiled.filter((c) => c.re.test(path));
    const match: RouteMatch = {
      route: matching.find((c) => c.route.verb === v)?.route,
      allowed: [...new Set(matching.map((c) => c.route.verb))],
    };
    // Paths without parameters are a small fixed set: remember them (the JSON-RPC endpoint, cards, /health...).
    if (match.route !== undefined && !match.route.path.includes("{")) exact.set(key, match);
    return match;
  };
}
