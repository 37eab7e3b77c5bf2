// Every error of every line's catalog, shaped for each transport, against the generated schemas; code ranges.
import { describe, expect, it } from "vitest";
import { catalog, type ProtocolLine } from "../../src/contract/catalog.js";
import { A2AError } from "../../src/contract/errors.js";
import { A2A_DOMAIN, jsonRpcError, PROJECT_DOMAIN, restError } from "../../src/protocol/errors.js";
import { errorInfoOf, expectValid } from "../support/contract.js";

const JSONRPC_SCHEMA: Record<ProtocolLine, string> = { "0.3": "v0_3/JSONRPCError", "1.0": "v1_0/JsonRpcError" };
const REST_SCHEMA: Record<ProtocolLine, string> = { "0.3": "v0_3_rest/RestError", "1.0": "v1_0/RestError" };

// The A2A specifications' own error codes (external standard, both lines).
const A2A_CODES: Record<number, string> = {
  [-32001]: "TASK_NOT_FOUND",
  [-32002]: "TASK_NOT_CANCELABLE",
  [-32003]: "PUSH_NOTIFICATION_NOT_SUPPORTED",
  [-32004]: "UNSUPPORTED_OPERATION",
  [-32005]: "CONTENT_TYPE_NOT_SUPPORTED",
  [-32006]: "INVALID_AGENT_RESPONSE",
  [-32007]: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
  [-32008]: "EXTENSION_SUPPORT_REQUIRED",
  [-32009]: "VERSION_NOT_SUPPORTED",
};
// JSON-RPC 2.0's reserved codes.
const JSONRPC_CODES: Record<number, string> = {
  [-32700]: "PARSE_ERROR",
  [-32600]: "INVALID_REQUEST",
  [-32601]: "METHOD_NOT_SUPPORTED",
  [-32602]: "INVALID_PARAMS",
  [-32603]: "INTERNAL_ERROR",
};

const cases = catalog.protocol_lines.flatMap((line) => catalog.errors[line].map((e) => [line, e.reason, e] as const));

describe("catalog premises", () => {
  it("every line has an error catalog", () => {
    for (const line of catalog.protocol_lines) expect(catalog.errors[line].length).toBeGreaterThan(0);
  });
});

