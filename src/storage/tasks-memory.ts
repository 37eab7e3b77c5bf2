// The task store in memory: the same behaviour as SQLite (src/storage/tasks.ts), for tests and A2A_TASK_STORE_BACKEND=memory.
import crypto from "node:crypto";
import type { ListParams, Task, TaskState } from "../protocol/model.js";
import { canonicalTimestamp, deepFreeze, invalid, isTerminalState, page, PageTokens, resolveListQuery, serialize, type SaveResult, type StoredTask, type StoredTaskView, type TaskExtra, type TaskListResult, type TaskStore } from "./task-records.js";

interface MemoryRow {
  id: string;
  owner: string;
  contextId: string;
  state: TaskState;
  ts: string;
  json: string;
  /** The parsed snapshot handed out by view(), made on first read and dropped when the snapshot changes. */
  view: StoredTaskView | undefined;
  extra: TaskExtra;
  createdAt: string;
  updatedAt: string;
}

const copyExtra = (extra: TaskExtra): TaskExtra => {
  const out: TaskExtra = {};
  if (extra.acceptedOutputModes !== undefined) out.acceptedOutputModes = [...extra.acceptedOutputModes];
  if (extra.sessionId !== undefined) out.sessionId = extra.sessionId;
  if (extra.directory !== undefined) out.directory = extra.directory;
  return out;
};

/** Tasks in a Map, stored as JSON snapshots so callers never share objects with the store. */
export class MemoryTaskStore implements TaskStore {
  private readonly rows = new Map<string, MemoryRow>();
  private readonly tokens = new PageTokens(crypto.randomBytes(32));

  create(task: Task, owner: string, extra: TaskExtra = {}): void {
    if (this.rows.has(task.id)) throw invalid("id", `task ${task.id} already exists`);
    const stamp = new Date().toISOString();
    this.rows.set(task.id, {
      id: task.id,
      owner,
      contextId: task.contextId,
      state: task.status.state,
      ts: canonicalTimestamp(task.status.timestamp),
      json: serialize(task),
      view: undefined,
      extra: copyExtra(extra),
      createdAt: stamp,
      updatedAt: stamp,
    });
  }

  get(id: string): StoredTask | undefined {
    const row = this.rows.get(id);
    if (row === undefined) return undefined;
    return { task: JSON.parse(row.json) as Task, owner: row.owner, ...copyExtra(row.extra), createdAt: row.createdAt, updatedAt: row.updatedAt };
  }

  view(id: string): StoredTaskView | undefined {
    const row = this.rows.get(id);
    if (row === undefined) return undefined;
    return (row.view ??= { task: deepFreeze(JSON.parse(row.json) as Task), owner: row.owner });
  }

  save(task: Task): SaveResult {
    const row = this.rows.get(task.id);
    if (row === undefined) return { applied: false, reason: "not_found" };
    if (isTerminalState(row.state)) return { applied: false, reason: "terminal", state: row.state };
    row.contextId = task.contextId;
    row.state = task.status.state;
    row.ts = canonicalTimestamp(task.status.timestamp);
    row.json = serialize(task);
    row.view = undefined;
    row.updatedAt = new Date().toISOString();
    return { applied: true };
  }

  updateExtra(id: string, extra: TaskExtra): boolean {
    const row = this.rows.get(id);
    if (row === undefined) return false;
    row.extra = { ...row.extra, ...copyExtra(extra) };
    return true;
  }

  list(owner: string | undefined, params: ListParams = {}): TaskListResult {
    const q = resolveListQuery(owner, params, this.tokens);
    const matching = [...this.rows.values()]
      .filter(
        (r) =>
          (q.owner === undefined || r.owner === q.owner) &&
          (q.contextId === undefined || r.contextId === q.contextId) &&
          (q.state === undefined || r.state === q.state) &&
          (q.after === undefined || r.ts > q.after),
      )
      .sort((a, b) => (a.ts === b.ts ? (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : a.ts > b.ts ? -1 : 1));
    const c = q.cursor;
    const start = c === undefined ? matching : matching.filter((r) => r.ts < c.ts || (r.ts === c.ts && r.id > c.id));
    const window = start.slice(q.offset, q.offset + q.pageSize + 1);
    return page(q, window.map((r) => ({ ts: r.ts, id: r.id, json: r.json })), matching.length, this.tokens);
  }

  count(): number {
    return this.rows.size;
  }
}

