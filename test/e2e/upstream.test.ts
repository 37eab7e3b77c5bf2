// e2e: the real `opencode serve` from node_modules (hermetic, driven by the scripted model server), reached only
// through src/upstream: the wrapped generated client and the one shared event subscription.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import { classifyAssistantError, UpstreamError } from "../../src/upstream/errors.js";
import { startHermeticOpencode, type HermeticOpencode } from "../../tools/upstream/hermetic.js";
import { startModelServer, type ModelServer } from "../../tools/upstream/model-server.js";
import { failure, hang, text, tool } from "../../tools/upstream/script.js";
import { collectUntil, deltaText, events, link, types, untilEvent, type Link } from "../support/upstream.js";

const PASSWORD = "e2e-upstream-password";
let model: ModelServer;
let oc: HermeticOpencode;
let up: Link;
let outside: string;

beforeAll(async () => {
  model = await startModelServer();
  oc = await startHermeticOpencode({ modelBaseUrl: model.baseUrl, password: PASSWORD, restart: true });
  up = link(oc.url, { password: PASSWORD }, { idleTimeoutMs: 15_000 });
  // A restarted OpenCode may come back on another port: follow it, as src/upstream/index.ts does.
  oc.managed.on("ready", (url) => {
    up.client.setBaseUrl(url);
    up.hub.reconnectNow();
  });
  outside = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-outside-"));
  fs.writeFileSync(path.join(outside, "secret.txt"), "outside the workspace\n");
}, 90_000);

afterAll(async () => {
  await up?.stop();
  await oc?.stop();
  await model?.close();
  if (outside) fs.rmSync(outside, { recursive: true, force: true });
}, 30_000);

async function session(title: string): Promise<string> {
  const s = await up.client.createSession({ title });
  return s.id;
}

function promptAsync(sessionId: string, prompt: string): Promise<unknown> {
  return up.client.call(
    "sessionPromptAsync",
    (c) => sdk.sessionPromptAsync({ ...c, path: { sessionID: sessionId }, body: { parts: [{ type: "text", text: prompt }] } }),
    { sessionId },
  );
}

