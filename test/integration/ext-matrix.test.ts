// The error-path matrix of every extension method (issue 5), driven by the generated catalog: each
// `surface: "extension"` method of generated/contract/catalog.json is called on both protocol lines with
//   1. bad params (`{}` when fields are required; a wrong JSON type for each declared top-level field) → -32602 naming it;
//   2. its `toggle` off → -32601 naming the toggle (and callable with the toggle on);
//   3. OpenCode down (OPENCODE_BASE_URL on a closed 127.0.0.1 port) → a typed upstream error, bounded in time;
//      3b. OpenCode answering 5xx / a 2xx that is not the contract's shape (its HTML web UI) / too slowly →
//      UPSTREAM_HTTP_ERROR / UPSTREAM_PAYLOAD_ERROR / UPSTREAM_TIMEOUT;
//   4. an unknown session / request / task / subtask call → *_NOT_FOUND; another principal's session →
//      SESSION_FORBIDDEN for the admin on owner-guarded methods (the admin reads every session), SESSION_NOT_FOUND
//      for a non-admin on every session method; another principal's request / task / call → not found;
//   5. every error any call returns is declared for the method in the catalog (project errors) or generic
//      (JSON-RPC / A2A origin), and never INTERNAL_ERROR;
//   6. a success call with valid params returns a result valid against the method's `result_schema`.
// Methods are never listed by hand: the catalog says which fields, toggles, scopes and errors each one has. The stub
// OpenCode lacks the project / workspace / worktree routes; those calls get canned 2xx bodies through
// `stub.failNext` for exactly the routes the gateway asked for (the gateway's own code still runs end to end).
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import net from "node:net";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Principal } from "../../src/auth/index.js";
import { errorEntry, generatedDir, type MethodEntry, type ProtocolLine } from "../../src/contract/catalog.js";
import { loadConfig } from "../../src/config/index.js";
import { createGateway, type Gateway } from "../../src/server/app.js";
import { openStorage, type Storage, type StoredMessage } from "../../src/storage/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { text, tool } from "../../tools/upstream/script.js";
import type { StubUpstream } from "../../tools/upstream/stub.js";
import { catalog, errorInfoOf, expectRpcError, expectValid, rpcReason } from "../support/contract.js";
import { ONE_ADDRESS_ENV, rpc, TEST_TOKEN, type HttpResult } from "../support/gateway.js";
import { sample } from "../support/samples.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

type Obj = Record<string, any>;
const LINES: ProtocolLine[] = ["0.3", "1.0"];
const EXT = catalog.methods.filter((m) => m.surface === "extension");
const byName = (name: string): MethodEntry => {
  const m = catalog.methods.find((x) => x.name === name);
  if (!m) throw new Error(`${name} is not in the catalog`);
  return m;
};
const ORIGIN = new Map<string, string>(catalog.errors["0.3"].map((e) => [e.reason, e.origin]));
/** Every toggle of the catalog switched on (the gateways where toggled methods must be callable), or off. */
const TOGGLE_NAMES = [...new Set(EXT.flatMap((m) => (m.toggle ? [m.toggle] : [])))];
const ALL_TOGGLES = Object.fromEntries(TOGGLE_NAMES.map((t) => [t, "true"]));
const NO_TOGGLES = Object.fromEntries(TOGGLE_NAMES.map((t) => [t, "false"]));
const UPSTREAM_TIMEOUT_S = 2;
/** No call may take longer than this (the gateways' OPENCODE_TIMEOUT plus slack). */
const CALL_BUDGET_MS = UPSTREAM_TIMEOUT_S * 1000 + 2_000;
const ADMIN_ID = "admin"; // the principal of A2A_BEARER_TOKEN (src/auth)
const OTHER: Principal = { id: "matrix-other", trustLevel: "execute", credentialId: "test:matrix-other", scopes: new Set(catalog.scopes), admin: false };

// ---- schema introspection (generated JSON Schemas) ------------------------------------------------------------------

function loadSchema(group: string, file: string): Obj {
  return JSON.parse(fs.readFileSync(path.join(generatedDir, "json-schema", group, file), "utf8")) as Obj;
}
function paramsSchema(m: MethodEntry): { group: string; root: Obj } {
  const [group, name] = m.params_schema.split("/") as [string, string];
  return { group, root: loadSchema(group, `${name}.json`) };
}
const requiredOf = (m: MethodEntry): string[] => paramsSchema(m).root.required ?? [];
const propertiesOf = (m: MethodEntry): string[] => Object.keys(paramsSchema(m).root.properties ?? {});
const hasParam = (m: MethodEntry, name: string): boolean => propertiesOf(m).includes(name);

/** The JSON types a (sub)schema admits ("integer" and "number" kept apart). */
function jsonTypes(group: string, root: Obj, s: Obj, depth = 0): Set<string> {
  if (depth > 10) throw new Error("schema too deep");
  const out = new Set<string>();
  if (typeof s.$ref === "string") {
    if (s.$ref.startsWith("#/$defs/")) return jsonTypes(group, root, root.$defs[s.$ref.slice(8)], depth + 1);
    const target = loadSchema(group, s.$ref);
    return jsonTypes(group, target, target, depth + 1);
  }
  if (typeof s.type === "string") out.add(s.type);
  if (Array.isArray(s.type)) for (const t of s.type) out.add(t);
  if ("const" in s) out.add(jsonTypeOf(s.const));
  if (Array.isArray(s.enum)) for (const v of s.enum) out.add(jsonTypeOf(v));
  for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? [])]) for (const t of jsonTypes(group, root, alt, depth + 1)) out.add(t);
  return out;
}
function jsonTypeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}
/** A value whose JSON type the declared field does not admit. */
function wrongValueFor(m: MethodEntry, field: string): unknown {
  const { group, root } = paramsSchema(m);
  const types = jsonTypes(group, root, root.properties[field]);
  expect(types.size, `${m.name}.${field}: no declared JSON type to violate`).toBeGreaterThan(0);
  const admits = (v: unknown) => {
    const t = jsonTypeOf(v);
    return types.has(t) || (t === "integer" && types.has("number"));
  };
  const wrong = [12345, "wrong", true, ["wrong"], { wrong: 1 }].find((v) => !admits(v));
  expect(wrong, `${m.name}.${field} admits every JSON type`).toBeDefined();
  return wrong;
}

