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
// client that registers right after a non-blocking send does not miss the end of a short task (in the `events`
// format: the events of the task so far, as if the config had been held since the task was submitted).
//
// Seed 004's selection and quiet hours (src/push/events.ts, src/push/quiet-hours.ts). Each config keeps a mark of
// what it has seen of its task; a state change yields its events against that mark. Without `enabledEvents` every
// state change is sent; with it, in the `a2a` format a state change is sent when one of its events is enabled, in the
// `events` format each enabled event is sent on its own. Inside the config's quiet window a notification is held in
// the outbox until the window ends, coalesced with what is held for the same task and config (`a2a`: the latest
// state; `events`: per event key, status_change from the first old state to the last new one); an input_required
// event is sent at once (in the `a2a` format it then replaces what was held: it carries the latest state).
import { randomUUID } from "node:crypto";
import type { Principal } from "../auth/index.js";
import type { ProtocolLine } from "../contract/catalog.js";
import { A2AError, invalidParams } from "../contract/errors.js";
import { at, invalid } from "../protocol/codec/common.js";
import { codecFor, v0_3, v1_0, type PushConfigInput, type PushConfigRef } from "../protocol/codec/index.js";
import { isTerminal, type PushConfig, type StatusUpdateEvent, type Task } from "../protocol/model.js";
import { filterEvent, filterTask, resultAccess, type ResultAccess } from "../runtime/result-scope.js";
import type { PushConfigStore } from "../storage/push-configs.js";
import type { NewDelivery } from "../storage/push-outbox.js";
import type { StoreTx } from "../storage/tx.js";
import { checkPushConfig } from "./target.js";
import type { TraceContext } from "../tracing/index.js";
import { coalesced, eventsOf, markOf, UNSEEN, type PushMark, type TypedEvent } from "./events.js";
import { checkQuietHours, quietUntil } from "./quiet-hours.js";
import { OutboxWorker, type OutboxWorkerOptions } from "./worker.js";

/** The worker's options (delivery limits, retries, the sender) and what the configs need besides. */
export interface PushOptions extends OutboxWorkerOptions {
  configs: PushConfigStore;
  /** Storage.atomically: a task save and the notifications it queues, all or nothing. */
  atomically<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /** The task as `principal` may see it (TASK_NOT_FOUND otherwise): the runtime's visible(), without the governance summary. */
  visibleTask(principal: Principal, taskId: string): Promise<Task>;
  maxConfigsPerTask: number;
  /** The trace context of a live task (the request that started it): its notifications are delivered in that trace. */
  traceOf?: (taskId: string) => TraceContext | undefined;
}

/** Where the caller's wire carries a config: the config's own field path, and where its i-th auth scheme sits in it. */
export interface Where {
  field: string;
  scheme(i: number): string;
}

/** States in which a newly set config is sent the current state right away. */
const ATTENTION = new Set(["input-required", "auth-required"]);

/** The trace headers a queued notification is delivered under. */
type TraceFields = Pick<NewDelivery, "traceparent" | "tracestate">;

/** A2A bodies of one state change, encoded once per (line, result access) among the task's configs. */
type Bodies = Map<string, Pick<NewDelivery, "body" | "contentType">>;

export class PushService {
  readonly #opts: PushOptions;
  readonly #worker: OutboxWorker;
  readonly #now: () => number;

  constructor(opts: PushOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#worker = new OutboxWorker(opts);
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
  async set(
    principal: Principal,
    line: ProtocolLine,
    input: PushConfigInput,
    announce = true,
    where: Where = { field: codecFor(line, "jsonrpc").pushFields.config, scheme: codecFor(line, "jsonrpc").pushFields.scheme },
    /** The setting request's trace: what the config's first notification (`announce`) is delivered under. */
    trace?: TraceContext,
  ): Promise<PushConfig> {
    const task = await this.#opts.visibleTask(principal, input.taskId);
    const field = where.field;
    const url = this.check(input, where);
    // 0.3 servers name a config without id after its task (tasks/pushNotificationConfig/get works with the task id
    // alone); 1.0 configs get a fresh id.
    // An empty id is ProtoJSON's "unset".
    const id = input.id === undefined || input.id === "" ? (line === "0.3" ? input.taskId : randomUUID()) : checkId(input.id, field);
    const access = resultAccess(principal);
    const existing = await this.#opts.configs.list(input.taskId);
    const previous = existing.find((c) => c.id === id);
    const createdAt = previous?.createdAt ?? new Date(this.#now()).toISOString();
    const config: PushConfig = { ...input, id, url, line, access, owner: principal.id, createdAt, mark: markOf(filterTask(task, access)) };
    // The same config set again (a client retrying, re-registering) changes nothing and sends nothing again.
    if (previous !== undefined && JSON.stringify(settings(previous)) === JSON.stringify(settings(config))) return this.#shown(principal, previous);
    if (previous === undefined && existing.length >= this.#opts.maxConfigsPerTask) {
      throw invalidParams(`Task ${input.taskId} already has ${existing.length} push notification configs (A2A_PUSH_MAX_CONFIGS_PER_TASK)`, [], {
        task_id: input.taskId,
        limit: this.#opts.maxConfigsPerTask,
      });
    }
    const dropped = await this.#opts.atomically(async (tx) => {
      // The task's outbox lock first, as a state change takes it before it writes the config's mark: what this
      // transaction queues is ordered with the task's state changes on any gateway (see SqlPushOutboxStore.claim).
      await tx.pushOutbox.serialize(input.taskId);
      await tx.pushConfigs.set(config);
      // A replaced config starts over: what waited for its old URL is not sent to the new one.
      const n = await tx.pushOutbox.drop(input.taskId, id);
      if (announce && (isTerminal(task.status.state) || ATTENTION.has(task.status.state))) {
        await this.#queue(tx, task, config, UNSEEN, undefined, this.#traceFields(task.id, trace), new Map());
      }
      return n;
    });
    this.#settleDropped(input.taskId, id, dropped);
    this.#worker.kick();
    return this.#shown(principal, config);
  }

