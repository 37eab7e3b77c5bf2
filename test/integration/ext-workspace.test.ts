// Provider discovery and workspace control without a real OpenCode:
// - through the gateway (stub upstream): the A2A_ENABLE_WORKSPACE_MUTATIONS toggle, params validation and routing
//   checks that fail before any upstream call;
// - the handlers against a scripted HTTP upstream: payload errors, 4xx/5xx mapping, and the redaction of local paths
//   in results and error details.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { A2AError } from "../../src/contract/errors.js";
import type { ExtensionDeps } from "../../src/extensions/context.js";
import { handlers as discoveryHandlers } from "../../src/extensions/discovery.js";
import { handlers as workspaceHandlers, redactPaths } from "../../src/extensions/workspace.js";
import type { Call, MethodHandler } from "../../src/operations/index.js";
import { UpstreamClient } from "../../src/upstream/client.js";
import { expectRpcError, expectValid } from "../support/contract.js";
import { rpc, TEST_TOKEN, type HttpResult } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

const MUTATIONS = ["opencode.workspaces.create", "opencode.workspaces.remove", "opencode.worktrees.create", "opencode.worktrees.remove", "opencode.worktrees.reset"];
const READS = ["opencode.projects.list", "opencode.projects.current", "opencode.workspaces.list", "opencode.worktrees.list"];

