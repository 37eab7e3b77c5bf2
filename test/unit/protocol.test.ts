// Pure protocol helpers: version negotiation, ProtoJSON key normalisation, bearer credentials.
import { describe, expect, it } from "vitest";
import { PROTOCOL_LINES } from "../../src/contract/catalog.js";
import { A2AError } from "../../src/contract/errors.js";
import { negotiateVersion } from "../../src/protocol/version.js";
import { camelizeKeys } from "../../src/protocol/keys.js";
import { hasScope, wwwAuthenticate } from "../../src/auth/index.js";
import { CredentialRegistry } from "../../src/auth/credentials.js";
import { catalog } from "../../src/contract/catalog.js";

describe("negotiateVersion", () => {
  it("absent → the default line, not explicit", () => {
    for (const dflt of PROTOCOL_LINES) {
      expect(negotiateVersion(undefined, undefined, dflt)).toEqual({ line: dflt, explicit: false });
      expect(negotiateVersion("", "  ", dflt)).toEqual({ line: dflt, explicit: false });
    }
  });

  it("every protocol line is accepted from the header or the query; the header wins", () => {
    for (const line of PROTOCOL_LINES) {
      expect(negotiateVersion(line, undefined, "0.3")).toEqual({ line, explicit: true });
      expect(negotiateVersion(undefined, line, "0.3")).toEqual({ line, explicit: true });
      expect(negotiateVersion([line, "9.9"], undefined, "0.3")).toEqual({ line, explicit: true });
    }
    expect(negotiateVersion("0.3", "1.0", "1.0").line).toBe("0.3");
  });

  it.each(["2.0", "1.0.0", "0.3.1", "1", "x"])("%s → VERSION_NOT_SUPPORTED naming the supported lines", (v) => {
    let caught: unknown;
    try {
      negotiateVersion(v, undefined, "1.0");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(A2AError);
    expect((caught as A2AError).reason).toBe("VERSION_NOT_SUPPORTED");
    expect((caught as A2AError).data).toMatchObject({ requested_version: v, supported_protocol_versions: [...PROTOCOL_LINES], default_protocol_version: "1.0" });
  });
});

describe("camelizeKeys", () => {
  it("camelizes nested keys and array members", () => {
    expect(camelizeKeys({ history_length: 1, message: { message_id: "m", parts: [{ file_with_uri: 1 }] } })).toEqual({
      historyLength: 1,
      message: { messageId: "m", parts: [{ fileWithUri: 1 }] },
    });
  });

  it("leaves free-form maps alone", () => {
    const input = { metadata: { some_key: { inner_key: 1 } }, data: { a_b: 1 }, params: { c_d: 2 } };
    expect(camelizeKeys(input)).toEqual(input);
  });

  it("the camelCase spelling wins when both are present, whatever the order", () => {
    expect(camelizeKeys({ message_id: "snake", messageId: "camel" })).toEqual({ messageId: "camel" });
    expect(camelizeKeys({ messageId: "camel", message_id: "snake" })).toEqual({ messageId: "camel" });
  });

  it("scalars pass through", () => {
    for (const v of [null, 1, "a_b", true]) expect(camelizeKeys(v)).toBe(v);
  });
});

describe("A2A_BEARER_TOKEN credential", () => {
  const token = "resolver-token-0123456789";
  const resolver = new CredentialRegistry({ bearerToken: token }, { access: catalog.access_control });

  it("resolves the right token to an admin principal", () => {
    const p = resolver.resolve({ authorization: `Bearer ${token}` });
    expect(p).not.toBeNull();
    expect(p!.admin).toBe(true);
    expect(hasScope(p!, "tasks.read")).toBe(true);
    for (const scope of catalog.scopes) expect(hasScope(p!, scope)).toBe(true); // admin: every declared scope
    expect(hasScope(p!, "undeclared.scope")).toBe(false);
    expect(resolver.resolve({ authorization: [`bearer ${token}`] })).toEqual(p);
  });

  it.each([
    ["missing", undefined],
    ["wrong", "Bearer nope-nope-nope"],
    ["longer", `Bearer ${token}x`],
    ["two tokens", `Bearer ${token} ${token}`],
    ["basic", `Basic ${token}`],
  ])("%s credentials → null", (_, authorization) => {
    expect(resolver.resolve({ authorization })).toBeNull();
  });

  it("the principal never carries the token", () => {
    expect(JSON.stringify(resolver.resolve({ authorization: `Bearer ${token}` }))).not.toContain(token);
  });

  it("challenges with Bearer", () => {
    expect(wwwAuthenticate(resolver)).toMatch(/^Bearer /);
  });

  it("hasScope: a null scope is open; a non-admin needs the scope", () => {
    const user = { id: "u", credentialId: "c", trustLevel: "execute", scopes: new Set(["a"]), admin: false };
    expect(hasScope(user, null)).toBe(true);
    expect(hasScope(user, "a")).toBe(true);
    expect(hasScope(user, "b")).toBe(false);
  });
});
