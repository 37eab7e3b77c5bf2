// ListedRows (src/storage/listed-rows.ts): a listed row's task is parsed once and reused, frozen, only while the
// row's stored JSON is the same text; at most `size` rows are kept, the least recently listed dropped first.
import { describe, expect, it } from "vitest";
import { ListedRows } from "../../src/storage/listed-rows.js";
import { serialize } from "../../src/storage/task-records.js";
import { gatewayTask } from "../../tools/bench/sdk-server.js";

const row = (i: number, state = "completed") => {
  const task = gatewayTask(i, "2025-01-01T00:00:00.000Z");
  return { id: task.id, json: serialize({ ...task, status: { ...task.status, state } as never }) };
};

describe("ListedRows", () => {
  it("gives the same frozen task for unchanged text, a new one for changed text", () => {
    const rows = new ListedRows(10);
    const r = row(1);
    const first = rows.task(r.id, r.json);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first.history![0]!.parts[0])).toBe(true);
    expect(first).toEqual(JSON.parse(r.json));
    // Equal text from another string object (as a new read of the row gives) is a hit.
    expect(rows.task(r.id, `${r.json} `.trimEnd())).toBe(first);
    const changed = row(1, "failed");
    const second = rows.task(changed.id, changed.json);
    expect(second).not.toBe(first);
    expect(second.status.state).toBe("failed");
    expect(rows.held).toBe(1);
    // Back to the first text: parsed again (only the latest text of a row is kept).
    expect(rows.task(r.id, r.json)).not.toBe(first);
  });

  it("keeps at most `size` rows, dropping the least recently listed", () => {
    const rows = new ListedRows(2);
    const [a, b, c] = [row(1), row(2), row(3)];
    const ta = rows.task(a.id, a.json);
    const tb = rows.task(b.id, b.json);
    expect(rows.task(a.id, a.json)).toBe(ta); // a is now the most recent
    rows.task(c.id, c.json); // drops b
    expect(rows.held).toBe(2);
    expect(rows.task(a.id, a.json)).toBe(ta);
    expect(rows.task(b.id, b.json)).not.toBe(tb);
  });

  it("with size 0 parses every row and keeps nothing (the tasks are not frozen)", () => {
    const rows = new ListedRows(0);
    const r = row(1);
    const first = rows.task(r.id, r.json);
    expect(rows.task(r.id, r.json)).not.toBe(first);
    expect(Object.isFrozen(first)).toBe(false);
    expect(rows.held).toBe(0);
  });
});
