// OpenRPC 1.3 documents of the JSON-RPC surface, one per protocol line. The static part is a pure function of the
// catalog and the generated JSON Schemas (`npm run generate` writes generated/openrpc/openrpc-<line>.json); the
// server adds the deployment's facts (servers, availability of toggled methods, required extensions) per request line.
import type { Catalog, ErrorEntry, MethodEntry, ProtocolLine } from "../contract/catalog.js";
import { A2A_DOMAIN, PROJECT_DOMAIN } from "../protocol/errors.js";
import { methodAvailability, methodsOfLine, type DeploymentFacts } from "./facts.js";

export const OPENRPC_VERSION = "1.3.2";

export type JsonObject = Record<string, unknown>;

/** Reads one generated JSON Schema by catalog reference (`group/Name`). */
export type SchemaReader = (ref: string) => JsonObject;

export interface OpenRpcContentDescriptor {
  name: string;
  summary?: string;
  description?: string;
  required?: boolean;
  schema: JsonObject;
}

export interface OpenRpcError {
  code: number;
  message: string;
  data?: unknown;
}

export interface OpenRpcMethod {
  name: string;
  summary?: string;
  description?: string;
  tags?: { name: string; description?: string }[];
  paramStructure: "by-name";
  params: OpenRpcContentDescriptor[];
  result: OpenRpcContentDescriptor;
  errors: { $ref: string }[];
  "x-line": ProtocolLine | null;
  "x-surface": MethodEntry["surface"];
  "x-scope": string | null;
  "x-params-schema": string;
  "x-streaming": boolean;
  "x-extension-uri"?: string;
  "x-toggle"?: string;
  "x-pending"?: string;
  /** Added by the server: this deployment's availability (wire contract `conditionally_available_methods`). */
  "x-availability"?: "available" | "disabled" | "not-implemented";
  [key: `x-${string}`]: unknown;
}

export interface OpenRpcDocument {
  openrpc: string;
  info: { title: string; version: string; description: string };
  servers?: { name: string; url: string; summary?: string }[];
  methods: OpenRpcMethod[];
  components: { errors: Record<string, OpenRpcError> };
  "x-a2a-protocol-version": ProtocolLine;
  [key: `x-${string}`]: unknown;
}

/** The URL the gateway serves a catalog schema reference (`v1_0/Task`) at. */
export function schemaUrl(ref: string): string {
  return `/schemas/${ref}.json`;
}

/**
 * A copy of `schema` (a piece of the document `ref`) whose `$ref`s point at the served schema URLs: `Other.json`
 * (a sibling in the same group) → `/schemas/<group>/Other.json`, `#/$defs/X` → `/schemas/<ref>.json#/$defs/X`.
 */
function rebase(schema: unknown, ref: string): unknown {
  const group = ref.slice(0, ref.indexOf("/"));
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== "object") return value;
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value as JsonObject)) {
      if (k === "$ref" && typeof v === "string") {
        if (v.startsWith("#")) out[k] = `${schemaUrl(ref)}${v}`;
        else if (/^[A-Za-z0-9_]+\.json(#.*)?$/.test(v)) out[k] = `/schemas/${group}/${v}`;
        else out[k] = v;
      } else out[k] = walk(v);
    }
    return out;
  };
  return walk(schema);
}

function firstSentence(text: string): string {
  const m = /^(.+?[.!?])(\s|$)/.exec(text);
  return (m ? m[1]! : text).slice(0, 300);
}

/** By-name params: one content descriptor per property of the method's params schema. */
function paramsOf(m: MethodEntry, read: SchemaReader): OpenRpcContentDescriptor[] {
  const schema = read(m.params_schema);
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const properties = (schema.properties ?? {}) as Record<string, JsonObject>;
  return Object.entries(properties).map(([name, prop]) => {
    const { description, ...rest } = prop;
    return {
      name,
      ...(typeof description === "string" && description ? { description } : {}),
      required: required.has(name),
      schema: rebase(rest, m.params_schema) as JsonObject,
    };
  });
}

function resultSchema(ref: string): JsonObject {
  if (ref === "null") return { type: "null" };
  if (ref.endsWith("[]")) return { type: "array", items: { $ref: schemaUrl(ref.slice(0, -2)) } };
  return { $ref: schemaUrl(ref) };
}

