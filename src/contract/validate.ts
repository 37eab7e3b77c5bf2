// Payload validation with the generated ahead-of-time TypeBox validators. The fast path is the AOT `Check`; only
// a failing payload pays for the detailed error report (typebox/schema over the same generated JSON Schema).
import fs from "node:fs";
import path from "node:path";
import type { Compile } from "typebox/schema";
import { validatorModules, type ValidatorModule } from "../../generated/validators/index.js";
import { generatedDir, type Catalog } from "./catalog.js";
import type { Violation } from "./errors.js";

export type { Violation };

export type ValidationResult = { ok: true } | { ok: false; violations: Violation[] };

const loaded = new Map<string, ValidatorModule>();
const groupContexts = new Map<string, Record<string, unknown>>();

/**
 * Loads the validators of the given `group/Name` ids (call at startup so requests seldom wait on imports): one module
 * at a time, yielding to the event loop after each, so a request arriving meanwhile waits for one module's compile
 * (~2 ms) at most, not for all of them (~150 ms on one thread at start-up).
 */
export async function preloadValidators(ids: Iterable<string>): Promise<void> {
  for (const id of new Set(ids)) {
    await validatorFor(id);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  await loadExplainer();
}

/**
 * Loads every params and body validator of `catalog`, one at a time, yielding between them (a gateway starts it in
 * the background once it serves: ../server/warm.ts); a call arriving first loads its own validator. A failure goes
 * to `failed`.
 */
export function warmValidators(catalog: Catalog, failed: (err: unknown) => void): void {
  const ids = [...catalog.methods.map((m) => m.params_schema), ...catalog.routes.flatMap((r) => (r.body_schema ? [r.body_schema] : []))];
  void preloadValidators(ids).catch(failed);
}

/**
 * typebox/schema, which explain() compiles its detailed validators with: ~160 kB of code that only a failing payload
 * needs, so it is not loaded with the gateway but after the validators (or by the first payload that fails first).
 */
let schemaModule: typeof import("typebox/schema") | undefined;
let schemaLoading: Promise<unknown> | undefined;
function loadExplainer(): Promise<unknown> {
  return (schemaLoading ??= import("typebox/schema").then((m) => (schemaModule = m)));
}

async function validatorFor(id: string): Promise<ValidatorModule> {
  const hit = loaded.get(id);
  if (hit) return hit;
  const load = validatorModules[id];
  if (!load) throw new Error(`no generated validator for ${id}`);
  const mod = await load();
  loaded.set(id, mod);
  return mod;
}

function groupContext(group: string): Record<string, unknown> {
  let ctx = groupContexts.get(group);
  if (!ctx) {
    ctx = {};
    const dir = path.join(generatedDir, "json-schema", group);
    for (const f of fs.readdirSync(dir)) if (f.endsWith(".json")) ctx[f] = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
    groupContexts.set(group, ctx);
  }
  return ctx;
}

function fieldOf(instancePath: string): string {
  return instancePath.replace(/^\//, "").replace(/\//g, ".") || "(root)";
}

/** Detailed violations for a value already known to be invalid: the deepest failures first, one per field. */
const explainers = new Map<string, ReturnType<typeof Compile>>();

/** Sync once preloadValidators (any ids) or a first failing validate() has resolved; throws before. */
export function explain(id: string, value: unknown): Violation[] {
  if (schemaModule === undefined) throw new Error("explain() before the validators were loaded (preloadValidators)");
  // Compiled once per schema: a malformed request must not cost a compilation (~10 ms) every time.
  let validator = explainers.get(id);
  if (validator === undefined) {
    const [group, name] = id.split("/") as [string, string];
    const ctx = groupContext(group);
    validator = schemaModule.Compile(ctx as never, ctx[`${name}.json`] as never);
    explainers.set(id, validator);
  }
  const [, raw] = validator.Errors(value) as [
    boolean,
    { instancePath: string; message: string; keyword: string; params?: { requiredProperties?: string[]; unevaluatedProperties?: string[] } }[],
  ];
  // A missing property is reported on its parent object; name the property itself. So is a property a closed shape
  // (`...Record<never>`) does not declare, except where the object only looks that way because one of the listed
  // members failed (the validator then counts every member as unevaluated): that member's own error says what is wrong.
  const errors = raw.flatMap((e) => {
    if (e.keyword === "required" && e.params?.requiredProperties?.length) {
      return e.params.requiredProperties.map((p) => ({ ...e, instancePath: `${e.instancePath}/${p}`, message: "is required" }));
    }
    if (e.keyword === "unevaluatedProperties" && e.params?.unevaluatedProperties?.length) {
      const failed = (p: string) => raw.some((o) => o !== e && (o.instancePath === `${e.instancePath}/${p}` || o.instancePath.startsWith(`${e.instancePath}/${p}/`)));
      if (e.params.unevaluatedProperties.some(failed)) return [];
      return e.params.unevaluatedProperties.map((p) => ({ ...e, instancePath: `${e.instancePath}/${p}`, message: "is not a field of this shape (unknown fields are refused)" }));
    }
    return [e];
  });
  // The deepest first; at one depth an unknown field first: in a union (anyOf) it is the error of the member whose
  // shape the value has, where the other members' "required" / "must be absent" only say it is not theirs.
  const unknown = (e: { keyword: string }): number => (e.keyword === "unevaluatedProperties" ? 0 : 1);
  const sorted = [...errors].sort((a, b) => b.instancePath.split("/").length - a.instancePath.split("/").length || unknown(a) - unknown(b));
  const seen = new Set<string>();
  const out: Violation[] = [];
  for (const e of sorted) {
    if (e.keyword === "anyOf" && sorted.some((o) => o !== e && o.instancePath.startsWith(e.instancePath) && o.keyword !== "anyOf")) continue;
    const field = fieldOf(e.instancePath);
    if (seen.has(field)) continue;
    seen.add(field);
    // `never` members (`not: {}`): a field that has no place here (e.g. another protocol line's name for it).
    out.push({ field, description: e.keyword === "not" ? "must be absent (not a field of this shape)" : e.message });
  }
  return out.length ? out : [{ field: "(root)", description: "does not match the schema" }];
}

function verdictOf(mod: { Check(value: unknown): boolean }, id: string, value: unknown): ValidationResult | Promise<ValidationResult> {
  if (mod.Check(value)) return { ok: true };
  if (schemaModule !== undefined) return { ok: false, violations: explain(id, value) };
  return loadExplainer().then(() => ({ ok: false, violations: explain(id, value) }));
}

/**
 * The verdict for `value` against the schema `id`: at once (no promise) when its validator is loaded, which
 * preloadValidators starts at start-up, in the background, for every params and body schema, so the request path
 * does not wait on promises once it is done; otherwise once the validator is loaded.
 */
export function validate(id: string, value: unknown): ValidationResult | Promise<ValidationResult> {
  const mod = loaded.get(id);
  return mod !== undefined ? verdictOf(mod, id, value) : validatorFor(id).then((m) => verdictOf(m, id, value));
}
