import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CredentialError, CredentialRegistry, loadCredentials, presentedCredential, SCHEME_INFO, secretHash } from "../../src/auth/credentials.js";
import { catalog } from "../../src/contract/catalog.js";

const access = catalog.access_control;
const level = (name: string) => new Set(access.trust_levels.find((l) => l.name === name)!.scopes);
const SECRET = "s3cret-value-0123456789";

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof CredentialError) return err.problems;
    throw err;
  }
  return [];
}

describe("loadCredentials", () => {
  it("loads every scheme and gives the level's bundle unless scopes replace it", () => {
    const creds = loadCredentials(
      [
        { id: "a", principal: "alice", scheme: "bearer", secret: SECRET, trust_level: "execute" },
        { id: "b", principal: "bob", scheme: "api_key", secret_hash: secretHash(`${SECRET}-b`), trust_level: "read_only", scopes: ["tasks.read"] },
        { id: "c", principal: "carol", scheme: "basic", secret: `carol:${SECRET}`, trust_level: "admin", enabled: false },
      ],
      "test",
      access,
    );
    expect(creds.map((c) => [c.id, c.scheme, c.enabled])).toEqual([
      ["a", "bearer", true],
      ["b", "api_key", true],
      ["c", "basic", false],
    ]);
    expect(creds[0]!.principal.scopes).toEqual(level("execute"));
    expect([...creds[1]!.principal.scopes]).toEqual(["tasks.read"]);
    expect(creds[2]!.principal.admin).toBe(true);
    expect(creds[0]!.principal.admin).toBe(false);
  });

  it("collects every problem without quoting a secret", () => {
    const found = problems(() =>
      loadCredentials(
        [
          { id: "bad id!", principal: "", scheme: "ssh", secret: "short", trust_level: "root" },
          { id: "x", principal: "p", scheme: "bearer", secret: SECRET, secret_hash: secretHash(SECRET), trust_level: "execute" },
          { id: "y", principal: "p", scheme: "basic", secret: "no-colon-in-this-secret", trust_level: "execute" },
          { id: "z", principal: "p", scheme: "bearer", secret_hash: "md5:abc", trust_level: "execute", scopes: ["tasks.fly"], expires_at: "soon", extra: 1 },
          { id: "r", principal: "p", scheme: "bearer", secret: `${SECRET}-r`, trust_level: "execute", rate_limit: { max_requests: -1, burst: 2 } },
          "nope",
        ],
        "src",
        access,
      ),
    );
    const text = found.join("\n");
    for (const fragment of ["src[0].id", "src[0].principal", "src[0].scheme", "src[0].secret", "src[0].trust_level", "src[1]: give exactly one", "src[2].secret", "src[3].secret_hash", "unknown scope \"tasks.fly\"", "src[3].expires_at", 'unknown field "extra"', "src[4].rate_limit.max_requests", 'unknown field "burst"', "src[5]: expected an object"])
      expect(text).toContain(fragment);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain("no-colon-in-this-secret");
  });

  it("refuses duplicate ids and two credentials sharing a secret", () => {
    const text = problems(() =>
      loadCredentials(
        [
          { id: "a", principal: "p", scheme: "bearer", secret: SECRET, trust_level: "execute" },
          { id: "a", principal: "q", scheme: "bearer", secret: `${SECRET}x`, trust_level: "execute" },
          { id: "b", principal: "r", scheme: "bearer", secret_hash: secretHash(SECRET), trust_level: "execute" },
        ],
        "src",
        access,
      ),
    ).join("\n");
    expect(text).toContain('id "a" appears twice');
    expect(text).toContain('"b" has the same bearer secret');
  });
});

describe("presentedCredential", () => {
  it("reads Bearer, Basic and X-API-Key; Authorization wins", () => {
    expect(presentedCredential({ authorization: `Bearer ${SECRET}` })?.scheme).toBe("bearer");
    expect(presentedCredential({ authorization: `Basic ${Buffer.from(`u:${SECRET}`).toString("base64")}` })?.scheme).toBe("basic");
    expect(presentedCredential({ "x-api-key": SECRET })?.scheme).toBe("api_key");
    expect(presentedCredential({ authorization: `Bearer ${SECRET}`, "x-api-key": "other" })?.scheme).toBe("bearer");
    for (const authorization of ["Bearer", "Bearer a b", `Token ${SECRET}`, "Basic !!!", `Basic ${Buffer.from("nocolon").toString("base64")}`])
      expect(presentedCredential({ authorization })).toBeNull();
    expect(presentedCredential({})).toBeNull();
  });
});