describe("real opencode serve through src/upstream", () => {
  it("answers health with the pinned version and creates a session", async () => {
    const health = await up.client.health();
    expect(health).toEqual({ healthy: true, version: "1.18.33" });
    const id = await session("e2e create");
    expect(id).toMatch(/^ses_/);
    const fetched = await up.client.getSession(id);
    expect(fetched.id).toBe(id);
    expect(fetched.title).toBe("e2e create");
    // An unknown session is a typed SESSION_NOT_FOUND, not a generic failure.
    const missing = await up.client.getSession("ses_doesnotexist0000000000000").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(UpstreamError);
    expect((missing as UpstreamError).toA2AError().reason).toBe("SESSION_NOT_FOUND");
  }, 60_000);

  it("streams text deltas of two sessions at once to two independent subscribers over one connection", async () => {
    const [a, b] = await Promise.all([session("e2e a"), session("e2e b")]);
    model.scriptFor(a, text(["Alpha ", "streams ", "first."], { delayMs: 40 }));
    model.scriptFor(b, text(["Bravo ", "streams ", "second."], { delayMs: 40 }));
    const subA = up.hub.subscribe({ sessions: [a], stream: true });
    const subB = up.hub.subscribe({ sessions: [b], stream: true });
    await Promise.all([subA.ready(10_000), subB.ready(10_000)]);
    const connections = up.hub.status().connections;

    await Promise.all([promptAsync(a, "go a"), promptAsync(b, "go b")]);
    const [itemsA, itemsB] = await Promise.all([
      collectUntil(subA, untilEvent("session.idle")),
      collectUntil(subB, untilEvent("session.idle")),
    ]);
    subA.close();
    subB.close();

    expect(deltaText(itemsA)).toBe("Alpha streams first.");
    expect(deltaText(itemsB)).toBe("Bravo streams second.");
    // Demultiplexed: each subscriber saw only its own session, in hub order.
    for (const [items, id] of [[itemsA, a], [itemsB, b]] as const) {
      const evs = events(items);
      expect(evs.every((e) => JSON.stringify(e.event.properties).includes(id))).toBe(true);
      const seqs = evs.map((e) => e.seq);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      expect(types(items).filter((t) => t === "message.part.delta")).toHaveLength(3);
    }
    // The two turns overlapped in time and shared the one upstream connection.
    const firstDelta = (items: typeof itemsA) => events(items).find((e) => e.event.type === "message.part.delta")!.seq;
    const idle = (items: typeof itemsA) => events(items).find((e) => e.event.type === "session.idle")!.seq;
    expect(firstDelta(itemsA)).toBeLessThan(idle(itemsB));
    expect(firstDelta(itemsB)).toBeLessThan(idle(itemsA));
    expect(up.hub.status().connections).toBe(connections);
  }, 60_000);

  it("observes a tool call that asks permission and one that asks a question, and answers both", async () => {
    const id = await session("e2e interrupts");
    const secret = path.join(outside, "secret.txt");
    model.scriptFor(
      id,
      tool("read", { filePath: secret }),
      tool("question", { questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "Blue", description: "b" }, { label: "Red", description: "r" }] }] }),
      text(["All ", "answered."]),
    );
    const sub = up.hub.subscribe({ sessions: [id] });
    await sub.ready(10_000);
    await promptAsync(id, "read the file and ask me");

    const asked = await collectUntil(sub, untilEvent("permission.asked"));
    const permission = events(asked).at(-1)!.event;
    if (permission.type !== "permission.asked") throw new Error("unreachable");
    expect(permission.properties.permission).toBe("external_directory");
    expect(permission.properties.sessionID).toBe(id);
    const toolPart = events(asked).find((e) => e.event.type === "message.part.updated" && e.event.properties.part.type === "tool");
    expect(toolPart).toBeDefined();
    await up.client.call("permissionReply", (c) =>
      sdk.permissionReply({ ...c, path: { requestID: permission.properties.id }, body: { reply: "once" } }),
    );

    const questioned = await collectUntil(sub, untilEvent("question.asked"));
    expect(types(questioned)).toContain("permission.replied");
    const question = events(questioned).at(-1)!.event;
    if (question.type !== "question.asked") throw new Error("unreachable");
    expect(question.properties.questions[0]?.question).toBe("Pick a color?");
    await up.client.call("questionReply", (c) =>
      sdk.questionReply({ ...c, path: { requestID: question.properties.id }, body: { answers: [["Blue"]] } }),
    );

    const finished = await collectUntil(sub, untilEvent("session.idle"));
    sub.close();
    expect(types(finished)).toContain("question.replied");
    expect(deltaText(finished)).toBe("All answered.");
    // The model saw both tool results: the file content and the answer.
    const chats = model.requests.filter((r) => r.kind === "chat" && r.sessionID === id);
    expect(chats).toHaveLength(3);
    const results = chats.flatMap((r) => model.toolResults(r)).map((m) => JSON.stringify(m));
    expect(results.some((r) => r.includes("outside the workspace"))).toBe(true);
    expect(results.some((r) => r.includes("Blue"))).toBe(true);
  }, 60_000);

  it("aborts a turn mid-stream: the model stream is cut and the failure classifies as canceled", async () => {
    const id = await session("e2e abort");
    model.scriptFor(id, hang({ chunks: ["partial "] }));
    const sub = up.hub.subscribe({ sessions: [id] });
    await sub.ready(10_000);
    await promptAsync(id, "start something long");
    await collectUntil(sub, untilEvent("message.part.delta"));
    expect(await up.client.abort(id)).toBe(true);
    const after = await collectUntil(sub, untilEvent("session.idle"));
    sub.close();
    const error = events(after).find((e) => e.event.type === "session.error")?.event;
    if (error?.type !== "session.error") throw new Error(`no session.error in ${types(after).join(", ")}`);
    const classified = classifyAssistantError(error.properties.error, "session.error", id);
    expect(classified.kind).toBe("aborted");
    expect(classified.taskState).toBe("canceled");
    await expect.poll(() => model.requests.find((r) => r.sessionID === id && r.kind === "chat")?.aborted, { timeout: 5_000 }).toBe(true);
  }, 60_000);

  it("reports a model 4xx as an in-band failure with the provider's status", async () => {
    const id = await session("e2e model error");
    model.scriptFor(id, failure(400, "scripted bad request"));
    const reply = await up.client.call(
      "sessionPrompt",
      (c) => sdk.sessionPrompt({ ...c, path: { sessionID: id }, body: { parts: [{ type: "text", text: "fail please" }] } }),
      { sessionId: id, timeout: "stream" },
    );
    // OpenCode answers 200 with info.error (pitfall 5): the wrapper leaves it to the in-band classifier.
    const info = reply.info;
    expect(info.role).toBe("assistant");
    const classified = classifyAssistantError(info.role === "assistant" ? info.error : undefined, "sessionPrompt", id);
    expect(classified).toMatchObject({ kind: "model", status: 400, upstreamName: "APIError", taskState: "failed" });
    expect(classified.detail).toContain("scripted bad request");
    expect(classified.toA2AError().reason).toBe("UPSTREAM_HTTP_ERROR");
  }, 60_000);

  it("reports an upstream killed mid-stream as a typed failure, then reconnects to the restarted server", async () => {
    const id = await session("e2e kill");
    model.scriptFor(id, hang({ chunks: ["before the crash "] }));
    const sub = up.hub.subscribe({ sessions: [id] });
    await sub.ready(10_000);
    await promptAsync(id, "long turn");
    await collectUntil(sub, untilEvent("message.part.delta"));
    const reconnectsBefore = up.hub.status().reconnects;

    oc.managed.kill("SIGKILL");
    const down = await collectUntil(sub, (_items, last) => last.type === "disconnected", 10_000);
    const disconnected = down.at(-1)!;
    if (disconnected.type !== "disconnected") throw new Error("unreachable");
    expect(disconnected.error).toBeInstanceOf(UpstreamError);
    expect(disconnected.error.kind).toBe("unreachable");
    expect(disconnected.error.toA2AError().reason).toBe("UPSTREAM_UNREACHABLE");

    // While it is down, calls fail fast with the same typed error instead of hanging.
    const whileDown = await up.client.getSession(id).catch((e: unknown) => e);
    expect(whileDown).toBeInstanceOf(UpstreamError);
    expect(["unreachable", "timeout"]).toContain((whileDown as UpstreamError).kind);

    const back = await collectUntil(sub, (_items, last) => last.type === "reconnected", 45_000);
    expect(back.at(-1)).toMatchObject({ type: "reconnected" });
    sub.close();
    expect(up.hub.status().reconnects).toBeGreaterThan(reconnectsBefore);
    expect(oc.managed.restarts).toBeGreaterThanOrEqual(1);

    // The session survived (OpenCode persists it) and new turns stream through the same hub again.
    expect((await up.client.getSession(id)).id).toBe(id);
    const fresh = await session("e2e after restart");
    model.scriptFor(fresh, text(["Back ", "again."]));
    const sub2 = up.hub.subscribe({ sessions: [fresh] });
    await sub2.ready(10_000);
    await promptAsync(fresh, "are you back?");
    const items = await collectUntil(sub2, untilEvent("session.idle"));
    sub2.close();
    expect(deltaText(items)).toBe("Back again.");
  }, 90_000);
});
