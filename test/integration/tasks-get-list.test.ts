import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { TEST_TOKEN } from "../support/gateway.js";
import { text } from "../../tools/upstream/script.js";
import { expectError, expectOk, getTask, invoke, Mode, MODES, roleOf, sendParams, sendTask, stateOf, userMessage } from "../support/task-wire.js";

// ---- tasks/get, GetTask, tasks/list, ListTasks, GET /v1/tasks[/{id}], GET /tasks[/{id}] ----------------------------

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway();
});
afterAll(async () => {
  await g?.close();
});

/** Three completed tasks in a fresh context (oldest first) and one in another context. */
async function seed(m: Mode): Promise<{ contextId: string; ids: string[]; other: string }> {
  const contextId = randomUUID();
  const ids: string[] = [];
  for (const n of [1, 2, 3]) {
    g.stub.script(text(`answer ${n}`));
    const task = await sendTask(g.url, m, sendParams(m, userMessage(m, `question ${n}`, { contextId })));
    expect(stateOf(task)).toBe("completed");
    expect(task.contextId).toBe(contextId);
    ids.push(task.id);
  }
  g.stub.script(text("elsewhere"));
  const other = await sendTask(g.url, m, sendParams(m, userMessage(m, "another context")));
  return { contextId, ids, other: other.id };
}

async function list(m: Mode, params: Record<string, unknown>): Promise<any> {
  return expectOk(m, await invoke(g.url, m, "list", params), "list");
}

const timestamps = (tasks: any[]): number[] => tasks.map((t) => Date.parse(t.status.timestamp));
const isDescending = (ts: number[]): boolean => ts.every((t, i) => i === 0 || ts[i - 1]! >= t);

describe.each(MODES)("get on $name", (m) => {
  it("an unknown task id is TaskNotFound", async () => {
    await expectError(m, await invoke(g.url, m, "get", { id: randomUUID() }), "TASK_NOT_FOUND");
  });

  it("answers the stored task, trimmed by historyLength", async () => {
    g.stub.script(text("stored answer"));
    const sent = await sendTask(g.url, m, sendParams(m, userMessage(m, "store me")));
    const task = await getTask(g.url, m, sent.id);
    expect(task.id).toBe(sent.id);
    expect(task.contextId).toBe(sent.contextId);
    expect(stateOf(task)).toBe("completed");
    expect(task.history.map(roleOf)).toEqual(["user", "agent"]);
    expect((await getTask(g.url, m, sent.id, 0)).history ?? []).toEqual([]);
    expect((await getTask(g.url, m, sent.id, 1)).history.map(roleOf)).toEqual(["agent"]);
    expect((await getTask(g.url, m, sent.id, 5)).history).toHaveLength(2);
  });
});

describe("REST path parameters", () => {
  it("a query parameter never overrides the task id in the path", async () => {
    const m = MODES.find((x) => x.transport === "rest" && x.line === "0.3")!;
    g.stub.script(text("mine"));
    const sent = await sendTask(g.url, m, sendParams(m, userMessage(m, "path beats query")));
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    const wrong = await fetch(`${g.url}/v1/tasks/${randomUUID()}?id=${sent.id}`, { headers: auth });
    expect(wrong.status).toBe(404);
    const right = await fetch(`${g.url}/v1/tasks/${sent.id}?id=${randomUUID()}`, { headers: auth });
    expect(right.status).toBe(200);
    expect((await right.json()).id).toBe(sent.id);
  });
});

describe("0.3 JSON-RPC tasks/list (offset paging)", () => {
  const m = MODES[0]!;

  it("pages with limit/offset and reports total and hasMore", async () => {
    const { contextId, ids, other } = await seed(m);
    const first = await list(m, { contextId, limit: 2 });
    expect(first).toMatchObject({ total: 3, limit: 2, offset: 0, hasMore: true });
    expect(first.tasks).toHaveLength(2);
    const second = await list(m, { contextId, limit: 2, offset: 2 });
    expect(second).toMatchObject({ total: 3, limit: 2, offset: 2, hasMore: false });
    expect(second.tasks).toHaveLength(1);
    const seen = [...first.tasks, ...second.tasks].map((t: any) => t.id);
    expect(new Set(seen)).toEqual(new Set(ids));
    expect(seen).not.toContain(other);
    for (const t of [...first.tasks, ...second.tasks]) expect(t.contextId).toBe(contextId);
    // Newest status first.
    expect(isDescending(timestamps([...first.tasks, ...second.tasks]))).toBe(true);
    expect(seen[0]).toBe(ids[2]);

    const beyond = await list(m, { contextId, limit: 2, offset: 10 });
    expect(beyond).toMatchObject({ total: 3, hasMore: false });
    expect(beyond.tasks).toEqual([]);

    const all = await list(m, {});
    expect(all.total).toBeGreaterThanOrEqual(4);
    expect(all.limit).toBe(20);
  });

  it("filters by status, trims history and leaves artifacts out unless includeArtifacts", async () => {
    const { contextId } = await seed(m);
    expect((await list(m, { contextId, status: "completed" })).total).toBe(3);
    expect((await list(m, { contextId, status: "canceled" })).total).toBe(0);

    const withArtifacts = await list(m, { contextId, includeArtifacts: true });
    for (const t of withArtifacts.tasks) expect(t.artifacts.length).toBeGreaterThan(0);

    const noHistory = await list(m, { contextId, historyLength: 0 });
    for (const t of noHistory.tasks) expect(t.history ?? []).toEqual([]);
    const lastOnly = await list(m, { contextId, historyLength: 1 });
    for (const t of lastOnly.tasks) expect(t.history.map(roleOf)).toEqual(["agent"]);

    const plain = await list(m, { contextId });
    for (const t of plain.tasks) expect(t.artifacts, "tasks/list leaves artifacts out by default (ListTasksParams.includeArtifacts)").toBeUndefined();
    const explicitlyOff = await list(m, { contextId, includeArtifacts: false });
    for (const t of explicitlyOff.tasks) expect(t.artifacts).toBeUndefined();
  });

  it("refuses a limit out of range", async () => {
    await expectError(m, await invoke(g.url, m, "list", { limit: 0 }), "INVALID_PARAMS");
    await expectError(m, await invoke(g.url, m, "list", { limit: 101 }), "INVALID_PARAMS");
  });
});

