// `opencode-a2a call` (src/cli/call.ts) against real peers on 127.0.0.1: a gateway of this repository over the stub
// OpenCode (A2A 1.0 and 0.3, JSON-RPC and HTTP+JSON; streamed text, --json lines valid against CliCallLine, a
// question and a permission → input-required → exit 4 → --task continues it), the @a2a-js/sdk reference server (both
// lines, both transports) and a non-streaming SDK peer whose task completes later (the polling fallback on and off).
// Also: the network policy (no loopback peer without A2A_CLIENT_ALLOW_PRIVATE_HOSTS, nothing sent), credentials only
// to hosts in A2A_CLIENT_ALLOWED_HOSTS, usage and configuration errors, and one run as a real child process.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callCommand } from "../../src/cli/call.js";
import { variables } from "../../src/config/index.js";
import { text, tool } from "../../tools/upstream/script.js";
import { binPath } from "../support/build.js";
import { expectValid } from "../support/contract.js";
import { TEST_TOKEN } from "../support/gateway.js";
import { startSdkPeer, type SdkPeer } from "../support/sdk-peer.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

type Line = "0.3" | "1.0";
type Transport = "JSONRPC" | "HTTP+JSON";
const COMBOS: [Line, Transport][] = [
  ["1.0", "JSONRPC"],
  ["1.0", "HTTP+JSON"],
  ["0.3", "JSONRPC"],
  ["0.3", "HTTP+JSON"],
];

/** What a loopback peer needs: private addresses allowed, 127.0.0.1 listed (and so given the credential). */
const LOOPBACK = { A2A_CLIENT_ALLOW_PRIVATE_HOSTS: "true", A2A_CLIENT_ALLOWED_HOSTS: "127.0.0.1" };
/** The gateway's token as the client's credential. */
const GATEWAY_ENV = { ...LOOPBACK, A2A_CLIENT_BEARER_TOKEN: TEST_TOKEN };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout as it was written, one entry per write. */
  writes: string[];
}

async function run(argv: string[], env: Record<string, string>): Promise<Run> {
  const writes: string[] = [];
  let stderr = "";
  const code = await callCommand(argv, { env, stdout: (t) => writes.push(t), stderr: (t) => (stderr += t) });
  return { code, stdout: writes.join(""), stderr, writes };
}

/** The --json lines, each checked against the contract's CliCallLine. */
async function jsonLines(r: Run): Promise<Record<string, any>[]> {
  expect(r.stdout.endsWith("\n"), r.stdout).toBe(true);
  const lines = r.stdout.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, any>);
  for (const l of lines) await expectValid("extensions/CliCallLine", l);
  return lines;
}

/** The task id the CLI names in its hint for an input-required task. */
function continuation(stderr: string): string {
  const id = /--task (\S+) /.exec(stderr)?.[1];
  expect(id, stderr).toBeDefined();
  return id!;
}

const askColor = () => tool("question", { questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "blue", description: "Blue" }, { label: "red", description: "Red" }] }] });
const readOutside = () => tool("read", { filePath: "/etc/hostname" }); // outside the stub's directory → a permission

