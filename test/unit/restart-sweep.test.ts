// The restart sweep runs in the background (src/runtime/restart.ts sweepInBackground) and every method waits for it
// (src/operations/index.ts gateMethods), after which the registry holds its original handlers again: the gateway
// answers its card at once, and no call sees a task a previous process left running.
import { describe, expect, it } from "vitest";
import { gateMethods, type MethodHandler } from "../../src/operations/index.js";
import { failOrphans, sweepInBackground } from "../../src/runtime/restart.js";
import type { Task } from "../../src/protocol/model.js";
import type { SaveResult, TaskStore } from "../../src/storage/tasks.js";
import type { Call } from "../../src/operations/call.js";

function deferred(): { promise: Promise<number>; resolve: (n: number) => void; reject: (e: Error) => void } {
  let resolve!: (n: number) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<number>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}
const flush = () => new Promise((r) => setImmediate(r));

describe("the restart sweep in the background", () => {
  it("returns at once, holds every method until it ends, then lets calls through directly; later sweeps are awaited after it", async () => {
    const runs: { scope: unknown; done: ReturnType<typeof deferred> }[] = [];
    const errors: unknown[] = [];
    const { sweep, pending } = sweepInBackground(
      (scope) => {
        const done = deferred();
        runs.push({ scope, done });
        return done.promise;
      },
      { error: (obj: unknown) => void errors.push(obj) },
    );
    expect(pending()).toBeUndefined();
    await sweep({ stale: "me" }); // the cluster's start: returns while the sweep runs
    expect(runs).toHaveLength(1);
    expect(runs[0]!.scope).toEqual({ stale: "me" });

    const seen: string[] = [];
    const registry = new Map<string, MethodHandler>([["GetTask", async (params) => void seen.push(String(params.id))]]);
    gateMethods(registry, pending);
    const held = registry.get("GetTask")!({ id: "t1" }, {} as Call);
    // A lease renewal during the first sweep waits for it.
    const renewal = sweep({});
    await flush();
    expect(seen).toEqual([]);
    expect(runs).toHaveLength(1);

    runs[0]!.done.resolve(3);
    await held;
    expect(seen).toEqual(["t1"]);
    expect(pending()).toBeUndefined();
    await flush();
    expect(runs).toHaveLength(2);
    runs[1]!.done.resolve(0);
    await renewal;
    await registry.get("GetTask")!({ id: "t2" }, {} as Call);
    expect(seen).toEqual(["t1", "t2"]);
    expect(errors).toEqual([]);
  });

  it("a failed first sweep is logged and releases the held calls", async () => {
    const errors: { err: string }[] = [];
    const done = deferred();
    const { sweep, pending } = sweepInBackground(() => done.promise, { error: (obj: { err: string }) => void errors.push(obj) });
    await sweep(undefined);
    const registry = new Map<string, MethodHandler>([["ListTasks", async () => "page"]]);
    gateMethods(registry, pending);
    const held = registry.get("ListTasks")!({}, {} as Call);
    done.reject(new Error("disk full"));
    await expect(held).resolves.toBe("page");
    expect(errors).toEqual([{ err: "disk full" }]);
    expect(pending()).toBeUndefined();
  });

  it("puts the original handlers back once the first sweep ends, fulfilled or failed; calls made during it wait, then run", async () => {
    for (const outcome of ["fulfilled", "rejected"] as const) {
      const done = deferred();
      const { sweep, pending } = sweepInBackground(() => done.promise, { error: () => undefined });
      await sweep(undefined);
      const seen: string[] = [];
      const getTask: MethodHandler = async (params) => (seen.push(`get ${String(params.id)}`), "task");
      const listTasks: MethodHandler = async () => (seen.push("list"), "page");
      const registry = new Map<string, MethodHandler>([
        ["GetTask", getTask],
        ["ListTasks", listTasks],
      ]);
      gateMethods(registry, pending);
      expect(registry.get("GetTask")).not.toBe(getTask);
      const held = [registry.get("GetTask")!({ id: "t1" }, {} as Call), registry.get("ListTasks")!({}, {} as Call)];
      await flush();
      expect(seen).toEqual([]);
      if (outcome === "fulfilled") done.resolve(2);
      else done.reject(new Error("disk full"));
      expect(await Promise.all(held)).toEqual(["task", "page"]);
      expect(seen).toEqual(["get t1", "list"]);
      expect(registry.get("GetTask")).toBe(getTask);
      expect(registry.get("ListTasks")).toBe(listTasks);
    }
  });

  it("gates nothing when no sweep is running, and leaves a handler replaced meanwhile alone", async () => {
    const original: MethodHandler = async () => "original";
    const idle = new Map<string, MethodHandler>([["GetTask", original]]);
    gateMethods(idle, () => undefined);
    expect(idle.get("GetTask")).toBe(original);

    const done = deferred();
    const { sweep, pending } = sweepInBackground(() => done.promise, { error: () => undefined });
    await sweep(undefined);
    const registry = new Map<string, MethodHandler>([["GetTask", original]]);
    gateMethods(registry, pending);
    const replacement: MethodHandler = async () => "replacement";
    registry.set("GetTask", replacement);
    done.resolve(0);
    await flush();
    expect(registry.get("GetTask")).toBe(replacement);
  });

  it("failOrphans lets the event loop run between two saves (SQLite answers without yielding)", async () => {
    const orphans = [1, 2, 3].map((i) => ({ kind: "task", id: `t${i}`, contextId: "c", status: { state: "working", timestamp: "2026-01-01T00:00:00.000Z" } }) as unknown as Task);
    let served = false;
    const store = { orphans: async () => (served ? [] : ((served = true), orphans)) } as unknown as TaskStore;
    let ticked = false;
    setImmediate(() => (ticked = true));
    const seen: { id: string; state: string; ticked: boolean }[] = [];
    const failed = await failOrphans(store, async (task) => (seen.push({ id: task.id, state: task.status.state, ticked }), { applied: true } as SaveResult), { warn: () => undefined });
    expect(failed).toBe(3);
    expect(seen).toEqual([
      { id: "t1", state: "failed", ticked: false },
      { id: "t2", state: "failed", ticked: true },
      { id: "t3", state: "failed", ticked: true },
    ]);
  });
});