// ---- method classes, derived from the catalog ----------------------------------------------------------------------

const callsUpstream = (m: MethodEntry) => m.errors.includes("UPSTREAM_UNREACHABLE");
const sessionScoped = (m: MethodEntry) => requiredOf(m).includes("session_id");
const ownerGuarded = (m: MethodEntry) => m.errors.includes("SESSION_FORBIDDEN");
const requestScoped = (m: MethodEntry) => requiredOf(m).includes("request_id");
const taskScoped = (m: MethodEntry) => requiredOf(m).includes("taskId");
const callScoped = (m: MethodEntry) => requiredOf(m).includes("call_id");
/** Methods that read a task's records (opencode.governance.history): any task of the caller, live or not. */
const trailScoped = (m: MethodEntry) => requiredOf(m).includes("task_id");
/** The messages between sessions (opencode.messages.*): a session by `session`, a message by `id`. */
const messagesFamily = (m: MethodEntry) => m.name.startsWith("opencode.messages.");
/** A message of `owner` to `to`, stored as the service keeps it (for the methods that read one by `id`). */
async function storedMessage(storage: { messages: { create(m: StoredMessage): Promise<boolean> } }, owner: string, to: string): Promise<string> {
  const id = `msg-matrix-${randomUUID()}`;
  const now = BigInt(Date.now()) * 1_000_000n;
  await storage.messages.create({ id, owner, createdAt: now, updatedAt: now, from: null, to, inReplyTo: null, awaitReply: false, draft: false, buffered: true, acceptedAt: null, acceptedBy: null, initial: "matrix", message: "matrix", deliveredAt: null });
  return id;
}
/** Methods that start subtasks: one subtask's fields at the top level (or `items`). */
const subtaskRun = (m: MethodEntry) => hasParam(m, "items") && hasParam(m, "agent");
/** The interrupt kind a request-scoped or recovery method is about (its name says it). */
function interruptTypeOf(m: MethodEntry): "permission" | "question" {
  if (/permission/.test(m.name)) return "permission";
  if (/question/.test(m.name)) return "question";
  throw new Error(`${m.name}: no interrupt type in its name`);
}

// ---- coverage bookkeeping (checked by the last test) --------------------------------------------------------------

type PathName = "bad-params" | "toggle" | "upstream-down" | "not-found" | "foreign" | "success";
const covered = new Map<string, Set<PathName>>(EXT.map((m) => [m.name, new Set()]));
const mark = (m: MethodEntry, p: PathName) => covered.get(m.name)!.add(p);

// ---- calls ----------------------------------------------------------------------------------------------------------

type Outcome =
  | { ok: true; result: any }
  | { ok: false; reason: string; code: number; message: string; error: Obj; data: Obj; fields: string[] };

async function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

let rpcId = 0;
/**
 * One JSON-RPC call of `m` on `line`: the answer is checked against the line's error schema and the catalog's code,
 * and (rule 5) an error must be declared for the method or be generic, and never INTERNAL_ERROR.
 */
async function invoke(url: string, line: ProtocolLine, m: MethodEntry, params: Obj, budgetMs = CALL_BUDGET_MS): Promise<Outcome> {
  const id = ++rpcId;
  const res: HttpResult = await bounded(rpc(url, { jsonrpc: "2.0", id, method: m.name, params }, { "A2A-Version": line }), budgetMs, `${m.name} (${line})`);
  expect(res.status, res.text).toBe(200);
  expect(res.body?.id, res.text).toBe(id);
  if (res.body.error === undefined) {
    expect(res.body, res.text).toHaveProperty("result");
    return { ok: true, result: res.body.result };
  }
  const reason = await rpcReason(line, res.body.error);
  expect(reason, `${m.name} (${line}) answered an error without a reason: ${res.text}`).toBeTypeOf("string");
  const error = await expectRpcError(res, line, reason, { id });
  let data: Obj;
  let fields: string[];
  if (line === "0.3") {
    data = error.data;
    fields = Array.isArray(data.fields) ? data.fields : typeof data.field === "string" ? [data.field] : [];
  } else {
    data = (await errorInfoOf(error.data)).metadata ?? {};
    const bad = (error.data as Obj[]).find((d) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest");
    fields = [...new Set([...(typeof data.field === "string" ? [data.field] : []), ...((bad?.fieldViolations ?? []) as Obj[]).map((v) => v.field as string)])];
  }
  expect(reason, `${m.name} (${line}) → INTERNAL_ERROR: ${res.text}`).not.toBe("INTERNAL_ERROR");
  if (ORIGIN.get(reason) === "project") expect(m.errors, `${m.name} (${line}) returned ${reason}, which the catalog does not declare for it`).toContain(reason);
  return { ok: false, reason, code: error.code, message: error.message, error, data, fields };
}

/** A member of the flat error data: 0.3 keeps snake_case, 1.0 ErrorInfo metadata camelCases and stringifies. */
const datum = (o: Outcome, snake: string): string | undefined => {
  if (o.ok) return undefined;
  const v = o.data[snake] ?? o.data[snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())];
  return v === undefined ? undefined : String(v);
};
const describeOutcome = (o: Outcome): string => (o.ok ? `result ${JSON.stringify(o.result).slice(0, 300)}` : `${o.reason}: ${o.message} ${JSON.stringify(o.data).slice(0, 300)}`);

function expectError(o: Outcome, reason: string, what: string): asserts o is Extract<Outcome, { ok: false }> {
  expect(o.ok ? "success" : o.reason, `${what}: ${describeOutcome(o)}`).toBe(reason);
}

// ---- realistic params -----------------------------------------------------------------------------------------------