describe("CredentialRegistry", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  it("refuses disabled and expired credentials and publishes only enabled schemes", () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const reg = new CredentialRegistry(
      {
        credentials: JSON.stringify([
          { id: "live", principal: "p", scheme: "bearer", secret: SECRET, trust_level: "execute", expires_at: "2026-01-02T00:00:00Z" },
          { id: "off", principal: "p", scheme: "api_key", secret: `${SECRET}-off`, trust_level: "execute", enabled: false },
        ]),
      },
      { access, now: () => now },
    );
    expect(reg.resolve({ authorization: `Bearer ${SECRET}` })?.id).toBe("p");
    expect(reg.resolve({ "x-api-key": `${SECRET}-off` })).toBeNull();
    expect(reg.schemes.map((s) => s.name)).toEqual(["bearerAuth"]);
    now = Date.parse("2026-01-02T00:00:00Z");
    expect(reg.resolve({ authorization: `Bearer ${SECRET}` })).toBeNull();
  });

  it("publishes each scheme under the name and kind the OpenAPI document gives it", () => {
    const openapi = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "../../generated/openapi/openapi.json"), "utf8")) as {
      security: Record<string, unknown>[];
      components: { securitySchemes: Record<string, { type: string; scheme?: string; in?: string; name?: string }> };
    };
    const documented = openapi.components.securitySchemes;
    expect(Object.keys(documented).sort()).toEqual(Object.values(SCHEME_INFO).map((s) => s.name).sort());
    expect(openapi.security.map((r) => Object.keys(r)[0]).sort()).toEqual(Object.keys(documented).sort());
    expect(documented[SCHEME_INFO.bearer.name]).toMatchObject({ type: "http", scheme: "Bearer" });
    expect(documented[SCHEME_INFO.basic.name]).toMatchObject({ type: "http", scheme: "Basic" });
    expect(documented[SCHEME_INFO.api_key.name]).toMatchObject({ type: "apiKey", in: "header", name: "X-API-Key" });
  });

  it("needs at least one enabled credential; A2A_CREDENTIALS must be JSON", () => {
    expect(problems(() => new CredentialRegistry({}, { access }))).toEqual(["no enabled credential is configured"]);
    expect(problems(() => new CredentialRegistry({ credentials: "[{" }, { access }))).toEqual(["A2A_CREDENTIALS: not valid JSON"]);
  });

  it("re-reads a changed file and keeps the old credentials when the new file is invalid", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "creds-"));
    dirs.push(dir);
    const file = path.join(dir, "credentials.json");
    const write = (v: unknown) => fs.writeFileSync(file, typeof v === "string" ? v : JSON.stringify(v));
    write([{ id: "a", principal: "alice", scheme: "bearer", secret: SECRET, trust_level: "execute" }]);
    const errors: Error[] = [];
    const reg = new CredentialRegistry({ credentialsFile: file, bearerToken: "admin-token-123" }, { access, recheckMs: 0, onReloadError: (e) => errors.push(e) });
    expect(reg.resolve({ authorization: `Bearer ${SECRET}` })?.id).toBe("alice");
    write([
      { id: "a", principal: "alice", scheme: "bearer", secret: SECRET, trust_level: "execute", enabled: false },
      { id: "b", principal: "bob", scheme: "api_key", secret: `${SECRET}-b`, trust_level: "read_only" },
    ]);
    expect(reg.resolve({ authorization: `Bearer ${SECRET}` })).toBeNull();
    expect(reg.resolve({ "x-api-key": `${SECRET}-b` })?.id).toBe("bob");
    write("{ not json");
    expect(reg.resolve({ "x-api-key": `${SECRET}-b` })?.id).toBe("bob");
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).not.toContain(SECRET);
    // An id clash with the environment's credential is refused the same way.
    write([{ id: "env:A2A_BEARER_TOKEN", principal: "x", scheme: "bearer", secret: `${SECRET}-x`, trust_level: "admin" }]);
    expect(reg.resolve({ authorization: `Bearer ${SECRET}-x` })).toBeNull();
    expect(reg.resolve({ authorization: "Bearer admin-token-123" })?.id).toBe("admin");
    expect(errors).toHaveLength(2);
  });

  it("wrong secrets of every length are refused", () => {
    const reg = new CredentialRegistry({ credentials: JSON.stringify([{ id: "a", principal: "p", scheme: "bearer", secret: SECRET, trust_level: "execute" }]) }, { access });
    for (let n = 1; n <= 200; n++) {
      const candidate = SECRET.repeat(10).slice(0, n);
      if (candidate === SECRET) continue;
      expect(reg.resolve({ authorization: `Bearer ${candidate}` })).toBeNull();
    }
    expect(reg.resolve({ authorization: `Bearer ${SECRET}` })).not.toBeNull();
  });
});
