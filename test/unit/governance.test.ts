// The governance trail store on every backend (memory, SQLite, PostgreSQL: one decision per request, also when two
// gateways race on one PostgreSQL; order, summary, feedback, TASK_STORE_UNAVAILABLE, SQLite kept across a reopen), the
// interrupt store's per-task and expired listings the trail reads, and the policy patterns (text and path globs) with
// the unsafe-combination check; governors in the policy file (accepted shapes, load errors, how a command's executable
// is found) and how their results are summarized.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/index.js";
import { preloadValidators } from "../../src/contract/validate.js";
import { patchText, summaryLine } from "../../src/governance/governors.js";
import { compilePattern, findExecutable, parsePolicies, unsafeCombinations } from "../../src/governance/policies.js";
import { openStorage, SqlGovernanceStore, type GovernanceStore, type Storage, type TrailDecision } from "../../src/storage/index.js";
import { openPostgres, type PostgresDatabase } from "../../src/storage/sql/postgres.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";

const dirs: string[] = [];
const fresh = (): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-governance-unit-"));
  dirs.push(dir);
  return path.join(dir, "a2a.db");
};
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const decision = (requestId: string, source: string): TrailDecision => ({
  requestId,
  source,
  optionId: "once",
  governorsInvolved: [],
  timestamp: "2026-01-01T00:00:00.000Z",
  metadata: { via: "policy" },
});

const backends: [string, (now: () => number) => Promise<Storage>][] = [
  ["memory", (now) => openStorage({ backend: "memory", now })],
  ["sqlite", (now) => openStorage({ backend: "sqlite", url: `sqlite:///${fresh()}`, now })],
];

const feedback = { phase: "post_run" as const, timestamp: "2026-01-01T00:00:01.000Z", summary: ["[r] Ok"], results: [{ governorId: "r", status: "ok" as const, messages: [] }], round: 1, followUpSent: false };

/** The store's suite: the same on memory, SQLite and PostgreSQL. */
async function keepsTheTrail(store: GovernanceStore): Promise<void> {
  expect(await store.trail("t1")).toEqual({ decisions: [], feedback: [] });
  expect(await store.decisionSummary("t1")).toEqual({ count: 0 });
  expect(await store.presence("t1")).toEqual({ trail: false, bindings: false });
  expect(await store.overview("t1")).toEqual({ decisions: { count: 0 }, reviews: { count: 0 } });
  expect(await store.addDecision("t1", "alice", decision("r1", "policy:a"))).toBe(true);
  expect(await store.addDecision("t1", "alice", decision("r2", "principal:alice"))).toBe(true);
  expect(await store.addDecision("t1", "alice", decision("r1", "expired"))).toBe(false);
  expect(await store.addDecision("t2", "bob", decision("r3", "expired"))).toBe(true);
  expect(await store.reviewSummary("t1")).toEqual({ count: 0 });
  await store.addFeedback("t1", "alice", feedback);
  const second = {
    ...feedback,
    round: 2,
    results: [
      { governorId: "r", status: "needs_attention" as const, messages: ["tests"] },
      { governorId: "q", status: "rejected" as const, messages: ["no"] },
      { governorId: "p", status: "ok" as const, messages: [] },
    ],
  };
  await store.addFeedback("t1", "alice", second);
  expect(await store.trail("t1")).toEqual({ decisions: [decision("r1", "policy:a"), decision("r2", "principal:alice")], feedback: [feedback, second] });
  expect(await store.decisionSummary("t1")).toEqual({ count: 2, lastSource: "principal:alice" });
  expect(await store.decisionSummary("t2")).toEqual({ count: 1, lastSource: "expired" });
  // the newest round's most severe status
  expect(await store.reviewSummary("t1")).toEqual({ count: 2, lastStatus: "rejected" });
  expect(await store.reviewSummary("t2")).toEqual({ count: 0 });
  // both summaries in one read (what a task read uses), and the presence that decides whether it is read at all
  expect(await store.overview("t1")).toEqual({ decisions: { count: 2, lastSource: "principal:alice" }, reviews: { count: 2, lastStatus: "rejected" } });
  expect(await store.overview("t2")).toEqual({ decisions: { count: 1, lastSource: "expired" }, reviews: { count: 0 } });
  expect(await store.presence("t2")).toEqual({ trail: true, bindings: false });
  expect(await store.presence("t3")).toEqual({ trail: false, bindings: false });
  // feedback rows never take a request's decision slot
  await store.addFeedback("t2", "bob", feedback);
  expect(await store.addDecision("t2", "bob", decision("r4", "policy:b"))).toBe(true);
  expect((await store.trail("t2")).decisions.map((d) => d.requestId)).toEqual(["r3", "r4"]);
}

