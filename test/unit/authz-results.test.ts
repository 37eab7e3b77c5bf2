// Result scopes on the internal model (src/operations/tasks.ts): without results.read no artifacts (and no
// artifact-update events); without results.files no file parts in artifacts or messages; nothing left empty (parts
// need at least one member), the runtime's objects never changed, and every filtered task still encodes to a valid
// task of every line.
import { describe, expect, it } from "vitest";
import type { Principal } from "../../src/auth/index.js";
import { catalog } from "../../src/contract/catalog.js";
import { filterEvent, filterTask, resultAccess, RESULTS_FILES, RESULTS_READ } from "../../src/runtime/result-scope.js";
import { codecFor } from "../../src/protocol/codec/index.js";
import type { Message, Part, StreamEvent, Task } from "../../src/protocol/model.js";
import { expectValid } from "../support/contract.js";

const text = (t: string): Part => ({ kind: "text", text: t });
const file = (name: string): Part => ({ kind: "file", file: { name, mimeType: "text/plain", bytes: "aGVsbG8=" } });
const data: Part = { kind: "data", data: { a: 1 } };
const message = (id: string, role: Message["role"], parts: Part[]): Message => ({ messageId: id, role, parts, taskId: "t1", contextId: "c1" });

function task(): Task {
  return {
    id: "t1",
    contextId: "c1",
    status: { state: "completed", timestamp: "2026-01-01T00:00:00.000Z", message: message("s1", "agent", [file("status.txt")]) },
    artifacts: [
      { artifactId: "a-text", name: "response", parts: [text("answer")] },
      { artifactId: "a-mixed", parts: [text("see file"), file("out.txt"), data] },
      { artifactId: "a-files", parts: [file("only.txt")] },
    ],
    history: [message("m1", "user", [text("hello"), file("in.txt")]), message("m2", "user", [file("only-in.txt")]), message("m3", "agent", [text("done")])],
    metadata: { shared: { session: { id: "ses_1" } } },
  };
}

const ALL = new Set(catalog.scopes);
const principal = (without: string[]): Principal => ({
  id: "p",
  credentialId: "c",
  trustLevel: "execute",
  scopes: new Set([...ALL].filter((s) => !without.includes(s))),
  admin: false,
});
const fileCount = (parts: Part[] | undefined) => (parts ?? []).filter((p) => p.kind === "file").length;

describe("results.read / results.files on tasks", () => {
  it("the scopes are the contract's", () => {
    expect(catalog.scopes).toEqual(expect.arrayContaining([RESULTS_READ, RESULTS_FILES]));
  });

  it("both scopes: the very same object", () => {
    const t = task();
    expect(filterTask(t, resultAccess(principal([])))).toBe(t);
  });

  it("without results.files: file parts gone everywhere, file-only artifacts and messages dropped", () => {
    const t = task();
    const before = structuredClone(t);
    const out = filterTask(t, resultAccess(principal([RESULTS_FILES])));
    expect(t).toEqual(before); // the input is not changed
    expect(out.artifacts!.map((a) => a.artifactId)).toEqual(["a-text", "a-mixed"]);
    expect(out.artifacts![1]!.parts).toEqual([text("see file"), data]);
    expect(out.history!.map((m) => m.messageId)).toEqual(["m1", "m3"]);
    expect(out.history![0]!.parts).toEqual([text("hello")]);
    expect(out.status.message).toBeUndefined();
    expect(out.status.state).toBe("completed");
    for (const a of out.artifacts!) expect(fileCount(a.parts)).toBe(0);
    expect(out.metadata).toEqual(t.metadata);
  });

  it("without results.read: no artifacts at all; history kept (with its files when results.files is held)", () => {
    const out = filterTask(task(), resultAccess(principal([RESULTS_READ])));
    expect(out.artifacts).toBeUndefined();
    expect(out.history).toEqual(task().history);
    const none = filterTask(task(), resultAccess(principal([RESULTS_READ, RESULTS_FILES])));
    expect(none.artifacts).toBeUndefined();
    expect(none.history!.flatMap((m) => m.parts).some((p) => p.kind === "file")).toBe(false);
  });

  it.each([[[RESULTS_READ]], [[RESULTS_FILES]], [[RESULTS_READ, RESULTS_FILES]]])("without %j the task encodes validly on every line", async (without) => {
    const out = filterTask(task(), resultAccess(principal(without)));
    await expectValid("v0_3/Task", codecFor("0.3", "jsonrpc").task(out));
    await expectValid("v0_3_rest/Task", codecFor("0.3", "rest").task(out));
    await expectValid("v1_0/Task", codecFor("1.0", "jsonrpc").task(out));
  });
});

describe("stream events", () => {
  const artifactEvent = (parts: Part[]): StreamEvent => ({ kind: "artifact-update", taskId: "t1", contextId: "c1", artifact: { artifactId: "a", parts }, append: true });
  const statusEvent: StreamEvent = {
    kind: "status-update",
    taskId: "t1",
    contextId: "c1",
    final: false,
    status: { state: "input-required", timestamp: "2026-01-01T00:00:00.000Z", message: message("s", "agent", [text("why"), file("x")]) },
  };

  it("without results.read: artifact updates are dropped; tasks lose their artifacts; status updates pass", () => {
    const access = resultAccess(principal([RESULTS_READ]));
    expect(filterEvent(artifactEvent([text("x")]), access)).toBeUndefined();
    const t = filterEvent({ kind: "task", task: task() }, access) as Extract<StreamEvent, { kind: "task" }>;
    expect(t.task.artifacts).toBeUndefined();
    expect(filterEvent(statusEvent, access)).toBe(statusEvent);
  });

  it("without results.files: file parts filtered, file-only updates and messages dropped", () => {
    const access = resultAccess(principal([RESULTS_FILES]));
    expect(filterEvent(artifactEvent([file("x")]), access)).toBeUndefined();
    const mixed = filterEvent(artifactEvent([text("a"), file("x")]), access) as Extract<StreamEvent, { kind: "artifact-update" }>;
    expect(mixed.artifact.parts).toEqual([text("a")]);
    expect(mixed.append).toBe(true);
    const status = filterEvent(statusEvent, access) as Extract<StreamEvent, { kind: "status-update" }>;
    expect(status.status.message!.parts).toEqual([text("why")]);
    expect(filterEvent({ kind: "message", message: message("m", "agent", [file("x")]) }, access)).toBeUndefined();
  });

  it("both scopes: events untouched", () => {
    const e = artifactEvent([file("x")]);
    expect(filterEvent(e, resultAccess(principal([])))).toBe(e);
  });
});
