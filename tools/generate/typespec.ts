// Compiles spec/ with the TypeSpec compiler and reads our decorators back into the contract catalog.
import path from "node:path";
import {
  compile,
  getDoc,
  getNamespaceFullName,
  getTypeName,
  NodeHost,
  type Diagnostic,
  type Model,
  type Namespace,
  type Operation,
  type Program,
  type Type,
} from "@typespec/compiler";
import { getAllHttpServices } from "@typespec/http";
import { StateKeys } from "../../spec/lib/decorators.js";
import type { OperationName } from "../../generated/types/methods.js";
import type { Catalog, ErrorEntry, ExtensionEntry, MethodEntry, ProtocolLine, RouteEntry } from "../../src/contract/catalog.js";

export const specDir = path.resolve(import.meta.dirname, "../../spec");

/** JSON Schema groups: one TypeSpec entry and one output directory each. */
export const schemaGroups: Record<string, string[]> = {
  common: ["OpenCodeA2A.JsonRpc"],
  v0_3: ["OpenCodeA2A.A2A.V0_3"],
  v0_3_rest: ["OpenCodeA2A.A2A.V0_3_Rest"],
  v1_0: ["OpenCodeA2A.A2A.V1_0"],
  extensions: ["OpenCodeA2A.Extensions.Shared", "OpenCodeA2A.Extensions.OpenCode"],
};

export function failOnDiagnostics(what: string, diagnostics: readonly Diagnostic[]): void {
  const errors = diagnostics.filter((d) => d.severity === "error");
  if (errors.length === 0) return;
  const lines = errors.map((d) => {
    const target = d.target as { file?: { path: string }; pos?: number } | undefined;
    const where = target && typeof target === "object" && "file" in target && target.file ? ` (${target.file.path})` : "";
    return `  ${d.code}: ${d.message}${where}`;
  });
  throw new Error(`${what} failed:\n${lines.join("\n")}`);
}

export async function compileOpenApi(outputDir: string): Promise<Program> {
  const program = await compile(NodeHost, path.join(specDir, "main.tsp"), {
    outputDir,
    emit: ["@typespec/openapi3"],
    options: {
      "@typespec/openapi3": { "openapi-versions": ["3.1.0"], "file-type": "json", "emitter-output-dir": outputDir },
    },
    warningAsError: false,
  });
  failOnDiagnostics("TypeSpec compile of spec/main.tsp", program.diagnostics);
  return program;
}

export async function compileJsonSchema(group: string, outputDir: string): Promise<void> {
  const program = await compile(NodeHost, path.join(specDir, "schemas", `${group}.tsp`), {
    outputDir,
    emit: ["@typespec/json-schema"],
    options: { "@typespec/json-schema": { "file-type": "json", "emitter-output-dir": outputDir } },
  });
  failOnDiagnostics(`TypeSpec JSON Schema compile of spec/schemas/${group}.tsp`, program.diagnostics);
}

// ---------------------------------------------------------------------------------------------------------------
// Catalog types are defined once, in src/contract/catalog.ts.

// ---------------------------------------------------------------------------------------------------------------

function stateOf<T>(program: Program, key: symbol, target: Type): T | undefined {
  return program.stateMap(key).get(target) as T | undefined;
}

function namespaceChain(ns: Namespace | undefined): Namespace[] {
  const chain: Namespace[] = [];
  for (let n = ns; n; n = n.namespace) chain.push(n);
  return chain;
}

function inherited<T>(program: Program, key: symbol, op: Operation): T | undefined {
  const own = stateOf<T>(program, key, op);
  if (own !== undefined) return own;
  for (const ns of namespaceChain(op.namespace)) {
    const v = stateOf<T>(program, key, ns);
    if (v !== undefined) return v;
  }
  return undefined;
}

function groupOf(ns: Namespace | undefined): string | null {
  if (!ns) return null;
  const full = getNamespaceFullName(ns);
  for (const [group, namespaces] of Object.entries(schemaGroups)) if (namespaces.includes(full)) return group;
  return null;
}

