// The schema-driven proto3 JSON name folding of the ProtoJSON surfaces (src/protocol/protojson-names.ts).
import { describe, expect, it } from "vitest";
import { A2AError } from "../../src/contract/errors.js";
import { validate } from "../../src/contract/validate.js";
import { nameShape, normalizeProtoJson, snakeName } from "../../src/protocol/protojson-names.js";

function fieldOfError(fn: () => unknown): { field: unknown; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(A2AError);
    expect((err as A2AError).reason).toBe("INVALID_PARAMS");
    return { field: ((err as A2AError).data as { field?: unknown }).field, message: (err as A2AError).message };
  }
  throw new Error("expected INVALID_PARAMS");
}

describe("snakeName", () => {
  it("is the proto field name of a lowerCamel JSON name", () => {
    expect(snakeName("messageId")).toBe("message_id");
    expect(snakeName("taskPushNotificationConfig")).toBe("task_push_notification_config");
    expect(snakeName("text")).toBe("text");
  });
});

describe("normalizeProtoJson on 0.3 REST", () => {
  const snake = {
    request: {
      message_id: "m-1",
      context_id: "c-1",
      task_id: "t-1",
      role: "ROLE_USER",
      content: [
        { text: "hi", metadata: { trace_id: "x", nested_map: { inner_key: 1 } } },
        { file: { file_with_uri: "https://example.com/a.pdf", mime_type: "application/pdf" } },
        { data: { data: { user_key: { deep_key: [1, { more_key: 2 }] } } } },
      ],
      metadata: { caller_id: "a" },
    },
    configuration: { accepted_output_modes: ["text/plain"], history_length: 2, blocking: false, push_notification: { url: "https://h.example/x" } },
    metadata: { request_meta: true },
  };
  const camel = {
    message: {
      messageId: "m-1",
      contextId: "c-1",
      taskId: "t-1",
      role: "ROLE_USER",
      content: [
        { text: "hi", metadata: { trace_id: "x", nested_map: { inner_key: 1 } } },
        { file: { fileWithUri: "https://example.com/a.pdf", mimeType: "application/pdf" } },
        { data: { data: { user_key: { deep_key: [1, { more_key: 2 }] } } } },
      ],
      metadata: { caller_id: "a" },
    },
    configuration: { acceptedOutputModes: ["text/plain"], historyLength: 2, blocking: false, pushNotification: { url: "https://h.example/x" } },
    metadata: { request_meta: true },
  };

  it("folds snake_case names and the proto name `request` (json_name message); free-form values keep their keys", async () => {
    const out = normalizeProtoJson("v0_3_rest/SendMessageRequest", snake);
    expect(out).toEqual(camel);
    expect(await validate("v0_3_rest/SendMessageRequest", out)).toEqual({ ok: true });
    // The input is left as it was.
    expect(Object.keys(snake)).toContain("request");
  });

  it("an already camelCase value comes back as the same object", () => {
    expect(normalizeProtoJson("v0_3_rest/SendMessageRequest", camel)).toBe(camel);
  });

  it("both spellings of one field in one object are INVALID_PARAMS naming the field", () => {
    const both = { message: { ...camel.message, message_id: "other" } };
    const e = fieldOfError(() => normalizeProtoJson("v0_3_rest/SendMessageRequest", both));
    expect(e.field).toBe("message.messageId");
    expect(e.message).toMatch(/message_id/);
    const viaAlias = fieldOfError(() => normalizeProtoJson("v0_3_rest/SendMessageRequest", { message: camel.message, request: camel.message }));
    expect(viaAlias.field).toBe("message");
    const deep = fieldOfError(() =>
      normalizeProtoJson("v0_3_rest/SendMessageRequest", { message: { ...camel.message, content: [{ text: "a" }, { file: { fileWithUri: "u", file_with_uri: "u" } }] } }),
    );
    expect(deep.field).toBe("message.content.1.file.fileWithUri");
  });

  it("unknown keys are left alone (the validators ignore them)", () => {
    const out = normalizeProtoJson("v0_3_rest/SendMessageRequest", { message: camel.message, some_future_field: { a_b: 1 } }) as Record<string, unknown>;
    expect(out.some_future_field).toEqual({ a_b: 1 });
  });

  it("fields of the other lines fold too, so the validator refuses them by name", async () => {
    const out = normalizeProtoJson("v0_3_rest/SendMessageRequest", { message: camel.message, configuration: { return_immediately: true } });
    expect(out).toEqual({ message: camel.message, configuration: { returnImmediately: true } });
    const verdict = await validate("v0_3_rest/SendMessageRequest", out);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.violations.map((v) => v.field)).toContain("configuration.returnImmediately");
  });

  it("the wrapped push config create request folds and validates, as does the bare config", async () => {
    const wrapped = normalizeProtoJson("v0_3_rest/CreateTaskPushNotificationConfigBody", {
      parent: "tasks/t-1",
      config_id: "c-9",
      config: { name: "tasks/t-1/pushNotificationConfigs/c-9", push_notification_config: { url: "https://h.example/x", authentication: { schemes: ["Bearer"] } } },
    });
    expect(wrapped).toEqual({
      parent: "tasks/t-1",
      configId: "c-9",
      config: { name: "tasks/t-1/pushNotificationConfigs/c-9", pushNotificationConfig: { url: "https://h.example/x", authentication: { schemes: ["Bearer"] } } },
    });
    expect(await validate("v0_3_rest/CreateTaskPushNotificationConfigBody", wrapped)).toEqual({ ok: true });
    const bare = normalizeProtoJson("v0_3_rest/CreateTaskPushNotificationConfigBody", { push_notification_config: { url: "https://h.example/x" } });
    expect(bare).toEqual({ pushNotificationConfig: { url: "https://h.example/x" } });
    expect(await validate("v0_3_rest/CreateTaskPushNotificationConfigBody", bare)).toEqual({ ok: true });
    expect((await validate("v0_3_rest/CreateTaskPushNotificationConfigBody", { ...(wrapped as object), pushNotificationConfig: { url: "https://h.example/x" } })).ok).toBe(false);
  });
});

