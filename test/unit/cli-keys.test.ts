// `opencode-a2a keys`: the credentials file holds hashes only, keys resolve through the gateway's registry with the
// right scopes and headers, revoke/delete take effect, bad input is refused, concurrent creates all land.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CredentialRegistry, KEY_PREFIX } from "../../src/auth/credentials.js";
import { keysCommand } from "../../src/cli/keys.js";
import { catalog } from "../../src/contract/catalog.js";
import { binPath } from "../support/build.js";
import { call, startGateway } from "../support/gateway.js";

const access = catalog.access_control;
const bundle = (level: string) => new Set(access.trust_levels.find((l) => l.name === level)!.scopes);

let root: string;
let n = 0;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-keys-"));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** A fresh credentials path in a directory that does not exist yet. */
function freshFile(): string {
  return path.join(root, `case-${++n}`, "credentials.json");
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function keys(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await keysCommand(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), env });
  return { code, stdout, stderr };
}

async function createJson(file: string, ...args: string[]): Promise<{ id: string; secret: string; principal: string; scheme: string; trust_level: string; user?: string; password?: string }> {
  const res = await keys(["create", "--file", file, "--json", ...args]);
  expect(res.stderr).toBe("");
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout);
}

function registry(file: string): CredentialRegistry {
  return new CredentialRegistry({ credentialsFile: file }, { access, recheckMs: 0 });
}

