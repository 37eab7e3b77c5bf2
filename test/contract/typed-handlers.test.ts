// The typed registry as a checked fact. `npm run typecheck` compiles this file: every `@ts-expect-error` below marks
// a line that must not compile (a renamed or missing handler, an undeclared param, a result of the wrong shape, an
// unknown error reason). Were the handler typing loose, the directive would be unused and the typecheck would fail.
// At run time the generated families are checked against the catalog: every method belongs to exactly one.
import { describe, expect, it } from "vitest";
import { FAMILIES, type ErrorReason, type ProviderDiscoveryHandlers, type TasksHandlers } from "../../generated/types/methods.js";
import { A2AError } from "../../src/contract/errors.js";
import type { Call } from "../../src/operations/index.js";
import { catalog } from "../support/contract.js";

const listed = async () => ({ items: [], default_by_provider: {}, connected: [] });
const operation = async () => ({});

describe("a handler family must match its generated interface", () => {
  it("compiles when every method is handled under its own name", () => {
    const family = { "opencode.providers.list": listed, "opencode.models.list": listed } satisfies ProviderDiscoveryHandlers<Call>;
    expect(Object.keys(family).sort()).toEqual([...FAMILIES.ProviderDiscovery]);
  });

  it("does not compile with a renamed handler key", () => {
    // @ts-expect-error: no method of the family is named opencode.models.lst (and opencode.models.list is missing)
    const renamed = { "opencode.providers.list": listed, "opencode.models.lst": listed } satisfies ProviderDiscoveryHandlers<Call>;
    expect(Object.keys(renamed)).toHaveLength(2);
  });

  it("does not compile with a handler missing", () => {
    // @ts-expect-error: opencode.models.list has no handler
    const missing = { "opencode.providers.list": listed } satisfies ProviderDiscoveryHandlers<Call>;
    // @ts-expect-error: the core task family has no `fetch` operation (and `subscribe` is missing)
    const core = { send: operation, stream: operation, get: operation, list: operation, cancel: operation, fetch: operation } satisfies TasksHandlers<Call>;
    expect([missing, core].map((f) => Object.keys(f).length)).toEqual([1, 6]);
  });

  it("types params and results by the method's schemas", () => {
    const family = {
      "opencode.providers.list": listed,
      "opencode.models.list": async (params) => {
        // @ts-expect-error: ModelsListParams declares provider_id, not providerId
        const wrong: unknown = params.providerId;
        return { items: [], default_by_provider: {}, connected: [], wrong };
      },
    } satisfies ProviderDiscoveryHandlers<Call>;
    const badResult = {
      "opencode.providers.list": listed,
      // @ts-expect-error: ModelsListResult.items is an array of model summaries
      "opencode.models.list": async () => ({ items: "none", default_by_provider: {}, connected: [] }),
    } satisfies ProviderDiscoveryHandlers<Call>;
    expect(Object.keys({ ...family, ...badResult })).toHaveLength(2);
  });
});

describe("an error reason must be in the error catalog", () => {
  it("A2AError takes only catalog reasons", () => {
    expect(new A2AError("TASK_NOT_FOUND").reason).toBe("TASK_NOT_FOUND");
    // @ts-expect-error: TASK_NOT_FOUNDD is not a reason of the error catalog
    const misspelled = new A2AError("TASK_NOT_FOUNDD");
    // @ts-expect-error: reasons are UPPER_SNAKE as the catalog spells them
    const reason: ErrorReason = "task_not_found";
    expect([misspelled.reason, reason]).toHaveLength(2);
  });
});

describe("generated method families ↔ catalog", () => {
  const members = Object.values(FAMILIES).flat() as string[];

  it("every extension method and every core operation belongs to exactly one family", () => {
    const extensionMethods = catalog.methods.filter((m) => m.surface === "extension").map((m) => m.name);
    const operations = [...new Set(catalog.methods.flatMap((m) => (m.operation === null ? [] : [m.operation])))];
    expect([...members].sort()).toEqual([...extensionMethods, ...operations].sort());
    expect(new Set(members).size).toBe(members.length);
  });
});
