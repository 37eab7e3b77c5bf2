// The audit recorder: the transports hand it one entry per call (record() is synchronous and never waits on the
// store); it buffers them in memory and writes each batch in one transaction — every `flushIntervalMs` (an unref'd
// timer, so it never holds the process open), or as soon as `maxBuffer` entries are waiting. The store's work (writes,
// trims, prunes) runs one operation at a time in the order it was asked for, so batches are written in the order
// their entries were recorded. close() writes what is left and resolves once everything asked of the store is done,
// so nothing is lost at shutdown. A failing write is logged and counted (`failedWrites`, `droppedEntries`: the
// gateway serves both on /metrics) and its batch dropped, never thrown into a request.
// Entries older than `retentionDays` are pruned at start and then once an hour.
import type { Logger } from "pino";
import type { AuditStore, NewAuditEntry } from "../storage/audit.js";

export { auditSubject, AUDIT_SUBJECT_MAX_CHARS, type AuditSubject } from "./audit-subject.js";

/** What record() takes: an entry without its id; `at` (RFC 3339 string or epoch ms) defaults to now. */
export type AuditRecordInput = Omit<NewAuditEntry, "at"> & { at?: string | number };

export interface AuditRecorderOptions {
  store: AuditStore;
  log: Pick<Logger, "error" | "debug">;
  /** Entries older than this many days are deleted; 0 (or less) keeps them forever. */
  retentionDays: number;
  /** Longest time an entry waits in memory (default 100 ms). */
  flushIntervalMs?: number;
  /** Write at once when this many entries are waiting (default 1000). */
  maxBuffer?: number;
  /** How often retention is applied (default one hour). */
  pruneIntervalMs?: number;
  /** A2A_AUDIT_MAX_ENTRIES: the log keeps at most this many entries (0 = no bound). */
  maxEntries?: number;
  /** Epoch-ms clock; tests inject one. */
  now?: () => number;
}

const DAY_MS = 86_400_000;
/** Free-text members (method names of unknown calls, reasons, ids) are capped at this length. */
const MAX_FIELD_CHARS = 256;

const cap = (v: string): string => (v.length > MAX_FIELD_CHARS ? v.slice(0, MAX_FIELD_CHARS) : v);
const capOpt = (v: string | null | undefined): string | undefined => (v == null ? undefined : cap(v));
const capNull = (v: string | null | undefined): string | null => (v == null ? null : cap(v));

