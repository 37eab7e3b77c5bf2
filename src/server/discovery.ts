// Discovery and operations routes: agent cards (public/extended, per line, cached with weak ETags), /health,
// and the downloadable contract artifacts (/openapi.json, /openapi.yaml, /openrpc.json, /schemas/...).
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type Router from "@koa/router";
import type { Context } from "koa";
import { generatedDir, readGeneratedJson, type Catalog } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";
import type { CredentialResolver } from "../auth/index.js";
import { buildCard, type CardIdentity, type CardShape } from "../discovery/cards.js";
import { buildWireContract, openApiContractExtensions } from "../discovery/contract.js";
import type { DeploymentFacts } from "../discovery/facts.js";
import { buildCompatibilityProfile, buildRuntimeProfile } from "../discovery/profiles.js";
import { applyDeploymentFacts, type OpenRpcDocument } from "../discovery/openrpc.js";
import type { ProtocolLine } from "../contract/catalog.js";
import type { Upstream } from "../upstream/index.js";
import type { StoreHealthStatus } from "../storage/health.js";
import type { ModelCheck } from "../upstream/model-check.js";
import type { RequestState } from "../pipeline/state.js";

interface CachedDoc {
  body: string;
  etag: string;
}

function cached(value: unknown): CachedDoc {
  const body = JSON.stringify(value);
  return { body, etag: `W/"${createHash("sha256").update(body).digest("base64url").slice(0, 32)}"` };
}

function etagMatches(header: string, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === "*") return true;
  const strip = (t: string) => t.trim().replace(/^W\//, "");
  return header.split(",").some((t) => strip(t) === strip(etag));
}

export interface DiscoveryDeps {
  catalog: Catalog;
  /** The OpenCode link whose state /health reports (absent in contract-only setups). */
  upstream?: Pick<Upstream, "status">;
  /** Whether the task store takes writes (absent without a store). */
  store?: () => StoreHealthStatus;
  /** Whether OpenCode has a usable default model (absent without an upstream). */
  model?: () => Promise<ModelCheck> | undefined;
  /** Running and waiting tasks (absent without a task runtime). */
  tasks?: () => Record<string, number> | undefined;
  facts: DeploymentFacts;
  identity: CardIdentity;
  auth: CredentialResolver;
  cardMaxAgeSeconds: number;
  version: string;
}

export class Discovery {
  private readonly cards = new Map<string, CachedDoc>();
  private readonly lastModified = new Date(Math.floor(Date.now() / 1000) * 1000).toUTCString();
  private openapi?: Record<string, unknown>;
  private openapiYaml?: string;
  private readonly openrpc = new Map<ProtocolLine, OpenRpcDocument>();

  constructor(private readonly deps: DiscoveryDeps) {}

  /** A card of one line, or the `dual` card of both (requests without A2A-Version); each shape has its own ETag. */
  card(shape: CardShape, extended: boolean): CachedDoc {
    // The schemes follow the credential registry (a credentials file may change while the gateway runs), so they
    // are part of the cache key; the ETag changes with them.
    const schemes = this.deps.auth.schemes;
    const key = `${shape}:${extended}:${schemes.map((s) => s.name).join(",")}`;
    let doc = this.cards.get(key);
    if (!doc) {
      const d = this.deps;
      doc = cached(buildCard(d.catalog, shape, extended, d.identity, d.facts, d.auth));
      if (this.cards.size >= 64) this.cards.clear();
      this.cards.set(key, doc);
    }
    return doc;
  }

  cardObject(shape: CardShape, extended: boolean): Record<string, unknown> {
    return JSON.parse(this.card(shape, extended).body) as Record<string, unknown>;
  }

  /** GET of a card: the named line's card, or without A2A-Version (header or query) the dual card (DECISIONS 1). */
  sendCard(ctx: Context, extended: boolean): void {
    const { line, explicitVersion } = ctx.state as RequestState;
    const doc = this.card(explicitVersion ? line : "dual", extended);
    ctx.vary("A2A-Version");
    if (extended) ctx.vary("Authorization");
    ctx.set("Cache-Control", `${extended ? "private" : "public"}, max-age=${this.deps.cardMaxAgeSeconds}`);
    ctx.set("ETag", doc.etag);
    ctx.set("Last-Modified", this.lastModified);
    if (etagMatches(ctx.get("If-None-Match"), doc.etag)) {
      ctx.status = 304;
      return;
    }
    ctx.type = "application/json";
    ctx.body = doc.body;
  }