interface Fixture {
  session?: string;
  message?: string;
  requests?: Partial<Record<"permission" | "question", string>>;
  task?: string;
  /** A subtask call (opencode.subtasks.run) of the caller. */
  call?: string;
  /** A task of the caller whose records are read (`task_id`). */
  trail?: string;
  /** A message between sessions (opencode.messages.*) the caller may read (`id`). */
  sessionMessage?: string;
}
/** The stub's first command and primary agent (what OpenCode would accept). */
let stubCommand = "init";
let stubAgent = "build";

/**
 * A valid sample of the params schema (test/support/samples.ts) with the ids and names that must refer to
 * something real replaced from `fx`. Fields are recognised by the schema's own names.
 */
function realize(m: MethodEntry, fx: Fixture): Obj {
  const p: Obj = structuredClone(sample(m.params_schema));
  if ("session_id" in p) p.session_id = fx.session;
  if ("message_id" in p) p.message_id = fx.message;
  if ("request_id" in p) p.request_id = fx.requests?.[interruptTypeOf(m)];
  if ("answers" in p) p.answers = [["blue"]]; // one answer per question of the fixture's question
  if ("taskId" in p) p.taskId = fx.task;
  if ("call_id" in p) p.call_id = fx.call;
  if ("task_id" in p) p.task_id = fx.trail;
  if (messagesFamily(m)) {
    if ("session" in p) p.session = fx.session;
    if ("id" in p) p.id = fx.sessionMessage;
  }
  if (subtaskRun(m)) Object.assign(p, { agent: stubAgent, prompt: "matrix subtask", description: "matrix" });
  // exactly one of input / permissionOptionId is required by the handler; the schema cannot say so
  if (hasParam(m, "permissionOptionId") && p.input === undefined && p.permissionOptionId === undefined) p.permissionOptionId = "once";
  const request = p.request;
  if (request !== null && typeof request === "object") {
    const requestSchema = String(paramsSchema(m).root.properties.request.$ref ?? "");
    if ("messageID" in request) request.messageID = fx.message;
    if ("agent" in request) request.agent = stubAgent;
    if (requestSchema === "SessionCommandRequest.json") request.command = stubCommand;
    if (requestSchema === "WorktreeTargetRequest.json" && request.name === undefined && request.directory === undefined) request.name = "one";
  }
  for (const [k, v] of Object.entries(p)) expect(v, `${m.name}: no fixture value for ${k}`).not.toBeUndefined();
  return p;
}

// ---- canned upstream bodies for the routes the stub does not serve (shapes of OpenCode 1.18.33) ----------------

const CANNED: { method: string; path: RegExp; body: unknown }[] = [
  {
    method: "GET",
    path: /^\/provider$/,
    body: {
      all: [{ id: "fake", name: "Fake", source: "config", env: [], options: {}, models: { "fake-model": { id: "fake-model", name: "Fake model", limit: { context: 1000, output: 100 }, capabilities: { reasoning: false, toolcall: true, attachment: false } } } }],
      default: { fake: "fake-model" },
      connected: ["fake"],
    },
  },
  { method: "GET", path: /^\/project$/, body: [{ id: "prj_matrix", name: "matrix", vcs: "git", worktree: "/srv/matrix", time: { created: 1 } }] },
  { method: "GET", path: /^\/project\/current$/, body: { id: "prj_matrix", name: "matrix", vcs: "git", worktree: "/srv/matrix", time: { created: 1 } } },
  { method: "GET", path: /^\/experimental\/workspace$/, body: [{ id: "wrk_matrix", type: "worktree", name: "one", branch: null, directory: "/srv/wt/one" }] },
  { method: "POST", path: /^\/experimental\/workspace$/, body: { id: "wrk_new", type: "worktree", name: "new", branch: "b", directory: "/srv/wt/new" } },
  { method: "DELETE", path: /^\/experimental\/workspace\/[^/]+$/, body: { id: "wrk_new", type: "worktree", name: "new", branch: null, directory: "/srv/wt/new" } },
  { method: "GET", path: /^\/experimental\/worktree$/, body: ["/srv/wt/one"] },
  { method: "POST", path: /^\/experimental\/worktree$/, body: { name: "one", branch: "opencode/one", directory: "/srv/wt/one" } },
  { method: "DELETE", path: /^\/experimental\/worktree$/, body: true },
  { method: "POST", path: /^\/experimental\/worktree\/reset$/, body: true },
];
const cannedServed = new Set<string>();

/** Calls `m`; when the stub 404s a route it does not implement, answers exactly those requests with a canned body and retries. */
async function invokeServed(tg: TaskGateway, line: ProtocolLine, m: MethodEntry, params: Obj): Promise<Outcome> {
  for (let attempt = 0; ; attempt++) {
    const since = tg.stub.requests.length;
    const o = await invoke(tg.url, line, m, params);
    if (o.ok || o.reason !== "UPSTREAM_HTTP_ERROR" || attempt >= 4) return o;
    const asked = tg.stub.requests.slice(since).flatMap((r) => {
      const canned = CANNED.find((c) => c.method === r.method && c.path.test(r.path));
      return canned === undefined ? [] : [{ method: r.method, path: r.path, body: canned.body }];
    });
    if (asked.length === 0) return o;
    cannedServed.add(m.name);
    for (const a of asked) tg.stub.failNext((r) => r.method === a.method && r.path === a.path, { status: 200, body: a.body });
  }
}

// ---- gateways -------------------------------------------------------------------------------------------------------

