// The event hub drops OpenCode's `sync` frames before parsing; every other frame passes byte for byte, whatever
// the chunking.
import { describe, expect, it } from "vitest";
import { withoutSyncFrames } from "../../src/upstream/hub.js";

const frame = (payload: unknown, directory?: string) => `data: ${JSON.stringify({ ...(directory ? { directory } : {}), payload })}\n\n`;

async function run(input: string, chunkSize: number): Promise<string> {
  const bytes = new TextEncoder().encode(input);
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += chunkSize) chunks.push(bytes.slice(i, i + chunkSize));
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  let out = "";
  const decoder = new TextDecoder();
  const reader = withoutSyncFrames(source).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    out += decoder.decode(value, { stream: true });
  }
  return out + decoder.decode();
}

describe("withoutSyncFrames", () => {
  const kept = [
    frame({ type: "server.connected", properties: {} }),
    frame({ id: "evt_1", type: "message.part.delta", properties: { sessionID: "ses_1", delta: "sync is just a word here" } }, "/w"),
    frame({ id: "evt_3", type: "session.idle", properties: { sessionID: "ses_1" } }, "/w"),
  ];
  const sync = frame({ type: "sync", syncEvent: { id: "evt_2", type: "session.updated.1", seq: 1, data: {} } }, "/w");
  const input = kept[0]! + kept[1]! + sync + sync + kept[2]!;

  it.each([1, 3, 7, 64, 4096])("drops sync frames and keeps the others intact (chunks of %i bytes)", async (size) => {
    expect(await run(input, size)).toBe(kept.join(""));
  });

  it("passes an unterminated tail through at the end", async () => {
    expect(await run(`${kept[0]}data: {"partial"`, 5)).toBe(`${kept[0]}data: {"partial"`);
  });
});
