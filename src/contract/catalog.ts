// The generated contract catalog (generated/contract/catalog.json), typed. Everything the runtime knows about
// methods, routes, extensions and errors comes from here.
import fs from "node:fs";
import path from "node:path";
import type { ErrorReason, OperationName } from "../../generated/types/methods.js";

export type ProtocolLine = "0.3" | "1.0";
export const PROTOCOL_LINES: readonly ProtocolLine[] = ["0.3", "1.0"];

export interface ErrorEntry {
  name: string;
  code: number;
  reason: ErrorReason;
  message: string;
  http: number;
  grpc: string;
  origin: "a2a" | "jsonrpc" | "project";
  fields: string[];
  headers: string[];
}

export interface ExtensionEntry {
  uri: string;
  name: string;
  disclosure: "public" | "extended";
  kind: "metadata" | "methods";
  audience: "shared" | "provider-private";
  retention: "required" | "stable";
  description: string;
  /** The extensions-group model (schema `extensions/<limits>`) of the limits the card publishes for it. */
  limits?: string;
  methods: string[];
}

export interface MethodEntry {
  name: string;
  line: ProtocolLine | null;
  surface: "core" | "extension";
  operation: OperationName | null;
  summary: string;
  params_schema: string;
  result: string;
  result_schema: string | null;
  streaming: boolean;
  scope: string | null;
  retention: string;
  extension_uri: string | null;
  toggle: string | null;
  not_implemented_until: string | null;
  errors: string[];
}

export interface RouteEntry {
  id: string;
  verb: string;
  path: string;
  kind: "a2a" | "discovery" | "artifact" | "operations" | "jsonrpc";
  line: ProtocolLine | null;
  operation: OperationName | null;
  summary: string;
  public: boolean;
  streaming: boolean;
  scope: string | null;
  body_schema: string | null;
  not_implemented_until: string | null;
  errors: string[];
}

export interface Catalog {
  catalog_version: 1;
  service: string;
  protocol_lines: ProtocolLine[];
  schema_groups: string[];
  extensions: ExtensionEntry[];
  methods: MethodEntry[];
  routes: RouteEntry[];
  errors: Record<ProtocolLine, ErrorEntry[]>;
  /** Every declared scope, sorted. */
  scopes: string[];
  access_control: AccessControl;
}

export interface ScopeEntry {
  name: string;
  description: string;
}

export interface TrustLevelEntry {
  name: string;
  /** The whole bundle (included levels expanded), sorted. */
  scopes: string[];
  includes: string | null;
  sees_all_principals: boolean;
  description: string;
}

/** spec/security.tsp: the scope vocabulary and the trust levels bundling it. */
export interface AccessControl {
  scopes: ScopeEntry[];
  trust_levels: TrustLevelEntry[];
}

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json")) && fs.existsSync(path.join(dir, "generated"))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`cannot find the opencode-a2a package root above ${start}`);
  }
}

/** Root of the installed package (works from src/ under tsx and from dist/src/ after the build). */
export const packageRoot = findPackageRoot(import.meta.dirname);
export const generatedDir = path.join(packageRoot, "generated");

export function readGeneratedJson<T>(...segments: string[]): T {
  return JSON.parse(fs.readFileSync(path.join(generatedDir, ...segments), "utf8")) as T;
}

export const catalog: Catalog = readGeneratedJson<Catalog>("contract", "catalog.json");

export const methodsByName: ReadonlyMap<string, MethodEntry> = new Map(catalog.methods.map((m) => [m.name, m]));

const errorIndex = new Map<ProtocolLine, Map<string, ErrorEntry>>(
  PROTOCOL_LINES.map((line) => [line, new Map(catalog.errors[line].map((e) => [e.reason, e]))]),
);

export function errorEntry(line: ProtocolLine, reason: string): ErrorEntry {
  const entry = errorIndex.get(line)?.get(reason);
  if (!entry) throw new Error(`error reason ${reason} is not in the ${line} error catalog`);
  return entry;
}

export const packageVersion: string = (
  JSON.parse(fs.readFileSync(path.join(packageRoot, "package.json"), "utf8")) as { version: string }
).version;
