// The `serve` command with a bad environment: non-zero exit, a clear message naming the variable, no secrets.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { binPath } from "../support/build.js";

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
