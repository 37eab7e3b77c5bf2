// The stub upstream must behave like the real `opencode serve`: the same scripted scenario runs against both,
// through the same src/upstream client and EventHub, and the projection of the event stream the gateway's bridge
// relies on (parts and their states, deltas, assistant message completion and errors, idle, interrupts) must be
// identical. Events whose position varies from run to run on the real server itself (session.updated,
// session.diff, user-message summaries, repeated `busy`) are not part of the projection.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { HubItem, Subscription } from "../../src/upstream/hub.js";
import { startHermeticOpencode, type HermeticOpencode } from "../../tools/upstream/hermetic.js";
import { startModelServer, type ModelServer } from "../../tools/upstream/model-server.js";
import { failure, hang, text, tool, type Reply } from "../../tools/upstream/script.js";
import { startStubUpstream, type StubUpstream } from "../../tools/upstream/stub.js";
import { link, type Link } from "../support/upstream.js";

interface Target {
  name: string;
  up: Link;
  script(sessionId: string, replies: Reply[]): void;
}

let model: ModelServer;
let real: HermeticOpencode;
let stub: StubUpstream;
let targets: Target[];
let outside: string;

beforeAll(async () => {
  outside = fs.mkdtempSync(path.join(os.tmpdir(), "parity-outside-"));
  fs.writeFileSync(path.join(outside, "notes.txt"), "outside\n");
  model = await startModelServer();
  real = await startHermeticOpencode({ modelBaseUrl: model.baseUrl });
  stub = await startStubUpstream({ directory: real.workspace });
  targets = [
    { name: "real", up: link(real.url), script: (id, replies) => model.scriptFor(id, ...replies) },
    { name: "stub", up: link(stub.url), script: (id, replies) => stub.scriptFor(id, ...replies) },
  ];
}, 90_000);

afterAll(async () => {
  for (const t of targets ?? []) await t.up.stop();
  await real?.stop();
  await stub?.close();
  await model?.close();
  if (outside) fs.rmSync(outside, { recursive: true, force: true });
}, 30_000);

type Reaction = "reply-permission-once" | "reply-question" | "reject-question" | "abort-on-first-delta";

/** The part of an event the bridge depends on, as a short label (undefined = not part of the projection). */
function label(item: HubItem): string | undefined {
  if (item.type !== "event") return item.type;
  const e = item.event as { type: string; properties: Record<string, any> };
  const p = e.properties;
  switch (e.type) {
    case "message.part.updated": {
      const part = p.part as { type: string; tool?: string; state?: { status: string } };
      if (part.type === "tool") return `tool:${part.tool}:${part.state?.status}`;
      return `part:${part.type}`;
    }
    case "message.part.delta":
      return "delta";
    case "message.updated": {
      const info = p.info as { role: string; finish?: string; error?: { name: string } };
      if (info.role !== "assistant") return undefined;
      return `assistant${info.finish ? `:${info.finish}` : ""}${info.error ? `:error=${info.error.name}` : ""}`;
    }
    case "session.status":
      return p.status?.type === "busy" ? undefined : `status:${p.status?.type}`;
    case "session.error":
      return `error:${p.error?.name}`;
    case "session.idle":
    case "permission.asked":
    case "permission.replied":
    case "question.asked":
    case "question.replied":
    case "question.rejected":
    case "todo.updated":
      return e.type;
    default:
      return undefined;
  }
}

function project(items: HubItem[]): string[] {
  const out: string[] = [];
  // The user's own message and its parts are published around the prompt in an order that varies between runs
  // of the real server; the bridge ignores them, so the projection does too.
  const userMessages = new Set<string>();
  for (const item of items) {
    if (item.type === "event" && item.event.type === "message.updated" && item.event.properties.info.role === "user") userMessages.add(item.event.properties.info.id);
  }
  for (const item of items) {
    if (item.type === "event" && item.event.type === "message.part.updated" && userMessages.has(item.event.properties.part.messageID)) continue;
    const l = label(item);
    if (l !== undefined && out.at(-1) !== l) out.push(l); // repeats (deltas, running updates) collapse
  }
  return out;
}

