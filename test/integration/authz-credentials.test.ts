// Issue 6 credentials at the edge: refusal of every wrong key whatever its length or closeness to a right one (each
// scheme), the Host and Origin guards (421 / 403, CORS answers, preflights), the cards' security schemes (exactly the
// schemes of the enabled, unexpired credentials), expiry and disabling, and a credentials file edited while the
// gateway runs.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProtocolLine } from "../../src/contract/catalog.js";
import { expectRestError, expectRpcError, expectValid } from "../support/contract.js";
import { call, rawRequest, rpc, startGateway, TEST_TOKEN, type HttpResult, type StartedGateway } from "../support/gateway.js";
import { until } from "../support/task-wire.js";

type Obj = Record<string, any>;
type Scheme = "bearer" | "api_key" | "basic";
const LINES: ProtocolLine[] = ["0.3", "1.0"];

function headerFor(scheme: Scheme, secret: string): Record<string, string> {
  if (scheme === "bearer") return { authorization: `Bearer ${secret}` };
  if (scheme === "api_key") return { "x-api-key": secret };
  return { authorization: `Basic ${Buffer.from(secret, "utf8").toString("base64")}` };
}
const entry = (id: string, scheme: Scheme, secret: string, extra: Obj = {}) => ({ id, principal: `p-${id}`, scheme, secret, trust_level: "admin", ...extra });
/** GET /health as the given headers (no default token). */
const health = (gw: StartedGateway, headers: Record<string, string>) => call(gw.url, "/health", { auth: false, headers });

/** Runs `jobs` with at most `width` in flight (bounded parallelism). */
async function inBatches<T>(jobs: (() => Promise<T>)[], width = 25): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < jobs.length; i += width) out.push(...(await Promise.all(jobs.slice(i, i + width).map((j) => j()))));
  return out;
}
const asResult = (r: Awaited<ReturnType<typeof rawRequest>>): HttpResult => {
  const text = r.raw.toString("utf8");
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: r.status, headers: new Headers(r.headers as Record<string, string>), text, body };
};

// ---- 5. wrong keys of every length ---------------------------------------------------------------------------------

describe("5. every wrong key is refused, whatever its length or closeness to the right one", () => {
  const KEYS: Record<Scheme, string> = {
    bearer: "ctBearerKey0123456789abcdefXYZ",
    api_key: "ctApiKey0123456789abcdefghijXYZ",
    basic: "ctuser:ctPassword0123456789abcXYZ",
  };
  let gw: StartedGateway;
  beforeAll(async () => {
    gw = await startGateway({
      A2A_BEARER_TOKEN: "",
      A2A_CREDENTIALS: JSON.stringify((Object.keys(KEYS) as Scheme[]).map((s) => entry(`ct-${s}`, s, KEYS[s]))),
      A2A_RATE_LIMIT_MAX_REQUESTS: "0",
    });
  });
  afterAll(() => gw?.close());

  const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  /** Deterministic pseudo-random key of `length` characters (a tiny LCG: reproducible failures). */
  function randomKey(length: number, seed: number): string {
    let x = seed * 2654435761 + 1;
    let out = "";
    for (let i = 0; i < length; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      out += ALPHABET[x % ALPHABET.length];
    }
    return out;
  }
  function candidates(key: string, scheme: Scheme): string[] {
    const out = new Set<string>();
    for (let length = 0; length <= 200; length++) {
      const k = randomKey(length, length + 1);
      // basic: a wrong password for the right user as well as a wrong "user:password" of every length
      out.add(k);
      if (scheme === "basic") out.add(`ctuser:${k}`);
    }
    for (let i = 0; i < key.length; i++) out.add(key.slice(0, i)); // every proper prefix
    for (let i = 0; i < key.length; i++) {
      const c = key[i]!;
      out.add(key.slice(0, i) + (c === "A" ? "B" : "A") + key.slice(i + 1)); // one character changed
      out.add(key.slice(0, i) + key.slice(i + 1)); // one character removed
    }
    out.add(`${key}A`);
    out.add(`A${key}`);
    out.add(key.toUpperCase());
    out.add(key.toLowerCase());
    out.delete(key);
    return [...out];
  }

  it.each(["bearer", "api_key", "basic"] as const)("%s", async (scheme) => {
    const key = KEYS[scheme];
    expect((await health(gw, headerFor(scheme, key))).status, "the right key works").toBe(200);
    const wrong = candidates(key, scheme);
    expect(wrong.length).toBeGreaterThan(250);
    const statuses = await inBatches(wrong.map((k) => async () => [k, (await health(gw, headerFor(scheme, k))).status] as const));
    const accepted = statuses.filter(([, status]) => status !== 401);
    expect(accepted, "every wrong key → 401").toEqual([]);
  });

  it("a right secret under another scheme is refused", async () => {
    for (const [scheme, other] of [
      ["bearer", "api_key"],
      ["api_key", "bearer"],
      ["basic", "bearer"],
      ["bearer", "basic"],
    ] as const) {
      const res = await health(gw, headerFor(other, scheme === "bearer" && other === "basic" ? `x:${KEYS.bearer}` : KEYS[scheme]));
      expect(res.status, `${scheme} secret as ${other}`).toBe(401);
    }
  });
});

