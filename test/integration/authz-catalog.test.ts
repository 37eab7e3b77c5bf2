// Issue 6 access control, driven by the generated catalog (methods and routes are never listed by hand):
//   1. every JSON-RPC method (both lines; toggled methods with their toggles on) and every non-public route:
//      (a) no credentials → 401 UNAUTHENTICATED of the line + WWW-Authenticate; (b) wrong credentials of every
//      scheme → 401; (c) a credential holding every scope but the declared one → SCOPE_INSUFFICIENT naming it
//      (JSON-RPC: HTTP 200, -32060; REST: 403 with the line's REST error body);
//   2. trust levels: a credential of each level reaches exactly the methods and routes whose scope is in its
//      bundle (catalog.access_control), and the bundles are seed 001's table plus the project's scopes.
// Order (documented by tests below): REST routes check the scope at the edge, before the body is validated; JSON-RPC
// checks it per call right after resolving the method, before params are validated.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorEntry, type MethodEntry, type ProtocolLine, type RouteEntry } from "../../src/contract/catalog.js";
import { catalog, errorInfoOf, expectRestError, expectRpcError, fillPath } from "../support/contract.js";
import { type HttpResult } from "../support/gateway.js";
import { sample } from "../support/samples.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

type Obj = Record<string, any>;
type Headers = Record<string, string>;
const LINES: ProtocolLine[] = ["0.3", "1.0"];
const SCOPES = catalog.access_control.scopes.map((s) => s.name);
const LEVELS = catalog.access_control.trust_levels;
const TOGGLES = Object.fromEntries([...new Set(catalog.methods.flatMap((m) => (m.toggle ? [m.toggle] : [])))].map((t) => [t, "true"]));

// ---- credentials ----------------------------------------------------------------------------------------------------

const secretOf = (id: string) => `authz-${id}-secret-0123456789`;
const BASIC_USER = "authzuser";
interface Cred {
  id: string;
  principal: string;
  scheme: "bearer" | "api_key" | "basic";
  secret: string;
  trust_level: string;
  scopes?: string[];
}
const withoutScope = (scope: string): Cred => ({
  id: `without-${scope}`,
  principal: `p-without-${scope}`,
  scheme: "bearer",
  secret: secretOf(`without-${scope}`),
  trust_level: "execute",
  scopes: SCOPES.filter((s) => s !== scope),
});
const ofLevel = (level: string): Cred => ({ id: `level-${level}`, principal: `p-level-${level}`, scheme: "bearer", secret: secretOf(`level-${level}`), trust_level: level });
const SCHEME_CREDS: Cred[] = [
  { id: "scheme-bearer", principal: "p-bearer", scheme: "bearer", secret: secretOf("scheme-bearer"), trust_level: "admin" },
  { id: "scheme-apikey", principal: "p-apikey", scheme: "api_key", secret: secretOf("scheme-apikey"), trust_level: "admin" },
  { id: "scheme-basic", principal: "p-basic", scheme: "basic", secret: `${BASIC_USER}:${secretOf("scheme-basic")}`, trust_level: "admin" },
];
const CREDS: Cred[] = [...SCOPES.map(withoutScope), ...LEVELS.map((l) => ofLevel(l.name)), ...SCHEME_CREDS];

function headersOf(c: Cred): Headers {
  if (c.scheme === "bearer") return { authorization: `Bearer ${c.secret}` };
  if (c.scheme === "api_key") return { "x-api-key": c.secret };
  return { authorization: `Basic ${Buffer.from(c.secret).toString("base64")}` };
}
const [bearerCred, apiKeyCred, basicCred] = SCHEME_CREDS as [Cred, Cred, Cred];
/** Wrong credentials of every scheme, and right secrets presented under the wrong scheme. */
const WRONG: [string, Headers][] = [
  ["wrong bearer", { authorization: `Bearer ${bearerCred.secret}x` }],
  ["wrong api key", { "x-api-key": `${apiKeyCred.secret.slice(0, -1)}` }],
  ["wrong basic password", { authorization: `Basic ${Buffer.from(`${BASIC_USER}:${secretOf("nope")}`).toString("base64")}` }],
  ["wrong basic user", { authorization: `Basic ${Buffer.from(`other:${secretOf("scheme-basic")}`).toString("base64")}` }],
  ["api key secret as bearer", { authorization: `Bearer ${apiKeyCred.secret}` }],
  ["bearer secret as api key", { "x-api-key": bearerCred.secret }],
  ["basic secret as bearer", { authorization: `Bearer ${basicCred.secret}` }],
];