/** Reads until the session went idle and then stayed quiet for `quietMs` (abort and errors idle twice). */
async function readTurn(sub: Subscription, react: (item: HubItem) => Promise<void>, quietMs = 600, timeoutMs = 20_000): Promise<HubItem[]> {
  const items: HubItem[] = [];
  const deadline = Date.now() + timeoutMs;
  let idleSeen = false;
  for (;;) {
    const wait = idleSeen ? quietMs : deadline - Date.now();
    if (wait <= 0) throw new Error(`turn did not end; saw ${project(items).join(" ")}`);
    let timer: NodeJS.Timeout | undefined;
    const next = await Promise.race([
      sub.next(),
      new Promise<"quiet">((r) => {
        timer = setTimeout(() => r("quiet"), wait);
      }),
    ]);
    clearTimeout(timer);
    if (next === "quiet") {
      if (idleSeen) return items;
      continue;
    }
    if (next.done) return items;
    items.push(next.value);
    if (next.value.type === "event" && next.value.event.type === "session.idle") idleSeen = true;
    await react(next.value);
  }
}

async function run(target: Target, replies: Reply[], reactions: Reaction[], prompt: Record<string, unknown> = {}): Promise<string[]> {
  const { client, hub } = target.up;
  const session = await client.createSession({ title: `parity ${target.name}` });
  target.script(session.id, replies);
  const sub = hub.subscribe({ sessions: [session.id] });
  await sub.ready(10_000);
  await client.call("sessionPromptAsync", (c) =>
    sdk.sessionPromptAsync({ ...c, path: { sessionID: session.id }, body: { parts: [{ type: "text", text: "scenario" }], ...prompt } }),
  );
  let aborted = false;
  const items = await readTurn(sub, async (item) => {
    if (item.type !== "event") return;
    const e = item.event as { type: string; properties: Record<string, any> };
    if (e.type === "permission.asked" && reactions.includes("reply-permission-once")) {
      await client.call("permissionReply", (c) => sdk.permissionReply({ ...c, path: { requestID: e.properties.id }, body: { reply: "once" } }));
    }
    if (e.type === "question.asked" && reactions.includes("reply-question")) {
      await client.call("questionReply", (c) => sdk.questionReply({ ...c, path: { requestID: e.properties.id }, body: { answers: [["Blue"]] } }));
    }
    if (e.type === "question.asked" && reactions.includes("reject-question")) {
      await client.call("questionReject", (c) => sdk.questionReject({ ...c, path: { requestID: e.properties.id } }));
    }
    if (e.type === "message.part.delta" && reactions.includes("abort-on-first-delta") && !aborted) {
      aborted = true;
      await client.abort(session.id);
    }
  });
  sub.close();
  return project(items);
}

const question = { questions: [{ question: "Pick a color?", header: "Color", options: [{ label: "Blue", description: "b" }, { label: "Red", description: "r" }] }] };

/** A prompt asking for structured output (what an agent governor sends). */
const structured = { format: { type: "json_schema", schema: { type: "object", properties: { status: { type: "string" }, messages: { type: "array", items: { type: "string" } } }, required: ["status", "messages"] } } };

const scenarios: [string, () => Reply[], Reaction[], Record<string, unknown>?][] = [
  ["plain text in chunks", () => [text(["Hello ", "parity ", "world."])], []],
  ["reasoning, then text", () => [text(["Answer."], { reasoning: ["Thinking ", "hard."] })], []],
  ["a bash tool call, then text", () => [tool("bash", { command: "echo parity", description: "echo" }), text(["Done."])], []],
  ["a todowrite tool call, then text", () => [tool("todowrite", { todos: [{ content: "first", status: "pending", priority: "high" }] }), text(["Planned."])], []],
  ["a question answered", () => [tool("question", question), text(["Blue it is."])], ["reply-question"]],
  ["a question rejected", () => [tool("question", question), text(["never sent"])], ["reject-question"]],
  ["a read outside the workspace, permission granted once", () => [tool("read", { filePath: path.join(outside, "notes.txt") }), text(["Read it."])], ["reply-permission-once"]],
  ["a model 4xx error", () => [failure(400, "parity bad request")], []],
  ["an abort mid-stream", () => [hang({ chunks: ["partial "] })], ["abort-on-first-delta"]],
  ["structured output: the StructuredOutput call ends the turn", () => [tool("StructuredOutput", { status: "ok", messages: ["fine"] }), text(["never sent"])], [], structured],
  ["structured output: a text answer is a StructuredOutputError", () => [text(["plain words"])], [], structured],
];

describe("stub upstream ≡ real opencode serve", () => {
  it.each(scenarios)("%s", async (_name, replies, reactions, prompt) => {
    const [onReal, onStub] = [await run(targets[0]!, replies(), reactions, prompt), await run(targets[1]!, replies(), reactions, prompt)];
    if (process.env.PARITY_DEBUG) console.log(_name, onReal.join(" "));
    expect(onReal.length).toBeGreaterThan(3);
    expect(onStub).toEqual(onReal);
  }, 60_000);
});
