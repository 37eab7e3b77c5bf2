// The `serve` command with a bad environment: non-zero exit, a clear message naming the variable, no secrets; and its
// shutdown on SIGTERM.
import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { TaskRuntime } from "../../src/runtime/tasks.js";
import { openStorage } from "../../src/storage/index.js";
import { startStubUpstream } from "../../tools/upstream/stub.js";
import { hang } from "../../tools/upstream/script.js";
import { binPath } from "../support/build.js";
import { listeningUrl } from "../support/gateway-process.js";
import { pinDatabase, prepare } from "../../src/storage/pin.js";

const SECRET = "cli-secret-token-do-not-print-4242";
let command: [string, string[]];
let cwd: string;
beforeAll(() => {
  // What `npm start` runs: the compiled gateway behind bin/opencode-a2a.js.
  command = [process.execPath, [binPath, "serve"]];
  cwd = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-cli-")); // no stray .env is read
});
afterAll(() => fs.rmSync(cwd, { recursive: true, force: true }));

function serve(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], command[1], {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? cwd, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`serve did not exit within 20 s; stdout=${stdout} stderr=${stderr}`));
    }, 20_000);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The environment of a `serve` against the stub upstream `stubUrl`, with its SQLite store at `file`. */
function serveEnv(stubUrl: string, file: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? cwd,
    A2A_BEARER_TOKEN: SECRET,
    A2A_PORT: "0",
    OPENCODE_BASE_URL: stubUrl,
    A2A_TASK_STORE_DATABASE_URL: `sqlite:///${file}`,
    A2A_LOG_LEVEL: "silent",
  };
}

