// encodeCached (src/protocol/encoded.ts): answers encoded once per frozen snapshot and key, never for anything else;
// spliceEncoded: a listing page holding such answers written as JSON.stringify would write it.
import { describe, expect, it } from "vitest";
import { v0_3, v1_0 } from "../../src/protocol/codec/index.js";
import { EncodedJson, encodeCached, MAX_VARIANTS, plainResult, spliceEncoded } from "../../src/protocol/encoded.js";
import type { Task } from "../../src/protocol/model.js";
import { deepFreeze } from "../../src/storage/task-records.js";
import { gatewayTask } from "../../tools/bench/sdk-server.js";

const snapshot = (i: number): Task => deepFreeze(gatewayTask(i, "2025-01-01T00:00:00.000Z"));

function counting(encode: (t: Task) => unknown): { encode: (t: Task) => unknown; calls: () => number } {
  let n = 0;
  return {
    encode: (t) => {
      n++;
      return encode(t);
    },
    calls: () => n,
  };
}

describe("encodeCached", () => {
  it("encodes a frozen snapshot once per key, and its text is JSON.stringify of its value", () => {
    const task = snapshot(1);
    const c = counting((t) => v1_0.task(t));
    const first = encodeCached(task, "k", c.encode) as EncodedJson;
    expect(first).toBeInstanceOf(EncodedJson);
    expect(first.text).toBe(JSON.stringify(v1_0.task(task)));
    expect(encodeCached(task, "k", c.encode)).toBe(first);
    expect(c.calls()).toBe(1);
    // Anything holding it serializes to the same JSON (toJSON), so an unaware writer is still exact.
    expect(JSON.stringify({ result: first })).toBe(`{"result":${first.text}}`);
    expect(plainResult(first)).toBe(first.value);
    expect(plainResult(42)).toBe(42);
  });

  it("a new snapshot of the same task (a save) is encoded anew, whatever the key", () => {
    const before = snapshot(2);
    const c = counting((t) => v1_0.task(t));
    const old = encodeCached(before, "k", c.encode) as EncodedJson;
    const after = deepFreeze({ ...gatewayTask(2, "2025-01-01T00:00:00.000Z"), metadata: { changed: true } }) as Task;
    const fresh = encodeCached(after, "k", c.encode) as EncodedJson;
    expect(c.calls()).toBe(2);
    expect(fresh.text).not.toBe(old.text);
    expect(JSON.parse(fresh.text).metadata).toEqual({ changed: true });
  });

  it("different keys (dialect, history length) get their own bytes", () => {
    const task = snapshot(3);
    const a = encodeCached(task, "1.0|", (t) => v1_0.task(t)) as EncodedJson;
    const b = encodeCached(task, "0.3|", (t) => v0_3.task(t)) as EncodedJson;
    const h = encodeCached(task, "1.0|1", (t) => v1_0.task(t, { historyLength: 1 })) as EncodedJson;
    expect(new Set([a.text, b.text, h.text]).size).toBe(3);
    expect(JSON.parse(h.text).history).toHaveLength(1);
    expect((encodeCached(task, "0.3|", () => "unused") as EncodedJson).text).toBe(b.text);
  });

  it("a task that is not frozen (a live task's snapshot) is encoded on every call and returned as a plain value", () => {
    const task = gatewayTask(4, "2025-01-01T00:00:00.000Z");
    const c = counting((t) => v1_0.task(t));
    const first = encodeCached(task, "k", c.encode);
    expect(first).not.toBeInstanceOf(EncodedJson);
    task.metadata = { mutated: true };
    expect((encodeCached(task, "k", c.encode) as Task).metadata).toEqual({ mutated: true });
    expect(c.calls()).toBe(2);
  });

  it(`keeps at most ${MAX_VARIANTS} encodings per snapshot`, () => {
    const task = snapshot(5);
    const c = counting((t) => v1_0.task(t));
    for (let i = 0; i <= MAX_VARIANTS; i++) encodeCached(task, `h${i}`, c.encode);
    expect(c.calls()).toBe(MAX_VARIANTS + 1);
    encodeCached(task, `h${MAX_VARIANTS}`, c.encode); // the newest is kept
    expect(c.calls()).toBe(MAX_VARIANTS + 1);
    encodeCached(task, "h0", c.encode); // the older ones were dropped
    expect(c.calls()).toBe(MAX_VARIANTS + 2);
  });
});

describe("spliceEncoded", () => {
  it("writes the text JSON.stringify writes, with the items' texts spliced in, and keeps the value", () => {
    const a = encodeCached(snapshot(1), "k", (t) => v1_0.task(t)) as EncodedJson;
    const b = encodeCached(snapshot(2), "k", (t) => v1_0.task(t)) as EncodedJson;
    const page = { tasks: [a, { id: "plain" }, b], nextPageToken: "", skipped: undefined, pageSize: 50, totalSize: 3, nested: { n: [1, "x", null] } };
    const out = spliceEncoded(page);
    expect(out).toBeInstanceOf(EncodedJson);
    expect((out as EncodedJson).text).toBe(JSON.stringify(page));
    expect(JSON.parse((out as EncodedJson).text).tasks[0]).toEqual(a.value);
    expect(plainResult(out)).toBe(page);
    // An item JSON.stringify writes as null in an array (undefined, a function) is written null here too.
    const odd = { tasks: [a, undefined, () => 1] };
    expect((spliceEncoded(odd) as EncodedJson).text).toBe(JSON.stringify(odd));
    // Members JSON.stringify leaves out (a function, a symbol) are left out.
    const members = { f: () => 1, tasks: [b], s: Symbol("s"), n: null };
    expect((spliceEncoded(members) as EncodedJson).text).toBe(JSON.stringify(members));
  });

  it("returns the value itself when no member holds an encoded item", () => {
    const page = { tasks: [{ id: "x" }], totalSize: 1 };
    expect(spliceEncoded(page)).toBe(page);
    const empty = { tasks: [], totalSize: 0 };
    expect(spliceEncoded(empty)).toBe(empty);
  });
});

describe("EncodedJson without its value", () => {
  it("keeps the text only and gives the value parsed from it (a listed task: encodeCached(…, false))", () => {
    const task = snapshot(7);
    const encoded = encodeCached(task, "text-only", (t) => v0_3.task(t), false) as EncodedJson;
    expect(encoded).toBeInstanceOf(EncodedJson);
    expect(encoded.text).toBe(JSON.stringify(v0_3.task(task)));
    expect(encoded.value).toEqual(v0_3.task(task));
    expect(encoded.value).not.toBe(encoded.value); // parsed per ask, never held
    expect(JSON.stringify({ tasks: [encoded] })).toBe(`{"tasks":[${encoded.text}]}`);
    expect(encodeCached(task, "text-only", () => ({ never: true }), false)).toBe(encoded);
    // With its value (the default) the value is the one encoded.
    const kept = encodeCached(task, "kept", (t) => v0_3.task(t)) as EncodedJson;
    expect(kept.value).toBe(kept.value);
  });
});
