// ListedRows (src/storage/listed-rows.ts): a row listed a second time is kept parsed and frozen, and reused only
// while the row's stored JSON is the same text; at most `size` rows are kept, the least recently listed dropped
// first; a row listed once is parsed and not kept.
import { describe, expect, it } from "vitest";
import { ListedRows } from "../../src/storage/listed-rows.js";
import { serialize } from "../../src/storage/task-records.js";
import { gatewayTask } from "../../tools/bench/sdk-server.js";

const row = (i: number, state = "completed") => {
  const task = gatewayTask(i, "2025-01-01T00:00:00.000Z");
  return { id: task.id, json: serialize({ ...task, status: { ...task.status, state } as never }) };
};

/** Lists `r` twice (the second listing keeps it) and gives the kept task. */
const kept = (rows: ListedRows, r: { id: string; json: string }) => {
  rows.task(r.id, r.json);
  return rows.task(r.id, r.json);
};

describe("ListedRows", () => {
  it("keeps a row from its second listing on, not at its first", () => {
    const rows = new ListedRows(10);
    const r = row(1);
    const once = rows.task(r.id, r.json);
    expect(Object.isFrozen(once)).toBe(false);
    expect(rows.held).toBe(0);
    const twice = rows.task(r.id, r.json);
    expect(twice).not.toBe(once);
    expect(twice).toEqual(once);
    expect(Object.isFrozen(twice)).toBe(true);
    expect(rows.held).toBe(1);
    expect(rows.task(r.id, r.json)).toBe(twice);
  });

  it("gives the same frozen task for unchanged text, a new one for changed text", () => {
    const rows = new ListedRows(10);
    const r = row(1);
    const first = kept(rows, r);
    expect(Object.isFrozen(first.history![0]!.parts[0])).toBe(true);
    expect(first).toEqual(JSON.parse(r.json));
    // Equal text from another string object (as a new read of the row gives) is a hit.
    expect(rows.task(r.id, `${r.json} `.trimEnd())).toBe(first);
    const changed = row(1, "failed");
    const second = rows.task(changed.id, changed.json);
    expect(second).not.toBe(first);
    expect(Object.isFrozen(second)).toBe(true); // a kept row that changed is kept changed
    expect(second.status.state).toBe("failed");
    expect(rows.held).toBe(1);
    // Back to the first text: parsed again (only the latest text of a row is kept).
    expect(rows.task(r.id, r.json)).not.toBe(first);
  });

  it("keeps at most `size` rows, dropping the least recently listed", () => {
    const rows = new ListedRows(2);
    const [a, b, c] = [row(1), row(2), row(3)];
    const ta = kept(rows, a);
    const tb = kept(rows, b);
    expect(rows.task(a.id, a.json)).toBe(ta); // a is now the most recent
    kept(rows, c); // drops b
    expect(rows.held).toBe(2);
    expect(rows.task(a.id, a.json)).toBe(ta);
    expect(rows.task(b.id, b.json)).not.toBe(tb);
  });

  it("remembers at most 4 × size rows listed once", () => {
    const rows = new ListedRows(1);
    const many = [1, 2, 3, 4, 5].map((i) => row(i));
    for (const r of many) rows.task(r.id, r.json);
    // The first was forgotten: its next listing counts as a first again; the last is kept at its second.
    rows.task(many[0]!.id, many[0]!.json);
    expect(rows.held).toBe(0);
    rows.task(many[4]!.id, many[4]!.json);
    expect(rows.held).toBe(1);
  });

  it("with size 0 parses every row and keeps nothing (the tasks are not frozen)", () => {
    const rows = new ListedRows(0);
    const r = row(1);
    const first = rows.task(r.id, r.json);
    expect(rows.task(r.id, r.json)).not.toBe(first);
    expect(Object.isFrozen(rows.task(r.id, r.json))).toBe(false);
    expect(rows.held).toBe(0);
  });
});
