// Managed mode, the way a user runs it: `npm start` without OPENCODE_BASE_URL brings up `opencode serve` (from the
// opencode-ai dependency) and the gateway; Ctrl-C (SIGINT to the foreground process group, as a terminal sends
// it) stops both. OpenCode gets the hermetic environment a user's machine would not need: scratch HOME/XDG dirs
// and a config that points at the scripted model server, so nothing leaves 127.0.0.1.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageRoot } from "../../src/contract/catalog.js";
import { prepareHermeticEnvironment, type HermeticEnvironment } from "../../tools/upstream/hermetic.js";
import { startModelServer, type ModelServer } from "../../tools/upstream/model-server.js";

const TOKEN = "managed-mode-token-7c1e";
let model: ModelServer;
let scratch: HermeticEnvironment;

beforeAll(async () => {
  model = await startModelServer();
  scratch = prepareHermeticEnvironment({ modelBaseUrl: model.baseUrl });
});
afterAll(async () => {
  await model?.close();
  if (scratch) fs.rmSync(scratch.root, { recursive: true, force: true });
});

/** Processes whose parent is `pid` (from /proc). */
function childrenOf(pid: number): { pid: number; cmdline: string[] }[] {
  const out: { pid: number; cmdline: string[] }[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== pid) continue;
      out.push({ pid: Number(entry), cmdline: fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter(Boolean) });
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

/** All descendants of `pid`, depth first. */
function descendants(pid: number): { pid: number; cmdline: string[] }[] {
  return childrenOf(pid).flatMap((c) => [c, ...descendants(c.pid)]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie is dead for our purposes.
  try {
    return !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

function waitForLine(child: ChildProcess, re: RegExp, timeoutMs: number, output: { text: string }): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${re} within ${timeoutMs} ms; output:\n${output.text}`)), timeoutMs);
    const check = (): void => {
      const m = re.exec(output.text);
      if (m) {
        clearTimeout(timer);
        child.stdout?.off("data", check);
        resolve(m);
      }
    };
    child.stdout?.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ${re}; output:\n${output.text}`));
    });
    check();
  });
}

/**
 * The spawned gateway's environment: the hermetic OpenCode set-up, no OPENCODE_BASE_URL (managed mode), and a task
 * store of its own in the scratch directory, not ./opencode-a2a.db in the repository (test/support/global-setup.ts
 * checks).
 */
