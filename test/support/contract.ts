// Assertions and lookups derived from the generated contract (never hand-written lists).
import { expect } from "vitest";
import { catalog, errorEntry, type MethodEntry, type ProtocolLine, type RouteEntry } from "../../src/contract/catalog.js";
import { validate } from "../../src/contract/validate.js";
import type { HttpResult } from "./gateway.js";

export { catalog };

/** A concrete path for a catalog route: `{name}` placeholders filled with sample values. */
export function fillPath(path: string, values: Record<string, string> = {}): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? `sample-${name}`);
}

/** Regex over concrete paths for a catalog path template. */
export function pathPattern(path: string): RegExp {
  const escaped = path.replace(/[.*+?^$()|[\]\\]/g, "\\$&");
  return new RegExp(`^${escaped.replace(/\{\w+\}/g, "[^/]+")}$`);
}

export function methodsOfLine(line: ProtocolLine): MethodEntry[] {
  return catalog.methods.filter((m) => m.line === line || m.surface === "extension");
}

export function routesOf(kind: RouteEntry["kind"]): RouteEntry[] {
  return catalog.routes.filter((r) => r.kind === kind);
}

/** The extension (by URI fragment) that carries a discovery document in the extended card. */
export function extensionUri(fragment: string): string {
  const ext = catalog.extensions.find((e) => e.uri.endsWith(`#${fragment}`));
  if (!ext) throw new Error(`no catalog extension ends with #${fragment}`);
  return ext.uri;
}

export function cardExtensions(card: Record<string, any>): { uri: string; params?: Record<string, any> }[] {
  return card.capabilities?.extensions ?? [];
}

export function wireContractOf(card: Record<string, any>): Record<string, any> {
  const uri = extensionUri("a2a-wire-contract-v1");
  const ext = cardExtensions(card).find((e) => e.uri === uri);
  expect(ext, "extended card carries the wire contract extension").toBeDefined();
  return ext!.params!;
}

const RPC_RESPONSE_SCHEMA: Record<ProtocolLine, string> = { "0.3": "v0_3/JSONRPCErrorResponse", "1.0": "v1_0/JsonRpcErrorResponse" };
const REST_ERROR_SCHEMA: Record<ProtocolLine, string> = { "0.3": "v0_3_rest/RestError", "1.0": "v1_0/RestError" };

export async function expectValid(schema: string, value: unknown): Promise<void> {
  const verdict = await validate(schema, value);
  expect(verdict, `${schema}: ${JSON.stringify(value).slice(0, 300)}`).toEqual({ ok: true });
}

/** The ErrorInfo of a 1.0 detail list (asserting there is exactly one). */
export async function errorInfoOf(details: unknown): Promise<Record<string, any>> {
  expect(Array.isArray(details)).toBe(true);
  const infos = (details as Record<string, any>[]).filter((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo");
  expect(infos).toHaveLength(1);
  await expectValid("v1_0/ErrorInfo", infos[0]);
  return infos[0]!;
}

/** The reason a JSON-RPC error object carries on `line`. */
export async function rpcReason(line: ProtocolLine, error: Record<string, any>): Promise<string> {
  if (line === "0.3") return error.data?.type;
  return (await errorInfoOf(error.data)).reason;
}

/**
 * A JSON-RPC error response of `line`: HTTP status, schema, code and reason all checked against the catalog.
 * Returns the `error` member.
 */
export async function expectRpcError(
  res: HttpResult,
  line: ProtocolLine,
  reason: string,
  opts: { httpStatus?: number; id?: string | number | null } = {},
): Promise<Record<string, any>> {
  expect(res.status, res.text).toBe(opts.httpStatus ?? 200);
  expect(res.headers.get("content-type") ?? "").toMatch(/application\/json/);
  await expectValid(RPC_RESPONSE_SCHEMA[line], res.body);
  await expectValid("common/JsonRpcErrorResponse", res.body);
  if ("id" in opts) expect(res.body.id).toBe(opts.id);
  expect(res.body.error.code).toBe(errorEntry(line, reason).code);
  expect(await rpcReason(line, res.body.error)).toBe(reason);
  return res.body.error;
}

/** A REST error of `line`: status from the catalog (unless given), schema, shape and reason. Returns the body. */
export async function expectRestError(
  res: HttpResult,
  line: ProtocolLine,
  reason: string,
  status: number = errorEntry(line, reason).http,
): Promise<Record<string, any>> {
  const entry = errorEntry(line, reason);
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get("content-type") ?? "").toMatch(/application\/json/);
  await expectValid(REST_ERROR_SCHEMA[line], res.body);
  if (line === "0.3") {
    expect(res.body.code).toBe(entry.code);
    expect(res.body.data?.type).toBe(reason);
    expect(res.body.error).toBeUndefined();
  } else {
    expect(res.body.error.code).toBe(status);
    expect(res.body.error.status).toBe(entry.grpc);
    expect((await errorInfoOf(res.body.error.details)).reason).toBe(reason);
  }
  return res.body;
}

/** A bearer credential (A2A_CREDENTIALS entry) holding every scope but the result scopes (results.read, results.files). */
export function withoutResultScopes(id: string, secret: string): Record<string, unknown> {
  return { id, principal: id, scheme: "bearer", secret, trust_level: "autonomous", scopes: catalog.scopes.filter((s) => s !== "results.read" && s !== "results.files") };
}