// ---- 6. Host and Origin ---------------------------------------------------------------------------------------------

describe("6. Host guard (A2A_ALLOWED_HOSTS)", () => {
  let gw: StartedGateway;
  let listed: StartedGateway;
  beforeAll(async () => {
    [gw, listed] = await Promise.all([startGateway(), startGateway({ A2A_ALLOWED_HOSTS: "a2a.example.com" })]);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), listed?.close()]);
  });
  const port = (g: StartedGateway) => new URL(g.url).port;
  const withHost = (g: StartedGateway, host: string, p = "/.well-known/agent-card.json", extra: Record<string, string> = {}) =>
    rawRequest(g.url, p, { headers: { host, ...extra } }).then(asResult);

  it("default: a foreign Host → 421 HOST_NOT_ALLOWED on every kind of route, before authentication", async () => {
    for (const host of ["evil.example", `evil.example:${port(gw)}`, "localhost.evil.example", "127.0.0.2"]) {
      await expectRestError(await withHost(gw, host), "0.3", "HOST_NOT_ALLOWED", 421);
      await expectRestError(await withHost(gw, host, "/health", { authorization: `Bearer ${TEST_TOKEN}` }), "0.3", "HOST_NOT_ALLOWED", 421);
      await expectRestError(await withHost(gw, host, "/health"), "0.3", "HOST_NOT_ALLOWED", 421);
      await expectRestError(await withHost(gw, host, "/tasks", { "A2A-Version": "1.0" }), "1.0", "HOST_NOT_ALLOWED", 421);
    }
    const res = asResult(
      await rawRequest(gw.url, "/", {
        method: "POST",
        headers: { host: "evil.example", authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "agent/getAuthenticatedExtendedCard" }),
      }),
    );
    await expectRpcError(res, "0.3", "HOST_NOT_ALLOWED", { httpStatus: 421, id: null });
  });

  it("default: 127.0.0.1:port, localhost:port and [::1]:port are served", async () => {
    for (const host of [`127.0.0.1:${port(gw)}`, `localhost:${port(gw)}`, `[::1]:${port(gw)}`, "localhost"]) {
      expect((await withHost(gw, host)).status, host).toBe(200);
      expect((await withHost(gw, host, "/health", { authorization: `Bearer ${TEST_TOKEN}` })).status, host).toBe(200);
    }
  });

  it("an explicit list replaces the default", async () => {
    expect((await withHost(listed, "a2a.example.com")).status).toBe(200);
    expect((await withHost(listed, "A2A.example.com:8443")).status).toBe(200);
    await expectRestError(await withHost(listed, `127.0.0.1:${port(listed)}`), "0.3", "HOST_NOT_ALLOWED", 421);
    await expectRestError(await withHost(listed, "evil.example"), "0.3", "HOST_NOT_ALLOWED", 421);
  });
});