/** `group/Name` of a named model or union declared in a schema group, else null. */
function schemaRef(type: Type): string | null {
  if ((type.kind === "Model" || type.kind === "Union" || type.kind === "Enum" || type.kind === "Scalar") && type.name) {
    const group = groupOf(type.namespace);
    if (group) return `${group}/${type.name}`;
  }
  return null;
}

function resultRef(type: Type): string | null {
  if (type.kind === "Intrinsic" && type.name === "null") return "null";
  if (type.kind === "Model" && type.indexer && type.name === "Array") {
    const inner = schemaRef(type.indexer.value);
    return inner ? `${inner}[]` : null;
  }
  return schemaRef(type);
}

function errorReasons(program: Program, op: Operation): string[] {
  const models = (stateOf<Model[]>(program, StateKeys.raises, op) ?? []) as Model[];
  const reasons = models.map((m) => {
    const info = stateOf<{ reason: string }>(program, StateKeys.a2aError, m);
    if (!info) throw new Error(`@raises on ${getTypeName(op)} references ${getTypeName(m)}, which has no @a2aError`);
    return info.reason;
  });
  return [...new Set(reasons)].sort();
}

function docOf(program: Program, t: Type): string {
  return (getDoc(program, t) ?? "").replace(/\s+/g, " ").trim();
}

interface AccessControlDecl {
  scopes: { name: string; description: string }[];
  trust_levels: { name: string; scopes: string[]; includes?: string; sees_all_principals?: boolean; description: string }[];
}

/** The single @accessControl declaration: scopes checked for duplicates, trust levels expanded through `includes`. */
function buildAccessControl(program: Program): Catalog["access_control"] {
  const decls = [...program.stateMap(StateKeys.accessControl).values()] as AccessControlDecl[];
  if (decls.length !== 1) throw new Error(`expected exactly one @accessControl declaration, found ${decls.length}`);
  const decl = decls[0]!;
  const names = new Set<string>();
  for (const s of decl.scopes) {
    if (!/^[a-z]+\.[a-z]+$/.test(s.name)) throw new Error(`scope ${s.name}: expected family.action`);
    if (names.has(s.name)) throw new Error(`scope ${s.name} declared twice`);
    names.add(s.name);
  }
  const expanded = new Map<string, Set<string>>();
  for (const level of decl.trust_levels) {
    if (expanded.has(level.name)) throw new Error(`trust level ${level.name} declared twice`);
    const bundle = new Set<string>();
    if (level.includes !== undefined) {
      const base = expanded.get(level.includes);
      if (!base) throw new Error(`trust level ${level.name} includes ${level.includes}, which is not declared before it`);
      for (const s of base) bundle.add(s);
    }
    for (const s of level.scopes) {
      if (!names.has(s)) throw new Error(`trust level ${level.name} names undeclared scope ${s}`);
      bundle.add(s);
    }
    expanded.set(level.name, bundle);
  }
  for (const level of decl.trust_levels)
    if (level.sees_all_principals && expanded.get(level.name)!.size !== names.size)
      throw new Error(`trust level ${level.name} sees all principals, so it must hold every declared scope`);
  return {
    scopes: [...decl.scopes].sort((a, b) => a.name.localeCompare(b.name)).map((s) => ({ name: s.name, description: s.description })),
    trust_levels: decl.trust_levels.map((l) => ({
      name: l.name,
      scopes: [...expanded.get(l.name)!].sort(),
      includes: l.includes ?? null,
      sees_all_principals: l.sees_all_principals ?? false,
      description: l.description,
    })),
  };
}

