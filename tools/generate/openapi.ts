// Adds the contract catalog, wire contracts and compatibility profiles (with default deployment facts) to the
// OpenAPI document as `x-` extensions. The running server replaces them with its deployment's values.
import type { Catalog } from "../../src/contract/catalog.js";
import { openApiContractExtensions } from "../../src/discovery/contract.js";
import { defaultDeploymentFacts } from "../../src/discovery/facts.js";

export async function decorateOpenApi(doc: Record<string, unknown>, catalog: Catalog): Promise<Record<string, unknown>> {
  const facts = defaultDeploymentFacts;
  const jsonrpc = Object.fromEntries(
    catalog.methods.map((m) => [
      m.name,
      {
        line: m.line,
        surface: m.surface,
        summary: m.summary,
        params: `/schemas/${m.params_schema}.json`,
        result: m.result_schema ? m.result_schema.split("|").map((r) => (r === "null" ? "null" : `/schemas/${r}.json`)) : m.result,
        streaming: m.streaming,
        scope: m.scope,
        extension_uri: m.extension_uri,
        toggle: m.toggle,
        errors: m.errors,
        ...(m.not_implemented_until ? { pending: m.not_implemented_until } : {}),
      },
    ]),
  );
  return {
    ...doc,
    "x-opencode-a2a-jsonrpc-methods": jsonrpc,
    "x-opencode-a2a-extensions": catalog.extensions,
    "x-opencode-a2a-errors": catalog.errors,
    ...openApiContractExtensions(catalog, facts),
  };
}
