// e2e: against the real `opencode serve` + scripted model, a turn that edits files yields the `changes` diff artifact
// (and the changed file's content when asked) in the stream and in the final task, on 0.3 and 1.0; a follow-up sent
// while a turn runs is taken into that turn, in the same OpenCode session.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { text, tool } from "../../tools/upstream/script.js";
import { startRealStack, type RealStack } from "../support/stack.js";
import { eventsOf, getTask, MODES, openStream, partsOf, roleOf, sendParams, sendTask, stateOf, textOf, until, userMessage, type Mode } from "../support/task-wire.js";

let stack: RealStack;
beforeAll(async () => {
  stack = await startRealStack();
}, 90_000);
afterAll(async () => {
  await stack?.close();
});

function fileOf(m: Mode, part: any): { bytes?: string; mime?: string; metadata?: any } {
  if (m.line === "1.0") return { bytes: part.raw, mime: part.mediaType, metadata: part.metadata };
  if (m.transport === "rest") return { bytes: part.file.fileWithBytes, mime: part.file.mimeType, metadata: part.metadata };
  return { bytes: part.file.bytes, mime: part.file.mimeType, metadata: part.metadata };
}
const decode = (b64: string | undefined): string => Buffer.from(b64 ?? "", "base64").toString("utf8");

// One JSON-RPC and one REST mode per line keeps the real-server runs short; the stub tests cover all four.
const LINES = MODES.filter((m) => (m.line === "0.3" ? m.transport === "jsonrpc" : m.transport === "rest"));

describe.each(LINES)("real OpenCode on $name", (m) => {
  it("a turn that writes a file streams a `changes` diff and the file's content, and the final task keeps both", async () => {
    const file = `e2e-${m.line.replace(".", "")}-${m.transport}.txt`;
    stack.model.script(tool("write", { filePath: path.join(stack.oc.workspace, file), content: "written by the model" }), text(["the file is written"]));
    const sse = await openStream(stack.gw.url, m, sendParams(m, userMessage(m, `write ${file}`, { metadata: { opencode: { include_file_contents: true } } })));
    const events = await eventsOf(m, sse, await sse.rest(60_000));
    const task = events[0]!.body;
    expect(stateOf(events.at(-1)!.body)).toBe("completed");
    expect(fs.readFileSync(path.join(stack.oc.workspace, file), "utf8")).toBe("written by the model");

    const streamedChanges = events.find((e) => e.kind === "artifact" && e.body.artifact.artifactId === `${task.id}:changes`);
    expect(streamedChanges, "changes artifact streamed").toBeDefined();
    const diff = fileOf(m, streamedChanges!.body.artifact.parts[0]);
    expect(diff.mime).toBe("text/x-diff");
    expect(diff.metadata.opencode.change).toMatchObject({ path: file, status: "added", additions: 1, deletions: 0 });
    expect(decode(diff.bytes)).toContain("+written by the model");
    const streamedFile = events.find((e) => e.kind === "artifact" && e.body.artifact.artifactId === `${task.id}:file:${file}`);
    expect(decode(fileOf(m, streamedFile!.body.artifact.parts[0]).bytes)).toBe("written by the model");

    const stored = await getTask(stack.gw.url, m, task.id);
    const changes = stored.artifacts.find((a: any) => a.artifactId === `${task.id}:changes`);
    expect(decode(fileOf(m, changes.parts[0]).bytes)).toContain("+written by the model");
    expect(stored.artifacts.some((a: any) => a.artifactId === `${task.id}:file:${file}`)).toBe(true);
  }, 90_000);

  it("a follow-up sent while the turn runs joins the same turn and session", async () => {
    stack.model.script(text(["working ", "on ", "it ", "slowly"], { delayMs: 400 }), text(["follow-up answered"]));
    const started = await sendTask(stack.gw.url, m, sendParams(m, userMessage(m, "start something long"), { blocking: false }));
    expect(stateOf(started)).toBe("working");
    await until("turn running upstream", async () => ((await getTask(stack.gw.url, m, started.id)).metadata?.shared?.session?.id as string | undefined), 20_000);
    const done = await sendTask(stack.gw.url, m, sendParams(m, userMessage(m, "also mention the follow-up", { taskId: started.id })));
    expect(done.id).toBe(started.id);
    expect(stateOf(done)).toBe("completed");
    const final = textOf(done.artifacts.find((a: any) => a.artifactId === `${started.id}:text`).parts);
    expect(final).toContain("working on it slowly");
    expect(final).toContain("follow-up answered");
    expect(done.history.map(roleOf)).toEqual(["user", "user", "agent"]);
    expect(textOf(partsOf(done.history[1]))).toBe("also mention the follow-up");
    // OpenCode's own copy: both prompts in one session, each answered.
    const sessionId: string = done.metadata.shared.session.id;
    const messages = await stack.upstream.client.call("sessionMessages", (c) => import("../../generated/opencode/sdk.gen.js").then((sdk) => sdk.sessionMessages({ ...c, path: { sessionID: sessionId } })));
    const users = (messages as any[]).filter((x) => x.info.role === "user").map((x) => textOf(x.parts.filter((p: any) => p.type === "text")));
    expect(users.slice(-2)).toEqual(["start something long", "also mention the follow-up"]);
    const answered = new Set((messages as any[]).filter((x) => x.info.role === "assistant").map((x) => x.info.parentID));
    for (const u of (messages as any[]).filter((x) => x.info.role === "user").slice(-2)) expect(answered.has(u.info.id)).toBe(true);
  }, 90_000);
});