describe.each(backends)("%s governance store", (_name, open) => {
  it("keeps one decision per request, in order, per task, with the summary of the newest", async () => {
    const s = await open(Date.now);
    await keepsTheTrail(s.governance);
    await s.close();
  });

  it("a database failure is TASK_STORE_UNAVAILABLE naming the operation", async () => {
    const s = await open(Date.now);
    await s.close();
    await expect(s.governance.addDecision("t1", "alice", decision("r1", "policy:a"))).rejects.toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation: "governance.addDecision" } });
    await expect(s.governance.reviewSummary("t1")).rejects.toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation: "governance.feedbackSummary" } });
  });

  it("lists a task's bindings and the ones past their TTL", async () => {
    let now = 1_000_000;
    const s = await open(() => now);
    const binding = (requestId: string, taskId: string) => ({ requestId, type: "permission" as const, owner: "alice", sessionId: "s", taskId, contextId: "c", details: {}, routing: {} });
    await s.interrupts.add(binding("a", "t1"), 10, 600);
    now += 5_000;
    await s.interrupts.add(binding("b", "t1"), 10, 600);
    await s.interrupts.add(binding("c", "t2"), 10, 600);
    expect((await s.interrupts.listForTask("t1")).map((r) => r.requestId)).toEqual(["a", "b"]);
    expect(await s.interrupts.listExpired()).toEqual([]);
    now += 6_000; // a is past its TTL, b and c are not
    expect((await s.interrupts.listExpired()).map((r) => r.requestId)).toEqual(["a"]);
    expect((await s.interrupts.listForTask("t1")).map((r) => r.requestId)).toEqual(["a", "b"]);
    // a binding, live or past its TTL, is what makes a task read look for the summary
    expect(await s.governance.presence("t1")).toEqual({ trail: false, bindings: true });
    expect(await s.governance.presence("t3")).toEqual({ trail: false, bindings: false });
    await s.close();
  });
});

it("SQLite: a task known to have no trail and no binding is read once; a write through the store or another connection's commit is seen", async () => {
  const file = fresh();
  const s = await openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
  const none = { trail: false, bindings: false };
  try {
    for (const t of ["t1", "t2", "t3"]) expect(await s.governance.presence(t)).toEqual(none);
    // written through the store: seen at once, before and after the write settles
    const adding = s.governance.addDecision("t1", "alice", decision("r1", "policy:a"));
    expect(await s.governance.presence("t1")).toEqual({ trail: true, bindings: false });
    await adding;
    await s.governance.addFeedback("t2", "alice", feedback);
    expect(await s.governance.presence("t2")).toEqual({ trail: true, bindings: false });
    await s.interrupts.add({ requestId: "q", type: "permission", owner: "alice", sessionId: "s", taskId: "t3", contextId: "c", details: {}, routing: {} }, 10, 600);
    expect(await s.governance.presence("t3")).toEqual({ trail: false, bindings: true });
    // another connection's commit: seen within the change check interval
    expect(await s.governance.presence("t4")).toEqual(none);
    const { default: Database } = await import("better-sqlite3");
    const { pinDatabase } = await import("../../src/storage/pin.js");
    const other = pinDatabase(new Database(file));
    other.exec("INSERT INTO a2a_governance_trail (task_id, owner, kind, request_id, source, entry_json, created_at) VALUES ('t4', 'alice', 'feedback', NULL, NULL, '{}', 0)");
    other.close();
    await new Promise((r) => setTimeout(r, 150));
    expect(await s.governance.presence("t4")).toEqual({ trail: true, bindings: false });
    expect(await s.governance.presence("t5")).toEqual(none);
  } finally {
    await s.close();
  }
  // closed: a known task is not answered from memory
  await expect(s.governance.presence("t5")).rejects.toMatchObject({ reason: "TASK_STORE_UNAVAILABLE" });
});

it("the SQLite trail survives a reopen", async () => {
  const file = fresh();
  const first = await openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
  await first.governance.addDecision("t1", "alice", decision("r1", "policy:a"));
  await first.close();
  const again = await openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
  expect((await again.governance.trail("t1")).decisions).toEqual([decision("r1", "policy:a")]);
  expect(await again.governance.addDecision("t1", "alice", decision("r1", "expired"))).toBe(false);
  await again.close();
});

