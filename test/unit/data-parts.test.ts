// How a data part is rendered into the OpenCode prompt (src/bridge/parts.ts, DECISIONS 15).
import { describe, expect, it } from "vitest";
import { DATA_PRETTY_MAX_CHARS, renderDataPart, sessionTitle, toPromptParts } from "../../src/bridge/parts.js";
import type { Message } from "../../src/protocol/model.js";

const body = (rendered: string): string => rendered.split("\n").slice(2, -1).join("\n");

describe("renderDataPart", () => {
  it("frames pretty JSON (keys as sent) under a header naming position, media type, name and part metadata", () => {
    const out = renderDataPart({ kind: "data", data: { z: 1, a: [true, null] }, mimeType: "application/json", name: "x.json", metadata: { k: "v" } }, 0, 2);
    const lines = out.split("\n");
    expect(lines[0]).toBe('Structured input (JSON) from the A2A client (data part 1 of 2; media type application/json; name "x.json"; part metadata {"k":"v"}):');
    expect(lines[1]).toBe("```json");
    expect(lines.at(-1)).toBe("```");
    expect(body(out)).toBe(JSON.stringify({ z: 1, a: [true, null] }, null, 2));
    expect(renderDataPart({ kind: "data", data: { z: 1, a: [true, null] }, mimeType: "application/json", name: "x.json", metadata: { k: "v" } }, 0, 2)).toBe(out);
  });

  it("a fence longer than any backtick run in the JSON", () => {
    const out = renderDataPart({ kind: "data", data: { s: "`````" } }, 0, 1);
    expect(out.split("\n")[1]).toBe("``````json");
    expect(out.split("\n").at(-1)).toBe("``````");
  });

  it("compact JSON when pretty-printing would blow the size up (deep nesting) or pass the cap", () => {
    let deep: unknown = Array.from({ length: 50 }, (_, i) => i);
    for (let i = 0; i < 60; i++) deep = [deep];
    const out = renderDataPart({ kind: "data", data: deep }, 0, 1);
    expect(body(out)).toBe(JSON.stringify(deep));
    const big = { s: "x".repeat(DATA_PRETTY_MAX_CHARS), n: [1, 2] };
    expect(body(renderDataPart({ kind: "data", data: big }, 0, 1))).toBe(JSON.stringify(big));
    expect(body(renderDataPart({ kind: "data", data: { n: [1, 2] } }, 0, 1))).toBe(JSON.stringify({ n: [1, 2] }, null, 2));
  });
});

describe("toPromptParts with data parts", () => {
  it("keeps the part order: text, data block, file", () => {
    const message: Message = {
      messageId: "m",
      role: "user",
      parts: [
        { kind: "text", text: "see" },
        { kind: "data", data: { a: 1 } },
        { kind: "file", file: { uri: "https://x/a.pdf", mimeType: "application/pdf" } },
      ],
    };
    const parts = toPromptParts(message);
    expect(parts.map((p) => p.type)).toEqual(["text", "text", "file"]);
    expect((parts[1] as { text: string }).text).toContain("data part 2 of 3");
    expect(sessionTitle({ ...message, parts: [{ kind: "data", data: {} }] })).toBe("Structured data");
  });
});
