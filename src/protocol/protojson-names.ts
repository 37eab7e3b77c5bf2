// proto3 JSON field names on the ProtoJSON surfaces (0.3 REST `/v1/*` and every 1.0 payload). A ProtoJSON parser
// must accept the proto's original field names (snake_case, e.g. `message_id`) as well as the lowerCamelCase JSON
// names, and the original name of a field whose `json_name` differs (0.3 `request` for `message`). This module folds
// them into the declared names before validation, driven by the generated JSON Schemas (generated/json-schema):
//
// - every object schema maps the snake_case spelling of each declared property, and the proto names listed in the
//   property's `x-protojson-aliases` (spec/: `@extension("x-protojson-aliases", …)`), to that property;
// - it descends into declared properties whose schema is a message (object with declared properties), an array of
//   messages, or a union of them (the union's members' properties merged);
// - it never descends into free-form values (`Record<unknown>`: metadata, 0.3 data part structs; `unknown`: 1.0
//   data parts), whose keys belong to the client;
// - two spellings of one field in one object are INVALID_PARAMS naming the field; keys it does not know are left
//   as they are (the validators ignore unknown properties).
//
// The 0.3 JSON-RPC surface is not ProtoJSON and does not use this (it keeps src/protocol/keys.ts).
import fs from "node:fs";
import path from "node:path";
import { generatedDir } from "../contract/catalog.js";
import { isObject, type Obj } from "../util/object.js";
import { at, invalid } from "./codec/common.js";

/** What the normalizer knows about a value: a message (object with declared fields), a list, or opaque. */
export type NameShape = ObjectShape | { t: "array"; items: NameShape } | { t: "opaque" };

export interface ObjectShape {
  t: "object";
  /** Declared property → the shape of its value (absent: a scalar / free-form value, not descended into). */
  props: Map<string, NameShape>;
  /** Accepted other spelling → declared property (snake_case names, proto names with another json_name). */
  aliases: Map<string, string>;
}

const OPAQUE: NameShape = { t: "opaque" };
/** A field declared `never` (refused): its spellings fold, its value is not descended into. */
const NEVER: NameShape = { t: "opaque" };

type Schema = Record<string, unknown>;

/** `messageId` → `message_id` (the proto field name of a lowerCamel JSON name). */
export function snakeName(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

class GroupSchemas {
  readonly #files = new Map<string, Schema>();
  readonly #shapes = new Map<string, NameShape>();

  constructor(readonly group: string) {
    const dir = path.join(generatedDir, "json-schema", group);
    for (const f of fs.readdirSync(dir)) if (f.endsWith(".json")) this.#files.set(f, JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Schema);
  }

  /** The shape of schema file `file` (e.g. `Message.json`). */
  shapeOfFile(file: string): NameShape {
    const schema = this.#files.get(file);
    if (schema === undefined) throw new Error(`no generated JSON Schema ${this.group}/${file}`);
    return this.#shape(schema, file, file);
  }

  #resolve(ref: string, file: string): [Schema, string, string] {
    const [target, pointer] = ref.split("#") as [string, string | undefined];
    const targetFile = target === "" ? file : path.posix.basename(target);
    const root = this.#files.get(targetFile);
    if (root === undefined) throw new Error(`unresolvable $ref ${ref} in ${this.group}/${file}`);
    let node: unknown = root;
    for (const seg of (pointer ?? "").split("/").filter(Boolean)) node = (node as Schema)[decodeURIComponent(seg)];
    if (!isObject(node)) throw new Error(`unresolvable $ref ${ref} in ${this.group}/${file}`);
    return [node, targetFile, `${targetFile}#${pointer ?? ""}`];
  }

  #shape(schema: Schema, file: string, key: string | undefined): NameShape {
    if (key !== undefined) {
      const hit = this.#shapes.get(key);
      if (hit !== undefined) return hit;
    }
    if (typeof schema.$ref === "string") {
      const [target, targetFile, targetKey] = this.#resolve(schema.$ref, file);
      const shape = this.#shape(target, targetFile, targetKey);
      if (key !== undefined) this.#shapes.set(key, shape);
      return shape;
    }
    const members = (schema.anyOf ?? schema.oneOf ?? schema.allOf) as Schema[] | undefined;
    if (Array.isArray(members)) {
      // A union of messages: one shape holding every member's fields (a oneof is told apart by its keys).
      const merged: ObjectShape = { t: "object", props: new Map(), aliases: new Map() };
      if (key !== undefined) this.#shapes.set(key, merged);
      for (const m of members) mergeInto(merged, this.#shape(m, file, undefined));
      return merged.props.size === 0 && merged.aliases.size === 0 ? OPAQUE : merged;
    }
    if (schema.type === "array" && isObject(schema.items)) {
      const items = this.#shape(schema.items, file, undefined);
      return items.t === "opaque" ? OPAQUE : { t: "array", items };
    }
    const properties = schema.properties;
    if (!isObject(properties) || Object.keys(properties).length === 0) return OPAQUE; // scalar or free-form map
    const shape: ObjectShape = { t: "object", props: new Map(), aliases: new Map() };
    if (key !== undefined) this.#shapes.set(key, shape); // before the children: recursive messages resolve to it
    for (const [name, sub] of Object.entries(properties)) {
      if (!isObject(sub)) continue;
      const snake = snakeName(name);
      if (snake !== name) shape.aliases.set(snake, name);
      const protoNames = sub["x-protojson-aliases"];
      if (Array.isArray(protoNames)) for (const a of protoNames) if (typeof a === "string") shape.aliases.set(a, name);
      // `never` members (refused fields) still fold their spellings, so the validator names them.
      const inner = isObject(sub.not) ? NEVER : this.#shape(sub, file, undefined);
      shape.props.set(name, inner);
    }
    return shape;
  }
}

