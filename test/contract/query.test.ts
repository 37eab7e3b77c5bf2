// REST query schemas: every route that takes query parameters has a generated schema, and checking a query against
// it gives exactly the answer the line's codec gives (or lets through what the codec takes), parameter by parameter,
// so validating queries before the handlers changes no answer on the wire.
import { describe, expect, it } from "vitest";
import { ROUTE_QUERIES } from "../../generated/types/queries.js";
import { operationQueries, checkQuery } from "../../src/contract/query.js";
import { codecFor } from "../../src/protocol/codec/index.js";
import { catalog } from "../support/contract.js";

/** Query values as they arrive: strings, repeated parameters as arrays. */
const VALUES: unknown[] = [
  "", "0", "1", "-1", "20", "100", "101", "abc", "1.5", "1e9", " 7 ", "99999999999999999999", ["1", "2"],
  "true", "false", "maybe", "NOPE", "completed", "TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_CANCELLED",
  "yesterday", "2026-13-45T99:99:99Z", "2024-01-01T00:00:00", "2024-01-01T00:00:00Z", "x%00",
];

function outcome(run: () => unknown): unknown {
  try {
    run();
    return "accepted";
  } catch (error) {
    return error instanceof Error ? { error: error.message, data: (error as { data?: unknown }).data, options: (error as { options?: unknown }).options } : error;
  }
}

const lookup = operationQueries(catalog);
const decoders = {
  get: (line: "0.3" | "1.0", params: Record<string, unknown>) => codecFor(line, "rest").decodeTaskQuery(params),
  list: (line: "0.3" | "1.0", params: Record<string, unknown>) => codecFor(line, "rest").decodeListParams(params),
} as const;

describe("REST query schemas", () => {
  it("every route with query parameters has one, and only those routes", () => {
    const declared = catalog.routes.filter((r) => ROUTE_QUERIES[r.id] !== undefined).map((r) => r.id);
    expect(declared.sort()).toEqual(Object.keys(ROUTE_QUERIES).sort());
    expect(declared.length).toBeGreaterThan(0);
  });

  const cases = catalog.protocol_lines.flatMap((line) => (["get", "list"] as const).map((op) => [line, op] as const));
  it.each(cases)("%s %s: the schema refuses exactly what the codec refuses, with the codec's answer", (line, op) => {
    const schema = lookup(line, op);
    expect(schema, `${line} ${op} has a query schema`).toBeDefined();
    for (const name of Object.keys(schema!.properties)) {
      for (const value of VALUES) {
        const params = { id: "task-1", [name]: value };
        const viaCodec = outcome(() => decoders[op](line, params));
        const viaSchema = outcome(() => checkQuery(schema!, params));
        expect(viaSchema, `${line} ${op} ?${name}=${JSON.stringify(value)}`).toEqual(viaCodec);
      }
    }
  });
});
