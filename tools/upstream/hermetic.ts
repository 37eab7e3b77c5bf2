/**
 * Hermetic launcher for a real `opencode serve` (see /work/shared/reference/opencode-upstream.md §3, §9, §10).
 *
 * - Runs the platform binary of the installed `opencode-ai` package directly (never the postinstall stub).
 * - Fresh throwaway HOME / XDG dirs per server, a config that only knows the fake OpenAI-compatible provider,
 *   and a pre-seeded config dir so OpenCode does not npm-install its plugin package at runtime.
 * - Waits for the "opencode server listening on <url>" stdout line before handing the URL out
 *   (requests sent earlier can hang forever; `--port 0` is not random, so the URL is always parsed).
 * - stop(): SIGTERM, up to 5 s grace, then SIGKILL (by PID); removes the temp dirs it created.
 *
 * Node built-ins only.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

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
}

export interface HermeticOpencode {
  /** parsed from the "opencode server listening on <url>" stdout line, e.g. http://127.0.0.1:4096 */
  url: string;
  pid: number;
  home: string;
  workspace: string;
  configFile: string;
  /** SIGTERM, wait up to 5 s, then SIGKILL; removes temp dirs it created. Idempotent. */
  stop(): Promise<void>;
}

const LISTENING_RE = /opencode server listening on (\S+)/;
const STOP_GRACE_MS = 5_000;
const KILL_WAIT_MS = 5_000;
const MAX_CAPTURED_LINES = 200;
const PLUGIN_PACKAGE = "@opencode-ai/plugin";

const here = dirname(fileURLToPath(import.meta.url));

/** The nearest node_modules (walking up from this file) that contains opencode-ai. */
function findNodeModules(): string {
  let dir = here;
  for (;;) {
    const candidate = join(dir, "node_modules");
    if (existsSync(join(candidate, "opencode-ai", "package.json"))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(`opencode-ai is not installed: no node_modules/opencode-ai above ${here}`);
    }
    dir = parent;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readJsonObject(file: string): Record<string, unknown> {
  const value: unknown = JSON.parse(readFileSync(file, "utf8"));
  if (!isObject(value)) throw new Error(`${file}: expected a JSON object`);
  return value;
}

/** The installed opencode-ai package version (from its package.json). */
export function opencodeVersion(): string {
  const file = join(findNodeModules(), "opencode-ai", "package.json");
  const version = readJsonObject(file).version;
  if (typeof version !== "string" || version === "") throw new Error(`${file}: no "version"`);
  return version;
}

function cpuHasAvx2(): boolean {
  try {
    return /(^|\s)avx2(\s|$)/im.test(readFileSync("/proc/cpuinfo", "utf8"));
  } catch {
    return false;
  }
}

function isMusl(): boolean {
  if (process.platform !== "linux") return false;
  if (existsSync("/etc/alpine-release")) return true;
  // Node's diagnostic report names the glibc it runs on; it is absent on musl.
  const report: unknown = process.report.getReport();
  const header: unknown = isObject(report) ? report.header : undefined;
  return !(isObject(header) && typeof header.glibcVersionRuntime === "string");
}

/** Platform package names in order of preference (mirrors opencode-ai's postinstall.mjs). */
function platformPackageCandidates(): string[] {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  const arch = process.arch;
  const base = `opencode-${platform}-${arch}`;
  const baseline = arch === "x64" && !cpuHasAvx2();
  if (platform === "linux") {
    if (isMusl()) {
      if (arch === "x64") {
        return baseline
          ? [`${base}-baseline-musl`, `${base}-musl`, `${base}-baseline`, base]
          : [`${base}-musl`, `${base}-baseline-musl`, base, `${base}-baseline`];
      }
      return [`${base}-musl`, base];
    }
    if (arch === "x64") {
      return baseline
        ? [`${base}-baseline`, base, `${base}-baseline-musl`, `${base}-musl`]
        : [base, `${base}-baseline`, `${base}-musl`, `${base}-baseline-musl`];
    }
    return [base, `${base}-musl`];
  }
  if (arch === "x64") return baseline ? [`${base}-baseline`, base] : [base, `${base}-baseline`];
  return [base];
}

/**
 * Absolute path of the platform binary, e.g. node_modules/opencode-linux-x64/bin/opencode
 * (the -baseline build when the CPU lacks AVX2; -musl / arm64 packages when those are what is installed).
 * Never node_modules/opencode-ai/bin/opencode.exe, which is a shell stub unless the postinstall ran.
 */
export function resolveOpencodeBinary(): string {
  const nodeModules = findNodeModules();
  const exe = process.platform === "win32" ? "opencode.exe" : "opencode";
  const candidates = platformPackageCandidates();
  for (const name of candidates) {
    const binary = join(nodeModules, name, "bin", exe);
    if (existsSync(binary) && statSync(binary).isFile()) return binary;
  }
  throw new Error(
    `no OpenCode platform binary found in ${nodeModules}; looked for ${candidates.join(", ")} ` +
      `(install opencode-ai with its optional dependencies)`,
  );
}

/**
 * Writes the offline config (reference §3.1): only the "fake" OpenAI-compatible provider at modelBaseUrl,
 * autoupdate off, sharing disabled. Returns the path of the written file.
 */
export function writeHermeticConfig(dir: string, modelBaseUrl: string): string {
  const config = {
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

// Servers still running when this Node process exits are killed (and their temp dirs removed) synchronously.
const live = new Map<ChildProcess, string>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const [child, tempRoot] of live) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      rmSync(tempRoot, { recursive: true, force: true });
    }
  });
}

