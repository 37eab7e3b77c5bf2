// The audit recorder: batching (timer and maxBuffer), one transaction per flush, batches written in order one at a
// time, nothing lost at close, write and prune failures logged and never thrown, retention at start and on its timer,
// field capping; then auditSubject over the common A2A 0.3/1.0 and extension shapes.
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuditRecorder, auditSubject, type AuditRecordInput } from "../../src/observability/audit.js";
import type { AuditFilter, AuditListResult, AuditStore, NewAuditEntry } from "../../src/storage/audit.js";
import { openStorage, type Storage } from "../../src/storage/index.js";

const T0 = Date.UTC(2025, 0, 1);
const DAY = 86_400_000;

function capture(): { log: pino.Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      out.push(String(chunk));
      cb();
    },
  });
  const log = pino({ level: "debug" }, stream);
  return { log, lines: () => out.flatMap((s) => s.split("\n")).filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** The memory backend's store, counting append() calls (= transactions); it can be made to fail or to be slow. */
class SpyStore implements AuditStore {
  batches: number[] = [];
  failAppend = false;
  failPrune = false;
  prunedBefore: number[] = [];
  /** Store calls running now, and the most that ran at once. */
  running = 0;
  maxRunning = 0;
  /** Each append waits this many ms (real timers) before writing. */
  appendDelayMs = 0;
  constructor(private readonly storage: Storage) {}
  get inner(): AuditStore {
    return this.storage.audit;
  }
  async append(entries: readonly NewAuditEntry[]): Promise<void> {
    await this.#track(async () => {
      if (this.appendDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.appendDelayMs));
      if (this.failAppend) throw new Error("disk full");
      this.batches.push(entries.length);
      await this.inner.append(entries);
    });
  }
  list(filter: AuditFilter, limit: number, cursor?: string): Promise<AuditListResult> {
    return this.inner.list(filter, limit, cursor);
  }
  async prune(beforeMs: number): Promise<number> {
    return this.#track(async () => {
      if (this.failPrune) throw new Error("locked");
      this.prunedBefore.push(beforeMs);
      return this.inner.prune(beforeMs);
    });
  }
  trim(maxEntries: number): Promise<number> {
    return this.#track(() => this.inner.trim(maxEntries));
  }
  async #track<T>(fn: () => Promise<T>): Promise<T> {
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      return await fn();
    } finally {
      this.running--;
    }
  }
}

const opened: Storage[] = [];
async function spyStore(): Promise<SpyStore> {
  const storage = await openStorage({ backend: "memory" });
  opened.push(storage);
  return new SpyStore(storage);
}
const tasksOf = async (store: AuditStore, limit = 10): Promise<(string | undefined)[]> => (await store.list({}, limit)).entries.map((e) => e.task_id);

const input = (extra: Partial<AuditRecordInput> = {}): AuditRecordInput => ({
  principal: "alice",
  credential_id: "cred-a",
  transport: "rest",
  line: "1.0",
  method: "GET /tasks/{id}",
  outcome: "ok",
  status: 200,
  duration_ms: 3,
  ...extra,
});

afterEach(async () => {
  vi.useRealTimers();
  for (const storage of opened.splice(0)) await storage.close();
});

