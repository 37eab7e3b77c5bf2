import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { freshDatabase, postgresUrl } from "../support/postgres.js";
import { hang, text } from "../../tools/upstream/script.js";
import { expectError, expectOk, getTask, invoke, Mode, MODES, partsOf, roleOf, sendParams, sendTask, stateOf, textOf, until, userMessage } from "../support/task-wire.js";

// ---- durability: the SQLite file and the PostgreSQL database keep tasks across a gateway restart -----------------

interface Before {
  mode: Mode;
  task: any;
}

/** Each durable store: the gateway's environment for it, and how to remove it afterwards. */
const STORES: [string, () => Promise<{ env: Record<string, string>; remove(): Promise<void> }>][] = [
  [
    "SQLite file",
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tasks-durability-"));
      return {
        env: { A2A_TASK_STORE_BACKEND: "database", A2A_TASK_STORE_DATABASE_URL: `sqlite:///${dir}/a.db` },
        remove: async () => fs.rmSync(dir, { recursive: true, force: true }),
      };
    },
  ],
];
if (postgresUrl !== undefined) {
  STORES.push([
    "PostgreSQL database",
    async () => {
      const database = await freshDatabase();
      return { env: { A2A_TASK_STORE_BACKEND: "database", A2A_TASK_STORE_DATABASE_URL: database.url }, remove: database.drop };
    },
  ]);
}

describe.sequential.each(STORES)("restart on the same %s", (name, makeStore) => {
  let store: Awaited<ReturnType<typeof makeStore>>;
  let env: Record<string, string>;
  let first: TaskGateway | undefined;
  let second: TaskGateway | undefined;
  const finished: Before[] = [];
  let orphan: { mode: Mode; id: string } | undefined;
  beforeAll(async () => {
    store = await makeStore();
    env = store.env;
    first = await startTaskGateway(env);
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await store?.remove();
  });

  it("before the restart: one completed task per line and transport, and one still running", async () => {
    const g = first!;
    for (const m of MODES) {
      g.stub.script(text([`durable `, `answer (${m.name})`], { usage: { prompt_tokens: 3, completion_tokens: 2 } }));
      const task = await sendTask(g.url, m, sendParams(m, userMessage(m, `remember me (${m.name})`)));
      expect(stateOf(task)).toBe("completed");
      finished.push({ mode: m, task });
    }
    const m = MODES[0]!;
    g.stub.script(hang({ chunks: ["half way"] }));
    const running = await sendTask(g.url, m, sendParams(m, userMessage(m, "never finishes"), { blocking: false }));
    await until("the running turn to reach OpenCode", () => g.stub.requests.filter((r) => r.method === "POST" && r.path.endsWith("/prompt_async")).length === MODES.length + 1);
    await until("the first chunk of the running turn", async () => {
      const t = await getTask(g.url, m, running.id);
      return t.artifacts?.some((a: any) => a.artifactId === `${running.id}:text`) ? t : undefined;
    });
    orphan = { mode: m, id: running.id };
    await g.close();
    first = undefined;
    // Let anything the closed gateway still had in flight settle (it must not throw after close).
    await new Promise((r) => setTimeout(r, 200));
  });

  it("after the restart GetTask answers every task on both lines, unchanged", async () => {
    second = await startTaskGateway(env);
    const g = second;
    expect(finished).toHaveLength(MODES.length);
    for (const { mode, task } of finished) {
      for (const reader of [mode, MODES[0]!, MODES[2]!]) {
        const stored = await getTask(g.url, reader, task.id);
        expect(stored.id).toBe(task.id);
        expect(stored.contextId).toBe(task.contextId);
        expect(stateOf(stored)).toBe("completed");
        expect(stored.status.timestamp).toBe(task.status.timestamp);
        expect(textOf(stored.artifacts.find((a: any) => a.artifactId === `${task.id}:text`).parts)).toBe(`durable answer (${mode.name})`);
        expect(stored.history.map(roleOf)).toEqual(["user", "agent"]);
        expect(textOf(partsOf(stored.history[0]))).toBe(`remember me (${mode.name})`);
        expect(stored.metadata.shared.session.id).toBe(task.metadata.shared.session.id);
        expect(stored.metadata.shared.usage).toMatchObject({ input_tokens: 3, output_tokens: 2, total_tokens: 5 });
      }
    }
  });

  it("a task that was running when the gateway stopped is failed, saying why", async () => {
    const g = second!;
    expect(orphan).toBeDefined();
    const stored = await getTask(g.url, orphan!.mode, orphan!.id);
    expect(stateOf(stored)).toBe("failed");
    expect(JSON.stringify(stored.metadata)).toMatch(/GATEWAY_RESTARTED/);
    expect(textOf(partsOf(stored.status.message))).toMatch(/restarted/);
    await expectError(orphan!.mode, await invoke(g.url, orphan!.mode, "cancel", { id: orphan!.id }), "TASK_NOT_CANCELABLE");
  });

  it("the restarted gateway lists the stored tasks", async () => {
    const g = second!;
    const ids = finished.map((f) => f.task.id);
    const m03 = MODES[0]!;
    const page03 = await expectOk(m03, await invoke(g.url, m03, "list", { limit: 100 }), "list");
    expect(page03.total).toBe(MODES.length + 1);
    for (const id of ids) expect(page03.tasks.map((t: any) => t.id)).toContain(id);
    const m10 = MODES[2]!;
    const page10 = await expectOk(m10, await invoke(g.url, m10, "list", { contextId: finished[3]!.task.contextId }), "list");
    expect(page10.tasks.map((t: any) => t.id)).toEqual([finished[3]!.task.id]);
  });

  it("a follow-up in a pre-restart context runs again, on a fresh session when the old one is gone upstream", async () => {
    const g = second!;
    const { mode: m, task } = finished[0]!;
    g.stub.script(text("welcome back"));
    const started = Date.now();
    const next = await sendTask(g.url, m, sendParams(m, userMessage(m, "are you still there?", { contextId: task.contextId })));
    expect(Date.now() - started).toBeLessThan(3000);
    expect(next.contextId).toBe(task.contextId);
    expect(stateOf(next), JSON.stringify(next.metadata)).toBe("completed");
    expect(textOf(next.artifacts.find((a: any) => a.artifactId === `${next.id}:text`).parts)).toBe("welcome back");
    expect(next.metadata.shared.session.id).not.toBe(task.metadata.shared.session.id);
  });

  it.runIf(name === "PostgreSQL database")("several gateways share a database: a second one starts while the first runs and serves its tasks", async () => {
    const other = await startTaskGateway(env);
    try {
      const m = MODES[2]!;
      second!.stub.script(text("from the first gateway"));
      const task = await sendTask(second!.url, m, sendParams(m, userMessage(m, "shared store")));
      expect(stateOf(task)).toBe("completed");
      const read = await getTask(other.url, m, task.id);
      expect(read.id).toBe(task.id);
      expect(stateOf(read)).toBe("completed");
    } finally {
      await other.close();
    }
  });
});
