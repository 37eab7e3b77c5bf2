// Minimal valid instances of generated JSON Schemas (required members only), so tests can call every method with
// params the contract accepts without listing payloads by hand.
import fs from "node:fs";
import path from "node:path";
import { generatedDir } from "../../src/contract/catalog.js";

type Schema = Record<string, any>;

function load(group: string, file: string): Schema {
  return JSON.parse(fs.readFileSync(path.join(generatedDir, "json-schema", group, file), "utf8")) as Schema;
}

function resolve(group: string, root: Schema, ref: string): [Schema, Schema] {
  if (ref.startsWith("#/$defs/")) return [root.$defs[ref.slice("#/$defs/".length)], root];
  const target = load(group, ref);
  return [target, target];
}

function sampleOf(group: string, root: Schema, schema: Schema, depth: number): unknown {
  if (depth > 12) throw new Error("schema too deep for a sample");
  if (schema.$ref) {
    const [target, newRoot] = resolve(group, root, schema.$ref);
    return sampleOf(group, newRoot, target, depth + 1);
  }
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum.find((v: unknown) => typeof v !== "string" || !/UNSPECIFIED/.test(v)) ?? schema.enum[0];
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (Array.isArray(alternatives)) return sampleOf(group, root, alternatives[0], depth + 1);
  if (Array.isArray(schema.allOf)) return Object.assign({}, ...schema.allOf.map((s: Schema) => sampleOf(group, root, s, depth + 1)));
  switch (schema.type) {
    case "string":
      if (schema.format === "uri" || schema.format === "url") return "https://example.com/hook";
      if (schema.format === "date-time") return "2026-01-01T00:00:00Z";
      if (schema.pattern) throw new Error(`cannot sample pattern ${schema.pattern}`);
      return "x".repeat(Math.max(schema.minLength ?? 1, 1));
    case "integer":
    case "number":
      return schema.minimum ?? 0;
    case "boolean":
      return false;
    case "array":
      return Array.from({ length: schema.minItems ?? 0 }, () => sampleOf(group, root, schema.items ?? {}, depth + 1));
    case "object":
    case undefined: {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) out[name] = sampleOf(group, root, schema.properties?.[name] ?? {}, depth + 1);
      return out;
    }
    default:
      throw new Error(`cannot sample type ${schema.type}`);
  }
}

/** A minimal instance of `group/Name` (e.g. `v0_3/TaskQueryParams`). */
export function sample(id: string): Record<string, unknown> {
  const [group, name] = id.split("/") as [string, string];
  const root = load(group, `${name}.json`);
  return sampleOf(group, root, root, 0) as Record<string, unknown>;
}