describe("against a gateway of this repository", () => {
  let g: TaskGateway;
  beforeAll(async () => {
    g = await startTaskGateway();
  });
  afterAll(async () => {
    await g?.close();
  });

  describe.each(COMBOS)("A2A %s over %s", (line, transport) => {
    const env = { ...GATEWAY_ENV, A2A_CLIENT_SUPPORTED_TRANSPORTS: transport };

    it("streams the answer to stdout as it grows, notes the states on stderr, exits 0", async () => {
      g.stub.script(text(["Hel", "lo ", "world"], { delayMs: 30 }));
      const r = await run(["--line", line, g.url, "say hello"], env);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe("Hello world\n");
      // The text arrived in pieces, not at the end in one write.
      expect(r.writes.filter((w) => w !== "\n").length, JSON.stringify(r.writes)).toBeGreaterThan(1);
      expect(r.stderr).toMatch(/^\[(submitted|working)\]$/m);
      expect(r.stderr).toMatch(/^\[completed\]$/m);
      expect(g.stub.requests.some((q) => JSON.stringify(q.body ?? "").includes("say hello"))).toBe(true);
    });

    it("--json: one line per event, then the result; every line a CliCallLine", async () => {
      g.stub.script(text(["JSON ", "mode"]));
      const r = await run(["--json", "--line", line, g.url, "json please"], env);
      expect(r.code, r.stdout).toBe(0);
      expect(r.stderr).toBe("");
      const lines = await jsonLines(r);
      const events = lines.slice(0, -1);
      expect(events.length).toBeGreaterThan(2);
      for (const l of events) expect(Object.keys(l)).toEqual(["event"]);
      // A2A 1.0 StreamResponse JSON whichever line was spoken.
      expect(Object.keys(events[0]!.event)).toEqual(["task"]);
      expect(events.some((l) => l.event.artifactUpdate !== undefined)).toBe(true);
      expect(events.at(-1)!.event.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
      const { result } = lines.at(-1)!;
      expect(result).toMatchObject({ state: "completed", text: "JSON mode", protocol_version: line, transport, url: `${g.url}/.well-known/agent-card.json` });
      expect(result.task_id).toBe(events[0]!.event.task.id);
      expect(result.context_id).toBe(events[0]!.event.task.contextId);
    });

    it("a question makes the task input-required (exit 4, the task id printed); --task answers it and it completes", async () => {
      g.stub.script(askColor(), text("you picked blue"));
      const asked = await run(["--line", line, g.url, "pick a color for me"], env);
      expect(asked.code, asked.stderr).toBe(4);
      expect(asked.stderr).toMatch(/^\[input-required\]/m);
      const taskId = continuation(asked.stderr);
      const answered = await run(["--line", line, "--task", taskId, g.url, "blue"], env);
      expect(answered.code, answered.stderr).toBe(0);
      expect(answered.stdout).toContain("you picked blue");
      const reply = g.stub.requests.find((q) => q.method === "POST" && /^\/question\/[^/]+\/reply$/.test(q.path) && JSON.stringify(q.body).includes("blue"));
      expect(reply?.body).toEqual({ answers: [["blue"]] });
    });
  });

  it("a permission makes the task input-required; --task with `once` lets it go on (--json: the result carries the question)", async () => {
    g.stub.script(readOutside(), text("read the host name"));
    const asked = await run(["--json", g.url, "read /etc/hostname"], GATEWAY_ENV);
    expect(asked.code).toBe(4);
    const { result } = (await jsonLines(asked)).at(-1)!;
    expect(result.state).toBe("input-required");
    expect(result.task_id).toBeTypeOf("string");
    expect(result.question).toBeTypeOf("string");
    const answered = await run(["--task", result.task_id, "--context", result.context_id, g.url, "once"], GATEWAY_ENV);
    expect(answered.code, answered.stderr).toBe(0);
    expect(answered.stdout).toBe("read the host name\n");
  });

  it("the transport follows A2A_CLIENT_SUPPORTED_TRANSPORTS' order only with A2A_CLIENT_USE_CLIENT_PREFERENCE", async () => {
    const env = { ...GATEWAY_ENV, A2A_CLIENT_SUPPORTED_TRANSPORTS: "HTTP+JSON,JSONRPC" };
    g.stub.script(text("by card"), text("by client"));
    const card = await (await fetch(`${g.url}/.well-known/agent-card.json`)).json();
    const cardFirst = card.supportedInterfaces[0].protocolBinding as string;
    const byCard = (await jsonLines(await run(["--json", g.url, "one"], env))).at(-1)!.result;
    expect(byCard.transport).toBe(cardFirst);
    const byClient = (await jsonLines(await run(["--json", g.url, "two"], { ...env, A2A_CLIENT_USE_CLIENT_PREFERENCE: "true" }))).at(-1)!.result;
    expect(byClient.transport).toBe("HTTP+JSON");
    expect(byClient.text).toBe("by client");
  });

  it("the token goes only to hosts in A2A_CLIENT_ALLOWED_HOSTS: unlisted, the gateway answers 401 → a2a_peer_auth_failed", async () => {
    const unlisted = await run([g.url, "hello"], { A2A_CLIENT_ALLOW_PRIVATE_HOSTS: "true", A2A_CLIENT_BEARER_TOKEN: TEST_TOKEN });
    expect(unlisted.code).toBe(1);
    expect(unlisted.stderr).toMatch(/^\[error a2a_peer_auth_failed\] /m);
    expect(unlisted.stdout + unlisted.stderr).not.toContain(TEST_TOKEN);
    const wrong = await run(["--json", g.url, "hello"], { ...LOOPBACK, A2A_CLIENT_BEARER_TOKEN: "not-the-gateway-token" });
    expect(wrong.code).toBe(1);
    const [only] = await jsonLines(wrong);
    expect(only!.error.code).toBe("a2a_peer_auth_failed");
    expect(wrong.stdout).not.toContain("not-the-gateway-token");
  });
});

describe("against the @a2a-js/sdk reference server", () => {
  let peer: SdkPeer;
  beforeAll(async () => {
    peer = await startSdkPeer({ mode: "stream", legacy: true });
  });
  afterAll(async () => {
    await peer?.close();
  });

  it.each(COMBOS)("A2A %s over %s: the streamed text, exit 0, the line and transport on the wire", async (line, transport) => {
    const before = peer.requests.length;
    const r = await run(["--line", line, peer.url, "hi there"], { ...LOOPBACK, A2A_CLIENT_SUPPORTED_TRANSPORTS: transport });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("SDK peer says hi\n");
    expect(r.writes.filter((w) => w !== "\n").length, JSON.stringify(r.writes)).toBeGreaterThan(1);
    const calls = peer.requests.slice(before).filter((q) => q.method === "POST");
    expect(calls.length).toBeGreaterThan(0);
    for (const q of calls) {
      expect(q.path.startsWith(transport === "JSONRPC" ? "/a2a/jsonrpc" : "/a2a/rest"), q.path).toBe(true);
      if (line === "1.0") expect(q.version).toBe("1.0");
      else expect(q.version ?? "0.3").toMatch(/^0\.3/);
      // 0.3 REST lives under /v1, 1.0 REST at the interface URL's root.
      if (transport === "HTTP+JSON") expect(q.path.includes("/v1/")).toBe(line === "0.3");
    }
  });

  it("--json against the SDK server: valid lines, the result names the line and transport", async () => {
    const r = await run(["--json", "--line", "0.3", peer.url, "hi"], { ...LOOPBACK, A2A_CLIENT_SUPPORTED_TRANSPORTS: "HTTP+JSON" });
    expect(r.code, r.stdout).toBe(0);
    const lines = await jsonLines(r);
    expect(lines.at(-1)!.result).toMatchObject({ state: "completed", text: "SDK peer says hi", protocol_version: "0.3", transport: "HTTP+JSON" });
    expect(lines.filter((l) => l.event?.artifactUpdate !== undefined)).toHaveLength(3);
  });

  it("credentials: none without A2A_CLIENT_ALLOWED_HOSTS, the bearer token on every request to a listed host", async () => {
    let before = peer.requests.length;
    const unlisted = await run([peer.url, "hi"], { A2A_CLIENT_ALLOW_PRIVATE_HOSTS: "true", A2A_CLIENT_BEARER_TOKEN: "peer-secret-1234" });
    expect(unlisted.code, unlisted.stderr).toBe(0);
    const sent = peer.requests.slice(before);
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.every((q) => q.authorization === undefined)).toBe(true);
    before = peer.requests.length;
    const listed = await run([peer.url, "hi"], { ...LOOPBACK, A2A_CLIENT_BEARER_TOKEN: "peer-secret-1234" });
    expect(listed.code, listed.stderr).toBe(0);
    expect(peer.requests.slice(before).map((q) => q.authorization)).toEqual(peer.requests.slice(before).map(() => "Bearer peer-secret-1234"));
    before = peer.requests.length;
    const basic = await run([peer.url, "hi"], { ...LOOPBACK, A2A_CLIENT_BASIC_AUTH: "alice:wonderland" });
    expect(basic.code, basic.stderr).toBe(0);
    expect(new Set(peer.requests.slice(before).map((q) => q.authorization))).toEqual(new Set([`Basic ${Buffer.from("alice:wonderland").toString("base64")}`]));
  });
});