// ---- targets ----------------------------------------------------------------------------------------------------------

/** A JSON-RPC target: a method on a line, with the version headers that select it. */
interface RpcTarget {
  m: MethodEntry;
  line: ProtocolLine;
  version: Headers;
  label: string;
}
const RPC_TARGETS: RpcTarget[] = catalog.methods.flatMap((m) => {
  if (m.surface === "core") {
    const line = m.line as ProtocolLine;
    // 0.3 core methods need no A2A-Version (the default line); 1.0 PascalCase methods are sent with 1.0
    const version: Headers = line === "1.0" ? { "A2A-Version": "1.0" } : {};
    return [{ m, line, version, label: `${m.name}` }];
  }
  return LINES.map((line) => ({ m, line, version: { "A2A-Version": line }, label: `${m.name} (${line})` }));
});
interface RouteTarget {
  r: RouteEntry;
  line: ProtocolLine;
  label: string;
}
const PRIVATE_ROUTES = catalog.routes.filter((r) => !r.public);
const ROUTE_TARGETS: RouteTarget[] = PRIVATE_ROUTES.filter((r) => r.kind !== "jsonrpc").flatMap((r) =>
  (r.path.startsWith("/v1/") ? (["0.3"] as ProtocolLine[]) : LINES).map((line) => ({ r, line, label: `${r.verb} ${r.path} (${line})` })),
);

let rpcId = 0;
/** A text message in the shape of the line and transport. */
function textMessage(line: ProtocolLine, transport: "jsonrpc" | "rest", text = "authz hello"): Obj {
  const messageId = randomUUID();
  if (line === "1.0") return { messageId, role: "ROLE_USER", parts: [{ text }] };
  if (transport === "rest") return { messageId, role: "ROLE_USER", content: [{ text }] };
  return { kind: "message", messageId, role: "user", parts: [{ kind: "text", text }] };
}
/** Valid params: a sample of the params schema; sends and streams carry a real text message so the task runs. */
function paramsFor(t: RpcTarget): Obj {
  const p = structuredClone(sample(t.m.params_schema));
  if (t.m.operation === "send" || t.m.operation === "stream") p.message = textMessage(t.line, "jsonrpc");
  return p;
}
/** The body schema a route validates on `line` (root routes under 0.3 take their /v1 twin's). */
function bodySchema(r: RouteEntry, line: ProtocolLine): string | null {
  if (r.line === line || r.body_schema === null) return r.body_schema;
  const twin = catalog.routes.find((x) => x.kind === "a2a" && x.line === line && x.operation === r.operation && x.verb === r.verb);
  return twin?.body_schema ?? r.body_schema;
}
function bodyFor(t: RouteTarget): Obj | undefined {
  const schema = bodySchema(t.r, t.line);
  if (schema === null) return undefined;
  const body = structuredClone(sample(schema));
  if (t.r.operation === "send" || t.r.operation === "stream") body.message = textMessage(t.line, "rest");
  return body;
}

