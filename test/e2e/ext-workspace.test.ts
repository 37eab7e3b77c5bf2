// e2e: provider discovery (`opencode.providers.list`, `opencode.models.list`) and workspace control
// (`opencode.projects.*`, `opencode.workspaces.*`, `opencode.worktrees.*`) against the real `opencode serve`
// (hermetic, one server for the whole file). Two gateways share the one upstream link: the default one withholds
// local paths, the other publishes them (A2A_EXPOSE_WORKSPACE_ROOT_IN_CARD=true); both enable the mutations.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { startHermeticOpencode, type HermeticOpencode } from "../../tools/upstream/hermetic.js";
import { startModelServer, type ModelServer } from "../../tools/upstream/model-server.js";
import { expectRpcError, expectValid, errorInfoOf } from "../support/contract.js";
import { rpc, startGateway, TEST_TOKEN, type HttpResult, type StartedGateway } from "../support/gateway.js";

const PASSWORD = "e2e-ext-workspace-password";
let model: ModelServer;
let oc: HermeticOpencode;
let upstream: Upstream;
let gw: StartedGateway;
let exposed: StartedGateway;
let scratch: string;
let workspace: string;

beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-ext-workspace-"));
  model = await startModelServer();
  oc = await startHermeticOpencode({ modelBaseUrl: model.baseUrl, password: PASSWORD });
  workspace = fs.realpathSync(oc.workspace);
  fs.mkdirSync(path.join(oc.workspace, "sub"));
  const env = {
    A2A_BEARER_TOKEN: TEST_TOKEN,
    OPENCODE_BASE_URL: oc.url,
    OPENCODE_SERVER_PASSWORD: PASSWORD,
    OPENCODE_WORKSPACE_ROOT: oc.workspace,
    A2A_TASK_STORE_BACKEND: "memory",
    A2A_ENABLE_WORKSPACE_MUTATIONS: "true",
  };
  upstream = await startUpstream(loadConfig(env), pino({ level: "silent" }));
  gw = await startGateway(env, { upstream });
  exposed = await startGateway({ ...env, A2A_EXPOSE_WORKSPACE_ROOT_IN_CARD: "true" }, { upstream });
}, 90_000);

afterAll(async () => {
  await gw?.close();
  await exposed?.close();
  await upstream?.stop();
  await oc?.stop();
  await model?.close();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
}, 30_000);

let nextId = 1;
async function call(method: string, params: Record<string, unknown> = {}, opts: { via?: StartedGateway; headers?: Record<string, string> } = {}): Promise<HttpResult> {
  return rpc((opts.via ?? gw).url, { jsonrpc: "2.0", id: nextId++, method, params }, opts.headers);
}

/** The result of a successful call, checked against the method's generated result schema. */
async function ok(method: string, params: Record<string, unknown> = {}, schema?: string, via?: StartedGateway): Promise<any> {
  const res = await call(method, params, via === undefined ? {} : { via });
  expect(res.status, res.text).toBe(200);
  expect(res.body.error, res.text).toBeUndefined();
  if (schema !== undefined) await expectValid(`extensions/${schema}`, res.body.result);
  return res.body.result;
}

/** Git in the throwaway workspace, independent of any global/system git config. */
function git(...args: string[]): string {
  return execFileSync("git", args, {
    cwd: oc.workspace,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: oc.home, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
    encoding: "utf8",
  });
}

/** Directories of the linked worktrees git knows about (the main worktree excluded). */
function gitWorktrees(): string[] {
  return git("worktree", "list", "--porcelain")
    .split("\n")
    .filter((l) => l.startsWith("worktree "))
    .map((l) => l.slice("worktree ".length))
    .filter((d) => fs.realpathSync(d) !== workspace);
}

