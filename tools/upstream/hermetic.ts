/**
 * Hermetic launcher for a real `opencode serve` (reference opencode-upstream.md §3, §9, §10), for the e2e tests
 * and tools/upstream/snapshot.ts.
 *
 * - Fresh throwaway HOME / XDG dirs per server, a config that only knows the fake OpenAI-compatible provider,
 *   the variables that disable the models fetch / autoupdate / share / LSP downloads, and a pre-seeded config
 *   dir so OpenCode does not npm-install its plugin package at runtime. Nothing reaches the internet.
 * - The process itself is run by the product's supervisor (src/upstream/managed.ts): platform binary, URL from
 *   the "listening" line, health check, optional restart, SIGTERM → 5 s → SIGKILL by PID.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { opencodeVersion, resolveOpencodeBinary } from "../../src/upstream/binary.js";
import { ManagedOpencode } from "../../src/upstream/managed.js";

export { opencodeVersion, resolveOpencodeBinary };

export interface HermeticOpencodeOptions {
  /** OpenAI-compatible model server base URL, e.g. http://127.0.0.1:18080/v1 */
  modelBaseUrl: string;
  /** cwd of the server; default: a fresh throwaway git repo in a temp dir (removed by stop()) */
  workspace?: string;
  /** sets OPENCODE_SERVER_PASSWORD (Basic auth, user "opencode") */
  password?: string;
  /** time allowed between spawn and the "listening" line; default 30000 */
  startTimeoutMs?: number;
  /** added last to the (otherwise from-scratch) environment of the server */
  extraEnv?: Record<string, string>;
  /** receives every stdout/stderr line of the server, for its whole life */
  onLog?: (line: string) => void;
  /** restart the server when it dies (default false), as the gateway's managed mode does */
  restart?: boolean;
  /**
   * Deep-merged into the written OpenCode config (objects merge key by key, anything else replaces), e.g.
   * `{ permission: { bash: "ask" } }` (reference §7.3; schema: `Config` in spec/upstream/opencode.openapi.json).
   */
  config?: Record<string, unknown>;
}

export interface HermeticOpencode {
  /** parsed from the "opencode server listening on <url>" stdout line, e.g. http://127.0.0.1:4096 */
  url: string;
  pid: number;
  home: string;
  workspace: string;
  configFile: string;
  /** The supervisor: `managed.kill()` kills the server abruptly; with `restart: true` it comes back. */
  managed: ManagedOpencode;
  /** SIGTERM, wait up to 5 s, then SIGKILL; removes temp dirs it created. Idempotent. */
  stop(): Promise<void>;
}

const PLUGIN_PACKAGE = "@opencode-ai/plugin";

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `base` with `extra` merged in: plain objects merge recursively, any other value (arrays too) replaces. */
function deepMerge(base: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(extra)) {
    const current = out[key];
    out[key] = isObject(current) && isObject(value) ? deepMerge(current, value) : structuredClone(value);
  }
  return out;
}

function readJsonObject(file: string): Record<string, unknown> {
  const value: unknown = JSON.parse(readFileSync(file, "utf8"));
  if (!isObject(value)) throw new Error(`${file}: expected a JSON object`);
  return value;
}

/**
 * Writes the offline config (reference §3.1): only the "fake" OpenAI-compatible provider at modelBaseUrl,
 * autoupdate off, sharing disabled, with `extra` deep-merged in. Returns the path of the written file.
 */
export function writeHermeticConfig(dir: string, modelBaseUrl: string, extra: Record<string, unknown> = {}): string {
  const base = {
    $schema: "https://opencode.ai/config.json",
    autoupdate: false,
    share: "disabled",
    model: "fake/fake-model",
    small_model: "fake/fake-model",
    enabled_providers: ["fake"],
    provider: {
      fake: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake LLM",
        options: { baseURL: modelBaseUrl, apiKey: "fake-key" },
        models: {
          "fake-model": {
            name: "Fake Model",
            tool_call: true,
            limit: { context: 128000, output: 4096 },
          },
        },
      },
    },
  };
  const config = deepMerge(base, extra);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "opencode.hermetic.json");
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

/**
 * Pre-seeds an OpenCode config dir so its plugin-dependency install is skipped (reference §3.2):
 * an empty node_modules/, a package.json depending on @opencode-ai/plugin@<version>, and a package-lock.json
 * whose packages[""].dependencies lists every dependency of that package.json.
 * An existing package.json keeps its other fields and dependencies.
 */