/** Fetch with a bound; an event stream is read to its end (the stub finishes its turns at once). */
async function send(url: string, path: string, init: { method: string; headers: Headers; body?: unknown }): Promise<HttpResult> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`${init.method} ${path} took more than 15 s`)), 15_000);
  try {
    const res = await fetch(`${url}${path}`, {
      method: init.method,
      headers: { ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      signal: controller.signal,
    });
    const text = await res.text();
    let body: unknown;
    if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) {
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
    }
    return { status: res.status, headers: res.headers, text, body };
  } finally {
    clearTimeout(timer);
  }
}
async function rpcAs(url: string, t: RpcTarget, headers: Headers, params: Obj = paramsFor(t)): Promise<HttpResult & { id: number }> {
  const id = ++rpcId;
  const res = await send(url, "/", { method: "POST", headers: { ...t.version, ...headers }, body: { jsonrpc: "2.0", id, method: t.m.name, params } });
  return { ...res, id };
}
async function routeAs(url: string, t: RouteTarget, headers: Headers, body: Obj | undefined = bodyFor(t)): Promise<HttpResult> {
  return send(url, fillPath(t.r.path), { method: t.r.verb, headers: { "A2A-Version": t.line, ...headers }, ...(body === undefined ? {} : { body }) });
}

/** The error reason of any answer (undefined: a success, an event stream included). */
async function reasonOf(res: HttpResult, line: ProtocolLine, jsonrpc: boolean): Promise<string | undefined> {
  const body = res.body as Obj | undefined;
  if (body === undefined) return undefined;
  const error = jsonrpc ? body.error : res.status >= 400 ? body : undefined;
  if (error === undefined) return undefined;
  if (jsonrpc) return line === "0.3" ? error.data?.type : (await errorInfoOf(error.data)).reason;
  return line === "0.3" ? error.data?.type : (await errorInfoOf(error.error?.details)).reason;
}

/** `required_scope` (and `method`) of a SCOPE_INSUFFICIENT error: 0.3 data members, 1.0 ErrorInfo metadata. */
async function scopeData(line: ProtocolLine, error: Obj, restBody?: Obj): Promise<{ scope: string; method: string }> {
  if (line === "0.3") {
    const data = restBody?.data ?? error.data;
    return { scope: data.required_scope, method: data.method };
  }
  const info = await errorInfoOf(restBody?.error?.details ?? error.data);
  return { scope: info.metadata?.requiredScope, method: info.metadata?.method };
}

function expectChallenge(res: HttpResult): void {
  expect(res.status, res.text).toBe(401);
  const challenge = res.headers.get("www-authenticate") ?? "";
  for (const scheme of ["Bearer", "Basic", "ApiKey"]) expect(challenge, "every enabled scheme is offered").toMatch(new RegExp(`\\b${scheme} realm=`));
}
/** The line a 401 comes back in: /v1 is 0.3; otherwise the A2A-Version sent (none → the default, 0.3). */
const challengeLine = (path: string, version: Headers): ProtocolLine => (path.startsWith("/v1/") ? "0.3" : ((version["A2A-Version"] as ProtocolLine | undefined) ?? "0.3"));

let tg: TaskGateway;
beforeAll(async () => {
  tg = await startTaskGateway({ ...TOGGLES, A2A_CREDENTIALS: JSON.stringify(CREDS), A2A_RATE_LIMIT_MAX_REQUESTS: "0", A2A_RATE_LIMIT_MAX_STREAMS: "0" });
});
afterAll(async () => {
  await tg?.close();
});

// ---- premises -----------------------------------------------------------------------------------------------------

describe("premises", () => {
  it("every method and non-public route declares a known scope; toggled methods are on here", () => {
    for (const m of catalog.methods) expect(SCOPES, m.name).toContain(m.scope);
    for (const r of PRIVATE_ROUTES) if (r.kind !== "jsonrpc") expect(SCOPES, `${r.verb} ${r.path}`).toContain(r.scope);
    expect(Object.keys(TOGGLES).length).toBeGreaterThan(0);
    expect(RPC_TARGETS.length).toBeGreaterThan(catalog.methods.length);
    expect(errorEntry("0.3", "SCOPE_INSUFFICIENT").code).toBe(-32060);
    expect(errorEntry("1.0", "SCOPE_INSUFFICIENT").code).toBe(-32060);
    expect(errorEntry("0.3", "SCOPE_INSUFFICIENT").http).toBe(403);
  });

  it("each scheme's valid credential is accepted (JSON-RPC and REST)", async () => {
    const card = RPC_TARGETS.find((t) => t.m.operation === "extended-card" && t.line === "0.3")!;
    for (const c of SCHEME_CREDS) {
      const res = await rpcAs(tg.url, card, headersOf(c));
      expect(res.body?.result, `${c.scheme}: ${res.text.slice(0, 200)}`).toBeDefined();
      expect((await send(tg.url, "/health", { method: "GET", headers: headersOf(c) })).status).toBe(200);
    }
  });
});