function isRunning(child: ChildProcess): boolean {
  // pid is undefined when the spawn itself failed (e.g. ENOENT): there is nothing to stop.
  return child.pid !== undefined && child.exitCode === null && child.signalCode === null;
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (!isRunning(child)) return Promise.resolve(true);
  return new Promise((resolveWait) => {
    const onExit = (): void => {
      clearTimeout(timer);
      resolveWait(true);
    };
    const timer = setTimeout(() => {
      child.off("exit", onExit);
      resolveWait(false);
    }, timeoutMs);
    child.once("exit", onExit);
  });
}

async function terminate(child: ChildProcess): Promise<void> {
  if (!isRunning(child)) return;
  child.kill("SIGTERM");
  if (await waitForExit(child, STOP_GRACE_MS)) return;
  child.kill("SIGKILL");
  if (!(await waitForExit(child, KILL_WAIT_MS))) {
    throw new Error(`opencode (pid ${child.pid ?? "?"}) did not exit after SIGKILL`);
  }
}

/**
 * Starts `opencode serve --hostname 127.0.0.1 --port 0` in a hermetic environment and resolves once the
 * "listening" line has been printed. Rejects (after cleaning up) on early exit or timeout, with the captured
 * output in the error message.
 */
export async function startHermeticOpencode(opts: HermeticOpencodeOptions): Promise<HermeticOpencode> {
  const binary = resolveOpencodeBinary();
  const version = opencodeVersion();
  const tempRoot = mkdtempSync(join(tmpdir(), "opencode-hermetic-"));
  const ownsWorkspace = opts.workspace === undefined;
  let child: ChildProcess | undefined;
  try {
    const home = join(tempRoot, "home");
    const xdg = {
      XDG_CONFIG_HOME: join(home, ".config"),
      XDG_DATA_HOME: join(home, ".local", "share"),
      XDG_CACHE_HOME: join(home, ".cache"),
      XDG_STATE_HOME: join(home, ".local", "state"),
    };
    for (const dir of Object.values(xdg)) mkdirSync(dir, { recursive: true });
    preseedConfigDir(join(xdg.XDG_CONFIG_HOME, "opencode"), version);

    const workspace = opts.workspace === undefined ? join(tempRoot, "workspace") : resolve(opts.workspace);
    if (ownsWorkspace) createThrowawayWorkspace(workspace, home);
    else if (!existsSync(workspace)) throw new Error(`workspace does not exist: ${workspace}`);
    // A project .opencode dir is a config dir too: pre-seed it, or OpenCode npm-installs into it (§3.2).
    const projectConfigDir = join(workspace, ".opencode");
    if (existsSync(projectConfigDir) && statSync(projectConfigDir).isDirectory()) {
      preseedConfigDir(projectConfigDir, version);
    }

    const configFile = writeHermeticConfig(tempRoot, opts.modelBaseUrl);
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

    const spawned = spawn(binary, ["serve", "--hostname", "127.0.0.1", "--port", "0"], {
      cwd: workspace,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = spawned;
    live.set(spawned, tempRoot);
    installExitHook();

    const url = await waitForListening(spawned, opts.startTimeoutMs ?? 30_000, opts.onLog);
    const pid = spawned.pid;
    if (pid === undefined) throw new Error("opencode has no pid");

    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        try {
          await terminate(spawned);
        } finally {
          live.delete(spawned);
          rmSync(tempRoot, { recursive: true, force: true });
        }
      })();
      return stopping;
    };
    return { url, pid, home, workspace, configFile, stop };
  } catch (error) {
    if (child !== undefined) {
      try {
        await terminate(child);
      } catch {
        // reported by the original error below
      }
      live.delete(child);
    }
    rmSync(tempRoot, { recursive: true, force: true });
    throw error;
  }
}

