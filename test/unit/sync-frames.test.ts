// The event hub parses OpenCode's SSE body with src/upstream/sse.ts straight from the socket's chunks: frames end
// at a blank line (LF or CRLF), `data:` lines are joined, comments and data-less frames are skipped, `sync` frames
// are dropped before parsing, and the result does not depend on how the bytes are chunked. The hub parses only the
// frames that may concern a subscribed session (mayConcern).
import { describe, expect, it } from "vitest";
import { frameType, mayConcern } from "../../src/upstream/hub.js";
import { SseFrames } from "../../src/upstream/sse.js";

const SYNC = '"payload":{"type":"sync"';
const frame = (payload: unknown, directory?: string) => `data: ${JSON.stringify({ ...(directory ? { directory } : {}), payload })}\n\n`;

function run(input: string, chunkSize: number, skip: string | null = SYNC): string[] {
  const bytes = Buffer.from(input, "utf8");
  const out: string[] = [];
  const frames = new SseFrames((data) => out.push(data), skip ?? undefined);
  for (let i = 0; i < bytes.length; i += chunkSize) frames.push(bytes.subarray(i, i + chunkSize));
  return out;
}

describe("SseFrames", () => {
  const kept = [
    { type: "server.connected", properties: {} },
    { id: "evt_1", type: "message.part.delta", properties: { sessionID: "ses_1", delta: "sync is just a word here — ünïcode ✓" } },
    { id: "evt_3", type: "session.idle", properties: { sessionID: "ses_1" } },
  ];
  const sync = frame({ type: "sync", syncEvent: { id: "evt_2", type: "session.updated.1", seq: 1, data: {} } }, "/w");
  const input = frame(kept[0]) + frame(kept[1], "/w") + sync + sync + ": keep-alive\n\n" + frame(kept[2], "/w");
  const expected = [{ payload: kept[0] }, { directory: "/w", payload: kept[1] }, { directory: "/w", payload: kept[2] }];

  it.each([1, 2, 3, 7, 64, 4096])("drops sync frames and comments and keeps the others intact (chunks of %i bytes)", (size) => {
    expect(run(input, size).map((d) => JSON.parse(d) as unknown)).toEqual(expected);
  });

  it.each([1, 5, 7, 4096])("reads CRLF and CR line ends like LF (chunks of %i bytes)", (size) => {
    expect(run(input.replace(/\n/g, "\r\n"), size).map((d) => JSON.parse(d) as unknown)).toEqual(expected);
    expect(run(input.replace(/\n/g, "\r"), size).map((d) => JSON.parse(d) as unknown)).toEqual(expected);
    // LF first, CRLF from the middle of the stream on (the parser switches modes with a frame half read).
    expect(run(input + input.replace(/\n/g, "\r\n"), size).map((d) => JSON.parse(d) as unknown)).toEqual([...expected, ...expected]);
  });

  it("joins multi-line data, ignores event/id/retry fields, and passes non-JSON data as text", () => {
    const text = "event: message\nid: 7\nretry: 10\ndata: first\ndata:second\n\n\n\ndata: {\"a\":1}\n\n";
    expect(run(text, 3, null)).toEqual(["first\nsecond", '{"a":1}']);
  });

  it("keeps every frame without a skip marker, and drops an unterminated frame at the end", () => {
    expect(run(`${sync}${frame(kept[0])}data: {"partial"`, 5, null)).toEqual([JSON.stringify({ directory: "/w", payload: { type: "sync", syncEvent: { id: "evt_2", type: "session.updated.1", seq: 1, data: {} } } }), JSON.stringify({ payload: kept[0] })]);
  });
});

describe("mayConcern (the hub's parse filter)", () => {
  const subscribed = new Map([["ses_1", true]]);
  const data = (payload: unknown) => JSON.stringify({ directory: "/w", payload });

  it("is true for frames that name a subscribed session anywhere the router looks", () => {
    expect(mayConcern(data({ type: "session.idle", properties: { sessionID: "ses_1" } }), subscribed)).toBe(true);
    expect(mayConcern(data({ type: "message.updated", properties: { info: { id: "msg_1", sessionID: "ses_1" } } }), subscribed)).toBe(true);
    expect(mayConcern(data({ type: "message.part.updated", properties: { part: { sessionID: "ses_2" }, sessionID: "ses_1" } }), subscribed)).toBe(true);
  });

  it("is false for frames without a subscribed session, and true whenever a plain scan cannot tell", () => {
    expect(mayConcern(data({ type: "session.idle", properties: { sessionID: "ses_2" } }), subscribed)).toBe(false);
    expect(mayConcern(data({ type: "server.heartbeat", properties: {} }), subscribed)).toBe(false);
    expect(mayConcern(data({ type: "message.part.delta", properties: { sessionID: "ses_2", delta: '"sessionID":"ses_1"' } }), subscribed)).toBe(false);
    expect(mayConcern('{"payload":{"properties":{"sessionID" : "ses_1"}}}', subscribed)).toBe(true);
    expect(mayConcern('{"payload":{"properties":{"sessionID":"ses\\u005f1"}}}', subscribed)).toBe(true);
  });
});

describe("frameType (the hub's type filter)", () => {
  it("reads the payload type of OpenCode's key order without parsing", () => {
    expect(frameType(JSON.stringify({ directory: "/w", project: "p", payload: { id: "evt_1", type: "session.updated", properties: {} } }))).toBe("session.updated");
    expect(frameType(JSON.stringify({ payload: { type: "session.idle", properties: { sessionID: "s" } } }))).toBe("session.idle");
  });

  it("gives up (undefined: the frame is parsed) on any other shape", () => {
    expect(frameType(JSON.stringify({ payload: { properties: { type: "session.idle" }, type: "message.updated" } }))).toBeUndefined();
    expect(frameType('{"payload":{"id":"evt\\"x","type":"session.idle"}}')).toBeUndefined();
    expect(frameType('{"payload":{"type":"session\\u002eidle"}}')).toBeUndefined();
    expect(frameType('{"payload": {"type":"session.idle"}}')).toBeUndefined();
    expect(frameType('{"payload":{"type":"session.idle')).toBeUndefined();
    expect(frameType("not json")).toBeUndefined();
  });
});