// ---- 1. every method / route ------------------------------------------------------------------------------------

describe("1a/1b. JSON-RPC: no or wrong credentials → HTTP 401 UNAUTHENTICATED of the line", () => {
  it.each(RPC_TARGETS.map((t) => [t.label, t] as const))("%s", async (_label, t) => {
    const line = challengeLine("/", t.version);
    const none = await rpcAs(tg.url, t, {});
    expectChallenge(none);
    await expectRpcError(none, line, "UNAUTHENTICATED", { httpStatus: 401, id: null });
    for (const [what, headers] of WRONG) {
      const res = await rpcAs(tg.url, t, headers);
      expectChallenge(res);
      await expectRpcError(res, line, "UNAUTHENTICATED", { httpStatus: 401, id: null });
      expect(res.text, what).not.toContain("result");
    }
  });
});

describe("1a/1b. REST: no or wrong credentials → 401 UNAUTHENTICATED of the line", () => {
  it.each(PRIVATE_ROUTES.flatMap((r) => (r.path.startsWith("/v1/") ? ["0.3"] : LINES).map((line) => [`${r.verb} ${r.path} (${line})`, r, line as ProtocolLine] as const)))(
    "%s",
    async (_label, r, line) => {
      const t: RouteTarget = { r, line, label: "" };
      const body = r.kind === "jsonrpc" ? { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "x" } } : bodyFor(t);
      for (const [what, headers] of [["none", {}] as [string, Headers], ...WRONG]) {
        const res = await routeAs(tg.url, t, headers, body);
        expectChallenge(res);
        if (r.kind === "jsonrpc") await expectRpcError(res, line, "UNAUTHENTICATED", { httpStatus: 401, id: null });
        else await expectRestError(res, challengeLine(r.path, { "A2A-Version": line }), "UNAUTHENTICATED");
        expect(res.text, what).not.toMatch(/"(result|artifacts|history)":/);
      }
    },
  );
});

describe("1c. JSON-RPC: every scope but the declared one → SCOPE_INSUFFICIENT (HTTP 200, -32060, required_scope)", () => {
  it.each(RPC_TARGETS.map((t) => [t.label, t] as const))("%s", async (_label, t) => {
    const cred = withoutScope(t.m.scope!);
    const variants: Headers[] = t.line === "0.3" && t.m.surface === "core" ? [{}, { "A2A-Version": "0.3" }] : [t.version];
    for (const version of variants) {
      const res = await rpcAs(tg.url, { ...t, version }, headersOf(cred));
      const error = await expectRpcError(res, t.line, "SCOPE_INSUFFICIENT", { id: res.id });
      expect(error.code).toBe(-32060);
      expect(await scopeData(t.line, error)).toEqual({ scope: t.m.scope, method: t.m.name });
    }
    // the same credential is not refused for lack of anything else: with the scope back, the scope check passes
    const full = await rpcAs(tg.url, t, headersOf(ofLevel("admin")));
    expect(await reasonOf(full, t.line, true), full.text.slice(0, 300)).not.toBe("SCOPE_INSUFFICIENT");
  });
});