  /** The config's URL (normalised) and header values checked, or INVALID_PARAMS naming the field where the wire has it. */
  check(config: Omit<PushConfig, "taskId" | "id">, where: Where): string {
    checkQuietHours(config, where.field);
    return checkPushConfig(config, where.field, this.#opts.allowPrivateNetworks, where.scheme);
  }

  /** The config named by `ref.id`; without an id (0.3 `{id}` only) the one named after the task, else the first. */
  async get(principal: Principal, ref: PushConfigRef): Promise<PushConfig> {
    await this.#opts.visibleTask(principal, ref.taskId);
    const configs = this.#opts.configs;
    const config =
      ref.id !== undefined ? await configs.get(ref.taskId, ref.id) : ((await configs.get(ref.taskId, ref.taskId)) ?? (await configs.list(ref.taskId))[0]);
    if (config === undefined) {
      throw new A2AError("TASK_NOT_FOUND", `Push notification config ${ref.id ?? "(default)"} not found for task ${ref.taskId}`, {
        task_id: ref.taskId,
        ...(ref.id === undefined ? {} : { push_notification_config_id: ref.id }),
      });
    }
    return this.#shown(principal, config);
  }

  async list(principal: Principal, taskId: string): Promise<PushConfig[]> {
    await this.#opts.visibleTask(principal, taskId);
    return (await this.#opts.configs.list(taskId)).map((c) => this.#shown(principal, c));
  }

  /**
   * A config as the methods answer it: without the internal tags, and without its secrets (token, credentials) for
   * a caller other than the principal who set it or an admin.
   */
  #shown(principal: Principal, config: PushConfig): PushConfig {
    const { line: _line, access: _access, owner, mark: _mark, ...rest } = config;
    if (owner === undefined || owner === principal.id || principal.admin === true) return rest;
    const { token: _token, authentication, ...withheld } = rest;
    return authentication === undefined ? withheld : { ...withheld, authentication: { schemes: authentication.schemes } };
  }

  /** After a delete or replace: count what was dropped, and cut short the POST in flight for that config. */
  #settleDropped(taskId: string, configId: string, dropped: number): void {
    if (dropped > 0) this.#opts.metrics.pushFinished.inc({ outcome: "dropped" }, dropped);
    this.#worker.abort(taskId, configId);
  }