describe("normalizeProtoJson on 1.0", () => {
  it("folds request fields, configuration and the flat push config; a data part's value keeps its keys", () => {
    const out = normalizeProtoJson("v1_0/SendMessageRequest", {
      message: {
        message_id: "m",
        role: "ROLE_USER",
        reference_task_ids: ["t-0"],
        parts: [{ data: { snake_key: { inner_key: 1 } }, media_type: "application/json" }, { url: "https://x", media_type: "image/png", filename: "a.png" }],
      },
      configuration: { return_immediately: true, task_push_notification_config: { task_id: "t", url: "https://h.example/x" } },
    });
    expect(out).toEqual({
      message: {
        messageId: "m",
        role: "ROLE_USER",
        referenceTaskIds: ["t-0"],
        parts: [{ data: { snake_key: { inner_key: 1 } }, mediaType: "application/json" }, { url: "https://x", mediaType: "image/png", filename: "a.png" }],
      },
      configuration: { returnImmediately: true, taskPushNotificationConfig: { taskId: "t", url: "https://h.example/x" } },
    });
  });

  it("the shapes come from the schemas: every declared field of ListTasksRequest has its snake_case alias", () => {
    const shape = nameShape("v1_0/ListTasksRequest");
    if (shape.t !== "object") throw new Error("ListTasksRequest is an object");
    for (const name of shape.props.keys()) if (snakeName(name) !== name) expect(shape.aliases.get(snakeName(name))).toBe(name);
    expect([...shape.aliases.keys()].sort()).toEqual(
      ["context_id", "history_length", "include_artifacts", "page_size", "page_token", "status_timestamp_after"].sort(),
    );
  });

  it("a 0.3 field in a 1.0 configuration is refused by the validator, by name", async () => {
    const out = normalizeProtoJson("v1_0/SendMessageRequest", { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "x" }] }, configuration: { blocking: false } });
    const verdict = await validate("v1_0/SendMessageRequest", out);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(verdict.violations.map((v) => v.field)).toContain("configuration.blocking");
  });
});
