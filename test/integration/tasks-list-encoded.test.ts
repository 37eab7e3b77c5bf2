// Listing pages from rows kept parsed (src/storage/listed-rows.ts) and tasks encoded once (src/protocol/encoded.ts):
// a task listed again unchanged is answered with the bytes written the first time, spliced into the page. These
// tests pin that the bytes are exact: the page is the text JSON.stringify writes, a row changed by another
// connection to the same database (another gateway or process) is shown changed at the very next listing, and each
// dialect, transport, history length, artifacts choice and result scope gets its own bytes.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { EncodedJson } from "../../src/protocol/encoded.js";
import { openStorage, type Storage } from "../../src/storage/index.js";
import type { Task } from "../../src/protocol/model.js";
import { gatewayTask } from "../../tools/bench/sdk-server.js";
import { withoutResultScopes } from "../support/contract.js";
import { call, rpc, TEST_TOKEN } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

type Obj = Record<string, any>;
const LIMITED = "listed-noread-secret-0123456789";
const CREDS = [withoutResultScopes("listed-noread", LIMITED)];

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-listed-"));
const url = `sqlite:///${path.join(dir, "a2a.db")}`;
let g: TaskGateway;
/** The gateway's store, and a second connection to the same file: "another process". */
let storage: Storage;
let other: Storage;
beforeAll(async () => {
  storage = await openStorage({ backend: "sqlite", url });
  other = await openStorage({ backend: "sqlite", url });
  g = await startTaskGateway({ A2A_CREDENTIALS: JSON.stringify(CREDS) }, {}, { storage });
});
afterAll(async () => {
  await g?.close();
  await storage?.close();
  await other?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

let seq = 5000;
/** `n` completed tasks of one new context, owned by `owner` (the admin token sees every principal's tasks). */
async function context(n: number, owner = "listed-noread"): Promise<{ contextId: string; tasks: Task[] }> {
  const contextId = `listed-ctx-${++seq}`;
  const tasks: Task[] = [];
  for (let i = 0; i < n; i++) {
    const task: Task = { ...gatewayTask(++seq, new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString()), contextId };
    await storage.tasks.create(task, owner);
    tasks.push(task);
  }
  return { contextId, tasks };
}

/** The raw text of a JSON-RPC listing answer. */
async function listRaw(line: "0.3" | "1.0", params: Obj, rpcId: number | string = 1, token = TEST_TOKEN): Promise<string> {
  const method = line === "1.0" ? "ListTasks" : "tasks/list";
  const res = await rpc(g.url, { jsonrpc: "2.0", id: rpcId, method, params }, { "A2A-Version": line, authorization: `Bearer ${token}` });
  expect(res.status).toBe(200);
  return res.text;
}
const result = (text: string): Obj => JSON.parse(text).result;

describe("listing pages from rows kept parsed and tasks encoded once", () => {
  it("a repeated listing answers the same bytes, the text JSON.stringify writes, under each request's own id", async () => {
    const { contextId, tasks } = await context(3);
    // First listing: parsed only; second: kept and encoded; third and fourth: the kept bytes.
    const [first, second, third, fourth] = [
      await listRaw("1.0", { contextId, pageSize: 10 }, 1),
      await listRaw("1.0", { contextId, pageSize: 10 }, 2),
      await listRaw("1.0", { contextId, pageSize: 10 }, "third-id"),
      await listRaw("1.0", { contextId, pageSize: 10 }, null as unknown as number),
    ];
    expect(result(first).tasks.map((t: Obj) => t.id).sort()).toEqual(tasks.map((t) => t.id).sort());
    expect(result(first).totalSize).toBe(3);
    expect(JSON.parse(third).id).toBe("third-id");
    expect(JSON.parse(fourth).id).toBeNull();
    const body = (text: string) => text.slice(text.indexOf('"result":'));
    for (const later of [second, third, fourth]) expect(body(later)).toBe(body(first));
    expect(third).toBe(JSON.stringify({ jsonrpc: "2.0", id: "third-id", result: result(first) }));
    // The 0.3 line's page (offset paging: total, limit, offset, hasMore) is spliced the same way.
    const v03 = await listRaw("0.3", { contextId, limit: 2 });
    expect(v03).toBe(JSON.stringify({ jsonrpc: "2.0", id: 1, result: result(v03) }));
    expect(result(v03)).toMatchObject({ total: 3, limit: 2, offset: 0, hasMore: true });
    expect(result(v03).tasks).toHaveLength(2);
  });

  it("a JSON-RPC batch splices the kept bytes too: the same bytes as each call alone, no kept task parsed back", async () => {
    const { contextId, tasks } = await context(3);
    const listing = { method: "ListTasks", params: { contextId, pageSize: 10 } };
    const getting = { method: "GetTask", params: { id: tasks[0]!.id } };
    // Alone, twice each: the rows are kept and the answers encoded.
    const alone = [await listRaw("1.0", listing.params, 1), await listRaw("1.0", listing.params, 1)];
    const get = async () => (await rpc(g.url, { jsonrpc: "2.0", id: 2, ...getting }, { "A2A-Version": "1.0", authorization: `Bearer ${TEST_TOKEN}` })).text;
    const gotAlone = [await get(), await get()];
    const values = vi.spyOn(EncodedJson.prototype, "value", "get");
    try {
      const batch = [
        { jsonrpc: "2.0", id: 1, ...listing },
        { jsonrpc: "2.0", id: 2, ...getting },
        { jsonrpc: "2.0", id: "three", ...listing },
      ];
      const res = await rpc(g.url, batch, { "A2A-Version": "1.0", authorization: `Bearer ${TEST_TOKEN}` });
      expect(res.status).toBe(200);
      const answers = JSON.parse(res.text) as Obj[];
      expect(answers.map((a) => a.id)).toEqual([1, 2, "three"]);
      expect(res.text).toBe(`[${alone[1]},${gotAlone[1]},${alone[1]!.replace('"id":1,', '"id":"three",')}]`);
      expect(answers[0]!.result.tasks.map((t: Obj) => t.id).sort()).toEqual(tasks.map((t) => t.id).sort());
      // Read once per call, for the audit record, on the page or answer (which keeps its value: no parse); never on a
      // kept task's text, which a JSON.stringify of the batch would parse back through toJSON.
      const results = answers.map((a) => JSON.stringify(a.result));
      expect(values.mock.contexts.map((c) => results.includes((c as EncodedJson).text))).toEqual([true, true, true]);
    } finally {
      values.mockRestore();
    }
  });

  it("a row another connection changed is listed changed at once", async () => {
    const { contextId, tasks } = await context(2);
    const listed = async () => new Map<string, Obj>(result(await listRaw("1.0", { contextId, pageSize: 10 })).tasks.map((t: Obj) => [t.id, t]));
    await listed();
    await listed(); // kept from this second listing on
    const base = tasks[0]!;
    const working: Task = { ...base, status: { ...base.status, state: "working" }, metadata: { ...(base.metadata ?? {}), round: 0 } };
    // A task that is already terminal keeps its state: a fresh working row is made by the other connection, listed,
    // then changed there twice; no invalidation reaches this gateway's store.
    const fresh: Task = { ...working, id: `${base.id.slice(0, -4)}beef` };
    await other.tasks.create(fresh, "listed-noread");
    expect((await listed()).get(fresh.id)!.status.state).toBe("TASK_STATE_WORKING");
    for (const [round, state] of (["input-required", "completed"] as const).entries()) {
      const changed: Task = { ...fresh, metadata: { ...(fresh.metadata ?? {}), round: round + 1 }, status: { ...fresh.status, state } };
      expect(await other.tasks.save(changed)).toEqual({ applied: true });
      const seen = (await listed()).get(fresh.id)!;
      expect(seen.metadata.round).toBe(round + 1);
      expect(seen.status.state).toBe(state === "completed" ? "TASK_STATE_COMPLETED" : "TASK_STATE_INPUT_REQUIRED");
    }
    expect((await listed()).size).toBe(3);
  });

  it("each line, transport, history length and artifacts choice gets its own bytes", async () => {
    const { contextId } = await context(2);
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    const passes: unknown[] = [];
    for (let pass = 0; pass < 3; pass++) {
      // Three times: the rows are kept at the second pass and answered from their kept encodings at the third; every
      // pass must equal the first.
      const plain = result(await listRaw("1.0", { contextId })).tasks as Obj[];
      const withArtifacts = result(await listRaw("1.0", { contextId, includeArtifacts: true })).tasks as Obj[];
      const h1 = result(await listRaw("1.0", { contextId, historyLength: 1 })).tasks as Obj[];
      const h0 = result(await listRaw("1.0", { contextId, historyLength: 0 })).tasks as Obj[];
      const v03 = result(await listRaw("0.3", { contextId })).tasks as Obj[];
      const rest10 = (await call(g.url, `/tasks?contextId=${contextId}&includeArtifacts=true`, { headers: { ...auth, "A2A-Version": "1.0" } })).body as Obj;
      expect(plain).toHaveLength(2);
      for (const t of plain) expect(t.artifacts).toBeUndefined();
      for (const t of withArtifacts) expect(t.artifacts.length).toBeGreaterThan(0);
      for (const t of plain) expect(t.history).toHaveLength(2);
      for (const t of h1) expect(t.history).toHaveLength(1);
      for (const t of h0) expect(t.history ?? []).toHaveLength(0);
      for (const t of v03) expect(t.kind).toBe("task");
      for (const t of plain) expect(t.kind).toBeUndefined();
      expect(rest10.tasks).toEqual(withArtifacts);
      passes.push({ plain, withArtifacts, h1, h0, v03, rest10 });
    }
    expect(passes[1]).toEqual(passes[0]);
    expect(passes[2]).toEqual(passes[0]);
  });

  it("a caller without the result scopes never gets the bytes encoded for one with them", async () => {
    const { contextId } = await context(2);
    // Listed twice with the result scopes: the rows are kept and their encoding for such a caller is held.
    await listRaw("1.0", { contextId, includeArtifacts: true });
    const full = result(await listRaw("1.0", { contextId, includeArtifacts: true })).tasks as Obj[];
    expect(full.every((t) => t.artifacts.length > 0)).toBe(true);
    for (let pass = 0; pass < 2; pass++) {
      const limited = result(await listRaw("1.0", { contextId, includeArtifacts: true }, 2, LIMITED)).tasks as Obj[];
      expect(limited.map((t) => t.id)).toEqual(full.map((t) => t.id));
      for (const t of limited) expect(t.artifacts).toBeUndefined();
    }
    expect(result(await listRaw("1.0", { contextId, includeArtifacts: true })).tasks).toEqual(full);
  });
});