  openapiDocument(): Record<string, unknown> {
    if (!this.openapi) {
      const { catalog, facts } = this.deps;
      const base = readGeneratedJson<Record<string, unknown>>("openapi", "openapi.json");
      this.openapi = {
        ...base,
        servers: [{ url: this.deps.identity.publicUrl }],
        ...openApiContractExtensions(catalog, facts),
      };
    }
    return this.openapi;
  }

  /** The OpenRPC document of a line's JSON-RPC surface with this deployment's facts (generated/openrpc + facts). */
  openrpcDocument(line: ProtocolLine): OpenRpcDocument {
    let doc = this.openrpc.get(line);
    if (!doc) {
      const { catalog, facts, identity } = this.deps;
      doc = applyDeploymentFacts(readGeneratedJson<OpenRpcDocument>("openrpc", `openrpc-${line}.json`), catalog, facts, identity.publicUrl);
      this.openrpc.set(line, doc);
    }
    return doc;
  }

  register(router: Router): void {
    router.get("/.well-known/agent-card.json", (ctx) => this.sendCard(ctx, false));
    router.get("/.well-known/agent.json", (ctx) => this.sendCard(ctx, false));
    router.get("/agent/authenticatedExtendedCard", (ctx) => this.sendCard(ctx, true));
    router.get("/health", async (ctx) => {
      const { line } = ctx.state as RequestState;
      const { catalog, facts } = this.deps;
      const upstream = this.deps.upstream === undefined ? undefined : await this.deps.upstream.status();
      const store = this.deps.store?.();
      const model = await this.deps.model?.();
      const healthy =
        (upstream === undefined || (upstream.healthy && upstream.events.state === "open")) && store?.state !== "degraded" && model?.state !== "unavailable";
      ctx.status = healthy ? 200 : 503;
      ctx.set("Cache-Control", "no-store");
      ctx.body = {
        status: healthy ? "ok" : "degraded",
        service: "opencode-a2a",
        version: this.deps.version,
        ...(upstream === undefined
          ? {}
          : {
              // No URL, pid or password: the child's address is nobody's business but the gateway's.
              upstream: {
                mode: upstream.mode,
                healthy: upstream.healthy,
                ...(upstream.version === undefined ? {} : { version: upstream.version }),
                ...(upstream.error === undefined ? {} : { error: upstream.error }),
                events: {
                  state: upstream.events.state,
                  reconnects: upstream.events.reconnects,
                  subscribers: upstream.events.subscribers,
                  streams: upstream.events.streams,
                  max_streams: upstream.events.maxStreams,
                },
                ...(upstream.managed === undefined ? {} : { restarts: upstream.managed.restarts }),
              },
            }),
        ...(store === undefined ? {} : { store }),
        ...(model === undefined ? {} : { model }),
        ...(this.deps.tasks?.() === undefined ? {} : { tasks: this.deps.tasks() }),
        profile: buildRuntimeProfile(facts),
        wire_contract: buildWireContract(catalog, line, facts),
        compatibility_profile: buildCompatibilityProfile(catalog, line, facts),
      };
    });
    router.get("/openapi.json", (ctx) => {
      ctx.body = this.openapiDocument();
    });
    router.get("/openapi.yaml", async (ctx) => {
      const { stringify: toYaml } = await import("yaml"); // loaded for this document only
      this.openapiYaml ??= toYaml(this.openapiDocument(), { lineWidth: 0, aliasDuplicateObjects: false });
      ctx.type = "application/yaml";
      ctx.body = this.openapiYaml;
    });
    // The line's JSON-RPC surface: A2A-Version (header or query) was negotiated before routing; absent → default line.
    router.get("/openrpc.json", (ctx) => {
      ctx.body = this.openrpcDocument((ctx.state as RequestState).line);
    });
    const schemaRoot = path.join(generatedDir, "json-schema");
    router.get("/schemas", (ctx) => {
      ctx.body = {
        schemas: this.deps.catalog.schema_groups.flatMap((g) =>
          fs.readdirSync(path.join(schemaRoot, g)).filter((f) => f.endsWith(".json")).sort().map((f) => `/schemas/${g}/${f}`),
        ),
      };
    });
    router.get("/schemas/:group/:name", (ctx) => {
      const { group, name } = ctx.params as { group: string; name: string };
      const file = path.join(schemaRoot, group, name);
      if (!this.deps.catalog.schema_groups.includes(group) || !/^[A-Za-z0-9_]+\.json$/.test(name) || !fs.existsSync(file))
        throw new A2AError("ROUTE_NOT_FOUND", `No schema ${group}/${name}`, { path: ctx.path, method: ctx.method });
      ctx.type = "application/schema+json";
      ctx.body = fs.readFileSync(file);
    });
  }
}
