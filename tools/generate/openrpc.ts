// The static OpenRPC documents (one per protocol line) from the catalog and the freshly generated JSON Schemas. The
// running server adds its deployment's facts (src/discovery/openrpc.ts applyDeploymentFacts).
import fs from "node:fs";
import path from "node:path";
import type { Catalog } from "../../src/contract/catalog.js";
import { buildOpenRpc, type JsonObject, type OpenRpcDocument } from "../../src/discovery/openrpc.js";

export function buildOpenRpcDocuments(catalog: Catalog, jsonSchemaDir: string, version: string): Record<string, OpenRpcDocument> {
  const read = (ref: string): JsonObject => JSON.parse(fs.readFileSync(path.join(jsonSchemaDir, `${ref}.json`), "utf8")) as JsonObject;
  return Object.fromEntries(catalog.protocol_lines.map((line) => [line, buildOpenRpc(catalog, line, read, version)]));
}
