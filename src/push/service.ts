// Push notifications: the configs of the tasks/pushNotificationConfig/* methods (both lines, both transports) and
// their delivery.
//
// What is sent. One notification per state change of a task (working → input-required → working → completed, …;
// the progress-only status updates and the artifact chunks of a live stream are not pushed), to every config of the
// task, in the shape of the line the config was set on:
//   0.3 — the Task (JSON-RPC shape, `kind: "task"`), `Content-Type: application/json`;
//   1.0 — a StreamResponse, `Content-Type: application/a2a+json`: `{"statusUpdate": …}` for a non-terminal change,
//         `{"task": …}` (artifacts and history included) for the terminal one.
// Headers: `X-A2A-Notification-Token` when the config has a token; `Authorization: <scheme> <credentials>` when it
// has authentication credentials (0.3: the first scheme listed).
//
// How. A state change and the notifications it causes are written in one store transaction (Storage.atomically),
// so a task never changes state without its notifications queued. The outbox is worked off by at most
// A2A_PUSH_MAX_CONCURRENCY POSTs at once; each (task, config) pair is delivered in order, one at a time. Failures
// that may pass (network errors, timeouts, 408/425/429/5xx) are retried with exponential backoff and jitter
// (Retry-After honoured within A2A_PUSH_RETRY_MAX_SECONDS) up to A2A_PUSH_MAX_ATTEMPTS attempts; other answers
// drop the notification at once. Delivery is at least once: a notification leaves the outbox only after its
// verdict, so one whose POST was cut short by a restart is sent again.
//
// A config set (or replaced) while its task is terminal or waiting for input gets the current state at once, so a
// client that registers right after a non-blocking send does not miss the end of a short task.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Principal } from "../auth/index.js";
import type { ProtocolLine } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";
import { at, invalid } from "../protocol/codec/common.js";
import { codecFor, v0_3, v1_0, type PushConfigInput, type PushConfigRef } from "../protocol/codec/index.js";
import { isTerminal, type PushConfig, type StatusUpdateEvent, type Task } from "../protocol/model.js";
import { filterEvent, filterTask, resultAccess, type ResultAccess } from "../runtime/result-scope.js";
import type { Metrics } from "../observability/metrics.js";
import type { PushConfigStore } from "../storage/push-configs.js";
import { queueKey, type NewDelivery, type PushDelivery, type PushOutboxStore } from "../storage/push-outbox.js";
import { backoffMs } from "../util/backoff.js";
import { WebhookSender, type SendVerdict } from "./sender.js";
import { checkPushConfig } from "./target.js";
import { beginCall, parseTraceparent, traceFields, traceHeaders, TraceContext } from "../tracing/index.js";

export interface PushOptions {
  configs: PushConfigStore;
  outbox: PushOutboxStore;
  /** Storage.atomically: a task save and the notifications it queues, all or nothing. */
  atomically<T>(fn: () => T): T;
  /** The task as `principal` may see it (TASK_NOT_FOUND otherwise): the runtime's read(). */
  visibleTask(principal: Principal, taskId: string): Task;
  metrics: Metrics;
  log: Pick<Logger, "info" | "warn" | "debug">;
  timeoutMs: number;
  maxAttempts: number;
  retryInitialMs: number;
  retryMaxMs: number;
  maxConcurrency: number;
  /** POSTs in flight to one host (host:port) at once: a slow or blackholed receiver cannot take every slot. */
  maxConcurrencyPerHost: number;
  maxConfigsPerTask: number;
  /** A notification not delivered this long after its state change is given up (expired). */
  maxAgeMs: number;
  allowPrivateNetworks: boolean;
  userAgent: string;
  /** The trace context of a live task (the request that started it): its notifications are delivered in that trace. */
  traceOf?: (taskId: string) => TraceContext | undefined;
  /** For tests. */
  now?: () => number;
  random?: () => number;
  sender?: Pick<WebhookSender, "send" | "close">;
}

/** Where the caller's wire carries a config: the config's own field path, and where its i-th auth scheme sits in it. */
export interface Where {
  field: string;
  scheme(i: number): string;
}

/** States in which a newly set config is sent the current state right away. */
const ATTENTION = new Set(["input-required", "auth-required"]);