function resultOf(m: MethodEntry): OpenRpcContentDescriptor {
  const refs = (m.result_schema ?? "").split("|").filter(Boolean);
  const schema: JsonObject = refs.length === 0 ? {} : refs.length === 1 ? resultSchema(refs[0]!) : { oneOf: refs.map(resultSchema) };
  // `OpenCodeA2A.A2A.V1_0.Task[]` → `Task[]`
  const name = m.result.replace(/[\w.]*\./g, "");
  return {
    name,
    ...(m.streaming ? { description: `Streamed: the answer is \`text/event-stream\`, one JSON-RPC response per \`data:\` line, each result a ${name}.` } : {}),
    schema,
  };
}

/** The error as the line's wire carries it: 0.3 `data.type`, 1.0 `data[0]` an ErrorInfo with the reason. */
function errorObject(line: ProtocolLine, e: ErrorEntry): OpenRpcError {
  const data =
    line === "0.3"
      ? { type: e.reason }
      : [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: e.reason, domain: e.origin === "project" ? PROJECT_DOMAIN : A2A_DOMAIN }];
  return { code: e.code, message: e.message, data };
}

function methodOf(catalog: Catalog, line: ProtocolLine, m: MethodEntry, read: SchemaReader): OpenRpcMethod {
  const ext = m.extension_uri ? catalog.extensions.find((e) => e.uri === m.extension_uri) : undefined;
  return {
    name: m.name,
    ...(m.summary ? { summary: firstSentence(m.summary), description: m.summary } : {}),
    tags: [ext ? { name: ext.name, description: ext.uri } : { name: `A2A ${line}` }],
    paramStructure: "by-name",
    params: paramsOf(m, read),
    result: resultOf(m),
    errors: m.errors.map((reason) => ({ $ref: `#/components/errors/${reason}` })),
    "x-line": m.line,
    "x-surface": m.surface,
    "x-scope": m.scope,
    "x-params-schema": schemaUrl(m.params_schema),
    "x-streaming": m.streaming,
    ...(m.extension_uri ? { "x-extension-uri": m.extension_uri } : {}),
    ...(m.toggle ? { "x-toggle": m.toggle } : {}),
    ...(m.not_implemented_until ? { "x-pending": m.not_implemented_until } : {}),
  };
}

/** The static OpenRPC document of one line: what spec/ declares, no deployment facts. */
export function buildOpenRpc(catalog: Catalog, line: ProtocolLine, read: SchemaReader, version: string): OpenRpcDocument {
  const methods = methodsOfLine(catalog, line).map((m) => methodOf(catalog, line, m, read));
  const used = new Set(methods.flatMap((m) => m.errors.map((e) => e.$ref.slice("#/components/errors/".length))));
  const errors = Object.fromEntries(
    catalog.errors[line].filter((e) => used.has(e.reason)).sort((a, b) => a.reason.localeCompare(b.reason)).map((e) => [e.reason, errorObject(line, e)]),
  );
  for (const reason of used) if (!(reason in errors)) throw new Error(`OpenRPC ${line}: error ${reason} is not in the ${line} error catalog`);
  return {
    openrpc: OPENRPC_VERSION,
    info: {
      title: `${catalog.service} JSON-RPC (A2A ${line})`,
      version,
      description:
        `The JSON-RPC 2.0 surface (POST /) of the A2A ${line} line: its core methods and every extension method. ` +
        "Params are by name (the JSON-RPC `params` object); schemas are the gateway's JSON Schemas under /schemas. " +
        "`x-scope` is the credential scope a call needs. Every method can also answer the JSON-RPC envelope errors " +
        "(parse error, invalid request, method not found, invalid params, version not supported).",
    },
    methods,
    components: { errors },
    "x-a2a-protocol-version": line,
  };
}

/** The served document: the static one plus this deployment's facts. */
export function applyDeploymentFacts(doc: OpenRpcDocument, catalog: Catalog, facts: DeploymentFacts, publicUrl: string): OpenRpcDocument {
  const byName = new Map(catalog.methods.map((m) => [m.name, m]));
  return {
    ...doc,
    servers: [{ name: "opencode-a2a", url: publicUrl, summary: "JSON-RPC endpoint: POST /" }],
    methods: doc.methods.map((m) => {
      const entry = byName.get(m.name);
      return entry ? { ...m, "x-availability": methodAvailability(entry, facts) } : m;
    }),
    "x-default-protocol-version": facts.defaultLine,
    "x-required-extensions": facts.requiredExtensions,
  };
}