describe.each(MODES.slice(1))("$name list (token paging)", (m) => {
  const canceled = m.line === "1.0" ? "TASK_STATE_CANCELED" : "TASK_STATE_CANCELLED";

  it("pages with pageSize/pageToken, reports totalSize, newest status first", async () => {
    const { contextId, ids, other } = await seed(m);
    const first = await list(m, { contextId, pageSize: 2 });
    expect(first.tasks).toHaveLength(2);
    expect(first.totalSize).toBe(3);
    expect(first.pageSize).toBe(2);
    expect(typeof first.nextPageToken).toBe("string");
    expect(first.nextPageToken).not.toBe("");
    const second = await list(m, { contextId, pageSize: 2, pageToken: first.nextPageToken });
    expect(second.tasks).toHaveLength(1);
    expect(second.totalSize).toBe(3);
    expect(second.nextPageToken).toBe("");
    const all = [...first.tasks, ...second.tasks];
    const seen = all.map((t: any) => t.id);
    expect(new Set(seen)).toEqual(new Set(ids));
    expect(seen).toHaveLength(3);
    expect(seen).not.toContain(other);
    expect(isDescending(timestamps(all))).toBe(true);
    expect(seen).toEqual([...ids].reverse());

    const whole = await list(m, {});
    expect(whole.totalSize).toBeGreaterThanOrEqual(4);
    expect(whole.pageSize).toBe(50);
  });

  it("filters by contextId and status; artifacts only with includeArtifacts; history by historyLength", async () => {
    const { contextId } = await seed(m);
    expect((await list(m, { contextId, status: "TASK_STATE_COMPLETED" })).totalSize).toBe(3);
    const none = await list(m, { contextId, status: canceled });
    expect(none.totalSize).toBe(0);
    expect(none.tasks).toEqual([]);
    expect(none.nextPageToken).toBe("");

    const withArtifacts = await list(m, { contextId, includeArtifacts: true });
    expect(withArtifacts.tasks).toHaveLength(3);
    for (const t of withArtifacts.tasks) expect(t.artifacts.length).toBeGreaterThan(0);

    const noHistory = await list(m, { contextId, historyLength: 0 });
    for (const t of noHistory.tasks) expect(t.history ?? []).toEqual([]);

    const plain = await list(m, { contextId });
    expect(plain.tasks).toHaveLength(3);
    for (const t of plain.tasks) {
      expect(stateOf(t)).toBe("completed");
      expect(t.artifacts, "ListTasks / GET tasks leaves artifacts out unless includeArtifacts=true").toBeUndefined();
    }
  });

  it("a page token of another query is refused", async () => {
    const { contextId } = await seed(m);
    const first = await list(m, { contextId, pageSize: 1 });
    expect(first.nextPageToken).not.toBe("");
    await expectError(m, await invoke(g.url, m, "list", { pageSize: 1, pageToken: first.nextPageToken }), "INVALID_PARAMS");
  });
});

describe.each(MODES.filter((m) => m.line === "1.0"))("$name ListTasks statusTimestampAfter", (m) => {
  it("keeps only tasks whose status changed after the instant", async () => {
    const { contextId, ids } = await seed(m);
    const oldest = await getTask(g.url, m, ids[0]!);
    const page = await list(m, { contextId, statusTimestampAfter: oldest.status.timestamp });
    expect(page.tasks.map((t: any) => t.id)).toEqual([ids[2], ids[1]]);
    expect(page.totalSize).toBe(2);
  });
});