export function preseedConfigDir(configDir: string, version: string): void {
  mkdirSync(join(configDir, "node_modules"), { recursive: true });
  const packageFile = join(configDir, "package.json");
  const pkg: Record<string, unknown> = existsSync(packageFile) ? readJsonObject(packageFile) : {};
  const existing = pkg.dependencies;
  const dependencies: Record<string, string> = {};
  if (isObject(existing)) {
    for (const [name, range] of Object.entries(existing)) {
      if (typeof range === "string") dependencies[name] = range;
    }
  }
  dependencies[PLUGIN_PACKAGE] = version;
  pkg.dependencies = dependencies;
  writeFileSync(packageFile, `${JSON.stringify(pkg)}\n`);
  const lock = { lockfileVersion: 3, packages: { "": { dependencies } } };
  writeFileSync(join(configDir, "package-lock.json"), `${JSON.stringify(lock)}\n`);
}

/** `git init` + one committed file, independent of any global/system git config. */
function createThrowawayWorkspace(dir: string, gitHome: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "README.md"), "# hermetic opencode workspace\n");
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: gitHome,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
  };
  const git = (...args: string[]): void => {
    execFileSync("git", args, { cwd: dir, env, stdio: ["ignore", "ignore", "pipe"] });
  };
  git("-c", "init.defaultBranch=main", "init", "-q");
  git("add", "README.md");
  git(
    "-c", "user.email=hermetic@opencode-a2a.invalid",
    "-c", "user.name=opencode-a2a hermetic",
    "-c", "commit.gpgsign=false",
    "commit", "-q", "--no-verify", "-m", "initial commit",
  );
}

export interface HermeticEnvironment {
  /** Scratch root holding home/, the config file and (unless given) workspace/; remove it when done. */
  root: string;
  home: string;
  workspace: string;
  configFile: string;
  env: NodeJS.ProcessEnv;
}

/**
 * Creates the scratch directories, config and environment of one hermetic OpenCode run without starting it
 * (the managed-mode CLI test hands this environment to the gateway, which starts OpenCode itself).
 */
export function prepareHermeticEnvironment(opts: Pick<HermeticOpencodeOptions, "modelBaseUrl" | "workspace" | "password" | "extraEnv" | "config">): HermeticEnvironment {
  const version = opencodeVersion();
  const root = mkdtempSync(join(tmpdir(), "opencode-hermetic-"));
  try {
    const home = join(root, "home");
    const xdg = {
      XDG_CONFIG_HOME: join(home, ".config"),
      XDG_DATA_HOME: join(home, ".local", "share"),
      XDG_CACHE_HOME: join(home, ".cache"),
      XDG_STATE_HOME: join(home, ".local", "state"),
    };
    for (const dir of Object.values(xdg)) mkdirSync(dir, { recursive: true });
    preseedConfigDir(join(xdg.XDG_CONFIG_HOME, "opencode"), version);

    const workspace = opts.workspace === undefined ? join(root, "workspace") : resolve(opts.workspace);
    if (opts.workspace === undefined) createThrowawayWorkspace(workspace, home);
    else if (!existsSync(workspace)) throw new Error(`workspace does not exist: ${workspace}`);
    // A project .opencode dir is a config dir too: pre-seed it, or OpenCode npm-installs into it (§3.2).
    const projectConfigDir = join(workspace, ".opencode");
    if (existsSync(projectConfigDir) && statSync(projectConfigDir).isDirectory()) preseedConfigDir(projectConfigDir, version);

    const configFile = writeHermeticConfig(root, opts.modelBaseUrl, opts.config);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: home,
      ...xdg,
      OPENCODE_CONFIG: configFile,
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_SHARE: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      ...(opts.password === undefined ? {} : { OPENCODE_SERVER_PASSWORD: opts.password }),
      ...opts.extraEnv,
    };
    return { root, home, workspace, configFile, env };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Starts `opencode serve --hostname 127.0.0.1 --port 0` hermetically and resolves once it printed its
 * "listening" line and answers /global/health. Rejects (after cleaning up) on early exit or timeout, with the
 * captured output in the error message.
 */
export async function startHermeticOpencode(opts: HermeticOpencodeOptions): Promise<HermeticOpencode> {
  const binary = resolveOpencodeBinary();
  const prepared = prepareHermeticEnvironment(opts);
  const managed = new ManagedOpencode({
    binary,
    cwd: prepared.workspace,
    env: prepared.env,
    ...(opts.password === undefined ? {} : { password: opts.password }),
    startTimeoutMs: opts.startTimeoutMs ?? 30_000,
    restart: opts.restart ?? false,
    restartInitialMs: 200,
    ...(opts.onLog === undefined ? {} : { onLine: (_stream: string, line: string) => opts.onLog?.(line) }),
  });
  let url: string;
  try {
    url = await managed.start();
  } catch (error) {
    await managed.stop();
    rmSync(prepared.root, { recursive: true, force: true });
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    get url() {
      return managed.url ?? url;
    },
    get pid() {
      return managed.pid ?? -1;
    },
    home: prepared.home,
    workspace: prepared.workspace,
    configFile: prepared.configFile,
    managed,
    stop() {
      stopping ??= managed.stop().finally(() => rmSync(prepared.root, { recursive: true, force: true }));
      return stopping;
    },
  };
}