export class AuditRecorder {
  private buffer: NewAuditEntry[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly pruneTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Settles when the last store operation asked for is done (never rejects): each new one runs after it. */
  private tail: Promise<unknown> = Promise.resolve();
  /** The store the entries go to (GET /admin/audit reads it). */
  readonly store: AuditStore;
  private readonly log: Pick<Logger, "error" | "debug">;
  private readonly retentionDays: number;
  private readonly maxEntries: number;
  #failedWrites = 0;
  #droppedEntries = 0;
  /** Entries written since the last trim (the bound is applied every few thousand entries, not per batch). */
  private sinceTrim = 0;
  private readonly flushIntervalMs: number;
  private readonly maxBuffer: number;
  private readonly now: () => number;

  constructor(options: AuditRecorderOptions) {
    this.store = options.store;
    this.log = options.log;
    this.retentionDays = options.retentionDays;
    this.maxEntries = Math.max(0, Math.floor(options.maxEntries ?? 0));
    this.flushIntervalMs = Math.max(0, options.flushIntervalMs ?? 100);
    this.maxBuffer = Math.max(1, Math.floor(options.maxBuffer ?? 1000));
    this.now = options.now ?? Date.now;
    if (this.retentionDays > 0 || this.maxEntries > 0) {
      this.background(this.prune());
      this.pruneTimer = setInterval(() => this.background(this.prune()), Math.max(1, options.pruneIntervalMs ?? 3_600_000));
      this.pruneTimer.unref();
    }
  }

  /** Batches the store failed to write (a2a_audit_write_failures_total). */
  get failedWrites(): number {
    return this.#failedWrites;
  }

  /** Entries lost: in a batch the store failed to write, or malformed (a2a_audit_entries_dropped_total). */
  get droppedEntries(): number {
    return this.#droppedEntries;
  }

  /** Entries waiting in memory (not yet handed to the store). */
  get pending(): number {
    return this.buffer.length;
  }

  /** Queue one entry. Never throws, never waits. After close() the entry is handed to the store at once. */
  record(input: AuditRecordInput): void {
    let entry: NewAuditEntry;
    try {
      entry = this.normalise(input);
    } catch (err) {
      this.#droppedEntries++;
      this.log.error({ err, method: typeof input?.method === "string" ? cap(input.method) : undefined }, "audit entry dropped: invalid");
      return;
    }
    this.buffer.push(entry);
    if (this.closed || this.buffer.length >= this.maxBuffer) {
      this.background(this.flush());
      return;
    }
    if (this.flushTimer === undefined) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        this.background(this.flush());
      }, this.flushIntervalMs);
      this.flushTimer.unref();
    }
  }

  /**
   * Hand every waiting entry to the store now, as one transaction; resolves once it and everything asked of the store
   * before it is done. Never rejects (a failed write is logged and its batch dropped).
   */
  flush(): Promise<void> {
    if (this.flushTimer !== undefined) {
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
    }
    if (this.buffer.length > 0) {
      const batch = this.buffer;
      this.buffer = [];
      return this.enqueue(() => this.write(batch)).then(() => undefined);
    }
    return this.tail.then(() => undefined);
  }

  /** Delete the oldest entries beyond A2A_AUDIT_MAX_ENTRIES. Resolves to how many; never rejects. */
  trim(): Promise<number> {
    return this.enqueue(() => this.trimNow());
  }

  /** Delete entries past the retention window and beyond the size bound. Resolves to how many (0 when off or failed). */
  prune(): Promise<number> {
    return this.enqueue(async () => {
      const trimmed = await this.trimNow();
      if (!(this.retentionDays > 0)) return trimmed;
      try {
        const removed = await this.store.prune(this.now() - this.retentionDays * DAY_MS);
        if (removed > 0) this.log.debug({ removed, retention_days: this.retentionDays }, "audit log pruned");
        return removed;
      } catch (err) {
        this.log.error({ err }, "audit log prune failed");
        return 0;
      }
    });
  }

  /** Stop the timers and write what is waiting; resolves when the store has done all it was asked. Idempotent; call before the storage closes. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.pruneTimer !== undefined) clearInterval(this.pruneTimer);
    await this.flush();
  }

  /** Runs `work` after every store operation asked for before it. `work` handles its own failures. */
  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** A promise nobody awaits: an unexpected failure is logged rather than left unhandled. */
  private background(work: Promise<unknown>): void {
    work.catch((err: unknown) => this.log.error({ err }, "audit log store operation failed"));
  }

  private async write(batch: NewAuditEntry[]): Promise<void> {
    try {
      await this.store.append(batch);
    } catch (err) {
      this.#failedWrites++;
      this.#droppedEntries += batch.length;
      this.log.error({ err, dropped: batch.length }, "audit log write failed; entries dropped");
      return;
    }
    this.sinceTrim += batch.length;
    if (this.maxEntries > 0 && this.sinceTrim >= Math.min(10_000, Math.max(1, Math.ceil(this.maxEntries / 100)))) await this.trimNow();
  }

  private async trimNow(): Promise<number> {
    this.sinceTrim = 0;
    if (this.maxEntries <= 0) return 0;
    try {
      return await this.store.trim(this.maxEntries);
    } catch (err) {
      this.log.error({ err }, "audit log trim failed");
      return 0;
    }
  }

  private normalise(input: AuditRecordInput): NewAuditEntry {
    const at = input.at === undefined ? this.now() : input.at;
    const ms = typeof at === "number" ? at : Date.parse(at);
    if (!Number.isFinite(ms)) throw new TypeError(`invalid audit time ${JSON.stringify(at)}`);
    // Checked here so that one malformed entry is dropped alone instead of failing its whole batch.
    if (input.transport !== "jsonrpc" && input.transport !== "rest") throw new TypeError(`invalid transport ${String(input.transport)}`);
    if (input.line !== "0.3" && input.line !== "1.0") throw new TypeError(`invalid line ${String(input.line)}`);
    if (input.outcome !== "ok" && input.outcome !== "error") throw new TypeError(`invalid outcome ${String(input.outcome)}`);
    if (!Number.isInteger(input.status) || !Number.isFinite(input.duration_ms)) throw new TypeError("invalid status or duration_ms");
    // Built member by member in the stored key order, without spreads (this runs once per audited call).
    const entry: NewAuditEntry = {
      at: ms,
      principal: capNull(input.principal),
      credential_id: capNull(input.credential_id),
      transport: input.transport,
      line: input.line,
      method: cap(String(input.method)),
    } as NewAuditEntry;
    setOptional(entry, "peer", capOpt(input.peer));
    setOptional(entry, "task_id", capOpt(input.task_id));
    setOptional(entry, "context_id", capOpt(input.context_id));
    setOptional(entry, "session_id", capOpt(input.session_id));
    entry.outcome = input.outcome;
    setOptional(entry, "error_reason", capOpt(input.error_reason));
    entry.status = input.status;
    entry.duration_ms = input.duration_ms;
    setOptional(entry, "client_ip", capOpt(input.client_ip));
    setOptional(entry, "trace_id", capOpt(input.trace_id));
    return entry;
  }
}

function setOptional(entry: NewAuditEntry, key: "peer" | "task_id" | "context_id" | "session_id" | "error_reason" | "client_ip" | "trace_id", value: string | undefined): void {
  if (value !== undefined) entry[key] = value;
}