describe("1c. REST: every scope but the route's → 403 SCOPE_INSUFFICIENT in the line's REST error body", () => {
  it.each(ROUTE_TARGETS.map((t) => [t.label, t] as const))("%s", async (_label, t) => {
    const res = await routeAs(tg.url, t, headersOf(withoutScope(t.r.scope!)));
    const body = await expectRestError(res, t.line, "SCOPE_INSUFFICIENT", 403);
    const data = await scopeData(t.line, {}, body);
    expect(data.scope).toBe(t.r.scope);
    expect(data.method).toBe(t.r.id);
  });
});

describe("1. order of the checks", () => {
  it("REST: the scope is checked at the edge before the body is validated (403, not 400)", async () => {
    const withBody = ROUTE_TARGETS.filter((t) => bodySchema(t.r, t.line) !== null);
    expect(withBody.length).toBeGreaterThan(0);
    for (const t of withBody) {
      const res = await routeAs(tg.url, t, headersOf(withoutScope(t.r.scope!)), { not: "a valid body" });
      await expectRestError(res, t.line, "SCOPE_INSUFFICIENT", 403);
      // with the scope the same body is refused by validation
      const ok = await routeAs(tg.url, t, headersOf(ofLevel("admin")), { not: "a valid body" });
      expect(await reasonOf(ok, t.line, false), `${t.label}: ${ok.text.slice(0, 200)}`).toBe("INVALID_PARAMS");
    }
  });

  it("JSON-RPC: the scope is checked before params are validated (a caller without it learns nothing about them)", async () => {
    for (const t of RPC_TARGETS.filter((x) => x.m.name === "tasks/get" || x.m.name === "GetTask" || x.m.name === "opencode.sessions.get")) {
      for (const params of [{ historyLength: "not a number" }, { id: 42, session_id: 42 }]) {
        const res = await rpcAs(tg.url, t, headersOf(withoutScope(t.m.scope!)), params);
        await expectRpcError(res, t.line, "SCOPE_INSUFFICIENT", { id: res.id });
        const ok = await rpcAs(tg.url, t, headersOf(ofLevel("admin")), params);
        await expectRpcError(ok, t.line, "INVALID_PARAMS", { id: ok.id });
      }
    }
  });

  it("JSON-RPC batch: each call is checked on its own", async () => {
    const cred = withoutScope("tasks.cancel");
    const res = await send(tg.url, "/", {
      method: "POST",
      headers: headersOf(cred),
      body: [
        { jsonrpc: "2.0", id: "get", method: "tasks/get", params: { id: randomUUID() } },
        { jsonrpc: "2.0", id: "cancel", method: "tasks/cancel", params: { id: randomUUID() } },
      ],
    });
    const byId = new Map((res.body as Obj[]).map((r) => [r.id, r]));
    expect(byId.get("get")!.error.data.type).toBe("TASK_NOT_FOUND");
    expect(byId.get("cancel")!.error.data.type).toBe("SCOPE_INSUFFICIENT");
    expect(byId.get("cancel")!.error.data.required_scope).toBe("tasks.cancel");
  });
});

// ---- 2. trust levels -------------------------------------------------------------------------------------------------

