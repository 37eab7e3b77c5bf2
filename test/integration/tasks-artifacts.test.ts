import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { text, tool } from "../../tools/upstream/script.js";
import { eventsOf, MODES, openStream, sendParams, sendTask, stateOf, userMessage, type Mode } from "../support/task-wire.js";

// ---- what a turn changed comes back: the `changes` diff artifact and, on request, the changed files ------------------

let g: TaskGateway;
let small: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway();
  small = await startTaskGateway({ A2A_ARTIFACT_FILE_MAX_BYTES: "8" });
});
afterAll(async () => {
  await g?.close();
  await small?.close();
});

/** A file part in any line's shape → {bytes?, uri?, mime, name, metadata}. */
function fileOf(m: Mode, part: any): { bytes?: string; uri?: string; mime?: string; name?: string; metadata?: any } {
  if (m.line === "1.0") return { bytes: part.raw, uri: part.url, mime: part.mediaType, name: part.filename, metadata: part.metadata };
  if (m.transport === "rest") return { bytes: part.file.fileWithBytes, uri: part.file.fileWithUri, mime: part.file.mimeType, name: part.file.name, metadata: part.metadata };
  expect(part.kind).toBe("file");
  return { bytes: part.file.bytes, uri: part.file.uri, mime: part.file.mimeType, name: part.file.name, metadata: part.metadata };
}
const decode = (b64: string | undefined): string => Buffer.from(b64 ?? "", "base64").toString("utf8");