let main: TaskGateway; // every toggle on, stub OpenCode up
let plain: TaskGateway; // every toggle off, stub OpenCode up
let down: { url: string; gateway: Gateway; storage: Storage; upstream: Upstream; server: http.Server; close(): Promise<void> };

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve, reject) => {
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** A gateway whose OpenCode is a closed port, on a store the test can seed (sessions, interrupt bindings). */
async function startDownGateway(): Promise<typeof down> {
  const port = await closedPort();
  const storage = await openStorage({ backend: "memory" });
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = loadConfig({
    A2A_BEARER_TOKEN: TEST_TOKEN,
    A2A_PUBLIC_URL: url,
    OPENCODE_BASE_URL: `http://127.0.0.1:${port}`,
    A2A_TASK_STORE_BACKEND: "memory",
    OPENCODE_TIMEOUT: String(UPSTREAM_TIMEOUT_S),
    OPENCODE_TIMEOUT_STREAM: String(UPSTREAM_TIMEOUT_S),
    OPENCODE_EVENT_RECONNECT_MAX_SECONDS: "0.5",
    ...ALL_TOGGLES,
    ...ONE_ADDRESS_ENV,
  });
  const upstream = await startUpstream(config, pino({ level: "silent" }));
  const gateway = await createGateway(config, pino({ level: "silent" }), { upstream, storage });
  server.on("request", gateway.handler);
  return {
    url,
    gateway,
    storage,
    upstream,
    server,
    async close() {
      await gateway.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await upstream.stop();
      storage.close();
    },
  };
}

/** Requests that reach OpenCode on behalf of a call (the event stream and health probes are background traffic). */
const calls = (stub: StubUpstream, since: number) => stub.requests.slice(since).filter((r) => !/^\/(global\/)?(event|health)$|^\/global\/health$/.test(r.path));

/** A session created on the stub directly: the gateway has never seen it (nobody owns it). */
async function stubSession(stub: StubUpstream, title = "matrix"): Promise<string> {
  const res = await fetch(`${stub.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title }) });
  return ((await res.json()) as { id: string }).id;
}

/** A completed turn through the gateway (0.3 message/send): its session is owned by the test token's principal. */
async function ownedSession(tg: TaskGateway): Promise<{ session: string; message: string }> {
  const res = await rpc(
    tg.url,
    { jsonrpc: "2.0", id: ++rpcId, method: "message/send", params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hello" }] } } },
    { "A2A-Version": "0.3" },
  );
  expect(res.body?.result?.status?.state, res.text).toBe("completed");
  const session: string = res.body.result.metadata.shared.session.id;
  const messages = (await (await fetch(`${tg.stub.url}/session/${session}/message`)).json()) as { info: { id: string; role: string } }[];
  const user = messages.find((x) => x.info.role === "user");
  expect(user, "the turn left a user message").toBeDefined();
  return { session, message: user!.info.id };
}

/** A blocking send that stops on an OpenCode permission or question: the input-required task and its request id. */
async function interrupted(tg: TaskGateway, type: "permission" | "question"): Promise<{ task: string; request: string; session: string }> {
  const session = await stubSession(tg.stub, `interrupt ${type}`);
  const ask =
    type === "permission"
      ? tool("read", { filePath: "/etc/hostname" }) // outside the stub's directory → external_directory permission
      : tool("question", { questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }] });
  tg.stub.scriptFor(session, ask, text("done"));
  const res = await rpc(
    tg.url,
    {
      jsonrpc: "2.0",
      id: ++rpcId,
      method: "message/send",
      params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "go" }] }, metadata: { shared: { session: { id: session } } } },
    },
    { "A2A-Version": "0.3" },
  );
  expect(res.body?.result?.status?.state, res.text).toBe("input-required");
  const interrupt = res.body.result.metadata.shared.interrupt;
  expect(interrupt?.type).toBe(type);
  return { task: res.body.result.id, request: interrupt.request_id, session };
}

/** `build()` retried up to 4 times: fixture set-up that must not depend on how loaded the machine is. */
async function settled<T>(build: () => Promise<T>, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await build();
    } catch (error) {
      if (i >= attempts) throw error;
    }
  }
}

/** A subtask call of the test token's principal (one item, run by the stub): its id. */
async function subtaskCall(tg: TaskGateway): Promise<string> {
  const run = EXT.find(subtaskRun)!;
  const o = await invoke(tg.url, "0.3", run, realize(run, {}));
  expect(o.ok, describeOutcome(o)).toBe(true);
  return (o as { result: Obj }).result.call_id as string;
}

/** A handler of the gateway's method registry run as `principal` (the HTTP edge has the one admin token). */
async function callAs(gateway: Gateway, principal: Principal, m: MethodEntry, params: Obj, line: ProtocolLine = "0.3"): Promise<Outcome> {
  try {
    const result = await gateway.registry.get(m.name)!(params, { line, principal, transport: "jsonrpc", method: m });
    return { ok: true, result };
  } catch (error) {
    const e = error as { reason?: string; message?: string; data?: Obj };
    expect(e.reason, `${m.name} as ${principal.id} threw an untyped error: ${String(error)}`).toBeTypeOf("string");
    expect(e.reason).not.toBe("INTERNAL_ERROR");
    if (ORIGIN.get(e.reason!) === "project") expect(m.errors).toContain(e.reason);
    return { ok: false, reason: e.reason!, code: errorEntry(line, e.reason!).code, message: e.message ?? "", error: {}, data: e.data ?? {}, fields: [] };
  }
}

beforeAll(async () => {
  [main, plain, down] = await Promise.all([
    startTaskGateway({ ...ALL_TOGGLES, OPENCODE_TIMEOUT: String(UPSTREAM_TIMEOUT_S) }, { sharing: true }),
    startTaskGateway({ ...NO_TOGGLES, OPENCODE_TIMEOUT: String(UPSTREAM_TIMEOUT_S) }),
    startDownGateway(),
  ]);
  const commands = (await (await fetch(`${main.stub.url}/command`)).json()) as { name: string }[];
  const agents = (await (await fetch(`${main.stub.url}/agent`)).json()) as { name: string; mode: string }[];
  stubCommand = commands[0]!.name;
  stubAgent = agents.find((a) => a.mode === "primary")!.name;
});

afterAll(async () => {
  await Promise.all([main?.close(), plain?.close(), down?.close()]);
});

// ---- 0. the catalog slice under test --------------------------------------------------------------------------------

describe("the catalog slice", () => {
  it("holds every family issue 5 names, with consistent declarations", () => {
    for (const prefix of ["opencode.sessions.", "opencode.providers.", "opencode.models.", "opencode.projects.", "opencode.workspaces.", "opencode.worktrees.", "a2a.interrupt."])
      expect(EXT.some((m) => m.name.startsWith(prefix)), prefix).toBe(true);
    for (const name of ["opencode.permissions.list", "opencode.questions.list", "tasks/provideInputAndContinue"]) expect(byName(name).surface).toBe("extension");
    for (const m of EXT) {
      expect(m.extension_uri, m.name).toBeTruthy();
      expect(catalog.extensions.find((e) => e.uri === m.extension_uri)?.methods, m.name).toContain(m.name);
      expect(m.errors, m.name).toContain("INVALID_PARAMS");
      expect(m.result_schema, m.name).toBeTruthy();
      for (const reason of m.errors) expect(ORIGIN.has(reason), `${m.name} declares unknown ${reason}`).toBe(true);
      // session-scoped methods declare SESSION_NOT_FOUND; the owner guard is exactly the non-read session scopes
      if (sessionScoped(m)) expect(m.errors, m.name).toContain("SESSION_NOT_FOUND");
      if (m.scope?.startsWith("sessions.")) expect(ownerGuarded(m), `${m.name} (scope ${m.scope})`).toBe(m.scope !== "sessions.read");
      if (requestScoped(m)) expect(m.errors, m.name).toContain("INTERRUPT_REQUEST_NOT_FOUND");
      if (taskScoped(m)) expect(m.errors, m.name).toContain("TASK_NOT_FOUND");
      if (callScoped(m)) expect(m.errors, m.name).toContain("SUBTASK_CALL_NOT_FOUND");
    }
  });
});

// ---- 1. bad params --------------------------------------------------------------------------------------------------

describe("1. bad params → -32602 INVALID_PARAMS naming the field, before any upstream call", () => {
  it.each(EXT.map((m) => [m.name, m] as const))("%s", async (_name, m) => {
    const since = main.stub.requests.length;
    const required = requiredOf(m);
    const base = sample(m.params_schema);
    // all calls of a method at once; every declared field on 0.3, the 1.0 error shape (ErrorInfo + BadRequest) once
    await Promise.all(
      LINES.flatMap((line) => [
        (async () => {
          if (required.length === 0) return;
          const o = await invoke(main.url, line, m, {});
          expectError(o, "INVALID_PARAMS", `${m.name} {} (${line})`);
          expect(o.code).toBe(-32602);
          expect(required, `${m.name} (${line}) named ${o.fields}`).toContain(datum(o, "field"));
          for (const f of required) expect(o.fields, `${m.name} (${line}) {}: fields`).toContain(f);
        })(),
        ...(line === "0.3" ? propertiesOf(m) : propertiesOf(m).slice(0, 1)).map(async (field) => {
          const params = { ...base, [field]: wrongValueFor(m, field) };
          const o = await invoke(main.url, line, m, params);
          expectError(o, "INVALID_PARAMS", `${m.name} ${JSON.stringify(params)} (${line})`);
          expect(o.code).toBe(-32602);
          expect(datum(o, "field"), `${m.name}.${field} (${line})`).toBe(field);
          expect(o.fields).toContain(field);
        }),
      ]),
    );
    expect(calls(main.stub, since), `${m.name}: invalid params reached OpenCode`).toEqual([]);
    mark(m, "bad-params");
  });
});

// ---- 2. toggles -----------------------------------------------------------------------------------------------------

describe("2. toggles: off → -32601 METHOD_NOT_SUPPORTED naming the toggle; on → dispatched", () => {
  it.each(EXT.map((m) => [m.name, m] as const))("%s", async (_name, m) => {
    for (const line of LINES) {
      const since = plain.stub.requests.length;
      const offOutcome = await invoke(plain.url, line, m, sample(m.params_schema));
      if (m.toggle) {
        expectError(offOutcome, "METHOD_NOT_SUPPORTED", `${m.name} with ${m.toggle} unset (${line})`);
        expect(offOutcome.code).toBe(-32601);
        expect(datum(offOutcome, "toggle")).toBe(m.toggle);
        expect(datum(offOutcome, "method")).toBe(m.name);
        expect(datum(offOutcome, "reason")).toBe("disabled_by_configuration");
        const supported = line === "0.3" ? offOutcome.data.supported_methods : JSON.parse(offOutcome.data.supportedMethods);
        expect(supported).not.toContain(m.name);
        // the toggle wins over params validation, and nothing reaches OpenCode
        expectError(await invoke(plain.url, line, m, {}), "METHOD_NOT_SUPPORTED", `${m.name} {} with ${m.toggle} unset (${line})`);
        expect(calls(plain.stub, since)).toEqual([]);
        // with the toggle on, the same call is dispatched (whatever the handler answers, it is not -32601)
        const on = await invoke(main.url, line, m, sample(m.params_schema));
        expect(on.ok || on.reason, `${m.name} with ${m.toggle}=true (${line})`).not.toBe("METHOD_NOT_SUPPORTED");
      } else {
        expect(offOutcome.ok || offOutcome.reason, `${m.name} has no toggle (${line})`).not.toBe("METHOD_NOT_SUPPORTED");
      }
    }
    mark(m, "toggle");
  });
});

// ---- 3. upstream down -------------------------------------------------------------------------------------------------

describe("3. OpenCode down (closed 127.0.0.1 port) → a typed upstream error, never -32603, never a hang", () => {
  const UNKNOWN_TO_DOWN = "ses_matrixdownunknown";
  const OWNED_ON_DOWN = "ses_matrixdownowned";
  let fx: Fixture;
  beforeAll(async () => {
    await down.storage.sessions.setOwner(OWNED_ON_DOWN, ADMIN_ID);
    const add = async (type: "permission" | "question", details: Obj) => {
      const requestId = `${type === "permission" ? "per" : "que"}_matrixdown${randomUUID().slice(0, 8)}`;
      await down.storage.interrupts.add(
        { requestId, type, owner: ADMIN_ID, sessionId: OWNED_ON_DOWN, taskId: randomUUID(), contextId: randomUUID(), details, routing: {} },
        3600,
        600,
      );
      return requestId;
    };
    fx = {
      session: OWNED_ON_DOWN,
      message: "msg_matrixdown0001",
      // details as the runtime publishes them (valid samples of the contract's details schemas)
      requests: { permission: await add("permission", sample("extensions/PermissionInterruptDetails")), question: await add("question", sample("extensions/QuestionInterruptDetails")) },
      task: randomUUID(),
      trail: randomUUID(),
    };
    fx.sessionMessage = await storedMessage(down.storage, ADMIN_ID, OWNED_ON_DOWN);
    // a finished task of the admin, whose records are read without OpenCode
    down.storage.tasks.create({ id: fx.trail!, contextId: randomUUID(), status: { state: "completed", timestamp: new Date().toISOString() } }, ADMIN_ID);
    // a subtask call on the down gateway: kept, its item failed (OpenCode's agent list could not be read)
    const run = EXT.find(subtaskRun);
    if (run !== undefined) {
      const o = await invoke(down.url, "0.3", run, realize(run, fx));
      expect(o.ok, describeOutcome(o)).toBe(true);
      const result = (o as { result: Obj }).result;
      expect(result.items.map((i: Obj) => [i.status, i.error?.reason])).toEqual([["failed", "UPSTREAM_UNREACHABLE"]]);
      fx.call = result.call_id;
    }
  });

  it.each(EXT.map((m) => [m.name, m] as const))("%s", async (_name, m) => {
    for (const line of LINES) {
      const started = Date.now();
      const o = await invoke(down.url, line, m, realize(m, fx));
      expect(Date.now() - started, `${m.name} (${line}) took too long`).toBeLessThan(CALL_BUDGET_MS);
      if (!callsUpstream(m)) {
        // methods that never call OpenCode keep working while it is down
        expect(o.ok, `${m.name} (${line}) does not call OpenCode: ${describeOutcome(o)}`).toBe(true);
        await expectValid(m.result_schema!, (o as { result: unknown }).result);
        continue;
      }
      if (taskScoped(m)) {
        // no turn can be live (let alone waiting on an interrupt) while OpenCode is down: the task is unknown here;
        // its upstream failure is covered by the dropped-connection test below
        expectError(o, "TASK_NOT_FOUND", `${m.name} (${line})`);
        continue;
      }
      expectError(o, "UPSTREAM_UNREACHABLE", `${m.name} (${line})`);
      expect(o.code).not.toBe(-32603);
      if (sessionScoped(m) && ownerGuarded(m)) {
        // the claim path too: a session the gateway never saw is claimed, checked upstream, and released on failure
        const fresh = `${UNKNOWN_TO_DOWN}${line.replace(".", "")}${m.name.split(".").pop()!.replace(/\W/g, "")}`;
        const claimed = await invoke(down.url, line, m, realize(m, { ...fx, session: fresh }));
        expectError(claimed, "UPSTREAM_UNREACHABLE", `${m.name} on an unclaimed session (${line})`);
        expect(await down.storage.sessions.getClaim(fresh), `${m.name}: claim released`).toBeUndefined();
        expect(await down.storage.sessions.getOwner(fresh)).toBeUndefined();
      }
    }
    // the seeded bindings survive an unreachable OpenCode (the answer can be retried)
    if (requestScoped(m)) expect((await down.storage.interrupts.lookup(fx.requests![interruptTypeOf(m)]!, ADMIN_ID)).status).toBe("live");
    mark(m, "upstream-down");
  });

  it("tasks/provideInputAndContinue: OpenCode dropping the reply's connection → UPSTREAM_UNREACHABLE, bounded", async () => {
    for (const m of EXT.filter(taskScoped)) {
      for (const line of LINES) {
        const { task, request } = await interrupted(main, "permission");
        main.stub.failNext((r) => r.method === "POST" && r.path === `/permission/${request}/reply`, { destroy: true });
        const o = await invoke(main.url, line, m, realize(m, { task }));
        expectError(o, "UPSTREAM_UNREACHABLE", `${m.name} with the reply connection dropped (${line})`);
        // the binding is still answerable: a retry goes through
        const retry = await invoke(main.url, line, m, realize(m, { task }));
        expect(retry.ok, describeOutcome(retry)).toBe(true);
      }
      mark(m, "upstream-down");
    }
  });
});

// ---- 3b. OpenCode misbehaving ----------------------------------------------------------------------------------------

describe("3b. OpenCode misbehaving (5xx, a 2xx of the wrong shape, too slow) → the matching typed upstream error", () => {
  const FAULTS = [
    { stage: "http", reason: "UPSTREAM_HTTP_ERROR", rule: { status: 500, body: { name: "UnknownError", data: { message: "boom" } } } },
    // what OpenCode itself answers on a path it does not route (its web UI), e.g. behind a misconfigured proxy
    { stage: "payload", reason: "UPSTREAM_PAYLOAD_ERROR", rule: { status: 200, body: "<!doctype html><title>OpenCode</title>", headers: { "content-type": "text/html" } } },
    // OPENCODE_TIMEOUT=0.5 on this gateway; the stub answers normally after the delay (the last stage, as it executes)
    { stage: "timeout", reason: "UPSTREAM_TIMEOUT", rule: { delayMs: 1_000 } },
  ] as const;
  const BUDGET_MS = 1_500; // OPENCODE_TIMEOUT=0.5 plus slack
  let faulty: TaskGateway;
  let stage: string | undefined;
  const fixtures = new Map<string, Fixture>();
  beforeAll(async () => {
    faulty = await startTaskGateway({ ...ALL_TOGGLES, OPENCODE_TIMEOUT: "0.5", OPENCODE_MAX_CONCURRENT_REQUESTS: "0" }, { sharing: true });
    // one fixture per stage, shared by its calls: faulted requests never reach the stub's routes (5xx, wrong
    // shape) or only after the gateway answered (delay)
    await Promise.all(
      FAULTS.map(async (f) => {
        // the fixtures' own turns run under the same 0.5 s upstream timeout: on a loaded machine one of them can
        // time out, so each is retried (bounded); the measured calls below are not
        const [owned, permission, question, task] = await Promise.all([
          settled(() => ownedSession(faulty)),
          settled(() => interrupted(faulty, "permission")),
          settled(() => interrupted(faulty, "question")),
          settled(() => interrupted(faulty, "permission")),
        ]);
        fixtures.set(f.stage, { ...owned, requests: { permission: permission.request, question: question.request }, task: task.task });
      }),
    );
    for (const f of FAULTS) for (let i = 0; i < 300; i++) faulty.stub.failNext((r) => stage === f.stage && !/^\/(global\/)?(event|health)$/.test(r.path), f.rule);
  });
  afterAll(async () => {
    stage = undefined;
    await faulty?.close();
  });

  it.each(FAULTS.map((f) => [f.stage, f] as const))("%s: every method that calls OpenCode, both lines, in parallel", async (_stage, f) => {
    const methods = EXT.filter(callsUpstream);
    stage = f.stage;
    try {
      const started = Date.now();
      const outcomes = await Promise.all(
        methods.flatMap((m) =>
          LINES.map(async (line) => {
            try {
              return { m, line, o: await invoke(faulty.url, line, m, realize(m, fixtures.get(f.stage)!), BUDGET_MS) };
            } catch (error) {
              return { m, line, o: { ok: false, reason: "NO_ANSWER", code: 0, message: String(error), error: {}, data: {}, fields: [] } as Outcome };
            }
          }),
        ),
      );
      expect(Date.now() - started, "bounded by OPENCODE_TIMEOUT").toBeLessThan(BUDGET_MS + 500);
      const wrong = outcomes.filter(({ o }) => o.ok || o.reason !== f.reason).map(({ m, line, o }) => `${m.name} (${line}) → ${describeOutcome(o)}`);
      expect(wrong, `expected ${f.reason} from every method`).toEqual([]);
      if (f.reason === "UPSTREAM_TIMEOUT") for (const { o } of outcomes) expect(datum(o, "timeout_seconds")).toBe("0.5");
    } finally {
      stage = undefined;
    }
  });
});

// ---- 4. unknown and foreign sessions / requests / tasks ------------------------------------------------------------

describe("4. unknown ids → *_NOT_FOUND; another principal's session → SESSION_FORBIDDEN for the admin on owner-guarded methods, SESSION_NOT_FOUND for non-admins", () => {
  let foreign: string; // a session owned by OTHER (its turn ran through the gateway's task runtime)
  let foreignMessage: string;
  let ownedByAdmin: { session: string; message: string };
  beforeAll(async () => {
    const task = await main.gw.gateway.runtime!.send(OTHER, { message: { messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "theirs" }] } });
    expect(task.status.state).toBe("completed");
    foreign = (task.metadata as Obj).shared.session.id;
    const messages = (await (await fetch(`${main.stub.url}/session/${foreign}/message`)).json()) as { info: { id: string } }[];
    foreignMessage = messages[0]!.info.id;
    ownedByAdmin = await ownedSession(main);
  });

  it.each(EXT.filter(sessionScoped).map((m) => [m.name, m] as const))("%s: unknown session → SESSION_NOT_FOUND", async (_name, m) => {
    for (const line of LINES) {
      const unknown = `ses_matrixnosuch${line.replace(".", "")}${randomUUID().slice(0, 8)}`;
      const o = await invoke(main.url, line, m, realize(m, { session: unknown, message: "msg_matrixnosuch0001" }));
      expectError(o, "SESSION_NOT_FOUND", `${m.name} (${line})`);
      expect(datum(o, "session_id")).toBe(unknown);
    }
    mark(m, "not-found");
  });

  it.each(EXT.filter(sessionScoped).map((m) => [m.name, m] as const))("%s: another principal's session", async (_name, m) => {
    for (const line of LINES) {
      const since = main.stub.requests.length;
      const o = await invoke(main.url, line, m, realize(m, { session: foreign, message: foreignMessage }));
      if (ownerGuarded(m)) {
        expectError(o, "SESSION_FORBIDDEN", `${m.name} on ${OTHER.id}'s session (${line})`);
        expect(datum(o, "session_id")).toBe(foreign);
        expect(calls(main.stub, since), `${m.name}: the owner guard let a call reach OpenCode`).toEqual([]);
      } else {
        // the admin (this gateway's bearer token) reads every principal's sessions
        expect(o.ok, `${m.name} read of ${OTHER.id}'s session (${line}): ${describeOutcome(o)}`).toBe(true);
      }
    }
    // The other way round, through the registry: to a non-admin, another principal's session does not exist
    // (reads and control alike), so its existence is not revealed.
    const o = await callAs(main.gw.gateway, OTHER, m, realize(m, ownedByAdmin));
    expectError(o, "SESSION_NOT_FOUND", `${m.name} as ${OTHER.id} on the admin's session`);
    mark(m, "foreign");
  });

  it.each(EXT.filter(requestScoped).map((m) => [m.name, m] as const))("%s: unknown or another principal's request → INTERRUPT_REQUEST_NOT_FOUND", async (_name, m) => {
    const type = interruptTypeOf(m);
    for (const line of LINES) {
      const o = await invoke(main.url, line, m, realize(m, { requests: { [type]: `${type === "permission" ? "per" : "que"}_matrixnosuch` } }));
      expectError(o, "INTERRUPT_REQUEST_NOT_FOUND", `${m.name} unknown request (${line})`);
    }
    mark(m, "not-found");
    const { request } = await interrupted(main, type);
    const since = main.stub.requests.length;
    const o = await callAs(main.gw.gateway, OTHER, m, realize(m, { requests: { [type]: request } }));
    expectError(o, "INTERRUPT_REQUEST_NOT_FOUND", `${m.name} as ${OTHER.id}`);
    expect(calls(main.stub, since)).toEqual([]);
    mark(m, "foreign");
  });

  it.each(EXT.filter(callScoped).map((m) => [m.name, m] as const))("%s: unknown or another principal's call → SUBTASK_CALL_NOT_FOUND", async (_name, m) => {
    for (const line of LINES) {
      const unknown = randomUUID();
      const o = await invoke(main.url, line, m, realize(m, { call: unknown }));
      expectError(o, "SUBTASK_CALL_NOT_FOUND", `${m.name} unknown call (${line})`);
      expect(datum(o, "call_id")).toBe(unknown);
    }
    mark(m, "not-found");
    const o = await callAs(main.gw.gateway, OTHER, m, realize(m, { call: await subtaskCall(main) }));
    expectError(o, "SUBTASK_CALL_NOT_FOUND", `${m.name} as ${OTHER.id}`);
    mark(m, "foreign");
  });

  it.each(EXT.filter(trailScoped).map((m) => [m.name, m] as const))("%s: unknown or another principal's task → TASK_NOT_FOUND", async (_name, m) => {
    for (const line of LINES) {
      const unknown = randomUUID();
      const o = await invoke(main.url, line, m, realize(m, { trail: unknown }));
      expectError(o, "TASK_NOT_FOUND", `${m.name} unknown task (${line})`);
      expect(datum(o, "task_id")).toBe(unknown);
    }
    mark(m, "not-found");
    const { task } = await interrupted(main, "permission");
    const o = await callAs(main.gw.gateway, OTHER, m, realize(m, { trail: task }));
    expectError(o, "TASK_NOT_FOUND", `${m.name} as ${OTHER.id}`);
    mark(m, "foreign");
  });

  it.each(EXT.filter(taskScoped).map((m) => [m.name, m] as const))("%s: unknown or another principal's task → TASK_NOT_FOUND", async (_name, m) => {
    for (const line of LINES) {
      const o = await invoke(main.url, line, m, realize(m, { task: randomUUID() }));
      expectError(o, "TASK_NOT_FOUND", `${m.name} unknown task (${line})`);
    }
    mark(m, "not-found");
    const { task } = await interrupted(main, "permission");
    const o = await callAs(main.gw.gateway, OTHER, m, realize(m, { task }));
    expectError(o, "TASK_NOT_FOUND", `${m.name} as ${OTHER.id}`);
    mark(m, "foreign");
  });
});