describe.skipIf(postgresUrl === undefined)("postgres governance store", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });
  const database = async (): Promise<string> => {
    const db = await freshDatabase();
    cleanup.push(db.drop);
    return db.url;
  };
  const connect = async (url: string): Promise<PostgresDatabase> => {
    const pg = await openPostgres(url);
    cleanup.push(() => pg.close());
    return pg;
  };

  it("keeps one decision per request, in order, per task, with the summary of the newest", async () => {
    await keepsTheTrail(new SqlGovernanceStore((await connect(await database())).db));
  });

  it("two gateways on separate pools racing to decide the same requests keep exactly one decision each", async () => {
    const url = await database();
    const [a, b] = [new SqlGovernanceStore((await connect(url)).db), new SqlGovernanceStore((await connect(url)).db)];
    const requests = Array.from({ length: 20 }, (_, i) => `r${i}`);
    const outcomes = await Promise.all(
      requests.flatMap((r) => [a.addDecision("t1", "alice", decision(r, "principal:alice")), b.addDecision("t1", "alice", decision(r, "expired"))]),
    );
    // per request: exactly one of the two inserts won
    for (let i = 0; i < requests.length; i++) expect([outcomes[2 * i], outcomes[2 * i + 1]].filter(Boolean)).toHaveLength(1);
    const trail = await a.trail("t1");
    expect(trail.decisions.map((d) => d.requestId).sort()).toEqual([...requests].sort());
    expect((await b.decisionSummary("t1")).count).toBe(requests.length);
  });

  it("a database failure is TASK_STORE_UNAVAILABLE naming the operation", async () => {
    const pg = await openPostgres(await database());
    await pg.close();
    await expect(new SqlGovernanceStore(pg.db).trail("t1")).rejects.toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation: "governance.trail" } });
  });
});

describe("policy patterns", () => {
  it("text: * is any text, ? one character, a trailing ' *' also matches the bare command", () => {
    const echo = compilePattern("echo *", "text");
    expect(["echo", "echo hi", "echo a/b c"].every((c) => echo.test(c))).toBe(true);
    expect(["echoes", "sudo echo hi", " echo"].some((c) => echo.test(c))).toBe(false);
    expect(compilePattern("git ?tatus", "text").test("git status")).toBe(true);
    expect(compilePattern("npm run *:check", "text").test("npm run lint:check")).toBe(true);
    expect(compilePattern("a.b", "text").test("axb")).toBe(false);
  });

  it("paths: * and ? stay in a segment, ** spans segments", () => {
    expect(compilePattern("src/*.ts", "path").test("src/a.ts")).toBe(true);
    expect(compilePattern("src/*.ts", "path").test("src/d/a.ts")).toBe(false);
    expect(compilePattern("docs/**", "path").test("docs/a/b/c.md")).toBe(true);
    expect(compilePattern("**/*.md", "path").test("README.md")).toBe(true);
    expect(compilePattern("**/*.md", "path").test("a/b/README.md")).toBe(true);
    expect(compilePattern("docs/**/x.md", "path").test("docs/x.md")).toBe(true);
    expect(compilePattern("file?.txt", "path").test("file1.txt")).toBe(true);
    expect(compilePattern("file?.txt", "path").test("file/.txt")).toBe(false);
  });

  it("the unsafe combinations are named per rule; safe rules pass", () => {
    const levels = new Set(["read_only", "execute", "autonomous", "admin"]);
    expect(unsafeCombinations([{ id: "echo-ok", permission: "bash", patterns: ["echo *"], decision: "approve" }], levels)).toEqual([]);
    expect(unsafeCombinations([{ id: "all-md", permission: "edit", patterns: ["**/*.md"], decision: "approve", reply: "always" }], levels)).toEqual([]);
    expect(unsafeCombinations([{ id: "w", permission: "edit", patterns: ["**/*"], decision: "approve" }], levels)).toEqual([
      'rule "w" (rules[0]): approves every request of "edit" (permission *, no patterns, or a pattern * / **); set allow_broad: true to mean it',
    ]);
    expect(unsafeCombinations([{ id: "x", permission: "bash", decision: "reject" }], levels)).toEqual([]);
    expect(unsafeCombinations([{ id: "e", permission: "bash", patterns: [" "], decision: "manual" }], levels)).toEqual(['rule "e" (rules[0]): an empty pattern']);
  });
});