describe.each(MODES)("turn artifacts on $name", (m) => {
  it("a turn in which no tool ran asks OpenCode for no diff and has no `changes` artifact", async () => {
    const since = g.stub.requests.length;
    g.stub.script(text("just an answer"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "no tools")));
    expect(stateOf(task)).toBe("completed");
    expect((task.artifacts ?? []).some((a: any) => a.artifactId === `${task.id}:changes`)).toBe(false);
    expect(g.stub.requests.slice(since).filter((r) => /\/diff$/.test(r.path))).toEqual([]);
    // A tool that writes nothing still has its diff read (OpenCode may have recorded changes from it).
    const before = g.stub.requests.length;
    g.stub.script(tool("read", { filePath: "README.md" }), text("read it"));
    expect(stateOf(await sendTask(g.url, m, sendParams(m, userMessage(m, "a tool"))))).toBe("completed");
    expect(g.stub.requests.slice(before).filter((r) => /\/diff$/.test(r.path)).length).toBeGreaterThan(0);
  });

  it("a turn that writes and edits files ends with a `changes` artifact: one text/x-diff part per file, with path, status and counts", async () => {
    g.stub.script(
      tool("write", { filePath: "notes/hello.txt", content: "hello\nworld\n" }),
      tool("edit", { filePath: "README.md", oldString: "old line", newString: "new line" }),
      text("edited two files"),
    );
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "write and edit")));
    expect(stateOf(task)).toBe("completed");
    const changes = task.artifacts.find((a: any) => a.artifactId === `${task.id}:changes`);
    expect(changes?.name).toBe("changes");
    const parts = (changes.parts ?? []).map((p: any) => fileOf(m, p));
    expect(parts.map((p: any) => p.metadata.opencode.change.path)).toEqual(["notes/hello.txt", "README.md"]);
    expect(parts.every((p: any) => p.mime === "text/x-diff")).toBe(true);
    expect(parts[0].name).toBe("notes/hello.txt.diff");
    expect(decode(parts[0].bytes)).toContain("+hello\n+world");
    expect(parts[0].metadata.opencode.change).toEqual({ path: "notes/hello.txt", status: "added", additions: 2, deletions: 0 });
    expect(decode(parts[1].bytes)).toContain("-old line\n+new line");
    expect(parts[1].metadata.opencode.change).toMatchObject({ status: "modified", additions: 1, deletions: 1 });
    expect(changes.metadata.opencode.changes).toMatchObject({ mime_type: "text/x-diff", additions: 3, deletions: 1 });
    expect(changes.metadata.opencode.changes.files).toHaveLength(2);
    // Without the opt-in, no file contents.
    expect(task.artifacts.some((a: any) => a.artifactId.startsWith(`${task.id}:file:`))).toBe(false);
  });

  it("the stream carries the changes artifact (and asked-for file contents) before the terminal status, with increasing sequences", async () => {
    g.stub.script(tool("write", { filePath: "src/out.txt", content: "streamed file\n" }), text("wrote it"));
    const sse = await openStream(g.url, m, sendParams(m, userMessage(m, "write and show me", { metadata: { opencode: { include_file_contents: true } } })));
    const events = await eventsOf(m, sse, await sse.rest());
    const task = events[0]!.body;
    const changes = events.findIndex((e) => e.kind === "artifact" && e.body.artifact.artifactId === `${task.id}:changes`);
    const file = events.findIndex((e) => e.kind === "artifact" && e.body.artifact.artifactId === `${task.id}:file:src/out.txt`);
    expect(changes).toBeGreaterThan(0);
    expect(file).toBeGreaterThan(changes);
    expect(events.at(-1)!.kind).toBe("status");
    expect(stateOf(events.at(-1)!.body)).toBe("completed");
    const fileEvent = events[file]!.body;
    expect(fileEvent.lastChunk).toBe(true);
    expect(fileEvent.artifact.metadata.shared.stream.block_type).toBe("file");
    expect(events[changes]!.body.artifact.metadata.shared.stream.block_type).toBe("changes");
    expect(fileEvent.artifact.metadata.shared.stream.sequence).toBeGreaterThan(events[changes]!.body.artifact.metadata.shared.stream.sequence);
    const content = fileOf(m, fileEvent.artifact.parts[0]);
    expect(decode(content.bytes)).toBe("streamed file\n");
    expect(content.name).toBe("out.txt");
  });

  it("a client that accepts only text gets the diff as text parts", async () => {
    g.stub.script(tool("write", { filePath: "plain.txt", content: "plain\n" }), text("ok"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "plain please"), { acceptedOutputModes: ["text/plain"] }));
    const changes = task.artifacts.find((a: any) => a.artifactId === `${task.id}:changes`);
    expect(changes.parts).toHaveLength(1);
    expect(changes.parts[0].text).toContain("+plain");
    expect(changes.parts[0].metadata.opencode.change.path).toBe("plain.txt");
  });

  it("a diff OpenCode has not recorded yet when the turn goes idle is read again", async () => {
    g.stub.script(tool("write", { filePath: "late/diff.txt", content: "late\n" }), text("wrote"));
    // the first two diff reads answer what OpenCode answers before it recorded the message's summary: nothing
    let empty = 2;
    g.stub.failNext((r) => r.method === "GET" && /^\/session\/[^/]+\/diff$/.test(r.path) && empty-- > 0, { status: 200, body: [] });
    g.stub.failNext((r) => r.method === "GET" && /^\/session\/[^/]+\/diff$/.test(r.path) && empty-- > 0, { status: 200, body: [] });
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "write late")));
    const changes = task.artifacts.find((a: any) => a.artifactId === `${task.id}:changes`);
    expect(changes, "changes artifact after the diff was read again").toBeDefined();
    expect(changes.metadata.opencode.changes.files.map((f: any) => f.path)).toEqual(["late/diff.txt"]);
  });

  it("a turn that changes nothing has no changes artifact", async () => {
    g.stub.script(text("just talk"));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, "no edits")));
    expect(task.artifacts.some((a: any) => a.artifactId === `${task.id}:changes`)).toBe(false);
  });

  it("a changed file larger than A2A_ARTIFACT_FILE_MAX_BYTES comes as a file:// reference with its size", async () => {
    small.stub.script(tool("write", { filePath: "big.txt", content: "more than eight bytes\n" }), text("big"));
    const task = await sendTask(small.url, m, sendParams(m, userMessage(m, "big file", { metadata: { opencode: { include_file_contents: true } } })));
    const artifact = task.artifacts.find((a: any) => a.artifactId === `${task.id}:file:big.txt`);
    const part = fileOf(m, artifact.parts[0]);
    expect(part.bytes).toBeUndefined();
    expect(part.uri).toMatch(/^file:\/\/\/.*\/big\.txt$/);
    expect(part.metadata.opencode).toMatchObject({ path: "big.txt", size: 22, omitted: "size", max_bytes: 8 });
  });
});
