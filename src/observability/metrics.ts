// Prometheus metrics (prom-client), one registry per gateway, served by GET /metrics. Names follow seed 000.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { CheckpointStats } from "../storage/sql/readers.js";

export type AbortOutcome = "success" | "timeout" | "error" | "not_attempted";

export class Metrics {
  readonly registry = new Registry();
  readonly cancelRequests = new Counter({ name: "a2a_cancel_requests_total", help: "tasks/cancel and CancelTask requests", registers: [this.registry] });
  readonly cancelAbortAttempts = new Counter({ name: "a2a_cancel_abort_attempt_total", help: "Upstream aborts attempted by a cancel", registers: [this.registry] });
  readonly cancelAbortSuccess = new Counter({ name: "a2a_cancel_abort_success_total", help: "Upstream aborts that OpenCode confirmed", registers: [this.registry] });
  readonly cancelAbortTimeout = new Counter({ name: "a2a_cancel_abort_timeout_total", help: "Upstream aborts that exceeded A2A_CANCEL_ABORT_TIMEOUT_SECONDS", registers: [this.registry] });
  readonly cancelAbortError = new Counter({ name: "a2a_cancel_abort_error_total", help: "Upstream aborts that failed", registers: [this.registry] });
  readonly cancelDuration = new Histogram({
    name: "a2a_cancel_duration_ms",
    help: "Time from a cancel request to its answer, by upstream abort outcome",
    labelNames: ["abort_outcome"] as const,
    buckets: [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
    registers: [this.registry],
  });
  readonly streamRequests = new Counter({ name: "a2a_stream_requests_total", help: "Streams opened (message/stream, SendStreamingMessage, subscribe); one forwarded to the gateway running its task is counted there", registers: [this.registry] });
  readonly streamActive = new Gauge({ name: "a2a_stream_active", help: "Streams open now (a forwarded one on the gateway running its task)", registers: [this.registry] });
  readonly toolCallChunks = new Counter({ name: "tool_call_chunks_emitted_total", help: "tool_call blocks emitted", registers: [this.registry] });
  readonly interruptRequests = new Counter({ name: "interrupt_requests_total", help: "Interrupts (permission/question) asked", labelNames: ["type"] as const, registers: [this.registry] });
  readonly interruptResolved = new Counter({ name: "interrupt_resolved_total", help: "Interrupts resolved", labelNames: ["type"] as const, registers: [this.registry] });
  readonly tasksQueued = new Counter({ name: "a2a_tasks_queued_total", help: "Tasks that waited for a free turn (A2A_MAX_RUNNING_TASKS)", registers: [this.registry] });
  readonly followUps = new Counter({ name: "a2a_task_follow_ups_total", help: "Follow-up messages taken into a running task's turn", registers: [this.registry] });
  readonly subtaskItems = new Counter({ name: "a2a_subtask_items_total", help: "Items of opencode.subtasks.run calls by status: accepted, rejected, failed", labelNames: ["status"] as const, registers: [this.registry] });
  readonly governorReviews = new Counter({
    name: "a2a_governor_reviews_total",
    help: "Post-run governor results by governor and status (ok, needs_attention, rejected)",
    labelNames: ["governor", "status"] as const,
    registers: [this.registry],
  });
  readonly governorFollowUps = new Counter({ name: "a2a_governor_follow_ups_total", help: "Governor follow-up prompts sent into a task's session", registers: [this.registry] });
  readonly turnArtifacts = new Counter({ name: "a2a_turn_artifacts_total", help: "Artifacts added at a turn's end (changes diff, changed files)", labelNames: ["kind"] as const, registers: [this.registry] });
  readonly tasksFinished = new Counter({ name: "a2a_tasks_finished_total", help: "Tasks that reached a terminal state", labelNames: ["state"] as const, registers: [this.registry] });
  readonly pushQueued = new Counter({ name: "a2a_push_notifications_queued_total", help: "Push notifications queued for delivery", registers: [this.registry] });
  readonly pushAttempts = new Counter({
    name: "a2a_push_delivery_attempts_total",
    help: "Webhook POSTs by outcome: delivered (2xx), retry (network error, timeout, 408/425/429/5xx), rejected (other answers, refused address)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly pushFinished = new Counter({
    name: "a2a_push_notifications_finished_total",
    help: "Push notifications that left the outbox: delivered, rejected, expired (A2A_PUSH_MAX_ATTEMPTS used up), dropped (config deleted) or coalesced (held in quiet hours, merged into a later one)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean; streamRetries?: () => number } = {}) {
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    if (opts.streamRetries !== undefined) this.readAtScrape("opencode_stream_retries_total", "Reconnects of the shared upstream event stream", opts.streamRetries);
  }

  /**
   * A gauge whose value is read when /metrics is scraped. A read that throws (a store that is down) leaves the
   * gauge without a value rather than failing the scrape, which is when the other metrics are needed most.
   */
  readAtScrape(name: string, help: string, read: () => number | Promise<number>): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        try {
          this.set(await read());
        } catch {
          this.reset();
        }
      },
    });
  }

  /** The WAL checkpoints of a SQLite store file's reader threads (../storage/sql/readers.ts), read at scrape. */
  sqliteWal(read: () => Readonly<CheckpointStats>): void {
    this.readAtScrape("a2a_sqlite_wal_checkpoint_thread", "1 while a reader thread checkpoints the SQLite WAL; 0 while the gateway's connection does (no thread yet, or the thread's passes fail)", () => (read().onThread ? 1 : 0));
    this.readAtScrape("a2a_sqlite_wal_checkpoint_passes_total", "WAL checkpoint passes run by the reader thread holding the duty", () => read().passes);
    this.readAtScrape("a2a_sqlite_wal_checkpointed_frames_total", "WAL frames copied into the database file by those passes", () => read().checkpointed);
    this.readAtScrape("a2a_sqlite_wal_checkpoint_failures_total", "WAL checkpoint passes that failed (the gateway's connection checkpoints until one succeeds)", () => read().failures);
    this.readAtScrape("a2a_sqlite_wal_frames", "Frames in the SQLite WAL at the last checkpoint pass", () => read().walFrames);
  }

  /** The rate-limit takes of the shared limiter (../auth/limits-postgres.ts): from the database, from an allowance. */
  rateLimitTakes(takes: Readonly<{ database: number; allowance: number }>): void {
    this.readAtScrape("a2a_rate_limit_database_takes_total", "Rate-limit takes answered by the shared window in PostgreSQL", () => takes.database);
    this.readAtScrape("a2a_rate_limit_allowance_takes_total", "Rate-limit takes answered from units taken ahead (A2A_RATE_LIMIT_LEASE_MS)", () => takes.allowance);
  }
}
