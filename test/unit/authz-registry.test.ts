// The credential registry in isolation (issue 6): every credential of the presented scheme is compared with
// crypto.timingSafeEqual, on equal-length digests, whichever (if any) matches — no early exit; and no error the
// registry or the configuration raises ever quotes a secret.
import { afterEach, describe, expect, it, vi } from "vitest";

// The registry's crypto, with timingSafeEqual counted (the module is mocked for the code under test only).
const compare = vi.hoisted(() => ({ calls: [] as [number, number][] }));
vi.mock("node:crypto", async (importOriginal) => {
  const original = await importOriginal<typeof import("node:crypto")>();
  const timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView): boolean => {
    compare.calls.push([a.byteLength, b.byteLength]);
    return original.timingSafeEqual(a, b);
  };
  return { ...original, default: { ...original, timingSafeEqual }, timingSafeEqual };
});

import { catalog } from "../../src/contract/catalog.js";
import { loadConfig } from "../../src/config/index.js";
import {
  CredentialError,
  CredentialRegistry,
  digestOf,
  loadCredentials,
  presentedCredential,
  secretHash,
  type CredentialEntry,
} from "../../src/auth/credentials.js";

const access = catalog.access_control;
const basicHeader = (userPass: string) => ({ authorization: `Basic ${Buffer.from(userPass).toString("base64")}` });

function entry(id: string, scheme: CredentialEntry["scheme"], secret: string, extra: Partial<CredentialEntry> = {}): CredentialEntry {
  return { id, principal: `p-${id}`, scheme, secret, trust_level: "execute", ...extra };
}

afterEach(() => {
  compare.calls.length = 0;
});

describe("CredentialRegistry.resolveCredential compares every credential of the scheme", () => {
  const bearers = Array.from({ length: 7 }, (_, i) => entry(`b${i}`, "bearer", `bearer-secret-number-${i}-xxxxxxxx`));
  const others = [
    entry("k0", "api_key", "api-key-secret-0-xxxxxxxxxxxx"),
    entry("k1", "api_key", "api-key-secret-1-xxxxxxxxxxxx"),
    entry("u0", "basic", "user0:basic-password-0-xxxxxxx"),
  ];
  // a disabled and an expired bearer credential are compared too (their state is checked after the loop)
  const special = [
    entry("bd", "bearer", "bearer-disabled-secret-xxxxxxxx", { enabled: false }),
    entry("be", "bearer", "bearer-expired-secret-xxxxxxxxx", { expires_at: "2000-01-01T00:00:00Z" }),
  ];
  const registry = new CredentialRegistry({ credentials: JSON.stringify([...bearers, ...others, ...special]) }, { access });
  const bearerCount = bearers.length + special.length;

  it.each([
    ["the first credential", bearers[0]!.secret!, "b0"],
    ["the last credential", bearers[6]!.secret!, "b6"],
    ["a middle credential", bearers[3]!.secret!, "b3"],
    ["no credential", "bearer-secret-that-nobody-has-xx", null],
    ["a one-character key", "x", null],
    ["a 4 KiB key", "y".repeat(4096), null],
    ["a disabled credential", special[0]!.secret!, null],
    ["an expired credential", special[1]!.secret!, null],
    ["another scheme's secret", others[0]!.secret!, null],
  ])("%s: %# → every bearer credential compared, on 32-byte digests", (_what, secret, expected) => {
    const presented = presentedCredential({ authorization: `Bearer ${secret}` });
    expect(presented).not.toBeNull();
    compare.calls.length = 0;
    const found = registry.resolveCredential(presented!);
    expect(found?.id ?? null).toBe(expected);
    expect(compare.calls).toHaveLength(bearerCount);
    for (const [a, b] of compare.calls) expect([a, b]).toEqual([32, 32]);
  });

  it("api_key and basic: every credential of that scheme, none of the others", () => {
    for (const [headers, count] of [
      [{ "x-api-key": others[1]!.secret! }, 2],
      [{ "x-api-key": "unknown-api-key-value-xxxxx" }, 2],
      [basicHeader(others[2]!.secret!), 1],
      [basicHeader("user0:wrong-password-xxxxxxxx"), 1],
    ] as const) {
      compare.calls.length = 0;
      registry.resolve(headers);
      expect(compare.calls, JSON.stringify(headers)).toHaveLength(count);
    }
  });

  it("a missing or malformed credential is refused without any comparison", () => {
    for (const headers of [{}, { authorization: "Bearer " }, { authorization: "Token abc" }, { "x-api-key": "  " }, { authorization: "Basic bm9jb2xvbg==" }]) {
      compare.calls.length = 0;
      expect(registry.resolve(headers)).toBeNull();
      expect(compare.calls).toHaveLength(0);
    }
  });

  it("a secret_hash credential matches its secret", () => {
    const secret = "hashed-secret-value-xxxxxxxxxxx";
    const r = new CredentialRegistry({ credentials: JSON.stringify([{ id: "h", principal: "h", scheme: "bearer", secret_hash: secretHash(secret), trust_level: "admin" }]) }, { access });
    expect(r.resolve({ authorization: `Bearer ${secret}` })?.id).toBe("h");
    expect(r.resolve({ authorization: `Bearer ${secret}x` })).toBeNull();
    expect(digestOf(secret).toString("hex")).toBe(secretHash(secret).slice("sha256:".length));
  });
});

