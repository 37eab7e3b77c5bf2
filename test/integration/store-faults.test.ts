import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStorage } from "../../src/storage/index.js";
import { text } from "../../tools/upstream/script.js";
import { call } from "../support/gateway.js";
import { storeFault, type StoreFault } from "../support/faults.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";
import { getTask, MODES, partsOf, sendParams, sendTask, stateOf, textOf, until, userMessage } from "../support/task-wire.js";

// ---- a store that stops taking writes in the middle of a turn: the process lives, the task fails with a typed
// reason, /health says degraded, and everything recovers once the store takes writes again ------------------------

const m = MODES[0]!;
/** About 48 KB of streamed text over ~2.4 s: the once-a-second progress save needs new pages. */
const longTurn = () => text(Array.from({ length: 40 }, (_, i) => `chunk ${i} ${"x".repeat(1200)}\n`), { delayMs: 60 });

describe.each(["sqlite", "memory"] as const)("store faults on the %s backend", (backend) => {
  let dir: string;
  let g: TaskGateway;
  let fault: StoreFault;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-store-fault-"));
    const storage = await openStorage(backend === "sqlite" ? { backend, url: `sqlite:///${path.join(dir, "tasks.db")}` } : { backend });
    fault = storeFault(storage);
    g = await startTaskGateway({}, {}, { storage: fault.storage });
  });
  afterAll(async () => {
    await g?.close();
    fault?.storage.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const health = async () => call(g.url, "/health");

  it("a running task whose progress the store refuses fails with TASK_STORE_UNAVAILABLE; its blocking client gets that answer", async () => {
    g.stub.script(longTurn());
    const blocking = sendTask(g.url, m, sendParams(m, userMessage(m, "long answer please")));
    await until("turn started", () => (g.stub.requests.some((r) => r.path.endsWith("/prompt_async")) ? true : undefined));
    fault.fill();
    const task = await blocking;
    expect(stateOf(task)).toBe("failed");
    expect(task.metadata.opencode.error.type).toBe("TASK_STORE_UNAVAILABLE");
    expect(textOf(partsOf(task.status.message))).toMatch(/Task store unavailable/);

    const degraded = await health();
    expect(degraded.status).toBe(503);
    expect(degraded.body.status).toBe("degraded");
    expect(degraded.body.store).toMatchObject({ state: "degraded" });
    expect(degraded.body.store.error).toMatch(/SQLITE_FULL/);

    // A new task that needs space cannot be created meanwhile: a typed error, nothing prompted, nothing half-written.
    const prompted = g.stub.requests.filter((r) => r.path.endsWith("/prompt_async")).length;
    const refused = await call(g.url, "/", {
      method: "POST",
      body: { jsonrpc: "2.0", id: 9, method: "message/send", params: sendParams(m, userMessage(m, `while full ${"y".repeat(30_000)}`)) },
    });
    expect(refused.body.error?.data?.type, JSON.stringify(refused.body).slice(0, 300)).toBe("TASK_STORE_UNAVAILABLE");
    expect(g.stub.requests.filter((r) => r.path.endsWith("/prompt_async")).length).toBe(prompted);

    fault.free();
    // The refused final state reaches the store by itself, and /health is ok again.
    await until("health ok", async () => ((await health()).status === 200 ? true : undefined), 15_000, 100);
    const stored = await fault.storage.tasks.get(task.id);
    expect(stored?.task.status.state).toBe("failed");
    expect((stored?.task.metadata?.opencode as any).error.type).toBe("TASK_STORE_UNAVAILABLE");

    // Later tasks are fine.
    g.stub.script(text("all good"));
    const after = await sendTask(g.url, m, sendParams(m, userMessage(m, "after recovery")));
    expect(stateOf(after)).toBe("completed");
    expect(stateOf(await getTask(g.url, m, after.id))).toBe("completed");
  }, 30_000);
});