let id = 1;
const send = (url: string, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<HttpResult> =>
  rpc(url, { jsonrpc: "2.0", id: id++, method, params }, headers);

describe("through the gateway", () => {
  let off: TaskGateway;
  let on: TaskGateway;
  beforeAll(async () => {
    off = await startTaskGateway();
    on = await startTaskGateway({ A2A_ENABLE_WORKSPACE_MUTATIONS: "true" });
  });
  afterAll(async () => {
    await off?.close();
    await on?.close();
  });

  it.each(MUTATIONS)("%s is METHOD_NOT_SUPPORTED (-32601) naming the toggle while mutations are off", async (method) => {
    const error = await expectRpcError(await send(off.url, method, { request: { type: "worktree", name: "x" }, workspace_id: "wrk_x" }), "0.3", "METHOD_NOT_SUPPORTED");
    expect(error.code).toBe(-32601);
    expect(error.data).toMatchObject({ method, toggle: "A2A_ENABLE_WORKSPACE_MUTATIONS", reason: "disabled_by_configuration" });
    expect(error.data.supported_methods).not.toContain(method);
    for (const read of [...READS, "opencode.providers.list", "opencode.models.list"]) expect(error.data.supported_methods).toContain(read);
    // Nothing reached OpenCode.
    expect(off.stub.requests.some((r) => /worktree|workspace/.test(r.path))).toBe(false);
  });

  it("the disabled answer is shaped for 1.0 too, and an id-less call gets it too (id null, never a silent 204)", async () => {
    const res = await send(off.url, "opencode.worktrees.create", {}, { "A2A-Version": "1.0" });
    const error = await expectRpcError(res, "1.0", "METHOD_NOT_SUPPORTED");
    expect(error.code).toBe(-32601);
    const note = await rpc(off.url, { jsonrpc: "2.0", method: "opencode.worktrees.create", params: {} });
    await expectRpcError(note, "0.3", "METHOD_NOT_SUPPORTED", { id: null });
  });

  it.each(MUTATIONS)("%s is dispatched once A2A_ENABLE_WORKSPACE_MUTATIONS=true (missing params → -32602)", async (method) => {
    const error = await expectRpcError(await send(on.url, method, {}), "0.3", "INVALID_PARAMS");
    expect(error.code).toBe(-32602);
    expect(error.data.field).toBe(method === "opencode.workspaces.remove" ? "workspace_id" : "request");
  });

  it.each([
    ["opencode.models.list", { provider_id: "" }, "provider_id"],
    ["opencode.models.list", { provider_id: 7 }, "provider_id"],
    ["opencode.workspaces.create", { request: {} }, "request.type"],
    ["opencode.workspaces.create", { request: { type: "" } }, "request.type"],
    ["opencode.workspaces.create", { request: { type: "worktree", branch: 1 } }, "request.branch"],
    ["opencode.workspaces.remove", { workspace_id: "" }, "workspace_id"],
    ["opencode.worktrees.create", { request: { name: "" } }, "request.name"],
    ["opencode.worktrees.create", { request: { startCommand: 5 } }, "request.startCommand"],
    ["opencode.worktrees.reset", { request: { directory: "" } }, "request.directory"],
    ["opencode.worktrees.remove", { request: {} }, "request.name"],
    ["opencode.worktrees.remove", { request: { name: "a", directory: "/b" } }, "request"],
    ["opencode.providers.list", { metadata: { opencode: { directory: "/" } } }, "metadata.opencode.directory"],
    ["opencode.providers.list", { metadata: { opencode: { workspace: {} } } }, "metadata.opencode.workspace.id"],
  ] as const)("%s %j → -32602 naming %s", async (method, params, field) => {
    const before = on.stub.requests.length;
    const error = await expectRpcError(await send(on.url, method, params as Record<string, unknown>), "0.3", "INVALID_PARAMS");
    expect(error.data.field).toBe(field);
    expect(on.stub.requests.length).toBe(before);
  });
});

// ---- the handlers against a scripted upstream ---------------------------------------------------------------------

type Reply = { status?: number; body: unknown };
let server: http.Server;
let routes: Record<string, Reply> = {};
const seen: { method: string; path: string; query: string; body: string }[] = [];
let scratch: string;

beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "ext-workspace-"));
  fs.mkdirSync(path.join(scratch, "sub"));
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://x");
      seen.push({ method: req.method ?? "", path: url.pathname, query: url.search, body });
      const reply = routes[`${req.method} ${url.pathname}`] ?? { status: 404, body: { name: "NotFoundError", data: { message: "no route" } } };
      res.writeHead(reply.status ?? 200, { "content-type": "application/json" });
      res.end(typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

function familyHandlers(expose: boolean): Record<string, MethodHandler> {
  const { port } = server.address() as AddressInfo;
  const config = loadConfig({
    A2A_BEARER_TOKEN: TEST_TOKEN,
    OPENCODE_WORKSPACE_ROOT: scratch,
    ...(expose ? { A2A_EXPOSE_WORKSPACE_ROOT_IN_CARD: "true" } : {}),
  });
  const upstream = new UpstreamClient({ baseUrl: `http://127.0.0.1:${port}`, directory: scratch, timeoutMs: 5_000, streamTimeoutMs: 0, maxConcurrentRequests: 0 });
  const deps = { config, upstream, routing: { root: scratch, allowOverride: true } } as unknown as ExtensionDeps;
  return { ...discoveryHandlers(deps), ...workspaceHandlers(deps) };
}

async function failure(promise: Promise<unknown>): Promise<A2AError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(A2AError);
  return error as A2AError;
}

const call = {} as Call;
const HOME = "/srv/opencode/home/.local/share/opencode/worktree/p1";