describe("2. trust levels", () => {
  const bundle = (name: string): string[] => [...LEVELS.find((l) => l.name === name)!.scopes].sort();
  const SEED_SCOPES = ["tasks.read", "tasks.create", "tasks.cancel", "tasks.stream", "agents.read", "agents.list", "results.read", "results.files"];
  // seed 001, "Trust Levels", literally
  const SEED_READ_ONLY = ["agents.list", "agents.read", "tasks.read", "results.read"];
  const SEED_EXECUTE = [...SEED_READ_ONLY, "tasks.create"];
  const SEED_AUTONOMOUS = [...SEED_EXECUTE, "tasks.cancel", "results.files"];
  const SEED: Record<string, string[]> = { read_only: SEED_READ_ONLY, execute: SEED_EXECUTE, autonomous: SEED_AUTONOMOUS, admin: SEED_SCOPES };
  // the project's read scopes of the provider-private families (spec/security.tsp)
  const OUR_READS = ["sessions.read", "workspaces.read", "interrupts.read"];

  it("the four levels of seed 001, in order, each including the one before", () => {
    expect(LEVELS.map((l) => l.name)).toEqual(["read_only", "execute", "autonomous", "admin"]);
    for (let i = 1; i < LEVELS.length; i++) {
      expect(LEVELS[i]!.includes).toBe(LEVELS[i - 1]!.name);
      expect(bundle(LEVELS[i]!.name)).toEqual(expect.arrayContaining(bundle(LEVELS[i - 1]!.name)));
    }
    expect(LEVELS.filter((l) => l.sees_all_principals).map((l) => l.name)).toEqual(["admin"]);
  });

  it.each(Object.entries(SEED))("%s: seed 001's A2A scopes exactly", (level, seedScopes) => {
    expect(bundle(level).filter((s) => SEED_SCOPES.includes(s))).toEqual([...seedScopes].sort());
  });

  it("the provider-private scopes: reads in read_only, replies and subtasks in execute, session control and outbound calls in autonomous, the rest admin only", () => {
    expect(bundle("read_only")).toEqual([...SEED_READ_ONLY, ...OUR_READS].sort());
    // subtasks.run sits with tasks.create: each item is a task of the caller
    expect(bundle("execute")).toEqual([...bundle("read_only"), "tasks.create", "subtasks.run", "interrupts.reply"].sort());
    // peers.call: the MCP tools (POST /mcp) that call other A2A agents
    expect(bundle("autonomous")).toEqual([...bundle("execute"), "tasks.cancel", "results.files", "sessions.control", "peers.call"].sort());
    expect(bundle("admin")).toEqual([...SCOPES].sort());
    // streaming is not in the seed's lower rows: admin only
    for (const level of ["read_only", "execute", "autonomous"]) expect(bundle(level), level).not.toContain("tasks.stream");
  });

  describe.each(LEVELS.map((l) => [l.name] as const))("%s", (level) => {
    const scopes = new Set(bundle(level));
    const cred = ofLevel(level);

    it("JSON-RPC: allowed exactly when the method's scope is in the bundle", async () => {
      const wrong: string[] = [];
      for (const t of RPC_TARGETS) {
        const res = await rpcAs(tg.url, t, headersOf(cred));
        expect(res.status, `${t.label}: ${res.text.slice(0, 200)}`).toBe(200);
        const reason = await reasonOf(res, t.line, true);
        if (scopes.has(t.m.scope!)) {
          if (reason === "SCOPE_INSUFFICIENT" || reason === "UNAUTHENTICATED") wrong.push(`${t.label} refused (${reason})`);
        } else if (reason !== "SCOPE_INSUFFICIENT") wrong.push(`${t.label} not refused (${reason ?? "ok"})`);
        else expect((await scopeData(t.line, res.body.error)).scope).toBe(t.m.scope);
      }
      expect(wrong).toEqual([]);
    });

    it("REST: allowed exactly when the route's scope is in the bundle", async () => {
      const wrong: string[] = [];
      for (const t of ROUTE_TARGETS) {
        const res = await routeAs(tg.url, t, headersOf(cred));
        const reason = await reasonOf(res, t.line, false);
        if (scopes.has(t.r.scope!)) {
          if (res.status === 401 || res.status === 403) wrong.push(`${t.label} refused (${res.status} ${reason})`);
        } else if (res.status !== 403 || reason !== "SCOPE_INSUFFICIENT") wrong.push(`${t.label} not refused (${res.status} ${reason})`);
      }
      expect(wrong).toEqual([]);
    });
  });

  it("a task really runs for the levels holding tasks.create (blocking send completes on the stub)", async () => {
    const t = RPC_TARGETS.find((x) => x.m.name === "message/send")!;
    for (const level of ["execute", "autonomous", "admin"]) {
      const res = await rpcAs(tg.url, t, headersOf(ofLevel(level)));
      expect(res.body?.result?.status?.state, `${level}: ${res.text.slice(0, 300)}`).toBe("completed");
    }
  });
});