describe.each(cases)("%s %s", (line, reason, entry) => {
  it("JSON-RPC error object validates and carries code and reason", async () => {
    const plain = jsonRpcError(line, new A2AError(reason));
    await expectValid(JSONRPC_SCHEMA[line], plain);
    await expectValid("common/JsonRpcErrorObject", plain);
    expect(plain.code).toBe(entry.code);
    expect(plain.message).toBe(entry.message);
    if (line === "0.3") expect(plain.data).toEqual({ type: reason });
    else {
      const info = await errorInfoOf(plain.data);
      expect(info.reason).toBe(reason);
      expect(info.domain).toBe(entry.origin === "project" ? PROJECT_DOMAIN : A2A_DOMAIN);
    }

    const rich = jsonRpcError(
      line,
      new A2AError(reason, "custom message", { task_id: "t-1", limit_bytes: 10, list: ["a"] }, { fieldViolations: [{ field: "message.parts", description: "too few" }] }),
    );
    await expectValid(JSONRPC_SCHEMA[line], rich);
    expect(rich.message).toBe("custom message");
    if (line === "0.3") expect(rich.data).toEqual({ type: reason, task_id: "t-1", limit_bytes: 10, list: ["a"] });
    else {
      const info = await errorInfoOf(rich.data);
      expect(info.metadata).toEqual({ taskId: "t-1", limitBytes: "10", list: '["a"]' });
      const badRequest = (rich.data as Record<string, any>[]).find((d) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest");
      await expectValid("v1_0/BadRequest", badRequest);
    }
  });

  it("REST error body validates and carries the HTTP status of the catalog", async () => {
    const shaped = restError(line, new A2AError(reason));
    await expectValid(REST_SCHEMA[line], shaped.body);
    expect(shaped.status).toBe(entry.http);
    expect(shaped.headers).toEqual({});
    if (line === "0.3") {
      expect(shaped.body).toEqual({ code: entry.code, message: entry.message, data: { type: reason } });
    } else {
      const error = shaped.body.error as Record<string, any>;
      expect(error.code).toBe(entry.http);
      expect(error.status).toBe(entry.grpc);
      expect((await errorInfoOf(error.details)).reason).toBe(reason);
    }
  });

  it("REST error honours an HTTP status override and extra headers", async () => {
    const shaped = restError(line, new A2AError(reason, undefined, {}, { httpStatus: 415, headers: { "Retry-After": "3" } }));
    await expectValid(REST_SCHEMA[line], shaped.body);
    expect(shaped.status).toBe(415);
    expect(shaped.headers).toEqual({ "Retry-After": "3" });
    if (line === "1.0") expect((shaped.body.error as Record<string, any>).code).toBe(415);
  });
});

describe.each(catalog.protocol_lines)("error codes of line %s", (line) => {
  const errors = catalog.errors[line];

  it("codes and reasons are unique", () => {
    expect(new Set(errors.map((e) => e.code)).size).toBe(errors.length);
    expect(new Set(errors.map((e) => e.reason)).size).toBe(errors.length);
  });

  it("-32001..-32009 keep their A2A meanings", () => {
    for (const [code, reason] of Object.entries(A2A_CODES)) {
      const entry = errors.find((e) => e.code === Number(code));
      expect(entry?.reason, `code ${code}`).toBe(reason);
      expect(entry?.origin).toBe("a2a");
    }
    for (const e of errors.filter((x) => x.origin === "a2a")) expect(A2A_CODES[e.code], `${e.reason} ${e.code}`).toBe(e.reason);
  });

  it("JSON-RPC's reserved codes keep their meanings", () => {
    for (const [code, reason] of Object.entries(JSONRPC_CODES)) expect(errors.find((e) => e.code === Number(code))?.reason).toBe(reason);
    for (const e of errors.filter((x) => x.origin === "jsonrpc")) expect(JSONRPC_CODES[e.code], e.reason).toBe(e.reason);
  });

  it("project errors live in -32050..-32099", () => {
    const project = errors.filter((e) => e.origin === "project");
    expect(project.length).toBeGreaterThan(0);
    for (const e of project) {
      expect(e.code, e.reason).toBeGreaterThanOrEqual(-32099);
      expect(e.code, e.reason).toBeLessThanOrEqual(-32050);
    }
  });

  it("-32010..-32049 stay free", () => {
    expect(errors.filter((e) => e.code <= -32010 && e.code >= -32049)).toEqual([]);
  });

  it("HTTP statuses are error statuses", () => {
    for (const e of errors) {
      expect(e.http, e.reason).toBeGreaterThanOrEqual(400);
      expect(e.http, e.reason).toBeLessThan(600);
    }
  });
});

describe("lines agree", () => {
  it("a reason has the same code, HTTP status and origin in every line", () => {
    const [first, ...rest] = catalog.protocol_lines;
    for (const line of rest) {
      expect(catalog.errors[line].map((e) => e.reason).sort()).toEqual(catalog.errors[first!].map((e) => e.reason).sort());
      for (const e of catalog.errors[line]) {
        const twin = catalog.errors[first!].find((x) => x.reason === e.reason)!;
        expect({ code: e.code, http: e.http, origin: e.origin }, e.reason).toEqual({ code: twin.code, http: twin.http, origin: twin.origin });
      }
    }
  });

  it("DECISIONS #12 statuses of the project's REST errors", () => {
    const expected: Record<string, [number, string]> = {
      SCOPE_INSUFFICIENT: [403, "PERMISSION_DENIED"],
      SESSION_FORBIDDEN: [403, "PERMISSION_DENIED"],
      RATE_LIMITED: [429, "RESOURCE_EXHAUSTED"],
      SESSION_NOT_FOUND: [404, "NOT_FOUND"],
      INTERRUPT_REQUEST_NOT_FOUND: [404, "NOT_FOUND"],
      INTERRUPT_REQUEST_EXPIRED: [410, "FAILED_PRECONDITION"],
      INTERRUPT_TYPE_MISMATCH: [409, "ABORTED"],
      UPSTREAM_UNREACHABLE: [503, "UNAVAILABLE"],
      UPSTREAM_TIMEOUT: [504, "DEADLINE_EXCEEDED"],
      UPSTREAM_HTTP_ERROR: [502, "INTERNAL"],
      UPSTREAM_PAYLOAD_ERROR: [502, "INTERNAL"],
      UPSTREAM_BACKPRESSURE: [503, "UNAVAILABLE"],
    };
    for (const line of catalog.protocol_lines)
      for (const [reason, [http, grpc]] of Object.entries(expected)) {
        const e = catalog.errors[line].find((x) => x.reason === reason);
        expect([e?.http, e?.grpc], `${line} ${reason}`).toEqual([http, grpc]);
      }
  });
});
