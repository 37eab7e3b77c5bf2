// src/runtime/admission.ts: a turn admit() grants is held from that moment, so sends that arrive while earlier ones
// are still being created (their store writes awaited) cannot all be admitted past A2A_MAX_RUNNING_TASKS.
import { describe, expect, it } from "vitest";
import { Metrics } from "../../src/observability/metrics.js";
import { Admission } from "../../src/runtime/admission.js";
import { LiveTask, newTask } from "../../src/runtime/live-task.js";

const metrics = new Metrics({ defaultMetrics: false });
const live = (owner = "alice"): LiveTask =>
  new LiveTask(newTask({ kind: "message", messageId: crypto.randomUUID(), role: "user", parts: [{ kind: "text", text: "x" }] } as never, "ctx", []), owner, {}, undefined, new Set(), false);

describe("Admission", () => {
  it("counts a granted turn before its task enters it", () => {
    const admission = new Admission({ maxRunning: 2, queueLimit: 10 }, metrics, () => false);
    expect(admission.admit()).toBe(true);
    expect(admission.admit()).toBe(true);
    // Both are still being created: a third send waits for a turn.
    expect(admission.admit()).toBe(false);
    expect(admission.status()).toMatchObject({ running: 2, queued: 0 });
  });

  it("a granted turn whose task is never created goes back, and a waiting task takes it", async () => {
    const admission = new Admission({ maxRunning: 1, queueLimit: 10 }, metrics, () => false);
    expect(admission.admit()).toBe(true);
    const waiting = live();
    let started = false;
    admission.enter(waiting, () => ((started = true), new Promise<void>(() => {})), admission.admit());
    expect(admission.status()).toMatchObject({ running: 1, queued: 1 });
    admission.release();
    await new Promise((r) => queueMicrotask(() => r(undefined)));
    expect(started).toBe(true);
    expect(admission.status()).toMatchObject({ running: 1, queued: 0 });
  });

  it("a granted turn that is entered is counted once, as the running task", () => {
    const admission = new Admission({ maxRunning: 1, queueLimit: 10 }, metrics, () => false);
    const task = live();
    admission.enter(task, () => new Promise<void>(() => {}), admission.admit());
    expect(admission.status()).toMatchObject({ running: 1, queued: 0 });
    expect(admission.admit()).toBe(false);
  });
});