// ---- 6. success -------------------------------------------------------------------------------------------------------

describe("6. valid params → a result valid against result_schema", () => {
  it.each(EXT.map((m) => [m.name, m] as const))("%s", async (_name, m) => {
    for (const line of LINES) {
      const fx: Fixture = {};
      if (sessionScoped(m) || messagesFamily(m)) Object.assign(fx, await ownedSession(main));
      if (messagesFamily(m)) {
        // a message of the caller to its session, sent through the family itself (it waits in the buffer)
        const send = EXT.find((e) => e.name === "opencode.messages.send")!;
        const sent = await invokeServed(main, "0.3", send, { session: fx.session, message: "matrix" });
        expect(sent.ok, describeOutcome(sent)).toBe(true);
        fx.sessionMessage = (sent as { result: Obj }).result.message.id;
      }
      let pending: { task: string; request: string } | undefined;
      if (requestScoped(m) || /\.(permissions|questions)\.list$/.test(m.name)) {
        pending = await interrupted(main, interruptTypeOf(m));
        fx.requests = { [interruptTypeOf(m)]: pending.request };
      }
      if (taskScoped(m)) {
        pending = await interrupted(main, "permission");
        fx.task = pending.task;
      }
      if (callScoped(m)) fx.call = await subtaskCall(main);
      if (trailScoped(m)) {
        pending = await interrupted(main, "permission");
        fx.trail = pending.task;
      }
      const o = await invokeServed(main, line, m, realize(m, fx));
      expect(o.ok, `${m.name} (${line}): ${describeOutcome(o)}`).toBe(true);
      const result = (o as { result: any }).result;
      await expectValid(m.result_schema!, result);
      // a canned OpenCode body must show through (not an empty projection of it)
      if (cannedServed.has(m.name)) expect(result.items?.length ?? (result.item === undefined ? result.ok : 1), JSON.stringify(result)).toBeTruthy();
      if (sessionScoped(m) && result?.session_id !== undefined) expect(result.session_id).toBe(fx.session);
      if (requestScoped(m)) expect(result).toEqual({ ok: true, request_id: pending!.request });
      if (/\.(permissions|questions)\.list$/.test(m.name)) expect(result.items.map((i: Obj) => i.request_id)).toContain(pending!.request);
      if (taskScoped(m)) expect(result.id).toBe(pending!.task);
      if (callScoped(m)) expect(result.call_id).toBe(fx.call);
      if (trailScoped(m)) expect(result.pendingPermissions.map((p: Obj) => p.requestId)).toEqual([pending!.request]);
      if (subtaskRun(m)) expect(result.items.map((i: Obj) => i.status), JSON.stringify(result)).toEqual(["accepted"]);
    }
    mark(m, "success");
  });
});

// ---- coverage -------------------------------------------------------------------------------------------------------

describe("coverage", () => {
  it("every extension method went through every path that applies to it", () => {
    for (const m of EXT) {
      const want: PathName[] = ["bad-params", "toggle", "upstream-down", "success"];
      if (sessionScoped(m) || requestScoped(m) || taskScoped(m) || callScoped(m) || trailScoped(m)) want.push("not-found", "foreign");
      expect([...covered.get(m.name)!].sort(), m.name).toEqual(want.sort());
    }
    // the stub lacks these upstream routes; their success calls used canned OpenCode bodies
    expect([...cannedServed].every((n) => /^opencode\.(providers|models|projects|workspaces|worktrees)\./.test(n)), [...cannedServed].join(", ")).toBe(true);
  });
});