describe("handlers against a scripted upstream", () => {
  it("maps a provider catalog with odd entries (missing names, keyed ids, no limits)", async () => {
    routes = {
      "GET /provider": {
        body: {
          all: [
            { id: "a", name: "", source: "api", env: ["A_KEY"], key: "secret-a", options: { apiKey: "secret-b" }, models: { m1: { name: "M1", limit: { context: 10, output: 5 }, capabilities: { reasoning: true, toolcall: false, attachment: true } }, m2: {} } },
            { id: "b", models: {} },
          ],
          default: { a: "m2" },
          connected: ["a"],
        },
      },
    };
    const h = familyHandlers(false);
    const providers = await h["opencode.providers.list"]!({}, call);
    await expectValid("extensions/ProvidersListResult", providers);
    expect(providers).toEqual({
      items: [
        { provider_id: "a", name: "a", source: "api", connected: true, default_model_id: "m2", model_count: 2 },
        { provider_id: "b", name: "b", connected: false, model_count: 0 },
      ],
      default_by_provider: { a: "m2" },
      connected: ["a"],
    });
    expect(JSON.stringify(providers)).not.toMatch(/secret|A_KEY/);
    const models = await h["opencode.models.list"]!({ provider_id: "a" }, call);
    await expectValid("extensions/ModelsListResult", models);
    expect((models as any).items).toEqual([
      { provider_id: "a", model_id: "m1", name: "M1", context_window: 10, max_output_tokens: 5, supports_reasoning: true, supports_tool_call: false, supports_attachments: true, default: false, connected: true },
      { provider_id: "a", model_id: "m2", name: "m2", default: true, connected: true },
    ]);
  });

  it("routes the catalog read: workspace id wins, a directory is realpath-resolved inside the root", async () => {
    const h = familyHandlers(false);
    seen.length = 0;
    await h["opencode.providers.list"]!({ metadata: { opencode: { workspace: { id: "wrk_1" }, directory: "sub" } } }, call);
    await h["opencode.providers.list"]!({ metadata: { opencode: { directory: "sub" } } }, call);
    await h["opencode.providers.list"]!({}, call);
    expect(seen.map((r) => new URLSearchParams(r.query))).toEqual([
      new URLSearchParams({ workspace: "wrk_1" }),
      new URLSearchParams({ directory: fs.realpathSync(path.join(scratch, "sub")) }),
      new URLSearchParams({ directory: scratch }),
    ]);
  });

  it("a catalog of the wrong shape is UPSTREAM_PAYLOAD_ERROR", async () => {
    const h = familyHandlers(false);
    for (const body of [{ all: "x", default: {}, connected: [] }, { all: [{ id: "a" }], default: {}, connected: [] }, [], "not json at all"]) {
      routes = { "GET /provider": { body } };
      const error = await failure(h["opencode.models.list"]!({}, call));
      expect(error.reason, JSON.stringify(body)).toBe("UPSTREAM_PAYLOAD_ERROR");
    }
  });

  it("upstream 4xx/5xx become UPSTREAM_HTTP_ERROR with upstream_status", async () => {
    const h = familyHandlers(false);
    routes = {
      "GET /provider": { status: 400, body: { name: "BadRequest", data: { message: "nope" } } },
      "GET /project/current": { status: 403, body: { name: "Forbidden", data: { message: "denied" } } },
      "GET /experimental/workspace": { status: 500, body: { name: "UnknownError", data: { message: "boom" } } },
    };
    expect((await failure(h["opencode.providers.list"]!({}, call))).data).toMatchObject({ upstream_status: 400, detail: "HTTP 400: nope" });
    const forbidden = await failure(h["opencode.projects.current"]!({}, call));
    expect(forbidden.reason).toBe("UPSTREAM_HTTP_ERROR");
    expect(forbidden.data.upstream_status).toBe(403);
    expect((await failure(h["opencode.workspaces.list"]!({}, call))).data.upstream_status).toBe(500);
  });

  it("results carry no local paths unless exposed", async () => {
    routes = {
      "GET /project": { body: [{ id: "p1", worktree: "/srv/repo", vcs: "git", name: "Repo", sandboxes: [`${HOME}/x`], icon: { url: "file:///srv/i.png" }, time: { created: 1, updated: 1 } }] },
      "GET /experimental/workspace": { body: [{ id: "wrk_1", type: "worktree", name: "w", branch: null, directory: `${HOME}/w`, extra: { path: "/srv/x" }, projectID: "p1", timeUsed: 0 }] },
      "GET /experimental/worktree": { body: [`${HOME}/alpha`, `${HOME}/beta/`] },
      "POST /experimental/worktree": { body: { name: "gamma", branch: "opencode/gamma", directory: `${HOME}/gamma` } },
    };
    const hidden = familyHandlers(false);
    const results = {
      projects: await hidden["opencode.projects.list"]!({}, call),
      workspaces: await hidden["opencode.workspaces.list"]!({}, call),
      worktrees: await hidden["opencode.worktrees.list"]!({}, call),
      created: await hidden["opencode.worktrees.create"]!({ request: { name: "gamma" } }, call),
    };
    expect(results).toEqual({
      projects: { items: [{ id: "p1", name: "Repo", vcs: "git" }] },
      workspaces: { items: [{ id: "wrk_1", type: "worktree", name: "w", branch: null }] },
      worktrees: { items: [{ name: "alpha" }, { name: "beta" }] },
      created: { item: { name: "gamma", branch: "opencode/gamma" } },
    });
    expect(JSON.stringify(results)).not.toContain("/srv");

    const shown = familyHandlers(true);
    expect(await shown["opencode.projects.list"]!({}, call)).toEqual({ items: [{ id: "p1", name: "Repo", vcs: "git", worktree: "/srv/repo" }] });
    expect(await shown["opencode.workspaces.list"]!({}, call)).toEqual({ items: [{ id: "wrk_1", type: "worktree", name: "w", branch: null, directory: `${HOME}/w` }] });
    expect(await shown["opencode.worktrees.list"]!({}, call)).toEqual({ items: [{ name: "alpha", directory: `${HOME}/alpha` }, { name: "beta", directory: `${HOME}/beta/` }] });
  });

  it("remove/reset by name resolve the directory through the worktree list; the detail of a failure is redacted", async () => {
    routes = {
      "GET /experimental/worktree": { body: [`${HOME}/alpha`, `/other/alpha`, `${HOME}/beta`] },
      "POST /experimental/worktree/reset": { body: true },
      "DELETE /experimental/worktree": { status: 400, body: { name: "WorktreeRemoveFailedError", data: { message: `fatal: '${HOME}/beta' is locked; see C:\\Users\\me\\x.txt or https://git-scm.com/docs/x` } } },
    };
    const h = familyHandlers(false);
    seen.length = 0;
    expect(await h["opencode.worktrees.reset"]!({ request: { name: "beta" } }, call)).toEqual({ ok: true });
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ directory: `${HOME}/beta` });

    const ambiguous = await failure(h["opencode.worktrees.reset"]!({ request: { name: "alpha" } }, call));
    expect(ambiguous.reason).toBe("INVALID_PARAMS");
    expect(ambiguous.data.field).toBe("request.name");

    const removal = await failure(h["opencode.worktrees.remove"]!({ request: { name: "beta" } }, call));
    expect(removal.reason).toBe("UPSTREAM_HTTP_ERROR");
    expect(removal.data.detail).toBe("HTTP 400: fatal: '…/beta' is locked; see …/x.txt or https://git-scm.com/docs/x");
    const raw = await failure(familyHandlers(true)["opencode.worktrees.remove"]!({ request: { name: "beta" } }, call));
    expect(raw.data.detail).toContain(`${HOME}/beta`);
  });

  it("workspaces.create passes the request through; remove answers item null for a null body", async () => {
    routes = {
      "POST /experimental/workspace": { body: { id: "wrk_9", type: "worktree", name: "n", branch: "b", directory: "/srv/w", projectID: "p", timeUsed: 1 } },
      "DELETE /experimental/workspace/wrk_9": { body: null },
    };
    const h = familyHandlers(false);
    seen.length = 0;
    const created = await h["opencode.workspaces.create"]!({ request: { type: "worktree", id: "wrk_9", branch: "b", extra: { k: 1 } } }, call);
    expect(created).toEqual({ item: { id: "wrk_9", type: "worktree", name: "n", branch: "b" } });
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ type: "worktree", id: "wrk_9", branch: "b", extra: { k: 1 } });
    expect(await h["opencode.workspaces.remove"]!({ workspace_id: "wrk_9" }, call)).toEqual({ item: null });
  });
});

describe("redactPaths", () => {
  it.each([
    ["fatal: '/tmp/a/workspace' is a main working tree", "fatal: '…/workspace' is a main working tree"],
    ["see /srv/x/y.", "see …/y."],
    ["no path here: a/b and 1/2", "no path here: a/b and 1/2"],
    ["url http://host:1/a/b stays", "url http://host:1/a/b stays"],
    ["D:\\work\\repo failed", "…/repo failed"],
    ["root / alone", "root / alone"],
  ])("%s", (input, output) => {
    expect(redactPaths(input)).toBe(output);
  });
});