function buildErrors(program: Program): Catalog["errors"] {
  const byNs = new Map<string, ErrorEntry[]>();
  for (const [target, raw] of program.stateMap(StateKeys.a2aError)) {
    const model = target as Model;
    const info = raw as Omit<ErrorEntry, "name" | "fields" | "headers"> & { fields?: string[]; headers?: string[] };
    const ns = getNamespaceFullName(model.namespace!);
    const entry: ErrorEntry = {
      name: model.name,
      code: info.code,
      reason: info.reason,
      message: info.message,
      http: info.http,
      grpc: info.grpc,
      origin: info.origin,
      fields: [...(info.fields ?? [])],
      headers: [...(info.headers ?? [])],
    };
    byNs.set(ns, [...(byNs.get(ns) ?? []), entry]);
  }
  const forLine = (lineNs: string): ErrorEntry[] => {
    const list = [
      ...(byNs.get("OpenCodeA2A.Errors.JsonRpc") ?? []),
      ...(byNs.get(lineNs) ?? []),
      ...(byNs.get("OpenCodeA2A.Errors.Project") ?? []),
    ].sort((a, b) => b.code - a.code);
    const seenCodes = new Map<number, string>();
    const seenReasons = new Set<string>();
    for (const e of list) {
      const other = seenCodes.get(e.code);
      if (other) throw new Error(`error code ${e.code} is used by both ${other} and ${e.reason} in ${lineNs}`);
      if (seenReasons.has(e.reason)) throw new Error(`error reason ${e.reason} is declared twice in ${lineNs}`);
      if (e.origin === "project" && (e.code > -32050 || e.code < -32099))
        throw new Error(`project error ${e.reason} must use a code in -32050..-32099, not ${e.code}`);
      if (e.origin === "a2a" && (e.code > -32001 || e.code < -32009))
        throw new Error(`A2A error ${e.reason} must use a code in -32001..-32009, not ${e.code}`);
      seenCodes.set(e.code, e.reason);
      seenReasons.add(e.reason);
    }
    return list;
  };
  return { "0.3": forLine("OpenCodeA2A.Errors.A2A.V0_3"), "1.0": forLine("OpenCodeA2A.Errors.A2A.V1_0") };
}

/** A method family: the namespace that declares a group of methods (a core family of both lines, or an extension). */
export interface MethodFamily {
  name: string;
  doc: string;
  /** Core family (its methods are served by logical operations) or an extension's. */
  core: boolean;
  /** The methods of the family, by JSON-RPC name. */
  methods: string[];
}

/**
 * The method families of spec/: every JSON-RPC method belongs to the namespace that declares it. Core methods are
 * grouped in namespaces under their line's (`Methods.V1_0.Tasks`, `Methods.V0_3.Tasks`): the two lines' groups of
 * one name form one family. Extension methods are grouped by their extension's namespace.
 */
export function methodFamilies(program: Program): MethodFamily[] {
  const families = new Map<string, MethodFamily>();
  const declaredBy = new Map<string, Set<Namespace>>();
  for (const [target, name] of program.stateMap(StateKeys.jsonrpc)) {
    const op = target as Operation;
    const ns = op.namespace;
    if (!ns || stateOf(program, StateKeys.line, ns) !== undefined)
      throw new Error(`JSON-RPC method ${name as string}: declare it in a family namespace, not directly in its line's`);
    const ext = inherited<{ description: string }>(program, StateKeys.extension, op);
    const family = families.get(ns.name) ?? { name: ns.name, doc: ext?.description ?? docOf(program, ns), core: ext === undefined, methods: [] };
    const namespaces = declaredBy.get(ns.name) ?? new Set();
    namespaces.add(ns);
    // Only the core families of the two lines share a name; two extensions never do.
    if (namespaces.size > 1 && !(family.core && ext === undefined)) throw new Error(`method family ${ns.name} is declared by two namespaces`);
    family.methods.push(name as string);
    families.set(ns.name, family);
    declaredBy.set(ns.name, namespaces);
  }
  for (const f of families.values()) f.methods.sort();
  return [...families.values()].sort((a, b) => a.name.localeCompare(b.name));
}

