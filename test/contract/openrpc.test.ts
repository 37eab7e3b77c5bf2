// The OpenRPC documents (generated/openrpc and the served /openrpc.json) against the official OpenRPC meta-schema
// (@open-rpc/meta-schema, draft-07, validated with ajv) and against the catalog both ways: every JSON-RPC method of a
// line is documented with its params, result, errors and scope, and every documented method is in the catalog.
import fs from "node:fs";
import path from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import openRpcMetaSchema from "@open-rpc/meta-schema";
import jsonSchemaMetaSchema from "@json-schema-tools/meta-schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorEntry, generatedDir, PROTOCOL_LINES, type ProtocolLine } from "../../src/contract/catalog.js";
import { methodAvailability } from "../../src/discovery/facts.js";
import type { OpenRpcDocument } from "../../src/discovery/openrpc.js";
import { loadConfig } from "../../src/config/index.js";
import { call, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { catalog, methodsOfLine } from "../support/contract.js";

function metaValidator(): ValidateFunction {
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, logger: false });
  // The OpenRPC meta-schema refers to the JSON Schema meta-schema both as https://meta.json-schema.tools and with
  // its own $id (trailing slash).
  ajv.addSchema(jsonSchemaMetaSchema);
  ajv.addSchema({ ...jsonSchemaMetaSchema, $id: "https://meta.json-schema.tools" });
  return ajv.compile(openRpcMetaSchema);
}

const validateOpenRpc = metaValidator();

function generated(line: ProtocolLine): OpenRpcDocument {
  return JSON.parse(fs.readFileSync(path.join(generatedDir, "openrpc", `openrpc-${line}.json`), "utf8")) as OpenRpcDocument;
}

function expectValidOpenRpc(doc: unknown, what: string): void {
  const ok = validateOpenRpc(doc);
  expect(ok, `${what}: ${JSON.stringify(validateOpenRpc.errors?.slice(0, 5), null, 1)}`).toBe(true);
}

/** The JSON Schema a served `/schemas/<group>/<Name>.json[#/$defs/X]` reference points at, or undefined. */
function resolveSchemaRef(ref: string): unknown {
  const m = /^\/schemas\/([a-z0-9_]+)\/([A-Za-z0-9_]+\.json)(?:#\/\$defs\/([A-Za-z0-9_]+))?$/.exec(ref);
  if (!m) return undefined;
  const file = path.join(generatedDir, "json-schema", m[1]!, m[2]!);
  if (!fs.existsSync(file)) return undefined;
  const schema = JSON.parse(fs.readFileSync(file, "utf8")) as { $defs?: Record<string, unknown> };
  return m[3] ? schema.$defs?.[m[3]] : schema;
}

function refsIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refsIn(v, out);
  else if (value && typeof value === "object")
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string") out.push(v);
      else refsIn(v, out);
    }
  return out;
}

describe("the OpenRPC meta-schema validator", () => {
  it("rejects a broken document (guards the validity checks below)", () => {
    const broken = structuredClone(generated("1.0")) as any;
    broken.methods[0].errors = [{ code: "not a number" }];
    broken.methods[1].unknownMember = true;
    expect(validateOpenRpc(broken)).toBe(false);
    expect(validateOpenRpc({ openrpc: "9.9.9", info: { title: "x", version: "1" }, methods: [] })).toBe(false);
  });
});

