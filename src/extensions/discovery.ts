// Extension family: provider discovery (`opencode.providers.list`, `opencode.models.list`).
//
// Both read OpenCode's provider catalog (`GET /provider` → `{all: Provider[], default: {providerID: modelID},
// connected: providerID[]}`), routed like a chat turn: `metadata.opencode.workspace.id` wins, else
// `metadata.opencode.directory` (realpath + workspace-boundary check), else the deployment's default directory.
// The catalog is reduced to the summaries of spec/extensions/opencode/discovery.tsp: provider `options` / `key` /
// `env` (credentials, base URLs) and model `api` / `options` / `headers` / costs are never passed on.
import type { ProviderDiscoveryHandlers } from "../../generated/types/methods.js";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { Model, Provider } from "../../generated/opencode/types.gen.js";
import type { ModelSummary, ProviderSummary } from "../../generated/types/extensions.js";
import { resolveRouting } from "../bridge/directory.js";
import type { Metadata } from "../protocol/model.js";
import type { Call } from "../operations/index.js";
import { withTrace } from "../tracing/index.js";
import { UpstreamError } from "../upstream/errors.js";
import type { ExtensionDeps } from "./context.js";
import { isObject } from "../util/object.js";

interface ProviderCatalog {
  all: Provider[];
  default: Record<string, string>;
  connected: string[];
}

interface CatalogFields {
  default_by_provider: Record<string, string>;
  connected: string[];
}

const nonEmpty = (v: unknown): v is string => typeof v === "string" && v !== "";
const count = (v: unknown): number | undefined => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined);

/** The shape the summaries rely on; anything else is an UPSTREAM_PAYLOAD_ERROR. */
function isCatalog(d: unknown): d is ProviderCatalog {
  return (
    isObject(d) &&
    Array.isArray(d.all) &&
    d.all.every((p) => isObject(p) && nonEmpty(p.id) && isObject(p.models)) &&
    isObject(d.default) &&
    Object.values(d.default).every((m) => typeof m === "string") &&
    Array.isArray(d.connected) &&
    d.connected.every((c) => typeof c === "string")
  );
}

/** A model entry is usable when it is an object; its id falls back to its key in `models`. */
function modelSummary(provider: Provider, key: string, model: Partial<Model>, fields: CatalogFields): ModelSummary {
  const modelId = nonEmpty(model.id) ? model.id : key;
  const caps = isObject(model.capabilities) ? model.capabilities : undefined;
  const limit = isObject(model.limit) ? model.limit : undefined;
  const out: ModelSummary = {
    provider_id: provider.id,
    model_id: modelId,
    name: nonEmpty(model.name) ? model.name : modelId,
    default: fields.default_by_provider[provider.id] === modelId,
    connected: fields.connected.includes(provider.id),
  };
  if (nonEmpty(model.status)) out.status = model.status;
  const context = count(limit?.context);
  if (context !== undefined) out.context_window = context;
  const output = count(limit?.output);
  if (output !== undefined) out.max_output_tokens = output;
  if (typeof caps?.reasoning === "boolean") out.supports_reasoning = caps.reasoning;
  if (typeof caps?.toolcall === "boolean") out.supports_tool_call = caps.toolcall;
  if (typeof caps?.attachment === "boolean") out.supports_attachments = caps.attachment;
  return out;
}

function models(provider: Provider): [string, Partial<Model>][] {
  return Object.entries(provider.models as Record<string, unknown>).filter((e): e is [string, Partial<Model>] => isObject(e[1]));
}

function providerSummary(provider: Provider, fields: CatalogFields): ProviderSummary {
  const out: ProviderSummary = {
    provider_id: provider.id,
    name: nonEmpty(provider.name) ? provider.name : provider.id,
    connected: fields.connected.includes(provider.id),
    model_count: models(provider).length,
  };
  if (nonEmpty(provider.source)) out.source = provider.source;
  const defaultModel = fields.default_by_provider[provider.id];
  if (defaultModel !== undefined) out.default_model_id = defaultModel;
  return out;
}

export function handlers(deps: ExtensionDeps) {
  async function readCatalog(params: Record<string, unknown>, c: Call): Promise<{ catalog: ProviderCatalog; fields: CatalogFields }> {
    const routing = withTrace(resolveRouting(params.metadata as Metadata | undefined, deps.routing), c.trace);
    let catalog: ProviderCatalog;
    try {
      catalog = await deps.upstream.call("providerList", (c) => sdk.providerList({ ...c }), { ...routing, validate: isCatalog });
    } catch (error) {
      if (error instanceof UpstreamError) throw error.toA2AError();
      throw error;
    }
    const fields: CatalogFields = { default_by_provider: { ...catalog.default }, connected: [...catalog.connected] };
    return { catalog, fields };
  }

  return {
    "opencode.providers.list": async (params, c) => {
      const { catalog, fields } = await readCatalog(params, c);
      return { items: catalog.all.map((p) => providerSummary(p, fields)), ...fields };
    },

    "opencode.models.list": async (params, c) => {
      const { catalog, fields } = await readCatalog(params, c);
      const only = typeof params.provider_id === "string" ? params.provider_id : undefined;
      const items = catalog.all
        .filter((p) => only === undefined || p.id === only)
        .flatMap((p) => models(p).map(([key, model]) => modelSummary(p, key, model, fields)));
      return { items, ...fields };
    },
  } satisfies ProviderDiscoveryHandlers<Call>;
}