describe("the polling fallback against a peer that does not stream and completes later", () => {
  let peer: SdkPeer;
  beforeAll(async () => {
    peer = await startSdkPeer({ mode: "later", laterMs: 400, chunks: ["done ", "later"] });
  });
  afterAll(async () => {
    await peer?.close();
  });
  const polling = {
    ...LOOPBACK,
    A2A_CLIENT_POLLING_FALLBACK_ENABLED: "true",
    A2A_CLIENT_POLLING_FALLBACK_INITIAL_INTERVAL_SECONDS: "0.05",
    A2A_CLIENT_POLLING_FALLBACK_MAX_INTERVAL_SECONDS: "0.2",
    A2A_CLIENT_POLLING_FALLBACK_TIMEOUT_SECONDS: "5",
  };

  it.each(["JSONRPC", "HTTP+JSON"] as const)("on (%s): polls until completed, exit 0", async (transport) => {
    const before = peer.requests.length;
    const r = await run([peer.url, "take your time"], { ...polling, A2A_CLIENT_SUPPORTED_TRANSPORTS: transport });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("done later\n");
    expect(r.stderr).toMatch(/^\[working\]$/m);
    expect(r.stderr).toMatch(/^\[completed\]$/m);
    // The send, then at least one poll (tasks/get or GET /tasks/{id}).
    expect(peer.requests.slice(before).filter((q) => q.path.startsWith("/a2a/")).length).toBeGreaterThan(1);
  });

  it("on, --json: the polled tasks are event lines, the last result completed", async () => {
    const r = await run(["--json", peer.url, "take your time"], polling);
    expect(r.code).toBe(0);
    const lines = await jsonLines(r);
    expect(lines.slice(0, -1).every((l) => l.event?.task !== undefined)).toBe(true);
    expect(lines[0]!.event.task.status.state).toBe("TASK_STATE_WORKING");
    expect(lines.at(-1)!.result).toMatchObject({ state: "completed", text: "done later" });
  });

  it("off: the call ends working (exit 5) and says so", async () => {
    const r = await run([peer.url, "take your time"], LOOPBACK);
    expect(r.code).toBe(5);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/^\[working\]$/m);
    expect(r.stderr).toMatch(/still working/);
  });

  it("on, but polling runs out of time before the task completes: exit 5", async () => {
    const slow = await startSdkPeer({ mode: "later", laterMs: 5_000 });
    try {
      const r = await run(["--json", slow.url, "too slow"], { ...polling, A2A_CLIENT_POLLING_FALLBACK_TIMEOUT_SECONDS: "0.3" });
      expect(r.code).toBe(5);
      expect((await jsonLines(r)).at(-1)!.result.state).toBe("working");
    } finally {
      await slow.close();
    }
  });
});