describe("provider discovery", () => {
  it("opencode.providers.list summarizes the catalog without credentials or endpoints", async () => {
    const result = await ok("opencode.providers.list", {}, "ProvidersListResult");
    expect(result).toEqual({
      items: [{ provider_id: "fake", name: "Fake LLM", source: "config", connected: true, default_model_id: "fake-model", model_count: 1 }],
      default_by_provider: { fake: "fake-model" },
      connected: ["fake"],
    });
    // OpenCode's provider entry carries the apiKey and baseURL of the hermetic config: neither may pass.
    const text = JSON.stringify(result);
    expect(text).not.toContain("fake-key");
    expect(text).not.toContain(model.baseUrl);
  });

  it("opencode.models.list flattens the models, with and without a provider filter", async () => {
    const fakeModel = {
      provider_id: "fake",
      model_id: "fake-model",
      name: "Fake Model",
      status: "active",
      context_window: 128000,
      max_output_tokens: 4096,
      supports_reasoning: false,
      supports_tool_call: true,
      supports_attachments: false,
      default: true,
      connected: true,
    };
    const all = await ok("opencode.models.list", {}, "ModelsListResult");
    expect(all).toEqual({ items: [fakeModel], default_by_provider: { fake: "fake-model" }, connected: ["fake"] });
    const filtered = await ok("opencode.models.list", { provider_id: "fake" }, "ModelsListResult");
    expect(filtered.items).toEqual([fakeModel]);
    const other = await ok("opencode.models.list", { provider_id: "openai" }, "ModelsListResult");
    expect(other).toEqual({ items: [], default_by_provider: { fake: "fake-model" }, connected: ["fake"] });
  });

  it("reads the catalog for metadata.opencode.directory inside the workspace and refuses one outside it", async () => {
    const inside = await ok("opencode.providers.list", { metadata: { opencode: { directory: "sub" } } }, "ProvidersListResult");
    expect(inside.items.map((p: any) => p.provider_id)).toEqual(["fake"]);
    const error = await expectRpcError(await call("opencode.models.list", { metadata: { opencode: { directory: "/" } } }), "0.3", "INVALID_PARAMS");
    expect(error.data.field).toBe("metadata.opencode.directory");
  });

  it("an upstream error status on a routed read becomes UPSTREAM_HTTP_ERROR with upstream_status", async () => {
    // OpenCode answers 500 for an unknown ?workspace= on /provider.
    const res = await call("opencode.providers.list", { metadata: { opencode: { workspace: { id: "wrk_does_not_exist" } } } });
    const error = await expectRpcError(res, "0.3", "UPSTREAM_HTTP_ERROR");
    expect(error.data.upstream_status).toBe(500);
    // 1.0 shaping of the same failure: ErrorInfo metadata, camelCased.
    const res10 = await call("opencode.providers.list", { metadata: { opencode: { workspace: { id: "wrk_does_not_exist" } } } }, { headers: { "A2A-Version": "1.0" } });
    const error10 = await expectRpcError(res10, "1.0", "UPSTREAM_HTTP_ERROR");
    expect((await errorInfoOf(error10.data)).metadata.upstreamStatus).toBe("500");
  });

  it("invalid params name the field", async () => {
    const error = await expectRpcError(await call("opencode.models.list", { provider_id: "" }), "0.3", "INVALID_PARAMS");
    expect(error.data.field).toBe("provider_id");
  });

  it("answers a notification with 204", async () => {
    const res = await rpc(gw.url, { jsonrpc: "2.0", method: "opencode.providers.list", params: {} });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
  });
});

