// The governance trail store on both backends (one decision per request, order, summary, feedback, SQLite kept across
// a reopen), the interrupt store's per-task and expired listings the trail reads, and the policy patterns (text and
// path globs) with the unsafe-combination check.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { compilePattern, unsafeCombinations } from "../../src/governance/policies.js";
import { openStorage, type Storage, type TrailDecision } from "../../src/storage/index.js";

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

const backends: [string, (now: () => number) => Storage][] = [
  ["memory", (now) => openStorage({ backend: "memory", now })],
  ["sqlite", (now) => openStorage({ backend: "sqlite", url: `sqlite:///${fresh()}`, now })],
];

describe.each(backends)("%s governance store", (_name, open) => {
  it("keeps one decision per request, in order, per task, with the summary of the newest", () => {
    const s = open(Date.now);
    expect(s.governance.trail("t1")).toEqual({ decisions: [], feedback: [] });
    expect(s.governance.decisionSummary("t1")).toEqual({ count: 0 });
    expect(s.governance.addDecision("t1", "alice", decision("r1", "policy:a"))).toBe(true);
    expect(s.governance.addDecision("t1", "alice", decision("r2", "principal:alice"))).toBe(true);
    expect(s.governance.addDecision("t1", "alice", decision("r1", "expired"))).toBe(false);
    expect(s.governance.addDecision("t2", "bob", decision("r3", "expired"))).toBe(true);
    expect(s.governance.reviewSummary("t1")).toEqual({ count: 0 });
    const feedback = { phase: "post_run" as const, timestamp: "2026-01-01T00:00:01.000Z", summary: ["[r] Ok"], results: [{ governorId: "r", status: "ok" as const, messages: [] }], round: 1, followUpSent: false };
    s.governance.addFeedback("t1", "alice", feedback);
    const second = {
      ...feedback,
      round: 2,
      results: [
        { governorId: "r", status: "needs_attention" as const, messages: ["tests"] },
        { governorId: "q", status: "rejected" as const, messages: ["no"] },
        { governorId: "p", status: "ok" as const, messages: [] },
      ],
    };
    s.governance.addFeedback("t1", "alice", second);
    expect(s.governance.trail("t1")).toEqual({ decisions: [decision("r1", "policy:a"), decision("r2", "principal:alice")], feedback: [feedback, second] });
    expect(s.governance.decisionSummary("t1")).toEqual({ count: 2, lastSource: "principal:alice" });
    expect(s.governance.decisionSummary("t2")).toEqual({ count: 1, lastSource: "expired" });
    // the newest round's most severe status
    expect(s.governance.reviewSummary("t1")).toEqual({ count: 2, lastStatus: "rejected" });
    expect(s.governance.reviewSummary("t2")).toEqual({ count: 0 });
    s.close();
  });

  it("lists a task's bindings and the ones past their TTL", () => {
    let now = 1_000_000;
    const s = open(() => now);
    const binding = (requestId: string, taskId: string) => ({ requestId, type: "permission" as const, owner: "alice", sessionId: "s", taskId, contextId: "c", details: {}, routing: {} });
    s.interrupts.add(binding("a", "t1"), 10, 600);
    now += 5_000;
    s.interrupts.add(binding("b", "t1"), 10, 600);
    s.interrupts.add(binding("c", "t2"), 10, 600);
    expect(s.interrupts.listForTask("t1").map((r) => r.requestId)).toEqual(["a", "b"]);
    expect(s.interrupts.listExpired()).toEqual([]);
    now += 6_000; // a is past its TTL, b and c are not
    expect(s.interrupts.listExpired().map((r) => r.requestId)).toEqual(["a"]);
    expect(s.interrupts.listForTask("t1").map((r) => r.requestId)).toEqual(["a", "b"]);
    s.close();
  });
});

it("the SQLite trail survives a reopen", () => {
  const file = fresh();
  const first = openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
  first.governance.addDecision("t1", "alice", decision("r1", "policy:a"));
  first.close();
  const again = openStorage({ backend: "sqlite", url: `sqlite:///${file}` });
  expect(again.governance.trail("t1").decisions).toEqual([decision("r1", "policy:a")]);
  expect(again.governance.addDecision("t1", "alice", decision("r1", "expired"))).toBe(false);
  again.close();
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
