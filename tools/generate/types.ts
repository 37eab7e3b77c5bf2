// TypeScript types of the JSON Schemas (generated/json-schema/<group>/*.json → generated/types/<group>.ts): one type
// per schema document, so handlers are typed with exactly what the validators check. Object schemas become type
// literals (not interfaces), so a typed params object is still a Record<string, unknown>. Besides the types, each
// module exports the values of its string enums (`<Name>Values`) and the bounds and defaults of numeric fields
// (`<Name>Bounds`), so the code never restates them.
import fs from "node:fs";
import path from "node:path";

interface Schema {
  $ref?: string;
  $defs?: Record<string, Schema>;
  type?: string;
  const?: unknown;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  not?: Schema;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  unevaluatedProperties?: Schema | boolean;
  additionalProperties?: Schema | boolean;
  minimum?: number;
  maximum?: number;
  default?: unknown;
  description?: string;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function doc(text: string | undefined, indent: string): string {
  if (text === undefined || text.trim() === "") return "";
  const lines = text.replace(/\*\//g, "*\\/").split("\n");
  return lines.length === 1 ? `${indent}/** ${lines[0]} */\n` : `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

const isEmpty = (s: Schema | boolean): boolean => s === true || (typeof s === "object" && Object.keys(s).length === 0);
const isNever = (s: Schema | boolean | undefined): boolean => s === false || (typeof s === "object" && s.not !== undefined && isEmpty(s.not));

/** The schema's string values when it is a string enum (`enum`, or `anyOf` of string `const`s), else undefined. */
export function stringEnum(s: Schema): string[] | undefined {
  if (s.enum?.every((v) => typeof v === "string")) return s.enum as string[];
  const members = s.anyOf ?? s.oneOf;
  if (members?.length && members.every((m) => typeof m.const === "string")) return members.map((m) => m.const as string);
  return undefined;
}

/** The TypeScript type of `s`; `defs` are the document's `$defs` (inlined where referenced). */
function typeOf(s: Schema, defs: Record<string, Schema>, indent: string, where: string): string {
  if (s.$ref !== undefined) {
    const local = /^#\/\$defs\/(\w+)$/.exec(s.$ref);
    if (local) {
      const def = defs[local[1]!];
      if (def === undefined) throw new Error(`${where}: unknown $ref ${s.$ref}`);
      return typeOf(def, defs, indent, `${where}/${local[1]}`);
    }
    const file = /^(\w+)\.json$/.exec(s.$ref);
    if (!file) throw new Error(`${where}: unsupported $ref ${s.$ref}`);
    return file[1]!;
  }
  if (isNever(s)) return "never";
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum !== undefined) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  const members = s.anyOf ?? s.oneOf;
  if (members !== undefined) return members.map((m) => wrap(typeOf(m, defs, indent, where))).join(" | ");
  if (s.allOf !== undefined) return s.allOf.map((m) => wrap(typeOf(m, defs, indent, where))).join(" & ");
  switch (s.type) {
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return s.items === undefined ? "unknown[]" : `${wrap(typeOf(s.items, defs, indent, `${where}[]`))}[]`;
    case "object":
      return objectType(s, defs, indent, where);
    case undefined:
      return "unknown";
    default:
      throw new Error(`${where}: unsupported type ${s.type}`);
  }
}

/**
 * `t` in parentheses when it is a union or intersection at its top level (so `[]`, `|` and `&` bind to all of it);
 * string literals and doc comments are skipped.
 */
function wrap(t: string): string {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === "/" && t[i + 1] === "*") i = t.indexOf("*/", i + 2) + 1;
    else if (c === "{" || c === "(" || c === "[") depth++;
    else if (c === "}" || c === ")" || c === "]") depth--;
    else if (depth === 0 && (c === "|" || c === "&")) return `(${t})`;
  }
  return t;
}

function objectType(s: Schema, defs: Record<string, Schema>, indent: string, where: string): string {
  const inner = `${indent}  `;
  const required = new Set(s.required ?? []);
  const members = Object.entries(s.properties ?? {}).map(([name, p]) => {
    const key = IDENTIFIER.test(name) ? name : JSON.stringify(name);
    return `${doc(p.description, inner)}${inner}${key}${required.has(name) ? "" : "?"}: ${typeOf(p, defs, inner, `${where}.${name}`)};`;
  });
  const rest = s.unevaluatedProperties ?? s.additionalProperties;
  if (rest !== undefined && !isNever(rest)) {
    const value = isEmpty(rest) ? "unknown" : typeOf(rest as Schema, defs, inner, `${where}{}`);
    if (value !== "unknown" && members.length > 0) throw new Error(`${where}: declared properties next to typed extra properties`);
    members.push(`${inner}[key: string]: ${value};`);
  }
  return members.length === 0 ? "Record<string, never>" : `{\n${members.join("\n")}\n${indent}}`;
}

/** The range every int32 field has; only narrower bounds are the spec's own. */
const INT32: Record<string, number> = { minimum: -2147483648, maximum: 2147483647 };

/** `{field: {minimum, maximum, default}}` of the numeric fields that declare any of them. */
function bounds(s: Schema): string | undefined {
  const fields = Object.entries(s.properties ?? {}).flatMap(([name, p]) => {
    const declared = (["minimum", "maximum", "default"] as const).filter((k) => typeof p[k] === "number" && p[k] !== INT32[k]);
    if (declared.length === 0) return [];
    return [`${IDENTIFIER.test(name) ? name : JSON.stringify(name)}: { ${declared.map((k) => `${k}: ${p[k] as number}`).join(", ")} }`];
  });
  return fields.length === 0 ? undefined : `{ ${fields.join(", ")} }`;
}

/** Writes `<outDir>/<group>.ts` for every group; returns the number of types. */
export function writeSchemaTypes(schemaRoot: string, groups: string[], outDir: string): number {
  fs.mkdirSync(outDir, { recursive: true });
  let count = 0;
  for (const group of groups) {
    const dir = path.join(schemaRoot, group);
    const parts = [`// Generated by tools/generate from generated/json-schema/${group}/*.json. Do not edit.\n`];
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
      const name = file.replace(/\.json$/, "");
      const schema = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as Schema;
      const defs = schema.$defs ?? {};
      const values = stringEnum(schema);
      if (values !== undefined) {
        parts.push(`${doc(schema.description, "")}export const ${name}Values = ${JSON.stringify(values).replace(/,/g, ", ")} as const;\n`);
        parts.push(`export type ${name} = (typeof ${name}Values)[number];\n`);
      } else {
        parts.push(`${doc(schema.description, "")}export type ${name} = ${typeOf(schema, defs, "", `${group}/${name}`)};\n`);
      }
      const b = bounds(schema);
      if (b !== undefined) parts.push(`/** Bounds and defaults of the numeric fields of ${name}. */\nexport const ${name}Bounds = ${b} as const;\n`);
      count++;
    }
    fs.writeFileSync(path.join(outDir, `${group}.ts`), parts.join("\n"));
  }
  return count;
}