describe("projects", () => {
  it("opencode.projects.current returns the active project without its path; the exposing gateway adds it", async () => {
    const { item } = await ok("opencode.projects.current", {}, "ProjectResult");
    expect(item.id).toMatch(/^[0-9a-f]{40}$/);
    expect(item.vcs).toBe("git");
    expect(Object.keys(item).sort()).toEqual(["id", "vcs"]);
    const withPath = await ok("opencode.projects.current", {}, "ProjectResult", exposed);
    expect(withPath.item).toEqual({ ...item, worktree: expect.any(String) });
    expect(fs.realpathSync(withPath.item.worktree)).toBe(workspace);
  });

  it("opencode.projects.list includes the current project and no local path", async () => {
    const { item } = await ok("opencode.projects.current");
    const result = await ok("opencode.projects.list", {}, "ProjectListResult");
    expect(result.items).toContainEqual(item);
    for (const p of result.items) expect(p.worktree).toBeUndefined();
    expect(JSON.stringify(result)).not.toContain(oc.workspace);
    const withPaths = await ok("opencode.projects.list", {}, "ProjectListResult", exposed);
    expect(fs.realpathSync(withPaths.items.find((p: any) => p.id === item.id).worktree)).toBe(workspace);
  });
});

describe("worktrees", () => {
  it("create → list → reset → remove by name, with no local path in any result", async () => {
    const created = await ok("opencode.worktrees.create", { request: { name: "alpha" } }, "WorktreeResult");
    expect(created).toEqual({ item: { name: "alpha", branch: "opencode/alpha" } });
    // It is a real git worktree on the OpenCode host, kept under OpenCode's data dir (never in a result).
    const onDisk = gitWorktrees().find((d) => path.basename(d) === "alpha");
    expect(onDisk).toBeDefined();

    const listed = await ok("opencode.worktrees.list", {}, "WorktreeListResult");
    expect(listed.items).toContainEqual({ name: "alpha" });
    const text = JSON.stringify(listed);
    expect(text).not.toContain(oc.home);
    expect(text).not.toContain("/");

    fs.writeFileSync(path.join(onDisk!, "scratch.txt"), "dirty\n");
    expect(await ok("opencode.worktrees.reset", { request: { name: "alpha" } }, "WorktreeOkResult")).toEqual({ ok: true });
    expect(fs.existsSync(path.join(onDisk!, "scratch.txt"))).toBe(false);

    expect(await ok("opencode.worktrees.remove", { request: { name: "alpha" } }, "WorktreeOkResult")).toEqual({ ok: true });
    expect(fs.existsSync(onDisk!)).toBe(false);
    expect((await ok("opencode.worktrees.list")).items).not.toContainEqual({ name: "alpha" });
  });

  it("the exposing gateway returns directories, and remove accepts request.directory", async () => {
    const { item } = await ok("opencode.worktrees.create", { request: { name: "beta" } }, "WorktreeResult", exposed);
    expect(item.name).toBe("beta");
    expect(item.branch).toBe("opencode/beta");
    expect(path.isAbsolute(item.directory)).toBe(true);
    expect(path.basename(item.directory)).toBe("beta");
    expect(fs.existsSync(item.directory)).toBe(true);
    const listed = await ok("opencode.worktrees.list", {}, "WorktreeListResult", exposed);
    expect(listed.items).toContainEqual({ name: "beta", directory: item.directory });
    expect(await ok("opencode.worktrees.remove", { request: { directory: item.directory } })).toEqual({ ok: true });
    expect(fs.existsSync(item.directory)).toBe(false);
  });

  it("an unknown worktree name, or both/neither of name and directory, is invalid params naming the field", async () => {
    const unknown = await expectRpcError(await call("opencode.worktrees.reset", { request: { name: "no-such-worktree" } }), "0.3", "INVALID_PARAMS");
    expect(unknown.data.field).toBe("request.name");
    expect(unknown.message).toContain("no-such-worktree");
    const both = await expectRpcError(await call("opencode.worktrees.remove", { request: { name: "x", directory: "/x" } }), "0.3", "INVALID_PARAMS");
    expect(both.data.fields).toEqual(["request.name", "request.directory"]);
    const neither = await expectRpcError(await call("opencode.worktrees.remove", { request: {} }), "0.3", "INVALID_PARAMS");
    expect(neither.data.field).toBe("request.name");
    const missing = await expectRpcError(await call("opencode.worktrees.reset", {}), "0.3", "INVALID_PARAMS");
    expect(missing.data.field).toBe("request");
  });

  it("an upstream 400 becomes UPSTREAM_HTTP_ERROR; paths in its detail are redacted unless exposed", async () => {
    // git refuses to remove the main worktree: "fatal: '<workspace>' is a main working tree".
    const error = await expectRpcError(await call("opencode.worktrees.remove", { request: { directory: oc.workspace } }), "0.3", "UPSTREAM_HTTP_ERROR");
    expect(error.data.upstream_status).toBe(400);
    expect(error.data.detail).toContain("is a main working tree");
    expect(error.data.detail).toContain(`…/${path.basename(oc.workspace)}`);
    expect(JSON.stringify(error)).not.toContain(oc.workspace);

    const raw = await expectRpcError(await call("opencode.worktrees.remove", { request: { directory: oc.workspace } }, { via: exposed }), "0.3", "UPSTREAM_HTTP_ERROR");
    expect(raw.data.detail).toContain(oc.workspace);

    const reset = await expectRpcError(await call("opencode.worktrees.reset", { request: { directory: oc.workspace } }), "0.3", "UPSTREAM_HTTP_ERROR");
    expect(reset.data).toMatchObject({ upstream_status: 400, detail: expect.stringContaining("Cannot reset the primary workspace") });
    // The main worktree is untouched.
    expect(fs.existsSync(path.join(oc.workspace, "README.md"))).toBe(true);
  });
});

