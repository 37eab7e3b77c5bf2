// The MCP tools' JSON Schemas, taken from the contract (generated/json-schema/extensions: A2aCallInput,
// A2aCallResult, A2aDiscoverInput, A2aDiscoverResult), so spec/extensions/opencode/peers.tsp stays their only source.
// MCP clients (OpenCode, the SDK's Client) and the models behind them want one self-contained draft-07-style object
// schema per tool: `$ref`s to sibling files are inlined, `$schema` / `$id` dropped, and the generator's
// `unevaluatedProperties: {not: {}}` becomes `additionalProperties: false`.
import fs from "node:fs";
import path from "node:path";
import { generatedDir } from "../contract/catalog.js";

type Json = Record<string, unknown>;

const DIR = path.join(generatedDir, "json-schema", "extensions");

function load(file: string): Json {
  return JSON.parse(fs.readFileSync(path.join(DIR, file), "utf8")) as Json;
}

/** A copy of `node` with sibling-file `$ref`s inlined (bounded depth: the tool shapes are shallow). */
function inline(node: unknown, depth = 0): unknown {
  if (depth > 16) throw new Error("tool schema nests too deep");
  if (Array.isArray(node)) return node.map((n) => inline(n, depth + 1));
  if (typeof node !== "object" || node === null) return node;
  const obj = node as Json;
  if (typeof obj.$ref === "string" && /^[A-Za-z0-9_]+\.json$/.test(obj.$ref)) {
    const { $ref, ...rest } = obj;
    return { ...(inline(clean(load($ref)), depth + 1) as Json), ...(inline(rest, depth + 1) as Json) };
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(obj)) out[key] = inline(value, depth + 1);
  return out;
}

function clean(schema: Json): Json {
  const { $schema: _schema, $id: _id, unevaluatedProperties, ...rest } = schema;
  const closed = typeof unevaluatedProperties === "object" && unevaluatedProperties !== null && "not" in unevaluatedProperties;
  return closed ? { ...rest, additionalProperties: false } : rest;
}

/** The tool schema of one generated extension shape (e.g. `A2aCallInput`), self-contained. */
export function toolSchema(name: string): { type: "object"; [key: string]: unknown } {
  const schema = inline(clean(load(`${name}.json`))) as Json;
  if (schema.type !== "object") throw new Error(`${name} is not an object schema`);
  return schema as { type: "object"; [key: string]: unknown };
}
