// GetTask answers encoded once (src/protocol/encoded.ts): a repeated read of an unchanged stored task is answered
// with the bytes written the first time, spliced into each request's JSON-RPC envelope. These tests pin that the
// bytes are exact: a saved change is never answered from the previous snapshot's bytes, each dialect, history length
// and result scope gets its own, and every request carries its own id.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CredentialRegistry } from "../../src/auth/credentials.js";
import { openStorage, type Storage } from "../../src/storage/index.js";
import type { Task } from "../../src/protocol/model.js";
import { gatewayTask } from "../../tools/bench/sdk-server.js";
import { catalog, withoutResultScopes } from "../support/contract.js";
import { call, rpc, TEST_TOKEN } from "../support/gateway.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

type Obj = Record<string, any>;
const LIMITED = "encoded-noread-secret-0123456789";
const CREDS = [withoutResultScopes("encoded-noread", LIMITED)];

let g: TaskGateway;
let storage: Storage;
let owner: string;
beforeAll(async () => {
  storage = await openStorage({ backend: "memory" });
  const env = { A2A_CREDENTIALS: JSON.stringify(CREDS) };
  g = await startTaskGateway(env, {}, { storage });
  owner = new CredentialRegistry({ bearerToken: TEST_TOKEN }, { access: catalog.access_control }).resolve({ authorization: `Bearer ${TEST_TOKEN}` })!.id;
});
afterAll(async () => {
  await g?.close();
  await storage?.close();
});

let seq = 1000;
async function stored(taskOwner = owner): Promise<Task> {
  const task = gatewayTask(++seq, new Date().toISOString());
  await storage.tasks.create(task, taskOwner);
  return task;
}

/** The raw text of a JSON-RPC GetTask answer. */
async function getRaw(line: "0.3" | "1.0", id: string, rpcId: number | string, params: Obj = {}, token = TEST_TOKEN): Promise<string> {
  const method = line === "1.0" ? "GetTask" : "tasks/get";
  const res = await rpc(g.url, { jsonrpc: "2.0", id: rpcId, method, params: { id, ...params } }, { "A2A-Version": line, authorization: `Bearer ${token}` });
  expect(res.status).toBe(200);
  return res.text;
}

describe("GetTask answers encoded once", () => {
  it("a repeated read answers the same bytes under each request's own id", async () => {
    const task = await stored();
    const first = await getRaw("1.0", task.id, 1);
    const second = await getRaw("1.0", task.id, "second-id");
    const third = await getRaw("1.0", task.id, null as unknown as number);
    expect(JSON.parse(first)).toMatchObject({ jsonrpc: "2.0", id: 1, result: { id: task.id } });
    expect(JSON.parse(second).id).toBe("second-id");
    expect(JSON.parse(third).id).toBeNull();
    const result = (text: string) => text.slice(text.indexOf('"result":'));
    expect(result(second)).toBe(result(first));
    expect(result(third)).toBe(result(first));
    // The spliced envelope is the envelope JSON.stringify writes.
    expect(second).toBe(JSON.stringify({ jsonrpc: "2.0", id: "second-id", result: JSON.parse(first).result }));
  });

  it("a saved change is answered at once, never from the previous bytes", async () => {
    const base = gatewayTask(++seq, new Date().toISOString());
    const task: Task = { ...base, status: { ...base.status, state: "working" } };
    await storage.tasks.create(task, owner);
    expect(JSON.parse(await getRaw("1.0", task.id, 2)).result.status.state).toBe("TASK_STATE_WORKING");
    await getRaw("1.0", task.id, 3); // answered from the cache
    // The store keeps a terminal state (first terminal wins): the changes go through non-terminal states, then end.
    const states = ["input-required", "working", "input-required", "completed"] as const;
    const wire = { "input-required": "TASK_STATE_INPUT_REQUIRED", working: "TASK_STATE_WORKING", completed: "TASK_STATE_COMPLETED" };
    for (const [round, state] of states.entries()) {
      const changed: Task = { ...task, metadata: { ...(task.metadata ?? {}), round }, status: { ...task.status, state } };
      expect(await storage.tasks.save(changed)).toEqual({ applied: true });
      for (const rpcId of [10 + round, 20 + round]) {
        const after = JSON.parse(await getRaw("1.0", task.id, rpcId)).result;
        expect(after.metadata.round).toBe(round);
        expect(after.status.state).toBe(wire[state]);
      }
      // The 0.3 line sees the same change.
      expect(JSON.parse(await getRaw("0.3", task.id, 30 + round)).result.status.state).toBe(state);
    }
  });

  it("each line, transport and history length gets its own bytes", async () => {
    const task = await stored();
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    for (let pass = 0; pass < 2; pass++) {
      // Twice: the second pass is answered from the cache and must equal the first.
      const v10 = JSON.parse(await getRaw("1.0", task.id, 1)).result;
      const v03 = JSON.parse(await getRaw("0.3", task.id, 1)).result;
      const h1 = JSON.parse(await getRaw("1.0", task.id, 1, { historyLength: 1 })).result;
      const h0 = JSON.parse(await getRaw("1.0", task.id, 1, { historyLength: 0 })).result;
      const h1v03 = JSON.parse(await getRaw("0.3", task.id, 1, { historyLength: 1 })).result;
      const rest03 = (await call(g.url, `/v1/tasks/${task.id}?historyLength=1`, { headers: { ...auth, "A2A-Version": "0.3" } })).body as Obj;
      const rest10 = (await call(g.url, `/tasks/${task.id}`, { headers: { ...auth, "A2A-Version": "1.0" } })).body as Obj;
      expect(v10.history).toHaveLength(2);
      expect(v10.status.state).toBe("TASK_STATE_COMPLETED");
      expect(v03.kind).toBe("task");
      expect(v03.status.state).toBe("completed");
      expect(h1.history).toHaveLength(1);
      expect(h0.history ?? []).toHaveLength(0);
      expect(h1v03.history).toHaveLength(1);
      expect(h1v03.kind).toBe("task");
      // 0.3 HTTP+JSON is its own dialect (proto names, no `kind`); 1.0 HTTP+JSON is the 1.0 JSON-RPC result.
      expect(rest03.kind).toBeUndefined();
      expect(rest03.history).toHaveLength(1);
      expect(rest10).toEqual(v10);
    }
  });

  it("a caller without the result scopes never gets the bytes cached for one with them", async () => {
    const task = await stored("encoded-noread"); // the admin token sees every principal's tasks
    const full = JSON.parse(await getRaw("1.0", task.id, 1)).result;
    expect(full.artifacts.length).toBeGreaterThan(0);
    for (let pass = 0; pass < 2; pass++) {
      const limited = JSON.parse(await getRaw("1.0", task.id, 2, {}, LIMITED)).result;
      expect(limited.id).toBe(task.id);
      expect(limited.artifacts).toBeUndefined();
    }
    expect(JSON.parse(await getRaw("1.0", task.id, 3)).result).toEqual(full);
  });
});
