// The runtime against the generated catalog, both ways: method registry ↔ catalog methods, REST routes ↔ methods,
// Koa router layers ↔ catalog routes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTOCOL_LINES } from "../../src/contract/catalog.js";
import { methodForOperation } from "../../src/operations/index.js";
import { koaPath } from "../../src/transport/rest/index.js";
import { catalog, fillPath, routesOf } from "../support/contract.js";
import { startGateway, type StartedGateway } from "../support/gateway.js";

let gw: StartedGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw?.close());

describe("method registry ↔ catalog", () => {
  it("the catalog declares methods and routes at all (guards the loops below)", () => {
    expect(catalog.methods.length).toBeGreaterThan(0);
    expect(routesOf("a2a").length).toBeGreaterThan(0);
    expect(new Set(catalog.methods.map((m) => m.name)).size).toBe(catalog.methods.length);
  });

  it("every catalog method has a handler", () => {
    const missing = catalog.methods.map((m) => m.name).filter((n) => !gw.gateway.registry.has(n));
    expect(missing).toEqual([]);
  });

  it("every registered handler is a catalog method", () => {
    const declared = new Set(catalog.methods.map((m) => m.name));
    const extra = [...gw.gateway.registry.keys()].filter((n) => !declared.has(n));
    expect(extra).toEqual([]);
    expect(gw.gateway.registry.size).toBe(declared.size);
  });

  it("registry is the same with every deployment toggle on", async () => {
    const toggles = [...new Set(catalog.methods.flatMap((m) => (m.toggle ? [m.toggle] : [])))];
    const other = await startGateway(Object.fromEntries(toggles.map((t) => [t, "true"])));
    try {
      expect([...other.gateway.registry.keys()].sort()).toEqual([...gw.gateway.registry.keys()].sort());
    } finally {
      await other.close();
    }
  });
});

describe("REST routes → methods", () => {
  it.each(routesOf("a2a").map((r) => [`${r.verb} ${r.path}`, r] as const))("%s resolves to a method of its line", (_, route) => {
    expect(route.line).not.toBeNull();
    expect(route.operation).not.toBeNull();
    const method = methodForOperation(catalog, route.line!, route.operation!);
    expect(method, `${route.id} → ${route.operation} on ${route.line}`).toBeDefined();
    expect(method!.line).toBe(route.line);
    expect(method!.operation).toBe(route.operation);
    expect(gw.gateway.registry.has(method!.name)).toBe(true);
  });

  const rootRoutes = routesOf("a2a").filter((r) => !r.path.startsWith("/v1/"));
  it.each(rootRoutes.map((r) => [`${r.verb} ${r.path}`, r] as const))("root route %s also resolves on every line", (_, route) => {
    for (const line of PROTOCOL_LINES) {
      const method = methodForOperation(catalog, line, route.operation!);
      expect(method, `${route.id} on ${line}`).toBeDefined();
      expect(gw.gateway.registry.has(method!.name)).toBe(true);
    }
  });

  it("root routes are the 1.0 line and /v1 routes the 0.3 line", () => {
    for (const r of routesOf("a2a")) expect(r.line, r.id).toBe(r.path.startsWith("/v1/") ? "0.3" : "1.0");
  });

  it("every logical operation of a REST route has one method per line it is served on", () => {
    for (const r of routesOf("a2a")) {
      const lines = r.path.startsWith("/v1/") ? ["0.3" as const] : PROTOCOL_LINES;
      for (const line of lines) {
        const same = catalog.methods.filter((m) => m.line === line && m.operation === r.operation);
        expect(same.map((m) => m.name), `${r.id} on ${line}`).toHaveLength(1);
      }
    }
  });
});

describe("Koa router ↔ catalog routes", () => {
  const layers = () => gw.gateway.router.stack.filter((l) => l.methods.length > 0);

  it.each(catalog.routes.map((r) => [`${r.verb} ${r.path} (${r.kind})`, r] as const))("%s is registered", (_, route) => {
    const matched = gw.gateway.router.match(fillPath(route.path), route.verb);
    expect(matched.route, `${route.verb} ${fillPath(route.path)}`).toBe(true);
    const exact = matched.pathAndMethod.filter((l) => l.path === koaPath(route.path));
    expect(exact, `a layer with path ${koaPath(route.path)} handles ${route.verb}`).toHaveLength(1);
    expect(exact[0]!.methods).toContain(route.verb);
  });

  it("every router layer corresponds to a catalog route (path and verbs)", () => {
    expect(layers().length).toBeGreaterThan(0);
    for (const layer of layers()) {
      const routes = catalog.routes.filter((r) => koaPath(r.path) === layer.path);
      expect(routes.length, `layer ${String(layer.path)} is declared in the catalog`).toBeGreaterThan(0);
      for (const verb of layer.methods.filter((m) => m !== "HEAD"))
        expect(routes.map((r) => r.verb), `${verb} ${String(layer.path)}`).toContain(verb);
    }
  });

  it("router and catalog have the same number of (path, verb) pairs", () => {
    const pairs = new Set(layers().flatMap((l) => l.methods.filter((m) => m !== "HEAD").map((m) => `${m} ${String(l.path)}`)));
    const declared = new Set(catalog.routes.map((r) => `${r.verb} ${koaPath(r.path)}`));
    expect([...pairs].sort()).toEqual([...declared].sort());
  });

  it("a literal-suffix route wins over the bare {id} route it would also match", () => {
    for (const route of catalog.routes.filter((r) => r.path.includes("}:"))) {
      const matched = gw.gateway.router.match(fillPath(route.path), route.verb);
      expect(matched.pathAndMethod[0]?.path, `${route.verb} ${route.path}`).toBe(koaPath(route.path));
    }
  });
});
