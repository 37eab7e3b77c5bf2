// REST query parameters against the generated query schema of their route (generated/types/queries.ts). Query
// values arrive as strings (or string arrays, when repeated) and are read the way the codecs read them (proto3
// JSON: an integer may be a numeric string, a boolean "true" or "false"), so a query refused here gets exactly the
// answer the codec would give: INVALID_PARAMS "Invalid params: <name> <description>" for the first offending
// parameter, in declaration order.
import { ROUTE_QUERIES, type QueryParameterSchema, type QuerySchema } from "../../generated/types/queries.js";
import type { OperationName } from "../../generated/types/methods.js";
import type { Catalog, ProtocolLine } from "./catalog.js";
import { invalidPayload } from "./errors.js";

export type { QuerySchema };

/** The query schema of the REST route that serves `operation` on `line`, if that route takes query parameters. */
export type QueryLookup = (line: ProtocolLine, operation: OperationName) => QuerySchema | undefined;

/**
 * A root route speaks the negotiated line, so on 0.3 its query is the one of its `/v1` twin: the lookup is by line and
 * operation. Only GET routes take query parameters, and one route per line serves an operation's GET.
 */
export function operationQueries(catalog: Catalog): QueryLookup {
  const byOperation = new Map<string, QuerySchema>();
  for (const r of catalog.routes) {
    const schema = ROUTE_QUERIES[r.id];
    if (schema === undefined || r.kind !== "a2a" || r.line === null || r.operation === null) continue;
    const key = `${r.line} ${r.operation}`;
    if (byOperation.has(key)) throw new Error(`two ${r.line} routes of ${r.operation} take query parameters`);
    byOperation.set(key, schema);
  }
  return (line, operation) => byOperation.get(`${line} ${operation}`);
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T/;

/** "TaskState" → "task state". */
const words = (title: string): string => title.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();

/** What is wrong with one present value, or undefined. */
function problem(p: QueryParameterSchema, value: unknown): string | undefined {
  if (p.enum !== undefined) {
    if (typeof value === "string" && p.enum.includes(value)) return undefined;
    return `must be a ${words(p.title ?? "value")} (${p.enum.join(", ")})`;
  }
  switch (p.type) {
    case "integer": {
      const n = typeof value === "string" && /^-?\d+$/.test(value.trim()) ? Number(value.trim()) : value;
      if (typeof n !== "number" || !Number.isSafeInteger(n)) return "must be an integer";
      if (p.minimum !== undefined && n < p.minimum) return `must be >= ${p.minimum}`;
      if (p.maximum !== undefined && n > p.maximum) return `must be <= ${p.maximum}`;
      return undefined;
    }
    case "boolean":
      return value === true || value === false || value === "true" || value === "false" ? undefined : "must be a boolean";
    case "string":
      if (typeof value !== "string") return "must be a string";
      if (p.format === "date-time" && (!ISO_DATE_TIME.test(value) || Number.isNaN(Date.parse(value)))) return "must be an ISO 8601 date-time";
      return undefined;
  }
}

/** Checks the declared parameters of `query` (other members, e.g. path parameters, are not the schema's). */
export function checkQuery(schema: QuerySchema, query: Record<string, unknown>): void {
  for (const [name, p] of Object.entries(schema.properties)) {
    const value = query[name];
    if (value === undefined || value === null) continue;
    const description = problem(p, value);
    if (description !== undefined) throw invalidPayload("Invalid params", [{ field: name, description }]);
  }
}
