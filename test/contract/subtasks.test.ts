// The opencode-subtasks extension in every generated artifact (issue 18): the catalog (methods, scopes, toggle, errors,
// limits model), the JSON Schemas, the OpenAPI document's catalog and the served extended card (limits and method
// contracts), and the runtime registry.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatedDir } from "../../src/contract/catalog.js";
import { call, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { catalog, expectValid } from "../support/contract.js";

const METHODS = ["opencode.subtasks.cancel", "opencode.subtasks.get", "opencode.subtasks.run"];
let gw: StartedGateway;

beforeAll(async () => {
  gw = await startGateway({ A2A_MAX_PARALLEL_SUBTASKS: "6" });
});

afterAll(async () => {
  await gw?.close();
});

describe("opencode-subtasks in the contract", () => {
  const ext = catalog.extensions.find((e) => e.name === "opencode-subtasks")!;

  it("the catalog declares the extension, its three methods, their scopes, toggle, errors and the limits model", () => {
    expect(ext).toMatchObject({ disclosure: "extended", kind: "methods", audience: "provider-private", limits: "SubtaskLimits" });
    expect(ext.methods).toEqual(METHODS);
    const byName = new Map(catalog.methods.map((m) => [m.name, m]));
    expect(METHODS.map((n) => byName.get(n)!.scope)).toEqual(["tasks.cancel", "tasks.read", "subtasks.run"]);
    for (const n of METHODS) {
      const m = byName.get(n)!;
      expect(m.toggle, n).toBe("A2A_ENABLE_SUBTASKS");
      expect(m.result_schema, n).toBe("extensions/SubtasksCallResult");
      expect(m.errors, n).toContain("INVALID_PARAMS");
    }
    expect(byName.get("opencode.subtasks.run")!.errors).toEqual(expect.arrayContaining(["TASK_NOT_FOUND", "TASK_STORE_UNAVAILABLE"]));
    expect(byName.get("opencode.subtasks.get")!.errors).toContain("SUBTASK_CALL_NOT_FOUND");
    expect(catalog.errors["1.0"].find((e) => e.reason === "SUBTASK_CALL_NOT_FOUND")).toMatchObject({ code: -32078, http: 404 });
    expect(catalog.access_control.trust_levels.find((l) => l.name === "execute")!.scopes).toContain("subtasks.run");
  });

  it("the JSON Schemas and the OpenAPI document carry them", () => {
    for (const name of ["SubtaskItem", "SubtasksRunParams", "SubtasksCallResult", "SubtasksGetParams", "SubtasksCancelParams", "SubtaskLimits", "SubtaskItemError"])
      expect(fs.existsSync(path.join(generatedDir, "json-schema", "extensions", `${name}.json`)), name).toBe(true);
    const run = JSON.parse(fs.readFileSync(path.join(generatedDir, "json-schema", "extensions", "SubtasksRunParams.json"), "utf8"));
    expect(run.properties.items).toMatchObject({ minItems: 1, maxItems: 32 });
    const openapi = JSON.parse(fs.readFileSync(path.join(generatedDir, "openapi", "openapi.json"), "utf8"));
    for (const n of METHODS) expect(openapi["x-opencode-a2a-jsonrpc-methods"][n], n).toMatchObject({ extension_uri: ext.uri });
    expect(openapi["x-opencode-a2a-extensions"].find((e: Record<string, unknown>) => e.uri === ext.uri)).toMatchObject({ name: "opencode-subtasks", limits: "SubtaskLimits" });
    for (const line of ["0.3", "1.0"]) expect(openapi["x-opencode-a2a-errors"][line].map((e: { reason: string }) => e.reason), line).toContain("SUBTASK_CALL_NOT_FOUND");
  });

  it("the extended card publishes the limits of this deployment and the method contracts; the registry serves the methods", async () => {
    const res = await call(gw.url, "/agent/authenticatedExtendedCard", { headers: { authorization: `Bearer ${TEST_TOKEN}`, "A2A-Version": "1.0" } });
    expect(res.status).toBe(200);
    const card = res.body as Record<string, any>;
    const entry = card.capabilities.extensions.find((e: Record<string, any>) => e.uri === ext.uri);
    expect(entry.params.limits).toEqual({ max_parallel_subtasks: 6, max_items_per_call: 32, excess_items: "queue", ungrouped_items: "sequential", group_order: "after_previous_group_ended" });
    await expectValid("extensions/SubtaskLimits", entry.params.limits);
    expect(entry.params.limits_schema).toBe("/schemas/extensions/SubtaskLimits.json");
    expect(Object.keys(entry.params.methods)).toEqual(METHODS);
    expect(entry.params.methods["opencode.subtasks.run"]).toMatchObject({ scope: "subtasks.run", toggle: "A2A_ENABLE_SUBTASKS", availability: "available" });
    for (const n of METHODS) expect(gw.gateway.registry.has(n), n).toBe(true);
    const schema = await call(gw.url, "/schemas/extensions/SubtaskLimits.json", { auth: false });
    expect(schema.status).toBe(200);
  });
});