/** `serve` started with `env`: the child, its exit code once it ends, and the URL its listening line names. */
async function startServe(env: Record<string, string>): Promise<{ child: ChildProcess; exited: Promise<number | null>; url: string }> {
  const child = spawn(command[0], command[1], { cwd, env, stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  const url = await listeningUrl(child, 20_000);
  return { child, exited, url };
}

describe("opencode-a2a serve with a bad environment", () => {
  it("exits non-zero, names every bad variable, and never prints the token", async () => {
    const res = await serve({ A2A_BEARER_TOKEN: SECRET, A2A_PORT: "abc", A2A_DEFAULT_PROTOCOL_VERSION: "2.0" });
    expect(res.code).not.toBe(0);
    expect(res.code).not.toBeNull();
    expect(res.stderr).toMatch(/invalid configuration/);
    expect(res.stderr).toContain("A2A_PORT");
    expect(res.stderr).toContain("A2A_DEFAULT_PROTOCOL_VERSION");
    expect(res.stdout).not.toMatch(/listening/);
    expect(res.stdout + res.stderr).not.toContain(SECRET);
  });

  it("a database path that cannot be opened exits 78 naming A2A_TASK_STORE_DATABASE_URL, before any upstream starts", async () => {
    const stub = await startStubUpstream();
    try {
      // A file where a directory must be: the store's directory cannot be created.
      const blocker = path.join(cwd, "not-a-directory");
      fs.writeFileSync(blocker, "x");
      const res = await serve({ A2A_BEARER_TOKEN: SECRET, A2A_PORT: "0", OPENCODE_BASE_URL: stub.url, A2A_TASK_STORE_DATABASE_URL: `sqlite:///${blocker}/tasks.db` });
      expect(res.code).toBe(78);
      expect(res.stderr).toContain("A2A_TASK_STORE_DATABASE_URL");
      expect(res.stderr).toMatch(/invalid configuration/);
      expect(res.stdout).not.toMatch(/listening/);
      // Nothing reached the upstream: the store is checked first.
      expect(stub.requests).toHaveLength(0);
    } finally {
      await stub.close();
    }
  });

  it("a missing token is named", async () => {
    const res = await serve({ A2A_PORT: "0" });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain("A2A_BEARER_TOKEN");
  });

  it("a too-short token is refused without printing it", async () => {
    const res = await serve({ A2A_BEARER_TOKEN: "pw12345", A2A_PORT: "0" });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain("A2A_BEARER_TOKEN");
    expect(res.stdout + res.stderr).not.toContain("pw12345");
  });
});

describe("opencode-a2a serve stopped by SIGTERM", () => {
  it("answers every in-flight blocking call and stream before exiting: finished ones within the grace, the rest with their task's current state", async () => {
    const stub = await startStubUpstream();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-drain-"));
    const env = { ...serveEnv(stub.url, path.join(dir, "tasks.db")), A2A_SHUTDOWN_GRACE_SECONDS: "1.5" };
    try {
      const { child, exited, url } = await startServe(env);
      const rpc = (id: number, method: string, text: string) =>
        fetch(`${url}/`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${SECRET}` },
          body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { message: { kind: "message", messageId: `m${id}`, role: "user", parts: [{ kind: "text", text }] } } }),
        });
      // One turn finishes within the grace; four hang; one stream hangs too.
      stub.script({ kind: "text", chunks: ["done in time"], delayMs: 600 }, hang(), hang(), hang(), hang(), hang());
      const quick = rpc(1, "message/send", "quick");
      await expect.poll(() => stub.stats().busySessions, { timeout: 5_000 }).toBe(1);
      const slow = [2, 3, 4, 5].map((id) => rpc(id, "message/send", `slow ${id}`));
      const stream = rpc(6, "message/stream", "stream");
      await expect.poll(() => stub.stats().busySessions, { timeout: 5_000 }).toBe(6);
      const started = Date.now();
      child.kill("SIGTERM");
      // New connections are refused once the signal is handled.
      await new Promise((r) => setTimeout(r, 300));
      await expect(
        new Promise((resolve, reject) => http.get(`${url}/.well-known/agent-card.json`, { agent: false }, resolve).on("error", reject)),
      ).rejects.toThrow(/ECONNREFUSED/);

      const quickBody = (await (await quick).json()) as any;
      expect(quickBody.result.status.state).toBe("completed");
      for (const res of await Promise.all(slow)) {
        expect(res.status).toBe(200);
        const body = (await res.json()) as any;
        expect(body.result.status.state).toBe("working");
      }
      const frames = (await (await stream).text()).split("\n\n").filter((f) => f.startsWith("data:")).map((f) => JSON.parse(f.slice(5)));
      const last = frames.at(-1).result;
      expect(last.kind).toBe("status-update");
      expect(last.final).toBe(true);
      expect(last.status.state).toBe("working");
      expect(last.metadata.shared.shutdown.state).toBe("working");
      expect(await exited).toBe(0);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await stub.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("leaves a running task as stored (a restart fails it as GATEWAY_RESTARTED), flushes the audit log and exits 0", async () => {
    const stub = await startStubUpstream();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-stop-"));
    const file = path.join(dir, "tasks.db");
    const env = serveEnv(stub.url, file);
    try {
      const { child, exited, url } = await startServe(env);
      stub.script({ kind: "hang" });
      const res = await fetch(`${url}/`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${SECRET}` },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: { message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "hold on" }] }, configuration: { blocking: false } },
        }),
      });
      const taskId = ((await res.json()) as { result: { id: string; status: { state: string } } }).result.id;
      // The turn is running upstream (the stub holds it) when the gateway is told to stop.
      await expect.poll(() => stub.stats().busySessions, { timeout: 5_000 }).toBe(1);
      child.kill("SIGTERM");
      expect(await exited).toBe(0);

      const db = pinDatabase(new Database(file, { readonly: true }));
      try {
        const row = prepare(db, "SELECT state FROM a2a_tasks WHERE id = ?").get(taskId) as { state: string };
        expect(row.state, "a stopping gateway does not fail the running task itself").toBe("working");
        const audited = prepare(db, "SELECT method FROM a2a_audit_log WHERE task_id = ?").all(taskId) as { method: string }[];
        expect(audited.map((a) => a.method)).toContain("message/send");
      } finally {
        db.close();
      }
      // A new gateway on the same store fails the task it cannot continue.
      const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
      try {
        const failed = await new TaskRuntime({ store: storage.tasks, log: { info() {}, warn() {}, error() {}, debug() {} } } as never).failOrphans();
        expect(failed).toBe(1);
        const task = (await storage.tasks.get(taskId))!.task;
        expect(task.status.state).toBe("failed");
        expect((task.metadata?.opencode as { error?: { type?: string } }).error?.type).toBe("GATEWAY_RESTARTED");
      } finally {
        storage.close();
      }
    } finally {
      await stub.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
