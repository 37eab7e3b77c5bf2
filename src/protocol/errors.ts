// Error shaping per protocol line and transport, from the generated error catalog.
//  0.3 JSON-RPC: {code, message, data: {type, ...fields}}        0.3 REST: the same object, flat, with the HTTP status
//  1.0 JSON-RPC: {code, message, data: [ErrorInfo, BadRequest?]}  1.0 REST: AIP-193 {error: {code, status, message, details}}
import { errorEntry, type ErrorEntry, type ProtocolLine } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";

export const A2A_DOMAIN = "a2a-protocol.org";
export const PROJECT_DOMAIN = "opencode-a2a";

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface ShapedRestError {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

function messageOf(err: A2AError, entry: ErrorEntry): string {
  return err.hasCustomMessage ? err.message : entry.message;
}

function camel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function stringify(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function details(err: A2AError, entry: ErrorEntry): Record<string, unknown>[] {
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(err.data)) if (v !== undefined) metadata[camel(k)] = stringify(v);
  const info: Record<string, unknown> = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    reason: entry.reason,
    domain: entry.origin === "project" ? PROJECT_DOMAIN : A2A_DOMAIN,
  };
  if (Object.keys(metadata).length) info.metadata = metadata;
  const out = [info];
  if (err.options.fieldViolations?.length)
    out.push({ "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: err.options.fieldViolations });
  return out;
}

function legacyData(err: A2AError, entry: ErrorEntry): Record<string, unknown> {
  const data: Record<string, unknown> = { type: entry.reason };
  for (const [k, v] of Object.entries(err.data)) if (v !== undefined) data[k] = v;
  return data;
}

export function jsonRpcError(line: ProtocolLine, err: A2AError): JsonRpcErrorObject {
  const entry = errorEntry(line, err.reason);
  return {
    code: entry.code,
    message: messageOf(err, entry),
    data: line === "0.3" ? legacyData(err, entry) : details(err, entry),
  };
}

export function restError(line: ProtocolLine, err: A2AError): ShapedRestError {
  const entry = errorEntry(line, err.reason);
  const status = err.options.httpStatus ?? entry.http;
  const headers = { ...(err.options.headers ?? {}) };
  const body =
    line === "0.3"
      ? { code: entry.code, message: messageOf(err, entry), data: legacyData(err, entry) }
      : { error: { code: status, status: entry.grpc, message: messageOf(err, entry), details: details(err, entry) } };
  return { status, body, headers };
}