describe("AuditRecorder", () => {
  it("buffers entries and writes them in one transaction per flush interval", async () => {
    const store = await spyStore();
    vi.useFakeTimers();
    const { log } = capture();
    const recorder = new AuditRecorder({ store, log, retentionDays: 0, flushIntervalMs: 100, now: () => T0 });
    recorder.record(input({ task_id: "t1" }));
    recorder.record(input({ task_id: "t2" }));
    recorder.record(input({ task_id: "t3" }));
    expect(recorder.pending).toBe(3);
    expect(store.batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(99);
    expect(store.batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(store.batches).toEqual([3]);
    expect(recorder.pending).toBe(0);
    expect(await tasksOf(store)).toEqual(["t3", "t2", "t1"]);
    expect((await store.list({}, 1)).entries[0]!.at).toBe("2025-01-01T00:00:00.000Z");
    // the next entry starts a new interval
    recorder.record(input());
    await vi.advanceTimersByTimeAsync(100);
    expect(store.batches).toEqual([3, 1]);
    await recorder.close();
  });

  it("hands the batch over at once when maxBuffer entries are waiting; flush() resolves once it is written", async () => {
    const store = await spyStore();
    vi.useFakeTimers();
    const recorder = new AuditRecorder({ store, log: capture().log, retentionDays: 0, maxBuffer: 3 });
    for (let i = 0; i < 7; i++) recorder.record(input());
    expect(recorder.pending).toBe(1);
    await recorder.flush();
    expect(store.batches).toEqual([3, 3, 1]);
    await recorder.flush(); // nothing waiting: no empty transaction
    expect(store.batches).toEqual([3, 3, 1]);
    await recorder.close();
  });

  it("writes one batch at a time, in the order the entries were recorded, and never waits in record()", async () => {
    const store = await spyStore();
    store.appendDelayMs = 5;
    const recorder = new AuditRecorder({ store, log: capture().log, retentionDays: 0, maxBuffer: 2, maxEntries: 1_000 });
    for (let i = 0; i < 9; i++) recorder.record(input({ task_id: `t${i}` }));
    expect(store.batches).toEqual([]); // record() only queued them
    await recorder.close();
    expect(store.batches).toEqual([2, 2, 2, 2, 1]);
    expect(store.maxRunning).toBe(1);
    expect(await tasksOf(store, 20)).toEqual(["t8", "t7", "t6", "t5", "t4", "t3", "t2", "t1", "t0"]);
  });

  it("the flush timer does not keep the process alive", async () => {
    const store = await spyStore();
    const spy = vi.spyOn(globalThis, "setTimeout");
    const recorder = new AuditRecorder({ store, log: capture().log, retentionDays: 0 });
    recorder.record(input());
    const timer = spy.mock.results.at(-1)?.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    spy.mockRestore();
    await recorder.close();
  });

  it("close() writes what is waiting and resolves once it is written; later entries are written at once", async () => {
    const store = await spyStore();
    const recorder = new AuditRecorder({ store, log: capture().log, retentionDays: 0, flushIntervalMs: 60_000 });
    recorder.record(input({ task_id: "a" }));
    recorder.record(input({ task_id: "b" }));
    await recorder.close();
    expect(store.batches).toEqual([2]);
    recorder.record(input({ task_id: "late" }));
    expect(recorder.pending).toBe(0); // handed to the store without waiting for a timer
    await recorder.close(); // idempotent; waits for the late write
    expect(store.batches).toEqual([2, 1]);
    expect(await tasksOf(store)).toEqual(["late", "b", "a"]);
  });

  it("every entry of a burst is written by close(), in order, in batches of at most maxBuffer", async () => {
    const store = await spyStore();
    const recorder = new AuditRecorder({ store, log: capture().log, retentionDays: 0, flushIntervalMs: 5, maxBuffer: 256 });
    const burst = 5_000;
    for (let i = 0; i < burst; i++) recorder.record(input({ task_id: `t${i}` }));
    expect(store.batches).toEqual([]); // record() never waits on the store: the batches are written after it returns
    await recorder.close();
    expect(store.batches.reduce((a, b) => a + b, 0)).toBe(burst);
    expect(Math.max(...store.batches)).toBeLessThanOrEqual(256);
    const { entries } = await store.list({}, burst + 1);
    expect(entries).toHaveLength(burst);
    expect(entries.map((e) => e.task_id).reverse()).toEqual(Array.from({ length: burst }, (_, i) => `t${i}`));
    expect({ failedWrites: recorder.failedWrites, droppedEntries: recorder.droppedEntries }).toEqual({ failedWrites: 0, droppedEntries: 0 });
  });

  it("a failing write is logged with the number of dropped entries, never thrown", async () => {
    const store = await spyStore();
    const { log, lines } = capture();
    const recorder = new AuditRecorder({ store, log, retentionDays: 0, maxBuffer: 2 });
    store.failAppend = true;
    expect(() => {
      recorder.record(input());
      recorder.record(input()); // reaches maxBuffer: flushes inside record()
    }).not.toThrow();
    recorder.record(input());
    await expect(recorder.close()).resolves.toBeUndefined();
    const errors = lines().filter((l) => l.msg === "audit log write failed; entries dropped");
    expect(errors.map((l) => l.dropped)).toEqual([2, 1]);
    expect(errors[0]).toMatchObject({ level: 50, err: { message: "disk full" } });
    expect({ failedWrites: recorder.failedWrites, droppedEntries: recorder.droppedEntries }).toEqual({ failedWrites: 2, droppedEntries: 3 });
    // the recorder keeps working once the store recovers
    store.failAppend = false;
    recorder.record(input({ task_id: "ok" }));
    await recorder.flush();
    expect(await tasksOf(store)).toEqual(["ok"]);
  });

  it("a malformed entry is dropped alone and logged", async () => {
    const store = await spyStore();
    const { log, lines } = capture();
    const recorder = new AuditRecorder({ store, log, retentionDays: 0 });
    recorder.record(input({ task_id: "good" }));
    expect(() => recorder.record(input({ at: "not a date" }))).not.toThrow();
    expect(() => recorder.record({ ...input(), outcome: "maybe" as never })).not.toThrow();
    await recorder.close();
    expect(await tasksOf(store)).toEqual(["good"]);
    expect(lines().filter((l) => l.msg === "audit entry dropped: invalid")).toHaveLength(2);
    expect(recorder.droppedEntries).toBe(2);
    expect(recorder.failedWrites).toBe(0);
  });

  it("normalises the time and caps free-text fields at 256 characters", async () => {
    const store = await spyStore();
    const recorder = new AuditRecorder({ store, log: capture().log, retentionDays: 0 });
    recorder.record(input({ at: T0 + 1, method: "m".repeat(1000), error_reason: "E".repeat(300), principal: null, credential_id: null }));
    recorder.record(input({ at: "2025-01-01T01:00:00+01:00", task_id: undefined, client_ip: "::1" }));
    await recorder.close();
    const [second, first] = (await store.list({}, 10)).entries;
    expect(first).toMatchObject({ at: "2025-01-01T00:00:00.001Z", principal: null, credential_id: null });
    expect(first!.method).toHaveLength(256);
    expect(first!.error_reason).toHaveLength(256);
    expect(second).toMatchObject({ at: "2025-01-01T00:00:00.000Z", client_ip: "::1" });
    expect(second).not.toHaveProperty("task_id");
  });

  it("prunes past the retention window at start and then on its (unref'd) timer; prune failures are logged", async () => {
    let clock = T0;
    const store = await spyStore();
    await store.inner.append([
      { ...input(), at: new Date(T0 - 8 * DAY).toISOString(), task_id: "stale" },
      { ...input(), at: new Date(T0 - 6 * DAY).toISOString(), task_id: "recent" },
    ] as NewAuditEntry[]);
    vi.useFakeTimers();
    const { log, lines } = capture();
    const recorder = new AuditRecorder({ store, log, retentionDays: 7, pruneIntervalMs: 3_600_000, now: () => clock });
    await recorder.flush(); // resolves once the prune at start is done
    expect(store.prunedBefore).toEqual([T0 - 7 * DAY]);
    expect(await tasksOf(store)).toEqual(["recent"]);
    expect(lines().find((l) => l.msg === "audit log pruned")).toMatchObject({ removed: 1, retention_days: 7 });

    clock = T0 + 2 * DAY;
    await vi.advanceTimersByTimeAsync(3_600_000);
    await recorder.flush();
    expect(store.prunedBefore).toEqual([T0 - 7 * DAY, T0 - 5 * DAY]);
    expect((await store.list({}, 10)).entries).toEqual([]);

    store.failPrune = true;
    await vi.advanceTimersByTimeAsync(3_600_000);
    await recorder.flush();
    expect(lines().some((l) => l.msg === "audit log prune failed")).toBe(true);
    await recorder.close();
    // after close the timer is gone
    store.failPrune = false;
    await vi.advanceTimersByTimeAsync(10 * 3_600_000);
    expect(store.prunedBefore).toHaveLength(2);
  });

  it("retentionDays 0 keeps everything (no prune)", async () => {
    const store = await spyStore();
    const recorder = new AuditRecorder({ store, log: capture().log, retentionDays: 0 });
    expect(await recorder.prune()).toBe(0);
    expect(store.prunedBefore).toEqual([]);
    await recorder.close();
  });
});

describe("auditSubject", () => {
  it("reads 0.3 shapes: task ids in params, new tasks and messages in results", () => {
    // tasks/get, tasks/cancel, tasks/resubscribe, push config (0.3: id is the task id)
    expect(auditSubject({ id: "t1", historyLength: 2 }, { kind: "task", id: "t1", contextId: "c1", status: { state: "working" } })).toEqual({
      task_id: "t1",
      context_id: "c1",
    });
    // message/send creating a task: the ids come from the result
    const message = { kind: "message", role: "user", messageId: "m1", parts: [] };
    expect(
      auditSubject(
        { message },
        { kind: "task", id: "t2", contextId: "c2", status: { state: "completed" }, metadata: { shared: { session: { id: "ses_9" } } } },
      ),
    ).toEqual({ task_id: "t2", context_id: "c2", session_id: "ses_9" });
    // follow-up message naming its task and context; a message result
    expect(auditSubject({ message: { ...message, taskId: "t3", contextId: "c3" } }, { kind: "message", messageId: "m2", contextId: "c3" })).toEqual({
      task_id: "t3",
      context_id: "c3",
    });
    expect(auditSubject({ message }, { kind: "message", messageId: "m2", taskId: "t4", contextId: "c4" })).toEqual({ task_id: "t4", context_id: "c4" });
  });

  it("reads 1.0 shapes: taskId over id, the SendMessage wrapper, session binding metadata", () => {
    // GetTaskPushNotificationConfig: `id` is the config's, `taskId` the task's
    expect(auditSubject({ taskId: "t1", id: "cfg-1" }, null)).toEqual({ task_id: "t1" });
    expect(auditSubject({ id: "t1" }, { id: "t1", contextId: "c1", status: { state: "TASK_STATE_WORKING" } })).toEqual({ task_id: "t1", context_id: "c1" });
    expect(
      auditSubject(
        { message: { role: "ROLE_USER", messageId: "m", parts: [], metadata: { shared: { session: { id: "ses_1" } } } } },
        { task: { id: "t5", contextId: "c5", status: { state: "TASK_STATE_SUBMITTED" } } },
      ),
    ).toEqual({ task_id: "t5", context_id: "c5", session_id: "ses_1" });
    expect(auditSubject({ metadata: { shared: { session: { id: "ses_2" } } } }, { message: { messageId: "m", taskId: "t6", contextId: "c6" } })).toEqual({
      task_id: "t6",
      context_id: "c6",
      session_id: "ses_2",
    });
    // ListTasks with a context filter
    expect(auditSubject({ contextId: "c7", pageSize: 10 }, { tasks: [], nextPageToken: "" })).toEqual({ context_id: "c7" });
  });

  it("reads extension shapes (snake_case)", () => {
    expect(auditSubject({ session_id: "ses_3", metadata: { opencode: { directory: "/x" } } }, { items: [] })).toEqual({ session_id: "ses_3" });
    expect(auditSubject({ sessionId: "ses_4" }, undefined)).toEqual({ session_id: "ses_4" });
    expect(auditSubject({ task_id: "t7", context_id: "c7", session_id: "ses_5" }, { context_id: "other" })).toEqual({
      task_id: "t7",
      context_id: "c7",
      session_id: "ses_5",
    });
    expect(auditSubject({ request_id: "per_1", decision: "once" }, { ok: true, request_id: "per_1" })).toEqual({});
  });

  it("takes strings only, ignores non-objects, caps each id at 256 characters", () => {
    expect(auditSubject(undefined, undefined)).toEqual({});
    expect(auditSubject("x", 42)).toEqual({});
    expect(auditSubject([{ id: "t" }], [{ id: "t" }])).toEqual({});
    expect(auditSubject({ id: 7, taskId: null, message: "m", session_id: { id: "s" } }, { id: 5, status: {} })).toEqual({});
    // a result with an id but neither kind "task" nor a status is not a task
    expect(auditSubject({}, { id: "not-a-task", title: "session" })).toEqual({});
    const long = "t".repeat(1000);
    const subject = auditSubject({ id: long, message: { contextId: long } }, null);
    expect(subject.task_id).toHaveLength(256);
    expect(subject.context_id).toHaveLength(256);
  });
});

describe("size bound (A2A_AUDIT_MAX_ENTRIES)", () => {
  it("keeps the newest maxEntries entries, trimmed every few entries, whatever their age", async () => {
    const store = await spyStore();
    const recorder = new AuditRecorder({ store, log: pino({ level: "silent" }), retentionDays: 0, maxEntries: 100, flushIntervalMs: 0 });
    for (let i = 0; i < 1_000; i++) {
      recorder.record(input({ method: `m${i}` }));
      await recorder.flush();
    }
    await recorder.close();
    const kept = (await store.inner.list({}, 500)).entries;
    expect(kept.length).toBeLessThanOrEqual(101);
    expect(kept.length).toBeGreaterThanOrEqual(100);
    expect(kept[0]!.method).toBe("m999");
  });
});