/** Reads stdout/stderr line by line (for the server's whole life) and resolves with the listening URL. */
function waitForListening(
  child: ChildProcess,
  timeoutMs: number,
  onLog: ((line: string) => void) | undefined,
): Promise<string> {
  const { stdout, stderr } = child;
  if (stdout === null || stderr === null) return Promise.reject(new Error("opencode stdio is not piped"));
  const captured: string[] = [];
  const started = Date.now();
  return new Promise<string>((resolveUrl, reject) => {
    let settled = false;
    const finish = (result: { url: string } | { error: Error }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.off("exit", onExit);
      child.off("error", onError);
      if ("url" in result) resolveUrl(result.url);
      else reject(result.error);
    };
    const failure = (reason: string): Error =>
      new Error(
        `opencode serve ${reason} after ${Date.now() - started} ms; captured output:\n` +
          (captured.length > 0 ? captured.join("\n") : "(none)"),
      );
    const record = (stream: "stdout" | "stderr", line: string): void => {
      onLog?.(line);
      if (settled) return;
      captured.push(`[${stream}] ${line}`);
      if (captured.length > MAX_CAPTURED_LINES) captured.shift();
      const match = stream === "stdout" ? LISTENING_RE.exec(line) : null;
      if (match?.[1] === undefined) return;
      try {
        const parsed = new URL(match[1]);
        finish({ url: parsed.href.replace(/\/$/, "") });
      } catch {
        finish({ error: failure(`printed an unparsable listening URL ${JSON.stringify(match[1])}`) });
      }
    };
    // readline keeps draining both pipes after startup, so the server never blocks on a full pipe.
    createInterface({ input: stdout, crlfDelay: Infinity }).on("line", (line) => record("stdout", line));
    createInterface({ input: stderr, crlfDelay: Infinity }).on("line", (line) => record("stderr", line));
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      // Let the pipes drain (or give up after 500 ms) so the error carries the last lines the server printed.
      const fail = (): void => {
        finish({ error: failure(`exited (code ${code ?? "null"}, signal ${signal ?? "null"}) before listening`) });
      };
      const drained = setTimeout(fail, 500);
      child.once("close", () => {
        clearTimeout(drained);
        fail();
      });
    };
    const onError = (error: Error): void => {
      finish({ error: failure(`failed to spawn: ${error.message}`) });
    };
    const timer = setTimeout(() => {
      finish({ error: failure(`printed no "listening" line within ${timeoutMs} ms`) });
    }, timeoutMs);
    child.once("exit", onExit);
    child.once("error", onError);
  });
}
