// The query parser of GET /admin/audit: filters, the limit and the page token; the offending parameter named.
import { describe, expect, it } from "vitest";
import { parseAuditQuery } from "../../src/server/audit-routes.js";
import { A2AError } from "../../src/contract/errors.js";

const T0 = Date.UTC(2025, 0, 1);

describe("GET /admin/audit query", () => {
  const invalidField = (query: Record<string, string | string[]>): unknown => {
    try {
      parseAuditQuery(query);
    } catch (err) {
      expect(err).toBeInstanceOf(A2AError);
      expect((err as A2AError).reason).toBe("INVALID_PARAMS");
      return (err as A2AError).data.field;
    }
    return undefined;
  };

  it("parses filters, the limit (default 100) and the page token; ignores unknown and empty parameters", () => {
    expect(parseAuditQuery({})).toEqual({ filter: {}, limit: 100 });
    expect(
      parseAuditQuery({
        principal: "alice",
        credential_id: "cred-a",
        method: "GET /tasks/{id}",
        task_id: "t1",
        session_id: "ses_1",
        outcome: "error",
        since: "2025-01-01T01:00:00+01:00",
        until: "2025-01-02T00:00:00.5Z",
        limit: "500",
        page_token: "NDI",
        "A2A-Version": "1.0",
        context_id: "",
      }),
    ).toEqual({
      filter: {
        principal: "alice",
        credential_id: "cred-a",
        method: "GET /tasks/{id}",
        task_id: "t1",
        session_id: "ses_1",
        outcome: "error",
        since: T0,
        until: T0 + 86_400_000 + 500,
      },
      limit: 500,
      pageToken: "NDI",
    });
    // an unencoded "+" of the offset arrives as a space
    expect(parseAuditQuery({ since: "2025-01-01T01:00:00 01:00", principal: "" }).filter).toEqual({ since: T0 });
  });

  it("names the offending parameter", () => {
    expect(invalidField({ limit: "0" })).toBe("limit");
    expect(invalidField({ limit: "501" })).toBe("limit");
    expect(invalidField({ limit: "ten" })).toBe("limit");
    expect(invalidField({ limit: "1.5" })).toBe("limit");
    expect(invalidField({ outcome: "failed" })).toBe("outcome");
    expect(invalidField({ since: "2025-01-01" })).toBe("since");
    expect(invalidField({ until: "2025-13-01T00:00:00Z" })).toBe("until");
    expect(invalidField({ principal: ["a", "b"] })).toBe("principal");
    expect(invalidField({ task_id: "x".repeat(257) })).toBe("task_id");
  });
});