describe("policy, usage and configuration", () => {
  /** A plain HTTP server that counts what reaches it. */
  let hits = 0;
  let target: http.Server;
  let targetUrl: string;
  beforeAll(async () => {
    target = http.createServer((_req, res) => {
      hits++;
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    target.closeAllConnections();
    await new Promise((resolve) => target.close(resolve));
  });

  it("a loopback peer is refused without A2A_CLIENT_ALLOW_PRIVATE_HOSTS, or outside A2A_CLIENT_ALLOWED_HOSTS; nothing reaches it", async () => {
    const plain = await run([targetUrl, "hello"], {});
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/^\[error a2a_target_refused\] .*A2A_CLIENT_ALLOW_PRIVATE_HOSTS/m);
    const json = await run(["--json", targetUrl.replace("127.0.0.1", "localhost"), "hello"], { A2A_CLIENT_BEARER_TOKEN: "must-not-leak-77" });
    expect(json.code).toBe(1);
    expect((await jsonLines(json))[0]!.error.code).toBe("a2a_target_refused");
    expect(json.stdout).not.toContain("must-not-leak-77");
    const unlisted = await run([targetUrl, "hello"], { A2A_CLIENT_ALLOW_PRIVATE_HOSTS: "true", A2A_CLIENT_ALLOWED_HOSTS: "peer.example.com" });
    expect(unlisted.code).toBe(1);
    expect(unlisted.stderr).toMatch(/^\[error a2a_target_refused\] .*A2A_CLIENT_ALLOWED_HOSTS/m);
    expect(hits).toBe(0);
    // Allowed, it does reach the server (which has no card): the refusals above were the policy's.
    const allowed = await run([targetUrl, "hello"], LOOPBACK);
    expect(allowed.code).toBe(1);
    expect(allowed.stderr).toMatch(/^\[error a2a_invalid_agent_card\] /m);
    expect(hits).toBeGreaterThan(0);
  });

  it("credential flags are refused without echoing their value (exit 2)", async () => {
    for (const argv of [["--token", "sekrit-value-1", targetUrl, "hi"], [`--basic=user:sekrit-value-2`, targetUrl, "hi"], ["--bearer", "sekrit-value-3", targetUrl, "hi"]]) {
      const r = await run(argv, LOOPBACK);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/credentials come only from the environment \(A2A_CLIENT_BEARER_TOKEN or A2A_CLIENT_BASIC_AUTH/);
      expect(r.stderr).not.toMatch(/sekrit-value/);
      expect(r.stdout).toBe("");
    }
  });

  it("bad arguments are usage errors (exit 2), nothing sent", async () => {
    const before = hits;
    const cases: [string[], RegExp][] = [
      [[], /missing <agent-url \| card-url> and <text>/],
      [[targetUrl], /missing <text>/],
      [[targetUrl, "a", "b"], /quote the text/],
      [[targetUrl, "  "], /<text> is empty/],
      [["--line", "2.0", targetUrl, "hi"], /--line must be 0\.3 or 1\.0/],
      [["--task", "", targetUrl, "hi"], /--task must be a non-empty id/],
      [["--context", "x".repeat(201), targetUrl, "hi"], /--context must be a non-empty id of at most 200/],
      [["--frobnicate", targetUrl, "hi"], /Unknown option '--frobnicate'/],
    ];
    for (const [argv, message] of cases) {
      const r = await run(argv, LOOPBACK);
      expect(r.code, argv.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    expect(hits).toBe(before);
  });

  it("an invalid A2A_CLIENT_* variable: the problems are printed, exit 2, nothing sent", async () => {
    const before = hits;
    const r = await run([targetUrl, "hi"], { ...LOOPBACK, A2A_CLIENT_TIMEOUT_SECONDS: "soon", A2A_CLIENT_SUPPORTED_TRANSPORTS: "GRPC" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/A2A_CLIENT_TIMEOUT_SECONDS/);
    expect(r.stderr).toMatch(/A2A_CLIENT_SUPPORTED_TRANSPORTS/);
    expect(hits).toBe(before);
  });

  it("an invalid URL is a2a_invalid_input (exit 1)", async () => {
    const r = await run(["ftp://127.0.0.1/x", "hi"], LOOPBACK);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^\[error a2a_invalid_input\] /m);
  });

  it("--help explains the options, the credentials and every exit code", async () => {
    const r = await run(["--help"], {});
    expect(r.code).toBe(0);
    for (const word of ["--task ID", "--context ID", "--line 0.3|1.0", "--json", "A2A_CLIENT_BEARER_TOKEN", "A2A_CLIENT_POLLING_FALLBACK_ENABLED", "A2A_CLIENT_ALLOW_PRIVATE_HOSTS"]) {
      expect(r.stdout).toContain(word);
    }
    for (const code of [0, 1, 2, 3, 4, 5]) expect(r.stdout).toMatch(new RegExp(`^  ${code}  `, "m"));
    const client = (Object.values(variables) as { name: string; defaultText: string }[]).filter((v) => v.name.startsWith("A2A_CLIENT_"));
    expect(client.length).toBeGreaterThan(10);
    for (const v of client) expect(r.stdout).toContain(`  ${v.name} (default: ${v.defaultText})\n`);
  });
});

describe("as a child process (bin/opencode-a2a.js → dist/)", () => {
  let g: TaskGateway;
  let cwd: string;
  beforeAll(async () => {
    g = await startTaskGateway();
    cwd = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-call-"));
  });
  afterAll(async () => {
    await g?.close();
    if (cwd) fs.rmSync(cwd, { recursive: true, force: true });
  });

  function spawnCall(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [binPath, "call", ...args], { cwd, env: { PATH: process.env.PATH ?? "", HOME: cwd, ...env }, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
      child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`call did not exit within 20 s; stdout=${stdout} stderr=${stderr}`));
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

  it("streams the gateway's answer and exits 0; a refused peer exits 1; a credential flag exits 2", async () => {
    g.stub.script(text(["From ", "a ", "child."]));
    const ok = await spawnCall([g.url, "hello from a process"], GATEWAY_ENV);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toBe("From a child.\n");
    expect(ok.stderr).toContain("[completed]");
    expect(ok.stderr).not.toContain(TEST_TOKEN);
    const refused = await spawnCall([g.url, "hello"], {});
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/\[error a2a_target_refused\]/);
    const flag = await spawnCall(["--token", TEST_TOKEN, g.url, "hello"], {});
    expect(flag.code).toBe(2);
    expect(flag.stderr).not.toContain(TEST_TOKEN);
  }, 60_000);
});