describe("no error message quotes a secret", () => {
  const SECRET = "SuperSecretValue-9f8e7d6c5b4a";
  const bad: [string, unknown][] = [
    ["a secret that is too short", [{ ...entry("a", "bearer", "short-9f8e") }]],
    ["a basic secret without a colon", [entry("a", "basic", SECRET)]],
    ["an unknown trust level", [entry("a", "bearer", SECRET, { trust_level: SECRET })]],
    ["an unknown scope", [entry("a", "bearer", SECRET, { scopes: ["tasks.read", "nope"] })]],
    ["both secret and secret_hash", [{ ...entry("a", "bearer", SECRET), secret_hash: secretHash(SECRET) }]],
    ["a malformed secret_hash", [{ id: "a", principal: "a", scheme: "bearer", secret_hash: SECRET, trust_level: "admin" }]],
    ["a duplicated secret", [entry("a", "bearer", SECRET), entry("b", "bearer", SECRET)]],
    ["a duplicated id", [entry("a", "bearer", SECRET), entry("a", "bearer", `${SECRET}-2`)]],
    ["an unknown scheme", [entry("a", SECRET as never, SECRET)]],
    ["a bad id holding the secret", [entry(`${SECRET} !`, "bearer", SECRET)]],
    ["an unknown field", [{ ...entry("a", "bearer", SECRET), token: SECRET }]],
    ["a bad expires_at", [entry("a", "bearer", SECRET, { expires_at: SECRET })]],
    ["a bad rate_limit", [entry("a", "bearer", SECRET, { rate_limit: { max_requests: SECRET as never } })]],
    ["not an array", { secret: SECRET }],
    ["an array of strings", [SECRET]],
  ];

  it.each(bad)("loadCredentials: %s", (_what, raw) => {
    let error: unknown;
    try {
      loadCredentials(raw, "A2A_CREDENTIALS", access);
    } catch (e) {
      error = e;
    }
    expect(error, "the entry is refused").toBeInstanceOf(CredentialError);
    const text = `${(error as Error).message}\n${JSON.stringify((error as CredentialError).problems)}`;
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain("short-9f8e");
  });

  it("CredentialRegistry: invalid JSON, no enabled credential, a secret clash between sources", () => {
    const cases: (() => unknown)[] = [
      () => new CredentialRegistry({ credentials: `[{"id":"a","secret":"${SECRET}"` }, { access }),
      () => new CredentialRegistry({ credentials: JSON.stringify([entry("a", "bearer", SECRET, { enabled: false })]) }, { access }),
      () => new CredentialRegistry({ bearerToken: SECRET, credentials: JSON.stringify([{ ...entry("env:A2A_BEARER_TOKEN", "bearer", `${SECRET}-x`) }]) }, { access }),
      () => new CredentialRegistry({}, { access }),
    ];
    for (const make of cases) {
      let error: unknown;
      try {
        make();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CredentialError);
      expect((error as Error).message).not.toContain(SECRET);
    }
  });

  it("loadConfig: a short bearer token and bad values next to secrets are named, not quoted", () => {
    const cases: Record<string, string>[] = [
      { A2A_BEARER_TOKEN: "s3cr3t!" },
      { A2A_BEARER_TOKEN: SECRET, A2A_PORT: "not-a-port" },
      { A2A_CREDENTIALS: `[{"secret":"${SECRET}"`, A2A_RATE_LIMIT_MAX_REQUESTS: "-1" },
      { A2A_BEARER_TOKEN: SECRET, OPENCODE_SERVER_PASSWORD: SECRET, OPENCODE_BASE_URL: "not a url" },
    ];
    for (const env of cases) {
      let error: unknown;
      try {
        loadConfig(env);
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(Object.keys(env))).toBeInstanceOf(Error);
      expect((error as Error).message).not.toContain(SECRET);
      expect((error as Error).message).not.toContain("s3cr3t!");
    }
  });
});
