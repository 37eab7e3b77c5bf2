import { describe, expect, it } from "vitest";
import { Metrics } from "../../src/observability/metrics.js";
import type { StreamEvent, Task } from "../../src/protocol/model.js";
import type { Admission } from "../../src/runtime/admission.js";
import { TaskLifecycle } from "../../src/runtime/lifecycle.js";
import { LiveTask, newTask } from "../../src/runtime/live-task.js";
import { StoreHealth } from "../../src/storage/health.js";
import type { TaskStore } from "../../src/storage/tasks.js";

// ---- a terminal state reaches the store before the event that tells the streams (and blocking sends) about it ------

/** A store whose saves wait until the test lets them through (or refuses them). */
function heldStore() {
  const saved: string[] = [];
  const pending: { task: Task; done: (ok: boolean) => void }[] = [];
  const store = {
    save: (task: Task) =>
      new Promise((resolve, reject) => {
        pending.push({
          task,
          done: (ok) => {
            if (!ok) return reject(new Error("store refused"));
            saved.push(task.status.state);
            resolve({ applied: true });
          },
        });
      }),
  } as unknown as TaskStore;
  return { store, saved, pending };
}

function setup() {
  const held = heldStore();
  const ended: LiveTask[] = [];
  const lifecycle = new TaskLifecycle({
    store: held.store,
    health: new StoreHealth(),
    transitions: undefined,
    metrics: new Metrics(),
    log: { warn: () => undefined, error: () => undefined },
    admission: { ended: (live: LiveTask) => ended.push(live) } as unknown as Admission,
    abortUpstream: async () => "not_attempted" as never,
  });
  const message = { kind: "message" as const, messageId: "m1", role: "user" as const, parts: [{ kind: "text" as const, text: "hi" }] };
  const live = new LiveTask(newTask(message, "ctx-1", ["text/plain"]), "alice", {});
  const events: StreamEvent[] = [];
  const queue = live.fanout.subscribe();
  const drained = (async () => {
    for await (const event of queue) events.push(event);
  })();
  return { ...held, lifecycle, live, events, drained, ended };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("TaskLifecycle: the final event follows the final write", () => {
  it("a finished task's final status event and its settled waiters come only once its final state is stored", async () => {
    const s = setup();
    let settled = false;
    void s.live.settled().then(() => (settled = true));
    s.lifecycle.finish(s.live, "completed", undefined, {});
    expect(s.live.state).toBe("completed");
    expect(s.ended).toHaveLength(1); // the turn slot is given back at once
    await tick();
    expect(s.pending).toHaveLength(1);
    expect(s.events).toHaveLength(0);
    expect(settled).toBe(false);
    s.pending[0]!.done(true);
    await s.drained;
    expect(s.saved).toEqual(["completed"]);
    expect(s.events.map((e) => (e.kind === "status-update" ? [e.status.state, e.final] : e.kind))).toEqual([["completed", true]]);
    expect(settled).toBe(true);
  });

  it("waits for the writes queued before the final one, in order", async () => {
    const s = setup();
    s.lifecycle.changed(s.live);
    s.lifecycle.finish(s.live, "failed", "broke", {});
    await tick();
    s.pending[0]!.done(true);
    await tick();
    expect(s.events).toHaveLength(0);
    s.pending[1]!.done(true);
    await s.drained;
    expect(s.saved).toEqual(["working", "failed"]);
    expect(s.events).toHaveLength(1);
  });

  it("a final state the store refuses is still told to the streams (and retried in the store later)", async () => {
    const s = setup();
    s.lifecycle.finish(s.live, "canceled", undefined, {});
    await tick();
    s.pending[0]!.done(false);
    await s.drained;
    expect(s.saved).toEqual([]);
    expect(s.events).toHaveLength(1);
    s.lifecycle.stop();
  });
});