describe("workspaces", () => {
  it("opencode.workspaces.list answers the (empty) list", async () => {
    expect(await ok("opencode.workspaces.list", {}, "WorkspaceListResult")).toEqual({ items: [] });
  });

  it("opencode.workspaces.remove: unknown wrk id → item null; malformed id → UPSTREAM_HTTP_ERROR 400", async () => {
    expect(await ok("opencode.workspaces.remove", { workspace_id: "wrk_does_not_exist" }, "WorkspaceRemoveResult")).toEqual({ item: null });
    const error = await expectRpcError(await call("opencode.workspaces.remove", { workspace_id: "not-a-workspace" }), "0.3", "UPSTREAM_HTTP_ERROR");
    expect(error.data.upstream_status).toBe(400);
    const invalid = await expectRpcError(await call("opencode.workspaces.remove", {}), "0.3", "INVALID_PARAMS");
    expect(invalid.data.field).toBe("workspace_id");
  });

  it("opencode.workspaces.create: an unknown adapter is UPSTREAM_HTTP_ERROR 400; a missing type is invalid params", async () => {
    const error = await expectRpcError(await call("opencode.workspaces.create", { request: { type: "no-such-adapter" } }), "0.3", "UPSTREAM_HTTP_ERROR");
    expect(error.data).toMatchObject({ upstream_status: 400, detail: expect.stringContaining("Unknown workspace adapter") });
    const invalid = await expectRpcError(await call("opencode.workspaces.create", { request: { branch: null } }), "0.3", "INVALID_PARAMS");
    expect(invalid.data.field).toBe("request.type");
  });

  it(
    "opencode.workspaces.create with the worktree adapter fails upstream (OpenCode 1.18.33) and the left-over worktree is cleaned up",
    async () => {
      const before = gitWorktrees();
      try {
        const res = await call("opencode.workspaces.create", { request: { type: "worktree", branch: null } });
        // Upstream: 400 WorkspaceCreateError "Timed out waiting for global event" (reference §7.12).
        const error = await expectRpcError(res, "0.3", "UPSTREAM_HTTP_ERROR");
        expect(error.data.upstream_status).toBe(400);
        expect(error.data.detail).toContain("Timed out waiting for global event");
        expect((await ok("opencode.workspaces.list")).items).toEqual([]);
      } finally {
        // It leaves a detached git worktree behind in the throwaway workspace: remove it.
        for (const dir of gitWorktrees().filter((d) => !before.includes(d))) git("worktree", "remove", "--force", dir);
        git("worktree", "prune");
      }
      expect(gitWorktrees()).toEqual(before);
    },
    60_000,
  );
});