function gatewayEnv(logLevel: string, store: string): NodeJS.ProcessEnv {
  return {
    ...scratch.env,
    A2A_BEARER_TOKEN: TOKEN,
    A2A_PORT: "0",
    A2A_LOG_LEVEL: logLevel,
    OPENCODE_WORKSPACE_ROOT: scratch.workspace,
    A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(scratch.root, store)}`,
  };
}

describe("npm start without OPENCODE_BASE_URL", () => {
  it("brings up OpenCode and the gateway; Ctrl-C stops both", async () => {
    const output = { text: "" };
    // `npm start` in its own process group, so the SIGINT below reaches npm, the shell and node at once,
    // exactly like Ctrl-C in a terminal.
    const npm = spawn("npm", ["start", "--silent"], {
      cwd: packageRoot,
      detached: true,
      env: gatewayEnv("info", "npm-start.db"),
      stdio: ["ignore", "pipe", "pipe"],
    });
    npm.stdout?.on("data", (d: Buffer) => (output.text += d.toString()));
    npm.stderr?.on("data", (d: Buffer) => (output.text += d.toString()));
    const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
    try {
      const [, url] = await waitForLine(npm, /opencode-a2a listening on (http:\/\/\S+)/, 90_000, output);

      // The gateway reports its managed upstream as healthy, with the pinned version and the event stream open.
      await expect
        .poll(
          async () => {
            const res = await fetch(`${url}/health`, { headers: { authorization: `Bearer ${TOKEN}` } });
            return { status: res.status, body: (await res.json()) as Record<string, any> };
          },
          { timeout: 20_000, interval: 200 },
        )
        .toMatchObject({
          status: 200,
          body: { status: "ok", upstream: { mode: "managed", healthy: true, version: "1.18.33", events: { state: "open" } } },
        });

      // The process tree: npm → (sh →) node gateway → guardian → opencode serve (the platform binary).
      const tree = descendants(npm.pid!);
      const gateway = tree.find((p) => p.cmdline.some((a) => a.endsWith(path.join("bin", "opencode-a2a.js"))));
      const opencode = tree.find((p) => p.cmdline.includes("serve") && /opencode$/.test(p.cmdline[0] ?? ""));
      expect(gateway, JSON.stringify(tree)).toBeDefined();
      expect(opencode, JSON.stringify(tree)).toBeDefined();
      const guardian = childrenOf(gateway!.pid).find((p) => p.cmdline.some((a) => a.endsWith(path.join("bin", "opencode-a2a-guardian.mjs"))));
      expect(guardian, JSON.stringify(tree)).toBeDefined();
      expect(childrenOf(guardian!.pid).map((p) => p.pid)).toContain(opencode!.pid);
      expect(opencode!.cmdline).toEqual(expect.arrayContaining(["--hostname", "127.0.0.1"]));
      // The log names the process the gateway really runs (the guardian reports OpenCode's pid on fd 3).
      const ready = output.text
        .split("\n")
        .filter((l) => l.includes('"managed opencode ready"'))
        .map((l) => JSON.parse(l) as { pid?: number; guardianPid?: number });
      expect(ready).toEqual([expect.objectContaining({ pid: opencode!.pid, guardianPid: guardian!.pid })]);

      // The child is password-protected with a secret generated for this run, which is never printed.
      const environ = fs.readFileSync(`/proc/${opencode!.pid}/environ`, "utf8").split("\0");
      const password = environ.find((e) => e.startsWith("OPENCODE_SERVER_PASSWORD="))?.split("=")[1];
      expect(password).toMatch(/^[\w-]{24,}$/);
      expect(output.text).not.toContain(password!);
      expect(output.text).not.toContain(TOKEN);

      // OpenCode knows the gateway's MCP endpoint (its server `a2a`, the gateway's loopback URL) with a token of this
      // run, never printed; that token is good for POST /mcp (from loopback) and nothing else.
      const content = environ.find((e) => e.startsWith("OPENCODE_CONFIG_CONTENT="))?.slice("OPENCODE_CONFIG_CONTENT=".length);
      const mcp = (JSON.parse(content ?? "{}") as { mcp?: Record<string, { url?: string; headers?: Record<string, string> }> }).mcp?.a2a;
      expect(mcp?.url).toBe(`http://127.0.0.1:${new URL(url!).port}/mcp`);
      const mcpToken = mcp?.headers?.Authorization?.replace(/^Bearer /, "") ?? "";
      expect(mcpToken.length).toBeGreaterThan(30);
      expect(output.text).not.toContain(mcpToken);
      const listed = await fetch(`${url}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${mcpToken}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      });
      expect(listed.status).toBe(200);
      expect(await listed.text()).toContain("a2a_call");
      const elsewhere = await fetch(`${url}/health`, { headers: { authorization: `Bearer ${mcpToken}` } });
      expect(elsewhere.status).toBe(403);

      process.kill(-npm.pid!, "SIGINT");
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 20_000))]);
      expect(code, output.text).not.toBe("timeout");
      await expect.poll(() => alive(gateway!.pid), { timeout: 10_000 }).toBe(false);
      await expect.poll(() => alive(opencode!.pid), { timeout: 10_000 }).toBe(false);
    } finally {
      if (npm.exitCode === null) {
        for (const p of descendants(npm.pid!)) {
          try {
            process.kill(p.pid, "SIGKILL");
          } catch {
            // gone
          }
        }
        npm.kill("SIGKILL");
      }
    }
  }, 150_000);

  it("a gateway killed with SIGKILL (no code runs) still takes OpenCode down: its guardian sees the pipe close", async () => {
    const output = { text: "" };
    const gatewayProcess = spawn(process.execPath, [path.join(packageRoot, "bin", "opencode-a2a.js"), "serve"], {
      cwd: packageRoot,
      env: gatewayEnv("warn", "sigkill.db"),
      stdio: ["ignore", "pipe", "pipe"],
    });
    gatewayProcess.stdout?.on("data", (d: Buffer) => (output.text += d.toString()));
    gatewayProcess.stderr?.on("data", (d: Buffer) => (output.text += d.toString()));
    let opencodePid: number | undefined;
    let guardianPid: number | undefined;
    try {
      await waitForLine(gatewayProcess, /opencode-a2a listening on (http:\/\/\S+)/, 90_000, output);
      const tree = descendants(gatewayProcess.pid!);
      opencodePid = tree.find((p) => p.cmdline.includes("serve") && /opencode$/.test(p.cmdline[0] ?? ""))?.pid;
      guardianPid = tree.find((p) => p.cmdline.some((a) => a.endsWith(path.join("bin", "opencode-a2a-guardian.mjs"))))?.pid;
      expect(opencodePid, JSON.stringify(tree)).toBeDefined();
      expect(guardianPid, JSON.stringify(tree)).toBeDefined();

      gatewayProcess.kill("SIGKILL");
      await expect.poll(() => alive(gatewayProcess.pid!), { timeout: 10_000 }).toBe(false);
      // OpenCode gets SIGTERM from the guardian (SIGKILL after the grace period), then the guardian exits.
      await expect.poll(() => alive(opencodePid!), { timeout: 20_000, interval: 200 }).toBe(false);
      await expect.poll(() => alive(guardianPid!), { timeout: 10_000, interval: 200 }).toBe(false);
    } finally {
      for (const pid of [opencodePid, guardianPid]) {
        if (pid === undefined) continue;
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // gone
        }
      }
      if (gatewayProcess.exitCode === null) gatewayProcess.kill("SIGKILL");
    }
  }, 150_000);
});