function readEntries(file: string): Record<string, unknown>[] {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

function runBin(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, ...args], { cwd, env: { PATH: process.env.PATH ?? "", HOME: cwd }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe("keys create", () => {
  it("stores only the hash, creates the file 0600 in a 0700 directory, and the secret resolves to the trust level's scopes", async () => {
    const file = freshFile();
    const res = await keys(["create", "--file", file, "--trust", "execute", "--principal", "ci-bot", "--description", "CI pipeline"]);
    expect(res.code).toBe(0);
    expect(res.stderr).toBe("");
    const secret = new RegExp(`^  (${KEY_PREFIX}[A-Za-z0-9_-]{43})$`, "m").exec(res.stdout)?.[1];
    expect(secret, res.stdout).toBeDefined();
    expect(res.stdout).toContain("Authorization: Bearer");

    const text = fs.readFileSync(file, "utf8");
    expect(text).not.toContain(secret!);
    expect(text).not.toContain(secret!.slice(KEY_PREFIX.length));
    const [entry] = readEntries(file);
    expect(entry).toMatchObject({ principal: "ci-bot", scheme: "bearer", trust_level: "execute", enabled: true, description: "CI pipeline" });
    expect(entry!.id).toMatch(/^key_[0-9a-f]{8}$/);
    expect(entry!.secret_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(entry).not.toHaveProperty("secret");
    expect(Number.isNaN(Date.parse(entry!.created_at as string))).toBe(false);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(fs.readdirSync(path.dirname(file))).toEqual(["credentials.json"]); // no temp or lock file left behind

    const principal = registry(file).resolve({ authorization: `Bearer ${secret}` });
    expect(principal).toMatchObject({ id: "ci-bot", credentialId: entry!.id, trustLevel: "execute", admin: false });
    expect(new Set(principal!.scopes)).toEqual(bundle("execute"));
    expect(registry(file).resolve({ authorization: `Bearer ${secret}x` })).toBeNull();
  });

  it("appends to an existing file and --json reports id, principal, scheme, trust_level, secret, file", async () => {
    const file = freshFile();
    const a = await createJson(file, "--trust", "admin", "--principal", "ops", "--id", "ops-1");
    const b = await createJson(file, "--trust", "read_only", "--principal", "dash");
    expect(a).toMatchObject({ id: "ops-1", principal: "ops", scheme: "bearer", trust_level: "admin", file });
    expect(a.secret.startsWith(KEY_PREFIX)).toBe(true);
    expect(readEntries(file).map((e) => e.id)).toEqual(["ops-1", b.id]);
    const reg = registry(file);
    expect(reg.resolve({ authorization: `Bearer ${a.secret}` })).toMatchObject({ id: "ops", admin: true });
    expect(reg.resolve({ authorization: `Bearer ${b.secret}` })).toMatchObject({ id: "dash", trustLevel: "read_only" });
  });

  it("api_key keys resolve through X-API-Key only", async () => {
    const file = freshFile();
    const k = await createJson(file, "--trust", "autonomous", "--principal", "robot", "--scheme", "api_key");
    const reg = registry(file);
    expect(reg.resolve({ "x-api-key": k.secret })).toMatchObject({ id: "robot", trustLevel: "autonomous" });
    expect(new Set(reg.resolve({ "x-api-key": k.secret })!.scopes)).toEqual(bundle("autonomous"));
    expect(reg.resolve({ authorization: `Bearer ${k.secret}` })).toBeNull();
  });

  it("basic keys need --user, print user and password, and resolve through Authorization: Basic", async () => {
    const file = freshFile();
    expect((await keys(["create", "--file", file, "--trust", "execute", "--principal", "p", "--scheme", "basic"])).code).toBe(2);
    expect((await keys(["create", "--file", file, "--trust", "execute", "--principal", "p", "--user", "u"])).code).toBe(2);
    const text = await keys(["create", "--file", file, "--trust", "execute", "--principal", "svc", "--scheme", "basic", "--user", "svc-user"]);
    expect(text.code).toBe(0);
    const password = /^ {2}password: (\S+)$/m.exec(text.stdout)?.[1];
    expect(text.stdout).toMatch(/^ {2}user: +svc-user$/m);
    expect(password?.startsWith(KEY_PREFIX)).toBe(true);
    expect(fs.readFileSync(file, "utf8")).not.toContain(password!);
    const reg = registry(file);
    const basic = (s: string) => ({ authorization: `Basic ${Buffer.from(s).toString("base64")}` });
    expect(reg.resolve(basic(`svc-user:${password}`))).toMatchObject({ id: "svc", trustLevel: "execute" });
    expect(reg.resolve(basic(`other:${password}`))).toBeNull();

    const json = await createJson(file, "--trust", "read_only", "--principal", "svc2", "--scheme", "basic", "--user", "u2");
    expect(json.secret).toBe(`u2:${json.password}`);
    expect(json.user).toBe("u2");
    expect(reg.resolve(basic(json.secret))).toMatchObject({ id: "svc2" });
  });

  it("--scopes replaces the bundle; expiry and rate limits are stored", async () => {
    const file = freshFile();
    const k = await createJson(
      file,
      ...["--trust", "read_only", "--principal", "narrow", "--scopes", "agents.read, tasks.read,agents.read"],
      ...["--expires-in", "12h", "--rate-limit-max-requests", "5", "--rate-limit-window-seconds", "10", "--rate-limit-max-streams", "0"],
    );
    const [entry] = readEntries(file);
    expect(entry!.scopes).toEqual(["agents.read", "tasks.read"]);
    expect(entry!.rate_limit).toEqual({ max_requests: 5, window_seconds: 10, max_streams: 0 });
    const ttl = Date.parse(entry!.expires_at as string) - Date.now();
    expect(ttl).toBeGreaterThan(11.9 * 3600_000);
    expect(ttl).toBeLessThanOrEqual(12 * 3600_000);
    const principal = registry(file).resolve({ authorization: `Bearer ${k.secret}` });
    expect(new Set(principal!.scopes)).toEqual(new Set(["agents.read", "tasks.read"]));
    expect(principal!.rateLimit).toEqual({ max_requests: 5, window_seconds: 10, max_streams: 0 });

    await createJson(file, "--trust", "execute", "--principal", "dated", "--expires-at", "2099-01-31T00:00:00+01:00");
    expect(readEntries(file)[1]!.expires_at).toBe("2099-01-30T23:00:00.000Z");
  });

  it("takes the file from A2A_CREDENTIALS_FILE, and without it exits 2 with a clear message", async () => {
    const file = freshFile();
    const res = await keys(["create", "--trust", "execute", "--principal", "env"], { A2A_CREDENTIALS_FILE: file });
    expect(res.code).toBe(0);
    expect(readEntries(file)).toHaveLength(1);
    const missing = await keys(["create", "--trust", "execute", "--principal", "env"], {});
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--file PATH or set A2A_CREDENTIALS_FILE/);
    expect(missing.stdout).toBe("");
  });

  it.each([
    ["an unknown trust level", ["--trust", "root", "--principal", "x"], /unknown trust level "root"/],
    ["a missing trust level", ["--principal", "x"], /--trust is required/],
    ["a missing principal", ["--trust", "execute"], /--principal is required/],
    ["an unknown scope", ["--trust", "execute", "--principal", "x", "--scopes", "tasks.read,tasks.destroy"], /unknown scope "tasks.destroy"/],
    ["an unknown scheme", ["--trust", "execute", "--principal", "x", "--scheme", "digest"], /--scheme/],
    ["a bad id", ["--trust", "execute", "--principal", "x", "--id", "has space"], /--id/],
    ["a reserved id", ["--trust", "execute", "--principal", "x", "--id", "env:A2A_BEARER_TOKEN"], /reserved/],
    ["a bad duration", ["--trust", "execute", "--principal", "x", "--expires-in", "3 days"], /--expires-in/],
    ["a past expiry", ["--trust", "execute", "--principal", "x", "--expires-at", "2001-01-01T00:00:00Z"], /already passed/],
    ["a non-RFC 3339 expiry", ["--trust", "execute", "--principal", "x", "--expires-at", "tomorrow"], /RFC 3339/],
    ["both expiries", ["--trust", "execute", "--principal", "x", "--expires-in", "1d", "--expires-at", "2099-01-01T00:00:00Z"], /not both/],
    ["a negative rate limit", ["--trust", "execute", "--principal", "x", "--rate-limit-max-requests", "-1"], /rate-limit-max-requests/],
    ["a zero window", ["--trust", "execute", "--principal", "x", "--rate-limit-window-seconds", "0"], /window/],
    ["an unknown option", ["--trust", "execute", "--principal", "x", "--admin"], /--admin/],
  ])("refuses %s with exit 2 and writes nothing", async (_, args, message) => {
    const file = freshFile();
    const res = await keys(["create", "--file", file, ...args]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(message);
    expect(res.stdout).toBe("");
    expect(fs.existsSync(file)).toBe(false);
  });

  it("refuses a duplicate id (exit 1) and leaves the file unchanged", async () => {
    const file = freshFile();
    await createJson(file, "--trust", "execute", "--principal", "a", "--id", "dup");
    const before = fs.readFileSync(file, "utf8");
    const res = await keys(["create", "--file", file, "--trust", "admin", "--principal", "b", "--id", "dup"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/"dup" already exists/);
    expect(res.stdout).toBe("");
    expect(fs.readFileSync(file, "utf8")).toBe(before);
  });

  it("refuses to change a file that does not load, and a symlinked file", async () => {
    const file = freshFile();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const broken = JSON.stringify([{ id: "x", principal: "p", scheme: "bearer", secret_hash: "sha256:nothex", trust_level: "execute" }]);
    fs.writeFileSync(file, broken);
    const res = await keys(["create", "--file", file, "--trust", "execute", "--principal", "a"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/does not load.*\n.*secret_hash/);
    expect(res.stdout).toBe("");
    expect(fs.readFileSync(file, "utf8")).toBe(broken);
    fs.writeFileSync(file, "{ not json");
    expect((await keys(["create", "--file", file, "--trust", "execute", "--principal", "a"])).code).toBe(1);

    const real = freshFile();
    await createJson(real, "--trust", "execute", "--principal", "a");
    const link = path.join(path.dirname(real), "link.json");
    fs.symlinkSync(real, link);
    const before = fs.readFileSync(real, "utf8");
    const viaLink = await keys(["create", "--file", link, "--trust", "execute", "--principal", "b"]);
    expect(viaLink.code).toBe(1);
    expect(viaLink.stderr).toMatch(/symbolic link/);
    expect(fs.readFileSync(real, "utf8")).toBe(before);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it("takes over a stale lock (older than 30 s)", async () => {
    const file = freshFile();
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(`${file}.lock`, "12345 elsewhere\n");
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(`${file}.lock`, old, old);
    await createJson(file, "--trust", "execute", "--principal", "a");
    expect(readEntries(file)).toHaveLength(1);
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
  });

  it("20 concurrent in-process creates all land", async () => {
    const file = freshFile();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => createJson(file, "--trust", "execute", "--principal", `p${i}`)));
    const entries = readEntries(file);
    expect(entries).toHaveLength(20);
    expect(new Set(entries.map((e) => e.id))).toEqual(new Set(results.map((r) => r.id)));
    const reg = registry(file);
    for (const r of results) expect(reg.resolve({ authorization: `Bearer ${r.secret}` })?.id).toBe(r.principal);
  });

  it("20 concurrent `opencode-a2a keys create` processes all land", async () => {
    const file = freshFile();
    const cwd = path.join(root, `cwd-${++n}`);
    fs.mkdirSync(cwd);
    const runs = await Promise.all(
      Array.from({ length: 20 }, (_, i) => runBin(["keys", "create", "--file", file, "--trust", "read_only", "--principal", `proc${i}`, "--json"], cwd)),
    );
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const created = runs.map((r) => JSON.parse(r.stdout) as { id: string; secret: string; principal: string });
    const entries = readEntries(file);
    expect(entries).toHaveLength(20);
    expect(new Set(entries.map((e) => e.principal))).toEqual(new Set(created.map((c) => c.principal)));
    const reg = registry(file);
    for (const c of created) expect(reg.resolve({ authorization: `Bearer ${c.secret}` })?.id).toBe(c.principal);
    expect(fs.readdirSync(path.dirname(file))).toEqual(["credentials.json"]);
  }, 60_000);
});

describe("keys list / revoke / delete", () => {
  let file: string;
  let a: Awaited<ReturnType<typeof createJson>>;
  let b: Awaited<ReturnType<typeof createJson>>;
  beforeAll(async () => {
    file = freshFile();
    a = await createJson(file, "--trust", "execute", "--principal", "alice", "--id", "alice-1");
    b = await createJson(file, "--trust", "read_only", "--principal", "bob", "--id", "bob-1", "--scopes", "agents.read,tasks.read", "--scheme", "api_key");
  });

  it("list shows a table without secrets or hashes", async () => {
    const res = await keys(["list", "--file", file]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^ID +PRINCIPAL +SCHEME +TRUST +SCOPES +ENABLED +EXPIRES$/m);
    expect(res.stdout).toMatch(/^alice-1 +alice +bearer +execute +bundle +yes +never$/m);
    expect(res.stdout).toMatch(/^bob-1 +bob +api_key +read_only +2 +yes +never$/m);
    for (const s of [a.secret, b.secret, "sha256:", KEY_PREFIX]) expect(res.stdout + res.stderr).not.toContain(s);
    const json = await keys(["list", "--file", file, "--json"]);
    const parsed = JSON.parse(json.stdout);
    expect(parsed.credentials.map((c: { id: string }) => c.id)).toEqual(["alice-1", "bob-1"]);
    expect(json.stdout).not.toContain("sha256:");
    expect(json.stdout).not.toContain(a.secret);
  });

  it("list of a missing file is empty", async () => {
    const res = await keys(["list", "--file", freshFile()]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/No credentials/);
  });

  it("revoke disables the key: a reloading registry refuses it, the other key still works", async () => {
    const reg = registry(file);
    expect(reg.resolve({ authorization: `Bearer ${a.secret}` })?.id).toBe("alice");
    const res = await keys(["revoke", "--file", file, "--id", "alice-1"]);
    expect(res.code).toBe(0);
    expect(readEntries(file).find((e) => e.id === "alice-1")!.enabled).toBe(false);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(reg.resolve({ authorization: `Bearer ${a.secret}` })).toBeNull();
    expect(registry(file).resolve({ authorization: `Bearer ${a.secret}` })).toBeNull();
    expect(reg.resolve({ "x-api-key": b.secret })?.id).toBe("bob");
    expect((await keys(["list", "--file", file])).stdout).toMatch(/^alice-1 .* no +never$/m);
    const again = await keys(["revoke", "--file", file, "--id", "alice-1", "--json"]);
    expect(JSON.parse(again.stdout)).toMatchObject({ id: "alice-1", enabled: false, changed: false });
  });

  it("delete removes the entry; unknown ids and a missing --id are refused", async () => {
    expect((await keys(["delete", "--file", file, "--id", "alice-1"])).code).toBe(0);
    expect(readEntries(file).map((e) => e.id)).toEqual(["bob-1"]);
    const unknown = await keys(["delete", "--file", file, "--id", "alice-1"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no credential with id "alice-1"/);
    expect((await keys(["revoke", "--file", file])).code).toBe(2);
    expect((await keys(["revoke", "--file", freshFile(), "--id", "x"])).code).toBe(1);
  });

  it("--help prints the usage; no or an unknown subcommand is a usage error", async () => {
    const help = await keys(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/opencode-a2a keys create --trust LEVEL --principal NAME/);
    for (const level of access.trust_levels) expect(help.stdout).toContain(level.name);
    expect((await keys(["create", "--help"])).code).toBe(0);
    expect((await keys([])).code).toBe(2);
    const bad = await keys(["rotate"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown command: keys rotate/);
  });
});

describe("the built CLI and the gateway", () => {
  it("a key made by `opencode-a2a keys create` opens GET /health, and its revoke closes it within seconds", async () => {
    const file = freshFile();
    const cwd = path.join(root, `cwd-${++n}`);
    fs.mkdirSync(cwd);
    const created = await runBin(["keys", "create", "--file", file, "--trust", "read_only", "--principal", "monitor", "--json"], cwd);
    expect(created.code, created.stderr).toBe(0);
    const { secret, id } = JSON.parse(created.stdout) as { secret: string; id: string };
    expect(secret.startsWith(KEY_PREFIX)).toBe(true);
    expect(fs.readFileSync(file, "utf8")).not.toContain(secret);

    const gw = await startGateway({ A2A_CREDENTIALS_FILE: file });
    try {
      const headers = { authorization: `Bearer ${secret}` };
      expect((await call(gw.url, "/health", { auth: false, headers })).status).toBe(200);
      expect((await call(gw.url, "/health", { auth: false, headers: { authorization: `Bearer ${secret}x` } })).status).toBe(401);

      const revoked = await runBin(["keys", "revoke", "--file", file, "--id", id], cwd);
      expect(revoked.code, revoked.stderr).toBe(0);
      const deadline = Date.now() + 5_000;
      let status = 200;
      while (status !== 401 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        status = (await call(gw.url, "/health", { auth: false, headers })).status;
      }
      expect(status).toBe(401);
    } finally {
      await gw.close();
    }
  }, 60_000);
});