  /** Idempotent: deleting a config that is not there succeeds. What waited for it is dropped. */
  async delete(principal: Principal, ref: Required<PushConfigRef>): Promise<void> {
    await this.#opts.visibleTask(principal, ref.taskId);
    const dropped = await this.#opts.atomically(async (tx) => {
      await tx.pushConfigs.delete(ref.taskId, ref.id);
      return tx.pushOutbox.drop(ref.taskId, ref.id);
    });
    this.#settleDropped(ref.taskId, ref.id, dropped);
  }

  // ---- state changes (the runtime's TransitionHooks) ----------------------------------------------------------

  atomically<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return this.#opts.atomically(fn);
  }

  /** Called inside the transaction that saved the task's new state: each config is told against its mark. */
  async changed(tx: StoreTx, task: Task, event?: StatusUpdateEvent): Promise<void> {
    // The task's outbox lock before the configs are read: a config set on another gateway commits wholly before or
    // after this (its replacement is not overwritten by the mark written below, its drop sees what this queues).
    await tx.pushOutbox.serialize(task.id);
    const configs = await tx.pushConfigs.list(task.id);
    if (configs.length === 0) return;
    const context = this.#traceFields(task.id);
    const bodies: Bodies = new Map();
    for (const config of configs) {
      const mark = await this.#queue(tx, task, config, config.mark ?? UNSEEN, event, context, bodies);
      await tx.pushConfigs.set({ ...config, mark });
    }
    // After the transaction: the worker reads the outbox.
    queueMicrotask(() => this.#worker.kick());
  }

  /** The trace of the request that set the config (its announcement), else the one the task's turn runs under. */
  #traceFields(taskId: string, trace?: TraceContext): TraceFields {
    const traced = trace ?? this.#opts.traceOf?.(taskId);
    return traced === undefined ? {} : { traceparent: traced.traceparent, ...(traced.tracestate === undefined ? {} : { tracestate: traced.tracestate }) };
  }

  /**
   * Queues what `task`'s state change means to `config`, which had seen `seen` of it (see the top of this file);
   * returns what the config has seen now.
   */
  async #queue(tx: StoreTx, task: Task, config: PushConfig, seen: PushMark, event: StatusUpdateEvent | undefined, context: TraceFields, bodies: Bodies): Promise<PushMark> {
    const access = config.access ?? FULL_ACCESS;
    const visible = filterTask(task, access);
    const enabled = config.enabledEvents;
    const events = eventsOf(seen, visible).filter((e) => enabled === undefined || enabled.includes(e.event.event));
    const heldUntil = quietUntil(config, this.#now());
    const queue = { taskId: task.id, configId: config.id, ...context };
    if (config.payloadFormat === "events") {
      for (const { key, event: typed } of events) {
        const body = { body: JSON.stringify(typed), contentType: "application/json" };
        if (heldUntil === undefined || typed.event === "input_required") await this.#enqueue(tx, [{ ...queue, ...body }]);
        else await this.#hold(tx, { ...queue, ...body, heldUntil, coalesceKey: key }, (earlier) => JSON.stringify(coalesced(JSON.parse(earlier) as TypedEvent, typed)));
      }
      return markOf(visible);
    }
    if (enabled !== undefined && events.length === 0) return markOf(visible);
    const line = config.line ?? "0.3";
    const key = `${line}:${access.artifacts}:${access.files}`;
    let body = bodies.get(key);
    if (body === undefined) bodies.set(key, (body = notification(line, task, event, access)));
    const bypass = events.some((e) => e.event.event === "input_required");
    if (heldUntil !== undefined && !bypass) {
      await this.#hold(tx, { ...queue, ...body, heldUntil, coalesceKey: "a2a" }, () => body.body);
      return markOf(visible);
    }
    // Sent now inside the window (input_required): what is held for this config carried an older state, which this
    // notification supersedes. (Outside a window nothing is held.)
    const superseded = heldUntil === undefined ? [] : await tx.pushOutbox.held(task.id, config.id, this.#now());
    for (const held of superseded) {
      if (held.coalesceKey === "a2a" && (await tx.pushOutbox.remove(held.id))) this.#opts.metrics.pushFinished.inc({ outcome: "coalesced" });
    }
    await this.#enqueue(tx, [{ ...queue, ...body }]);
    return markOf(visible);
  }

  async #enqueue(tx: StoreTx, items: NewDelivery[]): Promise<void> {
    await tx.pushOutbox.enqueue(items, this.#now());
    this.#opts.metrics.pushQueued.inc(items.length);
  }

  /** Queues a held notification, or coalesces it into the one held with the same key (`merge`: the new body from the held one's). */
  async #hold(tx: StoreTx, item: NewDelivery & { coalesceKey: string }, merge: (earlier: string) => string): Promise<void> {
    const earlier = (await tx.pushOutbox.held(item.taskId, item.configId, this.#now())).find((d) => d.coalesceKey === item.coalesceKey);
    if (earlier === undefined) return this.#enqueue(tx, [item]);
    await tx.pushOutbox.rewrite(earlier.id, merge(earlier.body));
    this.#opts.metrics.pushQueued.inc();
    this.#opts.metrics.pushFinished.inc({ outcome: "coalesced" });
  }

  // ---- delivery (push/worker.ts) ----------------------------------------------------------------------------

  /** Start delivering (what a previous process left in the outbox included: see OutboxWorkerOptions.deferFirstPass). */
  start(): void {
    this.#worker.start();
  }

  /** The deferred first pass (OutboxWorkerOptions.deferFirstPass): what waits in the outbox is taken up now. */
  firstPass(): void {
    this.#worker.firstPass();
  }

  /** Stop: in-flight POSTs are cut short and stay in the outbox for the next start. */
  stop(): Promise<void> {
    return this.#worker.stop();
  }

  /** Resolves when nothing is in flight (tests). */
  idle(): Promise<void> {
    return this.#worker.idle();
  }

  /** Looks at the outbox again now: after an injected clock (`now`) moved, e.g. past the end of a quiet window (tests). */
  kick(): void {
    this.#worker.kick();
  }
}

const FULL_ACCESS: ResultAccess = { artifacts: true, files: true };

/** A config without what the service keeps beside it (its mark, its creation time): what a caller set. */
function settings(config: PushConfig): PushConfig {
  const { mark: _mark, createdAt: _createdAt, ...rest } = config;
  return rest;
}

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

/** A config id as given: at most 256 characters, no control characters, no `/` (0.3 REST names configs by path). */
function checkId(id: string, field: string): string {
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (id.length > 256 || /[\u0000-\u001f\u007f/]/.test(id)) {
    throw invalid(at(field, "id"), "must be at most 256 characters without control characters or /");
  }
  return id;
}

