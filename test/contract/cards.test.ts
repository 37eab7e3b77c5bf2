// Agent cards of both lines against the generated JSON Schemas and the catalog's extensions and methods.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProtocolLine } from "../../src/contract/catalog.js";
import { loadConfig } from "../../src/config/index.js";
import { call, startGateway, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { cardExtensions, catalog, expectValid, extensionUri, methodsOfLine, wireContractOf } from "../support/contract.js";

/** The toggles of a deployment that sets none (A2A_ENABLE_SUBTASKS is on by default, the others off). */
const DEFAULT_TOGGLES: Record<string, boolean> = loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN }).toggles;

const CARD_SCHEMA: Record<ProtocolLine, string> = { "0.3": "v0_3/AgentCard", "1.0": "v1_0/AgentCard" };
const ONLY_0_3_FIELDS = ["url", "protocolVersion", "preferredTransport", "additionalInterfaces", "supportsAuthenticatedExtendedCard"];
const SHELL = "opencode.sessions.shell";

let gw: StartedGateway;
let shellOn: StartedGateway;
beforeAll(async () => {
  // One advertised URL for both, so their cards can only differ by the toggle.
  const url = { A2A_PUBLIC_URL: "http://gateway.test:8000" };
  [gw, shellOn] = await Promise.all([startGateway(url), startGateway({ ...url, A2A_ENABLE_SESSION_SHELL: "true" })]);
});
afterAll(async () => {
  await Promise.all([gw?.close(), shellOn?.close()]);
});

const versions: { header: string | undefined; line: ProtocolLine; dual?: true }[] = [
  { header: "0.3", line: "0.3" },
  { header: "1.0", line: "1.0" },
  // No version: the card of both lines (DECISIONS 1), its line-specific params the default line's (0.3 here).
  { header: undefined, line: "0.3", dual: true },
];

async function fetchCard(target: StartedGateway, extended: boolean, header: string | undefined) {
  const res = await call(target.url, extended ? "/agent/authenticatedExtendedCard" : "/.well-known/agent-card.json", {
    auth: extended,
    headers: header ? { "A2A-Version": header } : {},
  });
  expect(res.status, res.text).toBe(200);
  return res;
}

describe.each(versions)("A2A-Version $header → $line card", ({ header, line, dual }) => {
  for (const extended of [false, true]) {
    const kind = extended ? "extended" : "public";

    it(`${kind} card validates against ${dual ? "both lines' AgentCard schemas" : CARD_SCHEMA[line]}`, async () => {
      const res = await fetchCard(gw, extended, header);
      expect(res.headers.get("a2a-version")).toBe(line);
      await expectValid(CARD_SCHEMA[line], res.body);
      if (dual) {
        await expectValid(CARD_SCHEMA["1.0"], res.body);
        for (const f of ONLY_0_3_FIELDS) expect(res.body, f).toHaveProperty(f);
        expect(res.body.supportedInterfaces.length).toBeGreaterThan(0);
      }
      // Each line's card must not pass as the other line's card by accident.
      else if (line === "1.0") for (const f of ONLY_0_3_FIELDS) expect(res.body, f).not.toHaveProperty(f);
      else {
        expect(res.body.protocolVersion).toMatch(/^0\.3(\.\d+)?$/);
        expect(res.body).not.toHaveProperty("supportedInterfaces");
      }
    });

    it(`${kind} card lists the catalog extensions of its disclosure`, async () => {
      const res = await fetchCard(gw, extended, header);
      const expected = catalog.extensions.filter((e) => extended || e.disclosure === "public").map((e) => e.uri);
      const listed = cardExtensions(res.body).map((e) => e.uri);
      expect([...listed].sort()).toEqual([...expected].sort());
      if (!extended) for (const e of cardExtensions(res.body)) expect(e.params, `public ${e.uri} carries no params`).toBeUndefined();
    });
  }

  it("extended card carries the wire contract of its line", async () => {
    const wc = wireContractOf((await fetchCard(gw, true, header)).body);
    expect(wc.protocol_version).toBe(line);
    expect(wc.supported_protocol_versions).toEqual(catalog.protocol_lines);
    expect(wc.extensions.extension_uris).toEqual(catalog.extensions.map((e) => e.uri));
    expect(wc.core.jsonrpc_methods).toEqual(catalog.methods.filter((m) => m.line === line).map((m) => m.name));
    expect(wc.core.http_endpoints.sort()).toEqual(
      catalog.routes.filter((r) => r.kind === "a2a" && r.line === line).map((r) => `${r.verb} ${r.path}`).sort(),
    );
  });

  it("all_jsonrpc_methods is exactly the line's methods that are neither disabled nor pending", async () => {
    const wc = wireContractOf((await fetchCard(gw, true, header)).body);
    // a toggle that is on by default (A2A_ENABLE_SUBTASKS) leaves its methods available
    const expected = methodsOfLine(line)
      .filter((m) => (!m.toggle || DEFAULT_TOGGLES[m.toggle] === true) && !m.not_implemented_until)
      .map((m) => m.name);
    expect(expected.length).toBeGreaterThan(0);
    expect([...wc.all_jsonrpc_methods].sort()).toEqual([...expected].sort());
    for (const name of wc.all_jsonrpc_methods) expect(gw.gateway.registry.has(name)).toBe(true);
    const pending = methodsOfLine(line).filter((m) => m.not_implemented_until).map((m) => m.name);
    expect(Object.keys(wc.pending_methods).sort()).toEqual([...pending].sort());
    for (const name of pending) expect(wc.pending_methods[name]).toMatchObject({ error: "NOT_IMPLEMENTED" });
    expect(wc.unsupported_method_error.code).toBe(catalog.errors[line].find((e) => e.reason === "METHOD_NOT_SUPPORTED")!.code);
  });
});