/** Adds `from`'s fields to `into` (a union member); a field free-form in one member stays free-form. */
function mergeInto(into: ObjectShape, from: NameShape): void {
  if (from.t !== "object") return;
  for (const [alias, name] of from.aliases) into.aliases.set(alias, name);
  for (const [name, shape] of from.props) {
    const have = into.props.get(name);
    if (have === undefined) into.props.set(name, shape);
    else if (have !== shape) into.props.set(name, mergeShapes(have, shape));
  }
}

function mergeShapes(a: NameShape, b: NameShape): NameShape {
  // A field refused (`never`) in one member and declared in another: the declaration decides.
  if (a === NEVER) return b;
  if (b === NEVER) return a;
  if (a.t === "opaque" || b.t === "opaque") return OPAQUE;
  if (a.t === "array" && b.t === "array") return { t: "array", items: mergeShapes(a.items, b.items) };
  if (a.t === "object" && b.t === "object") {
    const out: ObjectShape = { t: "object", props: new Map(a.props), aliases: new Map(a.aliases) };
    mergeInto(out, b);
    return out;
  }
  return OPAQUE;
}

const groups = new Map<string, GroupSchemas>();
const shapes = new Map<string, NameShape>();

/** The name shape of a generated schema id (`group/Name`), built once. */
export function nameShape(id: string): NameShape {
  let shape = shapes.get(id);
  if (shape === undefined) {
    const [group, name] = id.split("/") as [string, string];
    let g = groups.get(group);
    if (g === undefined) groups.set(group, (g = new GroupSchemas(group)));
    shapes.set(id, (shape = g.shapeOfFile(`${name}.json`)));
  }
  return shape;
}

function fold(shape: NameShape, value: unknown, field: string): unknown {
  if (shape.t === "array") {
    if (!Array.isArray(value)) return value;
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = fold(shape.items, value[i], at(field, i));
      if (v !== value[i]) (out ??= [...value])[i] = v;
    }
    return out ?? value;
  }
  if (shape.t !== "object" || !isObject(value)) return value;
  let changed = false;
  const out: Obj = {};
  const spelled = new Map<string, string>();
  for (const key of Object.keys(value)) {
    const name = shape.props.has(key) ? key : (shape.aliases.get(key) ?? key);
    const before = spelled.get(name);
    if (before !== undefined) throw invalid(at(field, name), `is given twice (as ${before} and as ${key}); send one spelling`);
    spelled.set(name, key);
    const sub = shape.props.get(name);
    const v = sub === undefined ? value[key] : fold(sub, value[key], at(field, name));
    if (name !== key || v !== value[key]) changed = true;
    out[name] = v;
  }
  return changed ? out : value;
}

/**
 * `value` with every proto field name folded into the declared lowerCamelCase name of the schema `id` (see the top
 * of this file). The input is never changed; an unchanged value is returned as is. Throws INVALID_PARAMS naming
 * the field when one object spells a field twice.
 */
export function normalizeProtoJson(id: string, value: unknown, field = ""): unknown {
  return fold(nameShape(id), value, field);
}
