// The answer to a request that failed before its calls (src/pipeline/errors.ts). On the JSON-RPC endpoint the
// refusals of the HTTP request itself keep their HTTP status; every other failure is a JSON-RPC error with id null
// on HTTP 200. Which is which is read from the contract's HTTP statuses, so this pins the outcome per reason.
import { describe, expect, it } from "vitest";
import { A2AError } from "../../src/contract/errors.js";
import { PROTOCOL_LINES } from "../../src/contract/catalog.js";
import { errorAnswer } from "../../src/pipeline/errors.js";

/**
 * Every failure that can reach the door of `POST /`, raised as the pipeline raises it, with its HTTP status on the
 * JSON-RPC endpoint and on a REST route.
 */
const DOOR_FAILURES: Array<[A2AError, number, number]> = [
  [new A2AError("UNAUTHENTICATED", "Missing or invalid credentials", {}, { headers: { "WWW-Authenticate": "Bearer" } }), 401, 401],
  [new A2AError("PAYLOAD_TOO_LARGE", "too large", { limit_bytes: 1 }, { headers: { Connection: "close" } }), 413, 413],
  [new A2AError("RATE_LIMITED", "slow down", { retry_after_seconds: 1 }), 429, 429],
  [new A2AError("CONTENT_TYPE_NOT_SUPPORTED", "not JSON", { content_type: "text/plain" }, { httpStatus: 415 }), 415, 415],
  [new A2AError("HOST_NOT_ALLOWED", "no", { host: "evil.example" }), 421, 421],
  [new A2AError("ORIGIN_NOT_ALLOWED", "no", { origin: "https://evil.example" }), 403, 403],
  [new A2AError("VERSION_NOT_SUPPORTED", "no", { requested_version: "9.9" }), 200, 400],
  [new A2AError("PARSE_ERROR", "too deep", { max_depth: 128 }), 200, 400],
  [new A2AError("PARSE_ERROR", "The request body could not be read completely"), 200, 400],
  [new A2AError("INTERNAL_ERROR"), 200, 500],
];

describe("errorAnswer", () => {
  for (const line of PROTOCOL_LINES)
    it.each(DOOR_FAILURES.map(([err, jsonrpc, rest]) => [err.reason, jsonrpc, rest, err] as const))(`${line}: %s answers HTTP %i on JSON-RPC, %i on REST`, (_, jsonrpc, rest, err) => {
      const answer = errorAnswer(err, line, true);
      expect(answer.status).toBe(jsonrpc);
      expect(answer.headers).toEqual(err.options.headers ?? {});
      expect(answer.body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: expect.any(Number) } });
      expect(errorAnswer(err, line, false).status).toBe(rest);
    });
});