describe(`${SHELL} behind A2A_ENABLE_SESSION_SHELL`, () => {
  const shell = catalog.methods.find((m) => m.name === SHELL)!;

  it("is a toggled method in the catalog (premise of the tests below)", () => {
    expect(shell.toggle).toBe("A2A_ENABLE_SESSION_SHELL");
  });

  it.each(catalog.protocol_lines)("line %s: off → disabled, on → enabled and callable", async (line) => {
    const off = wireContractOf((await fetchCard(gw, true, line)).body);
    const on = wireContractOf((await fetchCard(shellOn, true, line)).body);

    expect(off.extensions.conditionally_available_methods[SHELL]).toEqual({
      reason: "disabled_by_configuration",
      toggle: "A2A_ENABLE_SESSION_SHELL",
      available: false,
    });
    expect(on.extensions.conditionally_available_methods[SHELL]).toEqual({
      reason: "enabled_by_configuration",
      toggle: "A2A_ENABLE_SESSION_SHELL",
      available: true,
    });
    expect(off.extensions.jsonrpc_methods).not.toContain(SHELL);
    expect(on.extensions.jsonrpc_methods).toContain(SHELL);
    expect(off.all_jsonrpc_methods).not.toContain(SHELL);
    if (shell.not_implemented_until) {
      expect(on.all_jsonrpc_methods).not.toContain(SHELL);
      expect(on.pending_methods[SHELL]).toMatchObject({ error: "NOT_IMPLEMENTED" });
    } else {
      // Only the toggled method moves.
      expect([...on.all_jsonrpc_methods].sort()).toEqual([...off.all_jsonrpc_methods, SHELL].sort());
    }
  });

  it("the session-management extension reports the method's availability", async () => {
    const uri = catalog.extensions.find((e) => e.methods.includes(SHELL))!.uri;
    const contractOf = async (target: StartedGateway) =>
      cardExtensions((await fetchCard(target, true, "0.3")).body).find((e) => e.uri === uri)!.params!.methods[SHELL];
    expect(await contractOf(gw)).toMatchObject({ availability: "disabled", toggle: "A2A_ENABLE_SESSION_SHELL" });
    expect(await contractOf(shellOn)).toMatchObject({
      availability: shell.not_implemented_until ? "not-implemented" : "available",
      toggle: "A2A_ENABLE_SESSION_SHELL",
    });
  });

  it("the cards of the two deployments differ (ETag) only in the extended card", async () => {
    const etag = async (target: StartedGateway, extended: boolean) => (await fetchCard(target, extended, "1.0")).headers.get("etag");
    expect(await etag(gw, false)).toBe(await etag(shellOn, false));
    expect(await etag(gw, true)).not.toBe(await etag(shellOn, true));
  });
});

describe("extended-card extensions carry their method contracts", () => {
  it.each(catalog.protocol_lines)("line %s", async (line) => {
    const card = (await fetchCard(gw, true, line)).body;
    for (const ext of catalog.extensions.filter((e) => e.methods.length)) {
      const listed = cardExtensions(card).find((e) => e.uri === ext.uri)!;
      expect(Object.keys(listed.params!.methods).sort()).toEqual([...ext.methods].sort());
      for (const [reason, code] of Object.entries(listed.params!.errors.codes as Record<string, number>))
        expect(catalog.errors[line].find((e) => e.reason === reason)?.code, reason).toBe(code);
    }
    expect(cardExtensions(card).some((e) => e.uri === extensionUri("a2a-compatibility-profile-v1") && e.params?.protocol_version === line)).toBe(true);
  });
});