export class PushService {
  readonly #opts: PushOptions;
  readonly #sender: Pick<WebhookSender, "send" | "close">;
  readonly #now: () => number;
  /** Queues with a POST in flight, and how to cut that POST short (its config was deleted or replaced, or stop()). */
  readonly #busy = new Map<string, AbortController>();
  readonly #inflight = new Set<Promise<void>>();
  /** POSTs in flight per target host (host:port of the config's URL). */
  readonly #perHost = new Map<string, number>();
  /** Consecutive store failures of the worker: its retries back off like a receiver's. */
  #storeFailures = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;
  #started = false;
  #stopped = false;

  constructor(opts: PushOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#sender = opts.sender ?? new WebhookSender({ timeoutMs: opts.timeoutMs, allowPrivateNetworks: opts.allowPrivateNetworks, userAgent: opts.userAgent, maxSockets: opts.maxConcurrency });
    opts.metrics.readAtScrape("a2a_push_outbox_pending", "Push notifications waiting in the outbox (including those being retried)", () =>
      opts.outbox.size(),
    );
  }

  // ---- configs (the tasks/pushNotificationConfig/* methods) -------------------------------------------------------

  /**
   * Stores (or replaces) a config. `announce`: send the current state at once when the task is terminal or waits
   * for input (off for a config given with message/send, whose caller is the one continuing the task). `where`:
   * how the caller's wire names the config's fields in errors (default: a set request of the line's JSON-RPC).
   */
  set(
    principal: Principal,
    line: ProtocolLine,
    input: PushConfigInput,
    announce = true,
    where: Where = { field: codecFor(line, "jsonrpc").pushFields.config, scheme: codecFor(line, "jsonrpc").pushFields.scheme },
    /** The setting request's trace: what the config's first notification (`announce`) is delivered under. */
    trace?: TraceContext,
  ): PushConfig {
    const task = this.#opts.visibleTask(principal, input.taskId);
    const field = where.field;
    const url = this.check(input, where);
    // 0.3 servers name a config without id after its task (tasks/pushNotificationConfig/get works with the task id
    // alone); 1.0 configs get a fresh id.
    // An empty id is ProtoJSON's "unset".
    const id = input.id === undefined || input.id === "" ? (line === "0.3" ? input.taskId : randomUUID()) : checkId(input.id, field);
    const config: PushConfig = { ...input, id, url, line, access: resultAccess(principal), owner: principal.id };
    const existing = this.#opts.configs.list(input.taskId);
    const previous = existing.find((c) => c.id === id);
    // The same config set again (a client retrying, re-registering) changes nothing and sends nothing again.
    if (previous !== undefined && JSON.stringify(previous) === JSON.stringify(config)) return this.#shown(principal, config);
    if (previous === undefined && existing.length >= this.#opts.maxConfigsPerTask) {
      throw new A2AError("INVALID_PARAMS", `Task ${input.taskId} already has ${existing.length} push notification configs (A2A_PUSH_MAX_CONFIGS_PER_TASK)`, {
        task_id: input.taskId,
        limit: this.#opts.maxConfigsPerTask,
      });
    }
    const dropped = this.#opts.atomically(() => {
      this.#opts.configs.set(config);
      // A replaced config starts over: what waited for its old URL is not sent to the new one.
      const n = this.#opts.outbox.drop(input.taskId, id);
      if (announce && (isTerminal(task.status.state) || ATTENTION.has(task.status.state))) this.#enqueue(task, [config], undefined, trace);
      return n;
    });
    this.#settleDropped(input.taskId, id, dropped);
    this.#kick();
    return this.#shown(principal, config);
  }

  /** The config's URL (normalised) and header values checked, or INVALID_PARAMS naming the field where the wire has it. */
  check(config: Omit<PushConfig, "taskId" | "id">, where: Where): string {
    return checkPushConfig(config, where.field, this.#opts.allowPrivateNetworks, where.scheme);
  }

  /** The config named by `ref.id`; without an id (0.3 `{id}` only) the one named after the task, else the first. */
  get(principal: Principal, ref: PushConfigRef): PushConfig {
    this.#opts.visibleTask(principal, ref.taskId);
    const config =
      ref.id !== undefined
        ? this.#opts.configs.get(ref.taskId, ref.id)
        : (this.#opts.configs.get(ref.taskId, ref.taskId) ?? this.#opts.configs.list(ref.taskId)[0]);
    if (config === undefined) {
      throw new A2AError("TASK_NOT_FOUND", `Push notification config ${ref.id ?? "(default)"} not found for task ${ref.taskId}`, {
        task_id: ref.taskId,
        ...(ref.id === undefined ? {} : { push_notification_config_id: ref.id }),
      });
    }
    return this.#shown(principal, config);
  }

  list(principal: Principal, taskId: string): PushConfig[] {
    this.#opts.visibleTask(principal, taskId);
    return this.#opts.configs.list(taskId).map((c) => this.#shown(principal, c));
  }

  /**
   * A config as the methods answer it: without the internal tags, and without its secrets (token, credentials) for
   * a caller other than the principal who set it or an admin.
   */
  #shown(principal: Principal, config: PushConfig): PushConfig {
    const { line: _line, access: _access, owner, ...rest } = config;
    if (owner === undefined || owner === principal.id || principal.admin === true) return rest;
    const { token: _token, authentication, ...withheld } = rest;
    return authentication === undefined ? withheld : { ...withheld, authentication: { schemes: authentication.schemes } };
  }

  /** After a delete or replace: count what was dropped, and cut short the POST in flight for that config. */
  #settleDropped(taskId: string, configId: string, dropped: number): void {
    if (dropped > 0) this.#opts.metrics.pushFinished.inc({ outcome: "dropped" }, dropped);
    this.#busy.get(queueKey(taskId, configId))?.abort();
  }

  /** Idempotent: deleting a config that is not there succeeds. What waited for it is dropped. */
  delete(principal: Principal, ref: Required<PushConfigRef>): void {
    this.#opts.visibleTask(principal, ref.taskId);
    const dropped = this.#opts.atomically(() => {
      this.#opts.configs.delete(ref.taskId, ref.id);
      return this.#opts.outbox.drop(ref.taskId, ref.id);
    });
    this.#settleDropped(ref.taskId, ref.id, dropped);
  }

  // ---- state changes (the runtime's TransitionHooks) ----------------------------------------------------------

  watches(taskId: string): boolean {
    return this.#opts.configs.has(taskId);
  }

  atomically<T>(fn: () => T): T {
    return this.#opts.atomically(fn);
  }

  /** Called inside the transaction that saved the task's new state. */
  changed(task: Task, event?: StatusUpdateEvent): void {
    const configs = this.#opts.configs.list(task.id);
    if (configs.length === 0) return;
    this.#enqueue(task, configs, event);
    // After the transaction: the worker reads the outbox.
    queueMicrotask(() => this.#kick());
  }

  #enqueue(task: Task, configs: PushConfig[], event?: StatusUpdateEvent, trace?: TraceContext): void {
    // The trace of the request that set the config (its announcement), else the one the task's turn runs under.
    const traced = trace ?? this.#opts.traceOf?.(task.id);
    const context =
      traced === undefined ? undefined : { traceparent: traced.traceparent, ...(traced.tracestate === undefined ? {} : { tracestate: traced.tracestate }) };
    // Encoded once per (line, result access) among the task's configs.
    const bodies = new Map<string, Pick<NewDelivery, "body" | "contentType">>();
    const items = configs.map((config) => {
      const line = config.line ?? "0.3";
      const access = config.access ?? FULL_ACCESS;
      const key = `${line}:${access.artifacts}:${access.files}`;
      let body = bodies.get(key);
      if (body === undefined) bodies.set(key, (body = notification(line, task, event, access)));
      return { taskId: task.id, configId: config.id, ...body, ...context };
    });
    this.#opts.outbox.enqueue(items);
    this.#opts.metrics.pushQueued.inc(items.length);
  }

  // ---- delivery ---------------------------------------------------------------------------------------------

  /** Start delivering (what a previous process left in the outbox included). */
  start(): void {
    this.#started = true;
    const waiting = this.#opts.outbox.size();
    if (waiting > 0) this.#opts.log.info({ waiting }, "push notifications waiting from before the restart");
    this.#kick();
  }

  /** Stop: in-flight POSTs are cut short and stay in the outbox for the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    for (const controller of this.#busy.values()) controller.abort();
    await Promise.allSettled([...this.#inflight]);
    this.#sender.close();
  }

  /** Resolves when nothing is in flight (tests). */
  async idle(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  /**
   * Starts what is due and arms the timer for what comes next. Runs from timers and microtasks, so it never
   * throws: when the outbox cannot be read (the store is unavailable) it logs and tries again after
   * A2A_PUSH_RETRY_INITIAL_SECONDS.
   */
  #kick(): void {
    if (!this.#started || this.#stopped) return;
    try {
      // Queues skipped this round because their host has A2A_PUSH_MAX_CONCURRENCY_PER_HOST POSTs in flight: they
      // start when one of those ends (#attempt kicks), not from the timer.
      const skipped = new Set<string>();
      const exclude = { has: (key: string) => this.#busy.has(key) || skipped.has(key), size: 0 };
      let free = this.#opts.maxConcurrency - this.#inflight.size;
      for (let round = 0; free > 0 && round < 8; round++) {
        exclude.size = this.#busy.size + skipped.size;
        const due = this.#opts.outbox.due(this.#now(), free, exclude);
        if (due.length === 0) break;
        for (const delivery of due) {
          const config = this.#opts.configs.get(delivery.taskId, delivery.configId);
          const host = config === undefined ? undefined : hostKey(config.url);
          if (host !== undefined && (this.#perHost.get(host) ?? 0) >= this.#opts.maxConcurrencyPerHost) {
            skipped.add(queueKey(delivery.taskId, delivery.configId));
            continue;
          }
          this.#attempt(delivery, config, host);
          free--;
        }
      }
      // The next wake-up: when the next queue head falls due (a slot freeing up kicks at once, see #attempt).
      if (this.#inflight.size < this.#opts.maxConcurrency) {
        exclude.size = this.#busy.size + skipped.size;
        const next = this.#opts.outbox.nextDueAt(exclude);
        if (next !== undefined) this.#wakeAt(next);
      }
      this.#storeFailures = 0;
    } catch (error) {
      this.#storeTrouble(error, "push outbox unavailable; trying again later");
    }
  }

  /** The store failed under the worker: log, and try again after a backoff that grows while it keeps failing. */
  #storeTrouble(error: unknown, message: string, taskId?: string): void {
    this.#storeFailures++;
    this.#opts.log.warn({ err: error instanceof Error ? error.message : String(error), ...(taskId === undefined ? {} : { taskId }) }, message);
    this.#wakeAt(this.#now() + this.#backoff(this.#storeFailures));
  }

  #wakeAt(at: number): void {
    if (this.#stopped || at >= this.#timerAt) return;
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timerAt = Infinity;
      this.#kick();
    }, Math.max(0, at - this.#now()));
    this.#timer.unref();
  }

  #attempt(delivery: PushDelivery, config: PushConfig | undefined, host: string | undefined): void {
    const key = queueKey(delivery.taskId, delivery.configId);
    const controller = new AbortController();
    this.#busy.set(key, controller);
    if (host !== undefined) this.#perHost.set(host, (this.#perHost.get(host) ?? 0) + 1);
    const settle = () => {
      this.#busy.delete(key);
      this.#inflight.delete(run);
      if (host !== undefined) {
        const n = (this.#perHost.get(host) ?? 1) - 1;
        if (n === 0) this.#perHost.delete(host);
        else this.#perHost.set(host, n);
      }
    };
    const run = this.#deliver(delivery, config, controller.signal).then(
      () => {
        settle();
        this.#kick();
      },
      (error: unknown) => {
        // The store failed around the POST: the entry stays queued; no immediate retry (it would spin).
        settle();
        this.#storeTrouble(error, "push delivery failed (store unavailable); trying again later", delivery.taskId);
      },
    );
    this.#inflight.add(run);
  }

  async #deliver(delivery: PushDelivery, config: PushConfig | undefined, signal: AbortSignal): Promise<void> {
    const m = this.#opts.metrics;
    if (config === undefined) {
      if (this.#opts.outbox.remove(delivery.id)) m.pushFinished.inc({ outcome: "dropped" });
      return;
    }
    if (this.#now() - delivery.createdAt > this.#opts.maxAgeMs) {
      if (this.#opts.outbox.remove(delivery.id)) m.pushFinished.inc({ outcome: "expired" });
      this.#opts.log.warn({ taskId: delivery.taskId, configId: delivery.configId, attempts: delivery.attempts }, "push notification given up: older than A2A_PUSH_MAX_AGE_SECONDS");
      return;
    }
    const headers: Record<string, string> = { "content-type": delivery.contentType };
    if (config.token !== undefined) headers["x-a2a-notification-token"] = config.token;
    const scheme = config.authentication?.schemes[0];
    if (scheme !== undefined && config.authentication?.credentials !== undefined) headers.authorization = `${scheme} ${config.authentication.credentials}`;
    const trace = deliveryTrace(delivery);
    const span = trace === undefined ? undefined : beginCall(trace, "push notification", { "http.request.method": "POST", "url.full": redactedUrl(config.url), "a2a.task.id": delivery.taskId });
    if (trace !== undefined) Object.assign(headers, traceHeaders(trace, span));
    const verdict: SendVerdict = await this.#sender.send({ url: config.url, body: delivery.body, headers }, signal);
    span?.end(verdict.kind === "delivered" ? undefined : verdict.reason, "status" in verdict && verdict.status !== undefined ? { "http.response.status_code": verdict.status } : undefined);
    // Cut short by stop() (it stays queued as it was) or by a delete / replace of its config (already dropped).
    if (signal.aborted) return;
    const attempts = delivery.attempts + 1;
    const where = { taskId: delivery.taskId, configId: delivery.configId, attempts, ...(trace === undefined ? {} : traceFields(trace)) };
    m.pushAttempts.inc({ outcome: verdict.kind === "reject" ? "rejected" : verdict.kind });
    if (verdict.kind === "retry" && attempts < this.#opts.maxAttempts) {
      const delay = Math.min(this.#opts.retryMaxMs, verdict.retryAfterMs ?? this.#backoff(attempts));
      this.#opts.outbox.reschedule(delivery.id, attempts, this.#now() + delay, verdict.reason);
      this.#opts.log.debug({ ...where, reason: verdict.reason, retryInMs: delay }, "push notification will be retried");
      return;
    }
    // Done with it: delivered, refused by the receiver, or out of attempts. (Not counted when its config was deleted
    // meanwhile: the delete counted it as dropped.)
    if (this.#opts.outbox.remove(delivery.id)) {
      m.pushFinished.inc({ outcome: verdict.kind === "delivered" ? "delivered" : verdict.kind === "reject" ? "rejected" : "expired" });
    }
    if (verdict.kind === "delivered") this.#opts.log.debug({ ...where, status: verdict.status }, "push notification delivered");
    else if (verdict.kind === "reject") this.#opts.log.warn({ ...where, reason: verdict.reason }, "push notification rejected; not retried");
    else this.#opts.log.warn({ ...where, reason: verdict.reason }, "push notification given up after A2A_PUSH_MAX_ATTEMPTS attempts");
  }

  /** Exponential, with equal jitter: between half and all of initial · 2^(attempts−1), capped. */
  #backoff(attempts: number): number {
    return backoffMs(attempts - 1, this.#opts.retryInitialMs, this.#opts.retryMaxMs, this.#opts.random);
  }
}

const FULL_ACCESS: ResultAccess = { artifacts: true, files: true };

/**
 * The notification of `task`'s current state in the shape of `line`, with only what `access` (the result scopes of
 * the config's principal) allows.
 */
export function notification(line: ProtocolLine, task: Task, event?: StatusUpdateEvent, access: ResultAccess = FULL_ACCESS): Pick<NewDelivery, "body" | "contentType"> {
  const visible = filterTask(task, access);
  if (line === "0.3") return { body: JSON.stringify(v0_3.task(visible)), contentType: "application/json" };
  const update: StatusUpdateEvent = event ?? { kind: "status-update", taskId: task.id, contextId: task.contextId, status: task.status, final: false };
  const payload = isTerminal(task.status.state) ? v1_0.streamEvent({ kind: "task", task: visible }) : v1_0.streamEvent(filterEvent(update, access) ?? update);
  return { body: JSON.stringify(payload), contentType: "application/a2a+json" };
}

/** The host a config's POSTs go to, as the per-host limit counts them (host:port). */
function hostKey(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** A config id as given: at most 256 characters, no control characters, no `/` (0.3 REST names configs by path). */
function checkId(id: string, field: string): string {
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (id.length > 256 || /[\u0000-\u001f\u007f/]/.test(id)) {
    throw invalid(at(field, "id"), "must be at most 256 characters without control characters or /");
  }
  return id;
}

/** The trace context a queued notification was stored with (its `traceparent` names the parent span). */
function deliveryTrace(delivery: PushDelivery): TraceContext | undefined {
  const parent = parseTraceparent(delivery.traceparent);
  return parent === undefined ? undefined : new TraceContext(parent.traceId, parent.spanId, parent.sampled, delivery.tracestate, undefined);
}

/** A webhook URL for a span attribute: no credentials, no query (tokens travel there). */
function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "";
  }
}
