// A supervised `opencode serve` child process: the gateway's own OpenCode when OPENCODE_BASE_URL is not set
// (the user's OpenCode config and auth apply: it is their agent), and the hermetic OpenCode of the e2e tests
// (tools/upstream/hermetic.ts passes a scratch environment).
//
// - spawns the platform binary with `--hostname 127.0.0.1 --port <p>` and reads the URL from the
//   "opencode server listening on <url>" stdout line (requests sent before that line can hang forever, and
//   `--port 0` is not random: reference pitfalls 1 and 2);
// - checks GET /global/health before declaring it ready;
// - restarts it with exponential backoff when it dies, preferring the port it had so the URL stays stable;
// - stop(): SIGTERM, a grace period, then SIGKILL, to the child's process group; a process exit hook kills a group
//   left behind;
// - OpenCode runs under bin/opencode-a2a-guardian.mjs, which stops it when the gateway dies without running any code
//   (SIGKILL).
import { spawn, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import path from "node:path";
import { packageRoot } from "../contract/catalog.js";
import { EventEmitter } from "node:events";
import { createInterface } from "node:readline";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import { basicAuthHeader } from "./client.js";
import { clientOnTransport } from "./request.js";

export interface ManagedOpencodeOptions {
  binary: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** 0 = let OpenCode choose (4096 when free). */
  port?: number;
  /** Basic auth password the child was given (for the health check). */
  password?: string;
  username?: string;
  startTimeoutMs?: number;
  /** Restart a child that exits on its own (default true). */
  restart?: boolean;
  restartInitialMs?: number;
  restartMaxMs?: number;
  stopGraceMs?: number;
  /** Every stdout/stderr line of the child. */
  onLine?: (stream: "stdout" | "stderr", line: string) => void;
}

export interface ManagedOpencodeEvents {
  /** OpenCode listens at `url`; `pid` is its own (-1 if its guardian did not report it). */
  ready: [url: string, pid: number];
  exit: [code: number | null, signal: NodeJS.Signals | null];
  restarting: [delayMs: number, attempt: number];
  error: [error: Error];
}

const LISTENING_RE = /opencode server listening on (\S+)/;
const MAX_CAPTURED_LINES = 200;

/** The guardian script (plain JavaScript, so sources and dist/ start the same file). */
const GUARDIAN = path.join(packageRoot, "bin", "opencode-a2a-guardian.mjs");

/** Signals the child's process group (the guardian and OpenCode); falls back to the child alone. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) {
      process.kill(-child.pid, signal);
      return;
    }
  } catch {
    // no such group (already gone): try the process itself
  }
  try {
    child.kill(signal);
  } catch {
    // already gone
  }
}

// Children still running when this Node process exits are killed synchronously.
const live = new Set<ChildProcess>();
let exitHook = false;
function installExitHook(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", () => {
    for (const child of live) signalGroup(child, "SIGKILL");
  });
}

function running(child: ChildProcess): boolean {
  return child.pid !== undefined && child.exitCode === null && child.signalCode === null;
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (!running(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onExit = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      child.off("exit", onExit);
      resolve(false);
    }, timeoutMs);
    child.once("exit", onExit);
  });
}

export class ManagedOpencode extends EventEmitter<ManagedOpencodeEvents> {
  #child: ChildProcess | undefined;
  #url: string | undefined;
  #port: number;
  #stopping = false;
  #stopped: Promise<void> | undefined;
  #restartTimer: NodeJS.Timeout | undefined;
  #restarts = 0;
  #startedAt = 0;
  #opencodePid: number | undefined;
  readonly #opts: Required<Omit<ManagedOpencodeOptions, "password" | "onLine" | "port">> &
    Pick<ManagedOpencodeOptions, "password" | "onLine">;

  constructor(opts: ManagedOpencodeOptions) {
    super();
    this.#port = opts.port ?? 0;
    this.#opts = {
      username: "opencode",
      startTimeoutMs: 60_000,
      restart: true,
      restartInitialMs: 1_000,
      restartMaxMs: 30_000,
      stopGraceMs: 5_000,
      ...opts,
    };
  }

  get url(): string | undefined {
    return this.#url;
  }

  /** The guardian's pid, which is also the process group of OpenCode (signal `-pid` to reach both). */
  get guardianPid(): number | undefined {
    return this.#child !== undefined && running(this.#child) ? this.#child.pid : undefined;
  }

  /** OpenCode's own pid, as its guardian reported it. */
  get pid(): number | undefined {
    return this.guardianPid === undefined ? undefined : this.#opencodePid;
  }

  get restarts(): number {
    return this.#restarts;
  }

  /** Spawns OpenCode and resolves with its URL once it listens and answers /global/health. */
  async start(): Promise<string> {
    let lastError: unknown = new Error("managed opencode is stopped");
    // `--port 0` means "4096 if free": two servers starting at once can race for it and one exits before it
    // listens. Such an early exit is retried; a missing binary or a timeout is not.
    for (let attempt = 1; attempt <= 3 && !this.#stopping; attempt++) {
      try {
        const { child, url } = await this.#spawnOnce(this.#port);
        this.#watch(child);
        return url;
      } catch (error) {
        lastError = error;
        if (!(error instanceof Error && / before listening/.test(error.message))) break;
        await new Promise((r) => setTimeout(r, 250 * attempt));
      }
    }
    throw lastError;
  }

  async #spawnOnce(port: number): Promise<{ child: ChildProcess; url: string }> {
    const serve = [this.#opts.binary, "serve", "--hostname", "127.0.0.1", "--port", String(port)];
    const child = spawn(process.execPath, [GUARDIAN, String(this.#opts.stopGraceMs), ...serve], {
      cwd: this.#opts.cwd,
      env: this.#opts.env,
      // stdin: the pipe whose closing (this process gone) tells the guardian to stop OpenCode; fd 3: the guardian
      // writes OpenCode's pid there.
      stdio: ["pipe", "pipe", "pipe", "pipe"],
      // Own process group: a terminal's Ctrl-C reaches the gateway, which stops OpenCode in order.
      detached: true,
    });
    live.add(child);
    installExitHook();
    child.once("exit", () => live.delete(child));
    let opencodePid: number | undefined;
    let reported = "";
    const report = child.stdio[3] as Readable | null;
    report?.on("data", (d: Buffer) => {
      reported += d.toString();
      const pid = Number(reported.trim());
      if (reported.includes("\n") && Number.isSafeInteger(pid) && pid > 0) opencodePid = pid;
    });
    report?.on("error", () => undefined);
    try {
      const url = await this.#waitForListening(child);
      await this.#waitHealthy(url, child);
      this.#opencodePid = opencodePid;
      this.#child = child;
      this.#url = url;
      this.#port = Number(new URL(url).port) || this.#port;
      this.#startedAt = Date.now();
      this.emit("ready", url, opencodePid ?? -1);
      return { child, url };
    } catch (error) {
      await this.#terminate(child);
      throw error;
    }
  }

  #watch(child: ChildProcess): void {
    child.once("exit", (code, signal) => {
      if (this.#child === child) this.#child = undefined;
      this.emit("exit", code, signal);
      if (this.#stopping || !this.#opts.restart) return;
      this.#scheduleRestart(1);
    });
  }

  #scheduleRestart(attempt: number): void {
    // A child that ran for a while before dying starts the backoff from the beginning.
    const stable = Date.now() - this.#startedAt > 60_000;
    const n = stable ? 1 : attempt;
    const delay = Math.min(this.#opts.restartMaxMs, this.#opts.restartInitialMs * 2 ** (n - 1));
    this.emit("restarting", delay, n);
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (this.#stopping) return;
      this.#restarts++;
      // Same port first (stable URL for clients and the event hub); if it is taken, let OpenCode pick one.
      this.#spawnOnce(this.#port)
        .catch(() => (this.#port === 0 ? Promise.reject(new Error("restart failed")) : this.#spawnOnce(0)))
        .then(({ child }) => this.#watch(child))
        .catch((error: unknown) => {
          this.emit("error", error instanceof Error ? error : new Error(String(error)));
          if (!this.#stopping) this.#scheduleRestart(n + 1);
        });
    }, delay);
  }

  /** SIGTERM, wait `stopGraceMs`, SIGKILL. Idempotent; no restart afterwards. */
  stop(): Promise<void> {
    this.#stopping = true;
    if (this.#restartTimer !== undefined) clearTimeout(this.#restartTimer);
    this.#stopped ??= (async () => {
      const child = this.#child;
      if (child !== undefined) await this.#terminate(child);
      this.#child = undefined;
    })();
    return this.#stopped;
  }

  /** Kills the current child abruptly (tests: "upstream killed mid-stream"); the supervisor restarts it. */
  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    if (this.#child !== undefined) signalGroup(this.#child, signal);
  }

  async #terminate(child: ChildProcess): Promise<void> {
    if (!running(child)) return;
    signalGroup(child, "SIGTERM");
    if (await waitForExit(child, this.#opts.stopGraceMs + 1_000)) return;
    signalGroup(child, "SIGKILL");
    await waitForExit(child, 5_000);
  }

  #waitForListening(child: ChildProcess): Promise<string> {
    const { stdout, stderr } = child;
    if (stdout === null || stderr === null) return Promise.reject(new Error("opencode stdio is not piped"));
    const captured: string[] = [];
    const started = Date.now();
    return new Promise<string>((resolve, reject) => {
      let settled = false;
      const finish = (result: { url: string } | { error: Error }): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        child.off("exit", onExit);
        child.off("error", onError);
        if ("url" in result) resolve(result.url);
        else reject(result.error);
      };
      const failure = (reason: string): Error =>
        new Error(
          `opencode serve ${reason} after ${Date.now() - started} ms; last output:\n` +
            (captured.length > 0 ? captured.join("\n") : "(none)"),
        );
      const record = (stream: "stdout" | "stderr", line: string): void => {
        this.#opts.onLine?.(stream, line);
        if (settled) return;
        captured.push(`[${stream}] ${line}`);
        if (captured.length > MAX_CAPTURED_LINES) captured.shift();
        const match = stream === "stdout" ? LISTENING_RE.exec(line) : null;
        if (match?.[1] === undefined) return;
        try {
          finish({ url: new URL(match[1]).href.replace(/\/$/, "") });
        } catch {
          finish({ error: failure(`printed an unparsable URL ${JSON.stringify(match[1])}`) });
        }
      };
      // The readers keep draining both pipes for the child's whole life, so it never blocks on a full pipe.
      createInterface({ input: stdout, crlfDelay: Infinity }).on("line", (l) => record("stdout", l));
      createInterface({ input: stderr, crlfDelay: Infinity }).on("line", (l) => record("stderr", l));
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        // Let the pipes drain briefly so the error carries the last lines the child printed.
        const fail = (): void => finish({ error: failure(`exited (code ${code ?? "null"}, signal ${signal ?? "null"}) before listening`) });
        const drained = setTimeout(fail, 500);
        child.once("close", () => {
          clearTimeout(drained);
          fail();
        });
      };
      const onError = (error: Error): void => finish({ error: failure(`failed to spawn: ${error.message}`) });
      const timer = setTimeout(() => finish({ error: failure(`printed no "listening" line within ${this.#opts.startTimeoutMs} ms`) }), this.#opts.startTimeoutMs);
      child.once("exit", onExit);
      child.once("error", onError);
    });
  }

  async #waitHealthy(url: string, child: ChildProcess): Promise<void> {
    const headers: Record<string, string> = {};
    if (this.#opts.password !== undefined && this.#opts.password !== "") {
      headers.authorization = basicAuthHeader(this.#opts.username, this.#opts.password);
    }
    const { client, close } = clientOnTransport({ baseUrl: url, headers });
    const deadline = Date.now() + 15_000;
    let last = "no answer";
    try {
      while (Date.now() < deadline && running(child)) {
        try {
          const res = await sdk.globalHealth({ client, signal: AbortSignal.timeout(2_000) });
          if (res.response?.ok && res.data?.healthy === true) return;
          last = `HTTP ${res.response?.status ?? "?"}`;
        } catch (error) {
          last = error instanceof Error ? error.message : String(error);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      close();
    }
    throw new Error(`opencode at ${url} did not become healthy: ${last}`);
  }
}