describe("governors in the policy file", () => {
  beforeAll(() => preloadValidators(["extensions/GovernancePolicies"]));
  /** A file that is not executable. */
  const plain = path.join(path.dirname(fresh()), "plain.txt");
  fs.writeFileSync(plain, "not a program\n", { mode: 0o644 });
  const levels = new Set(["read_only", "execute", "autonomous", "admin"]);
  const parse = (value: unknown) => parsePolicies(JSON.stringify(value), "policies.json", levels);
  const problems = (value: unknown): string[] => {
    try {
      parse(value);
      return [];
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).problems;
    }
  };

  it("a file of governors alone is accepted, with its follow-up setting", () => {
    const parsed = parse({
      governors: [
        { id: "reviewer", kind: "agent", prompt: "Review it.", model: "fake/fake-model" },
        { id: "lint", kind: "command", command: [process.execPath, "lint.js"], env: { A: "1" }, timeout_seconds: 30, run_on: "always" },
        { id: "sh", kind: "command", command: ["sh", "-c", "true"] },
      ],
      follow_up: { enabled: true, max_rounds: 3, on: ["rejected"] },
    });
    expect(parsed.rules).toEqual([]);
    expect(parsed.governors.map((g) => g.id)).toEqual(["reviewer", "lint", "sh"]);
    expect(parsed.followUp).toEqual({ enabled: true, max_rounds: 3, on: ["rejected"] });
  });

  it("incomplete or unsafe governors are refused at load, each named", () => {
    expect(
      problems({
        governors: [
          { id: "a", kind: "agent" },
          { id: "a", kind: "agent", prompt: "x", command: ["ls"], env: {} },
          { id: "c", kind: "command" },
          { id: "d", kind: "command", command: ["no-such-program-anywhere"], prompt: "x", agent: "plan", model: "p/m" },
          { id: "e", kind: "command", command: ["./relative/tool"] },
          { id: "f", kind: "command", command: [plain], trust_levels: ["root"] },
        ],
      }),
    ).toEqual([
      'policies.json: governor "a" (governors[0]): an agent governor needs a prompt (the reviewer\'s instructions)',
      'policies.json: governor "a" (governors[1]): the id is used by an earlier governor',
      'policies.json: governor "a" (governors[1]): command is only for command governors',
      'policies.json: governor "a" (governors[1]): env is only for command governors',
      'policies.json: governor "c" (governors[2]): a command governor needs command (the executable and its arguments)',
      'policies.json: governor "d" (governors[3]): command "no-such-program-anywhere" is neither an absolute path to an executable file nor a name found on PATH',
      'policies.json: governor "d" (governors[3]): prompt is only for agent governors',
      'policies.json: governor "d" (governors[3]): agent is only for agent governors',
      'policies.json: governor "d" (governors[3]): model is only for agent governors',
      'policies.json: governor "e" (governors[4]): command "./relative/tool" is neither an absolute path to an executable file nor a name found on PATH',
      `policies.json: governor "f" (governors[5]): command "${plain}" is neither an absolute path to an executable file nor a name found on PATH`,
      'policies.json: governor "f" (governors[5]): unknown trust level "root" (one of read_only, execute, autonomous, admin)',
    ]);
    expect(problems({ rules: [], follow_up: { enabled: true } })).toEqual(["policies.json: follow_up: there are no governors to send follow-ups for"]);
  });

  it("the schema refuses unknown fields, kinds, triggers and bounds", () => {
    const base = { id: "g", kind: "command", command: ["ls"] };
    for (const bad of [
      { governors: [{ ...base, shell: true }] },
      { governors: [{ ...base, kind: "webhook" }] },
      { governors: [{ ...base, run_on: "sometimes" }] },
      { governors: [{ ...base, timeout_seconds: 0 }] },
      { governors: [{ id: "g", kind: "agent", prompt: "x", model: "no-slash" }] },
      { governors: [base], follow_up: { enabled: true, max_rounds: 11 } },
      { governors: [base], follow_up: { enabled: true, on: ["ok"] } },
    ]) {
      expect(problems(bad).length, JSON.stringify(bad)).toBeGreaterThan(0);
    }
  });

  it("executables: absolute paths to executable files, or names on PATH", () => {
    expect(findExecutable(process.execPath)).toBe(process.execPath);
    expect(findExecutable("node", path.dirname(process.execPath))).toBe(path.join(path.dirname(process.execPath), "node"));
    expect(findExecutable("node", "")).toBeUndefined();
    expect(findExecutable(plain)).toBeUndefined();
    expect(findExecutable("bin/node", path.dirname(path.dirname(process.execPath)))).toBeUndefined();
  });
});

describe("governor results", () => {
  it("summary lines in the seed's spelling", () => {
    expect(summaryLine({ governorId: "code-reviewer", status: "needs_attention", messages: ["add tests", "and docs"] })).toBe("[code-reviewer] Needs attention: add tests");
    expect(summaryLine({ governorId: "lint", status: "ok", messages: [] })).toBe("[lint] Ok");
    expect(summaryLine({ governorId: "sec", status: "rejected", messages: ["secrets in diff"] })).toBe("[sec] Rejected: secrets in diff");
  });

  it("the diff as stdin: each patch, or a line for a change without one", () => {
    expect(patchText([])).toBe("");
    expect(patchText([{ file: "a.ts", patch: "--- a.ts\n+++ a.ts\n@@ -1 +1 @@\n-x\n+y" }, { file: "b.bin", status: "added", additions: 0, deletions: 0 }])).toBe(
      "--- a.ts\n+++ a.ts\n@@ -1 +1 @@\n-x\n+y\n# b.bin: added (+0 -0), no patch\n",
    );
  });
});