export function buildCatalog(program: Program): Catalog {
  const extensions = new Map<string, ExtensionEntry>();
  for (const [target, raw] of program.stateMap(StateKeys.extension)) {
    const info = raw as Omit<ExtensionEntry, "methods">;
    if (extensions.has(info.uri)) throw new Error(`extension URI declared twice: ${info.uri} (${getTypeName(target)})`);
    extensions.set(info.uri, { ...info, methods: [] });
  }

  const methods: MethodEntry[] = [];
  for (const [target, name] of program.stateMap(StateKeys.jsonrpc)) {
    const op = target as Operation;
    const params = op.parameters.properties.get("params");
    if (!params || op.parameters.properties.size !== 1)
      throw new Error(`JSON-RPC method ${name}: the operation must have exactly one parameter named "params"`);
    const paramsSchema = schemaRef(params.type);
    if (!paramsSchema) throw new Error(`JSON-RPC method ${name}: params must be a named model of a schema group`);
    const ext = inherited<{ uri: string }>(program, StateKeys.extension, op);
    const line = inherited<ProtocolLine>(program, StateKeys.line, op) ?? null;
    const toggle = stateOf<string>(program, StateKeys.conditional, op) ?? null;
    if (!ext && !line) throw new Error(`JSON-RPC method ${name}: neither a protocol line nor an extension`);
    methods.push({
      name: name as string,
      line: ext ? null : line,
      surface: ext ? "extension" : "core",
      operation: stateOf<OperationName>(program, StateKeys.operation, op) ?? null,
      summary: docOf(program, op),
      params_schema: paramsSchema,
      result: getTypeName(op.returnType, { printable: true }),
      result_schema: resultRef(op.returnType),
      streaming: stateOf<boolean>(program, StateKeys.streaming, op) ?? false,
      scope: stateOf<string>(program, StateKeys.scope, op) ?? null,
      retention: stateOf<string>(program, StateKeys.retention, op) ?? (toggle ? "deployment-conditional" : "stable"),
      extension_uri: ext?.uri ?? null,
      toggle,
      not_implemented_until: stateOf<string>(program, StateKeys.notImplementedUntil, op) ?? null,
      errors: errorReasons(program, op),
    });
    if (ext) extensions.get(ext.uri)!.methods.push(name as string);
  }
  methods.sort((a, b) => a.name.localeCompare(b.name));
  const seen = new Set<string>();
  for (const m of methods) {
    if (seen.has(m.name)) throw new Error(`JSON-RPC method declared twice: ${m.name}`);
    seen.add(m.name);
  }
  for (const e of extensions.values()) e.methods.sort();

  const [services, diags] = getAllHttpServices(program);
  failOnDiagnostics("HTTP route resolution", diags);
  const routes: RouteEntry[] = [];
  for (const service of services) {
    for (const httpOp of service.operations) {
      const op = httpOp.operation;
      const body = httpOp.parameters.body;
      routes.push({
        id: getTypeName(op).replace(/^OpenCodeA2A\.Service\./, ""),
        verb: httpOp.verb.toUpperCase(),
        path: httpOp.path,
        kind: stateOf<RouteEntry["kind"]>(program, StateKeys.httpKind, op) ?? "a2a",
        line: inherited<ProtocolLine>(program, StateKeys.line, op) ?? null,
        operation: stateOf<OperationName>(program, StateKeys.operation, op) ?? null,
        summary: docOf(program, op),
        public: stateOf<boolean>(program, StateKeys.public, op) ?? false,
        streaming: stateOf<boolean>(program, StateKeys.streaming, op) ?? false,
        scope: stateOf<string>(program, StateKeys.scope, op) ?? null,
        body_schema: body ? schemaRef(body.type) : null,
        not_implemented_until: stateOf<string>(program, StateKeys.notImplementedUntil, op) ?? null,
        errors: errorReasons(program, op),
      });
    }
  }
  routes.sort((a, b) => a.path.localeCompare(b.path) || a.verb.localeCompare(b.verb));
  for (const r of routes) {
    if (!r.public && !r.scope && r.kind !== "jsonrpc") throw new Error(`route ${r.verb} ${r.path} declares no @scope`);
  }

  const accessControl = buildAccessControl(program);
  const declared = new Set(accessControl.scopes.map((s) => s.name));
  for (const m of methods) if (m.scope && !declared.has(m.scope)) throw new Error(`method ${m.name} requires undeclared scope ${m.scope} (spec/security.tsp)`);
  for (const r of routes) if (r.scope && !declared.has(r.scope)) throw new Error(`route ${r.verb} ${r.path} requires undeclared scope ${r.scope} (spec/security.tsp)`);

  return {
    catalog_version: 1,
    service: "opencode-a2a",
    protocol_lines: ["0.3", "1.0"],
    schema_groups: Object.keys(schemaGroups),
    extensions: [...extensions.values()].sort((a, b) => a.uri.localeCompare(b.uri)),
    methods,
    routes,
    errors: buildErrors(program),
    scopes: [...declared].sort(),
    access_control: accessControl,
  };
}
