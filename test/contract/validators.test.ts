// The generated standalone validators check string formats and patterns exactly like the runtime compiler:
// their externals (typebox/format functions, RegExps) are bound when the module loads.
import { describe, expect, it } from "vitest";
import { validate } from "../../src/contract/validate.js";

describe("generated validators with externals", () => {
  it("check date-time formats (1.0 TaskStatus.timestamp)", async () => {
    expect(await validate("v1_0/TaskStatus", { state: "TASK_STATE_WORKING", timestamp: "2026-11-21T07:00:00.000Z" })).toEqual({ ok: true });
    const bad = await validate("v1_0/TaskStatus", { state: "TASK_STATE_WORKING", timestamp: "yesterday" });
    expect(bad).toMatchObject({ ok: false, violations: [{ field: "timestamp" }] });
  });

  it("check patterns (prompt_async messageID must start with msg)", async () => {
    const base = { parts: [{ type: "text", text: "hi" }] };
    expect((await validate("extensions/PromptAsyncRequest", { ...base, messageID: "msg_1" })).ok).toBe(true);
    expect((await validate("extensions/PromptAsyncRequest", { ...base, messageID: "nope" })).ok).toBe(false);
  });
});
