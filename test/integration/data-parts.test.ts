// Data parts on every line and transport (DECISIONS 15): each reaches OpenCode as a framed JSON block in the
// prompt, in the message's part order; the task's history keeps the part as sent, in the reader's line's shape.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { text } from "../../tools/upstream/script.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import {
  dataOf,
  dataPart,
  errorFields,
  expectError,
  getTask,
  invoke,
  isDataPart,
  MODES,
  partsOf,
  sendParams,
  sendTask,
  stateOf,
  userMessage,
  type Mode,
} from "../support/task-wire.js";

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway();
});
afterAll(async () => {
  await g?.close();
});

/** The parts OpenCode was prompted with for a session. */
function promptParts(sessionId: string): any[] {
  const prompts = g.stub.requests.filter((r) => r.method === "POST" && r.path === `/session/${sessionId}/prompt_async`);
  expect(prompts).toHaveLength(1);
  return (prompts[0]!.body as any).parts;
}
const promptCount = (): number => g.stub.requests.filter((r) => r.method === "POST" && r.path.endsWith("/prompt_async")).length;

const contentKey = (m: Mode): string => (m.line === "0.3" && m.transport === "rest" ? "content" : "parts");

describe.each(MODES)("data parts on $name", (m) => {
  it("reach OpenCode as framed JSON blocks in part order; the history keeps them as sent", async () => {
    const payload = { order_id: 42, items: [{ sku: "a-1", qty: 2 }], note: "fence ``` inside" };
    const message = userMessage(m, ["before the data", "after the data"]);
    const parts = message[contentKey(m)] as unknown[];
    const withMeta = { ...dataPart(m, payload), metadata: { schema_name: "order" } };
    parts.splice(1, 0, withMeta);
    g.stub.script(text("got it"));
    const task = await sendTask(g.url, m, sendParams(m, message));
    expect(stateOf(task)).toBe("completed");

    const prompted = promptParts(task.metadata.shared.session.id);
    expect(prompted.map((p) => p.type)).toEqual(["text", "text", "text"]);
    expect(prompted[0].text).toBe("before the data");
    expect(prompted[2].text).toBe("after the data");
    const block: string = prompted[1].text;
    const [header, ...rest] = block.split("\n");
    expect(header).toMatch(/^Structured input \(JSON\) from the A2A client \(data part 2 of 3; part metadata \{"schema_name":"order"\}\):$/);
    // The fence is longer than the backtick run inside the JSON, so the value cannot close it.
    expect(rest[0]).toBe("````json");
    expect(rest.at(-1)).toBe("````");
    expect(JSON.parse(rest.slice(1, -1).join("\n"))).toEqual(payload);
    expect(rest.slice(1, -1).join("\n")).toBe(JSON.stringify(payload, null, 2));

    // The history shows the data part as sent, in this line's shape, whatever line reads it.
    const stored = await getTask(g.url, m, task.id);
    const userParts = partsOf(stored.history[0]);
    expect(userParts).toHaveLength(3);
    expect(isDataPart(m, userParts[1])).toBe(true);
    expect(dataOf(m, userParts[1])).toEqual(payload);
    expect(userParts[1].metadata).toEqual({ schema_name: "order" });
    for (const other of MODES) {
      const seen = partsOf((await getTask(g.url, other, task.id)).history[0]);
      expect(isDataPart(other, seen[1]), `${m.name} → ${other.name}`).toBe(true);
      expect(dataOf(other, seen[1])).toEqual(payload);
    }
  });

  it("a message of data parts only is prompted and answered", async () => {
    const message = userMessage(m, "x");
    (message[contentKey(m)] as unknown[]).splice(0, 1, dataPart(m, { only: true }));
    g.stub.script(text("only data"));
    const task = await sendTask(g.url, m, sendParams(m, message));
    expect(stateOf(task)).toBe("completed");
    const prompted = promptParts(task.metadata.shared.session.id);
    expect(prompted).toHaveLength(1);
    expect(prompted[0].text).toContain("data part 1 of 1");
    expect(prompted[0].text).toContain('"only": true');
  });

  if (m.line === "0.3") {
    it.each([
      ["an array", [1, 2]],
      ["a string", "text"],
      ["a number", 7],
    ])("a data value that is %s is INVALID_PARAMS naming the part (0.3 data is an object)", async (_, value) => {
      const message = userMessage(m, "bad data");
      (message[contentKey(m)] as unknown[]).push(m.transport === "rest" ? { data: { data: value } } : { kind: "data", data: value });
      const before = promptCount();
      const err = await expectError(m, await invoke(g.url, m, "send", sendParams(m, message)), "INVALID_PARAMS");
      const { fields, text: detail } = errorFields(m, err);
      expect(fields.some((f) => /^message\.(parts|content)\.1(\.|$)/.test(f)), `${JSON.stringify(fields)} ${detail}`).toBe(true);
      expect(promptCount()).toBe(before);
    });
  } else {
    it("any JSON value is a data part on 1.0; its mediaType and filename are rendered and kept", async () => {
      const message = userMessage(m, "a list follows");
      (message.parts as unknown[]).push({ data: ["x", 1, null], mediaType: "application/vnd.list+json", filename: "list.json" });
      g.stub.script(text("listed"));
      const task = await sendTask(g.url, m, sendParams(m, message));
      const prompted = promptParts(task.metadata.shared.session.id);
      expect(prompted[1].text.split("\n")[0]).toBe(
        'Structured input (JSON) from the A2A client (data part 2 of 2; media type application/vnd.list+json; name "list.json"):',
      );
      expect(prompted[1].text).toContain(JSON.stringify(["x", 1, null], null, 2));
      const kept = partsOf((await getTask(g.url, m, task.id)).history[0])[1];
      expect(kept).toEqual({ data: ["x", 1, null], mediaType: "application/vnd.list+json", filename: "list.json" });
    });
  }
});