describe.each(PROTOCOL_LINES.map((line) => ({ line })))("generated/openrpc/openrpc-$line.json", ({ line }) => {
  const doc = generated(line);
  const declared = methodsOfLine(line);

  it("is a valid OpenRPC 1.x document of its line", () => {
    expectValidOpenRpc(doc, `openrpc-${line}.json`);
    expect(doc.openrpc).toMatch(/^1\.\d+\.\d+$/);
    expect(doc["x-a2a-protocol-version"]).toBe(line);
  });

  it("documents every JSON-RPC method of the line, and only those (both ways)", () => {
    expect(declared.length).toBeGreaterThan(0);
    const documented = doc.methods.map((m) => m.name);
    expect(new Set(documented).size, "method names are unique").toBe(documented.length);
    expect([...documented].sort()).toEqual(declared.map((m) => m.name).sort());
    // Both surfaces are there: the line's core methods and the extension methods (opencode.*, a2a.interrupt.*, …).
    expect(doc.methods.some((m) => m["x-surface"] === "core")).toBe(true);
    expect(doc.methods.some((m) => m.name.startsWith("opencode.sessions."))).toBe(true);
    expect(doc.methods.some((m) => m.name.startsWith("a2a.interrupt."))).toBe(true);
  });

  it("gives each method its by-name params (the properties of its params schema), result, scope and toggle", () => {
    for (const m of declared) {
      const d = doc.methods.find((x) => x.name === m.name)!;
      const schema = resolveSchemaRef(`/schemas/${m.params_schema}.json`) as { properties?: Record<string, unknown>; required?: string[] };
      expect(schema, m.params_schema).toBeDefined();
      expect(d.paramStructure, m.name).toBe("by-name");
      expect(d.params.map((p) => p.name), m.name).toEqual(Object.keys(schema.properties ?? {}));
      for (const p of d.params) expect(p.required, `${m.name}.${p.name}`).toBe((schema.required ?? []).includes(p.name));
      expect(d["x-params-schema"]).toBe(`/schemas/${m.params_schema}.json`);
      expect(d["x-scope"], m.name).toBe(m.scope);
      expect(d["x-toggle"], m.name).toBe(m.toggle ?? undefined);
      expect(d["x-streaming"], m.name).toBe(m.streaming);
      expect(d["x-extension-uri"], m.name).toBe(m.extension_uri ?? undefined);
      const resultRefs = refsIn(d.result.schema);
      if (m.result_schema === "null") expect(d.result.schema).toEqual({ type: "null" });
      else expect(resultRefs.map((r) => r.replace(/^\/schemas\//, "").replace(/\.json$/, "")).join("|"), m.name).toBe(m.result_schema!.replace("[]", ""));
    }
  });

  it("references only JSON Schemas the gateway serves", () => {
    const refs = new Set(doc.methods.flatMap((m) => refsIn([m.params, m.result])));
    expect(refs.size).toBeGreaterThan(10);
    for (const ref of refs) expect(resolveSchemaRef(ref), ref).toBeDefined();
  });

  it("lists each method's errors with the line's code, message and reason", () => {
    for (const m of declared) {
      const d = doc.methods.find((x) => x.name === m.name)!;
      expect(d.errors.map((e) => e.$ref.replace("#/components/errors/", "")).sort(), m.name).toEqual([...m.errors].sort());
      for (const reason of m.errors) {
        const entry = errorEntry(line, reason);
        const e = doc.components.errors[reason]!;
        expect(e.code, reason).toBe(entry.code);
        expect(e.message, reason).toBe(entry.message);
        if (line === "0.3") expect(e.data).toEqual({ type: reason });
        else expect((e.data as { reason: string }[])[0]!.reason).toBe(reason);
      }
    }
  });
});

describe("served /openrpc.json", () => {
  let gw: StartedGateway;
  let shell: StartedGateway;
  beforeAll(async () => {
    [gw, shell] = await Promise.all([startGateway(), startGateway({ A2A_ENABLE_SESSION_SHELL: "true", A2A_DEFAULT_PROTOCOL_VERSION: "1.0" })]);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), shell?.close()]);
  });

  it.each(PROTOCOL_LINES.map((line) => [line]))("A2A-Version %s: valid, the generated document plus this deployment's facts", async (line) => {
    const res = await call(gw.url, `/openrpc.json?A2A-Version=${line}`, { auth: false });
    expect(res.status).toBe(200);
    expectValidOpenRpc(res.body, `served ${line}`);
    const doc = res.body as OpenRpcDocument;
    const base = generated(line);
    expect(doc.methods.map((m) => m.name)).toEqual(base.methods.map((m) => m.name));
    expect(doc.servers).toEqual([expect.objectContaining({ url: gw.url })]);
    const facts = gw.gateway.discovery["deps"].facts;
    for (const m of doc.methods) {
      const entry = catalog.methods.find((c) => c.name === m.name)!;
      expect(m["x-availability"], m.name).toBe(methodAvailability(entry, facts));
    }
  });

  it("marks toggled methods disabled unless their toggle is on", async () => {
    const toggled = catalog.methods.filter((m) => m.toggle);
    expect(toggled.length).toBeGreaterThan(0);
    const off = (await call(gw.url, "/openrpc.json", { auth: false, headers: { "A2A-Version": "1.0" } })).body as OpenRpcDocument;
    const on = (await call(shell.url, "/openrpc.json", { auth: false })).body as OpenRpcDocument;
    // A2A_ENABLE_SUBTASKS is on unless set false; the other toggles are off unless set true
    const defaults = loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN }).toggles;
    for (const m of toggled) {
      expect(off.methods.find((x) => x.name === m.name)!["x-availability"], m.name).toBe(defaults[m.toggle!] === true ? "available" : "disabled");
      const expected = m.toggle === "A2A_ENABLE_SESSION_SHELL" || defaults[m.toggle!] === true ? "available" : "disabled";
      expect(on.methods.find((x) => x.name === m.name)!["x-availability"], m.name).toBe(expected);
    }
  });
});