describe("6. Origin guard and CORS (A2A_ALLOWED_ORIGINS)", () => {
  const APP = "https://app.example.com";
  const EVIL = "https://evil.example";
  let gw: StartedGateway;
  beforeAll(async () => {
    gw = await startGateway({ A2A_ALLOWED_ORIGINS: APP });
  });
  afterAll(() => gw?.close());

  it("an authenticated route from a foreign Origin → 403 ORIGIN_NOT_ALLOWED (REST of both lines, JSON-RPC)", async () => {
    await expectRestError(await call(gw.url, "/health", { headers: { origin: EVIL } }), "0.3", "ORIGIN_NOT_ALLOWED", 403);
    await expectRestError(await call(gw.url, "/tasks", { headers: { origin: EVIL, "A2A-Version": "1.0" } }), "1.0", "ORIGIN_NOT_ALLOWED", 403);
    const res = await rpc(gw.url, { jsonrpc: "2.0", id: 1, method: "agent/getAuthenticatedExtendedCard" }, { origin: EVIL });
    await expectRpcError(res, "0.3", "ORIGIN_NOT_ALLOWED", { httpStatus: 403, id: null });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("an allowed Origin (and the public URL's own) gets the CORS answer", async () => {
    for (const origin of [APP, gw.url]) {
      const res = await call(gw.url, "/health", { headers: { origin } });
      expect(res.status, origin).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe(origin);
      expect(res.headers.get("vary") ?? "").toMatch(/Origin/i);
      const exposed = res.headers.get("access-control-expose-headers") ?? "";
      for (const h of ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "WWW-Authenticate", "A2A-Version"]) expect(exposed).toContain(h);
    }
    const rpcRes = await rpc(gw.url, { jsonrpc: "2.0", id: 1, method: "agent/getAuthenticatedExtendedCard" }, { origin: APP });
    expect(rpcRes.body.result).toBeDefined();
    expect(rpcRes.headers.get("access-control-allow-origin")).toBe(APP);
  });

  it("preflight OPTIONS from an allowed Origin → 204 with Access-Control-Allow-*; from a foreign one → 403", async () => {
    for (const [path, verb] of [
      ["/", "POST"],
      ["/message:send", "POST"],
      ["/v1/tasks/abc", "GET"],
    ] as const) {
      const res = await call(gw.url, path, {
        method: "OPTIONS",
        auth: false,
        headers: { origin: APP, "access-control-request-method": verb, "access-control-request-headers": "authorization, content-type, a2a-version" },
      });
      expect(res.status, path).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe(APP);
      expect(res.headers.get("access-control-allow-methods") ?? "").toContain(verb);
      const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase();
      for (const h of ["authorization", "x-api-key", "content-type", "a2a-version"]) expect(allowed, path).toContain(h);
      expect(Number(res.headers.get("access-control-max-age"))).toBeGreaterThan(0);
      const evil = await call(gw.url, path, { method: "OPTIONS", auth: false, headers: { origin: EVIL, "access-control-request-method": verb } });
      await expectRestError(evil, "0.3", "ORIGIN_NOT_ALLOWED", 403);
    }
  });

  it("the public card answers any Origin with Access-Control-Allow-Origin: * (and its preflight too)", async () => {
    for (const origin of [EVIL, APP, "null"]) {
      for (const line of LINES) {
        const res = await call(gw.url, "/.well-known/agent-card.json", { auth: false, headers: { origin, "A2A-Version": line } });
        expect(res.status).toBe(200);
        expect(res.headers.get("access-control-allow-origin")).toBe("*");
      }
      const pre = await call(gw.url, "/.well-known/agent-card.json", { method: "OPTIONS", auth: false, headers: { origin, "access-control-request-method": "GET" } });
      expect(pre.status).toBe(204);
      expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    }
  });

  it("requests without Origin are not affected", async () => {
    const res = await call(gw.url, "/health");
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});

// ---- 6. cards list the enabled schemes -----------------------------------------------------------------------------

const SCHEME_NAME: Record<Scheme, string> = { bearer: "bearerAuth", api_key: "apiKeyAuth", basic: "basicAuth" };
/** The scheme names a card advertises, checked for consistency between its two members. */
async function advertised(gw: StartedGateway, line: ProtocolLine, extended: boolean, auth: Record<string, string> = {}): Promise<string[]> {
  const res = await call(gw.url, extended ? "/agent/authenticatedExtendedCard" : "/.well-known/agent-card.json", { auth: false, headers: { "A2A-Version": line, ...auth } });
  expect(res.status, res.text.slice(0, 200)).toBe(200);
  const card = res.body;
  await expectValid(line === "0.3" ? "v0_3/AgentCard" : "v1_0/AgentCard", card);
  const names = Object.keys(card.securitySchemes ?? {}).sort();
  if (line === "0.3") expect((card.security as Obj[]).flatMap((r) => Object.keys(r)).sort()).toEqual(names);
  else expect((card.securityRequirements as Obj[]).flatMap((r) => Object.keys(r.schemes)).sort()).toEqual(names);
  return names;
}
async function challenge(gw: StartedGateway): Promise<string> {
  return (await health(gw, {})).headers.get("www-authenticate") ?? "";
}

describe("6. the cards advertise exactly the schemes of the enabled credentials", () => {
  const past = "2001-01-01T00:00:00Z";
  const KEY = "cards-api-key-0123456789abcdef";
  const gws: StartedGateway[] = [];
  const start = async (creds: Obj[]) => {
    const g = await startGateway({ A2A_BEARER_TOKEN: "", A2A_CREDENTIALS: JSON.stringify(creds) });
    gws.push(g);
    return g;
  };
  afterAll(async () => {
    await Promise.all(gws.map((g) => g.close()));
  });

  it("all three schemes enabled → all three, on both lines, public and extended cards", async () => {
    const g = await start([entry("b", "bearer", "cards-bearer-0123456789abcdef"), entry("k", "api_key", KEY), entry("u", "basic", "user:cards-basic-0123456789")]);
    for (const line of LINES)
      for (const extended of [false, true]) expect(await advertised(g, line, extended, headerFor("api_key", KEY))).toEqual(["apiKeyAuth", "basicAuth", "bearerAuth"]);
    expect(await challenge(g)).toMatch(/Bearer realm=.*Basic realm=|Basic realm=.*Bearer realm=/);
  });

  it("a scheme whose only credential is disabled is absent (cards and WWW-Authenticate)", async () => {
    const g = await start([entry("k", "api_key", KEY), entry("u", "basic", "user:cards-basic-0123456789", { enabled: false })]);
    for (const line of LINES) for (const extended of [false, true]) expect(await advertised(g, line, extended, headerFor("api_key", KEY))).toEqual([SCHEME_NAME.api_key]);
    expect(await challenge(g)).not.toMatch(/Basic/);
    expect(await challenge(g)).toMatch(/ApiKey realm=/);
  });

  it("a scheme whose only credential has expired is absent (cards and WWW-Authenticate)", async () => {
    const g = await start([entry("k", "api_key", KEY), entry("b", "bearer", "cards-bearer-0123456789abcdef", { expires_at: past })]);
    expect((await health(g, headerFor("bearer", "cards-bearer-0123456789abcdef"))).status, "premise: the credential is expired").toBe(401);
    for (const line of LINES) for (const extended of [false, true]) expect(await advertised(g, line, extended, headerFor("api_key", KEY)), `${line} extended=${extended}`).toEqual([SCHEME_NAME.api_key]);
    expect(await challenge(g)).not.toMatch(/Bearer/);
  });
});

// ---- 7. expiry, disabling, the credentials file ----------------------------------------------------------------------

describe("7. expiry and disabling", () => {
  let gw: StartedGateway;
  const creds: Record<"expired" | "disabled" | "future" | "soon", Obj> = {
    expired: entry("expired", "bearer", "expired-bearer-0123456789abc", { expires_at: "2020-01-01T00:00:00Z" }),
    disabled: entry("disabled", "api_key", "disabled-apikey-0123456789abc", { enabled: false }),
    future: entry("future", "basic", "fut:future-basic-0123456789abc", { expires_at: "2999-01-01T00:00:00Z" }),
    soon: entry("soon", "bearer", "soon-bearer-0123456789abcdef"),
  };
  beforeAll(async () => {
    creds.soon = { ...creds.soon, expires_at: new Date(Date.now() + 2000).toISOString() };
    gw = await startGateway({ A2A_CREDENTIALS: JSON.stringify(Object.values(creds)) });
  });
  afterAll(() => gw?.close());

  it("expires_at in the past → 401; enabled: false → 401; a future expiry works (REST and JSON-RPC)", async () => {
    for (const c of [creds.expired, creds.disabled]) {
      const h = headerFor(c.scheme as Scheme, c.secret);
      await expectRestError(await health(gw, h), "0.3", "UNAUTHENTICATED", 401);
      await expectRpcError(await rpc(gw.url, { jsonrpc: "2.0", id: 1, method: "agent/getAuthenticatedExtendedCard" }, { authorization: undefined, ...h }), "0.3", "UNAUTHENTICATED", { httpStatus: 401, id: null });
    }
    expect((await health(gw, headerFor("basic", creds.future.secret))).status).toBe(200);
  });

  it("a credential stops working when its expires_at passes (bounded poll)", async () => {
    const h = headerFor("bearer", creds.soon.secret);
    expect((await health(gw, h)).status, "works before its expiry").toBe(200);
    await until("the credential to expire", async () => ((await health(gw, h)).status === 401 ? true : undefined), 6000);
    await expectRestError(await health(gw, h), "0.3", "UNAUTHENTICATED", 401);
  });
});

describe("7. a credentials file edited while the gateway runs", () => {
  let dir: string;
  let file: string;
  let gw: StartedGateway;
  const first = entry("file-one", "bearer", "file-one-bearer-0123456789ab");
  const second = entry("file-two", "api_key", "file-two-apikey-0123456789ab");
  const write = (list: Obj[]) => {
    // write to a temp file and rename: the gateway never reads a half-written file
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(list, null, 2));
    fs.renameSync(`${file}.tmp`, file);
  };
  const h1 = headerFor("bearer", first.secret);
  const h2 = headerFor("api_key", second.secret);
  const status = async (h: Record<string, string>) => (await health(gw, h)).status;
  const becomes = (h: Record<string, string>, want: number, what: string) => until(what, async () => ((await status(h)) === want ? true : undefined), 5000, 100);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "authz-credentials-"));
    file = path.join(dir, "credentials.json");
    write([first]);
    gw = await startGateway({ A2A_BEARER_TOKEN: "", A2A_CREDENTIALS_FILE: file });
  });
  afterAll(async () => {
    await gw?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("an appended key starts working, a disabled one stops, a removed one stops (each within a few seconds)", async () => {
    expect(await status(h1)).toBe(200);
    expect(await status(h2)).toBe(401);
    write([first, second]);
    await becomes(h2, 200, "the appended key to work");
    expect(await status(h1)).toBe(200);
    write([{ ...first, enabled: false }, second]);
    await becomes(h1, 401, "the disabled key to stop working");
    expect(await status(h2)).toBe(200);
    write([{ ...first, enabled: true }, second]);
    await becomes(h1, 200, "the re-enabled key to work");
    write([second]);
    await becomes(h1, 401, "the removed key to stop working");
  });

  it("a broken edit keeps the previous credentials in force; fixing it applies the new ones", async () => {
    write([first, second]);
    await becomes(h1, 200, "both keys");
    fs.writeFileSync(file, `[{"id": "broken", "secret": "${"s".repeat(20)}"`); // not JSON
    await new Promise((r) => setTimeout(r, 1300)); // past the recheck interval: the broken file has been seen
    expect(await status(h1)).toBe(200);
    expect(await status(h2)).toBe(200);
    write([second]);
    await becomes(h1, 401, "the fixed file to apply");
  });

  it("the cards follow the file: a scheme appears with its first enabled key and goes with its last", async () => {
    write([first]);
    await becomes(h2, 401, "only the bearer key");
    expect(await advertised(gw, "0.3", false)).toEqual([SCHEME_NAME.bearer]);
    write([first, second]);
    await becomes(h2, 200, "the api key");
    await until("the cards to list apiKeyAuth", async () => ((await advertised(gw, "0.3", false)).includes(SCHEME_NAME.api_key) ? true : undefined), 3000);
    expect(await advertised(gw, "1.0", true, h2)).toEqual([SCHEME_NAME.api_key, SCHEME_NAME.bearer]);
    write([{ ...first, enabled: false }, second]);
    await becomes(h1, 401, "the bearer key disabled");
    await until("the cards to drop bearerAuth", async () => (!(await advertised(gw, "1.0", false)).includes(SCHEME_NAME.bearer) ? true : undefined), 3000);
  });
});
