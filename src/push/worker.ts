// The push outbox worker: works off the notifications PushService queued (src/storage/push-outbox.ts), at most
// A2A_PUSH_MAX_CONCURRENCY POSTs at once and A2A_PUSH_MAX_CONCURRENCY_PER_HOST per receiver, each (task, config) queue
// in order and one at a time; retries with backoff, gives up after A2A_PUSH_MAX_ATTEMPTS or A2A_PUSH_MAX_AGE_SECONDS.
// A notification leaves the outbox only after its verdict (at least once). See service.ts for what is sent.
import type { Logger } from "pino";
import type { Metrics } from "../observability/metrics.js";
import type { PushConfig } from "../protocol/model.js";
import type { PushConfigStore } from "../storage/push-configs.js";
import { queueKey, type PushDelivery, type PushOutboxStore } from "../storage/push-outbox.js";
import { beginCall, parseTraceparent, traceFields, traceHeaders, TraceContext } from "../tracing/index.js";
import { backoffMs } from "../util/backoff.js";
import { WebhookSender, type SendVerdict } from "./sender.js";

export interface OutboxWorkerOptions {
  configs: Pick<PushConfigStore, "get">;
  outbox: PushOutboxStore;
  metrics: Metrics;
  log: Pick<Logger, "info" | "warn" | "debug">;
  timeoutMs: number;
  maxAttempts: number;
  retryInitialMs: number;
  retryMaxMs: number;
  maxConcurrency: number;
  /** POSTs in flight to one host (host:port) at once: a slow or blackholed receiver cannot take every slot. */
  maxConcurrencyPerHost: number;
  /** A notification not delivered this long after its state change is given up (expired). */
  maxAgeMs: number;
  allowPrivateNetworks: boolean;
  userAgent: string;
  /**
   * The longest the worker sleeps between looks at the outbox (ms), whatever it expects to fall due: with gateways
   * sharing a database, it takes up what another gateway queued (and whose worker may be gone) without being told.
   * Default: none (the worker is kicked by what it queues, and sleeps until the next entry it knows of falls due).
   */
  pollMs?: number;
  /**
   * The first pass, which looks for what waits (e.g. from before a restart), runs when firstPass() is called, not at
   * start(): a gateway calls it once it has answered its first requests (../server/warm.ts), so that the outbox's
   * queries are not first built meanwhile. A delivery queued before then kicks a pass at once. Default: the first
   * pass runs once the code that called start() is done.
   */
  deferFirstPass?: boolean;
  /** The clock (epoch ms): quiet hours, retry times, ages. Default Date.now; tests inject their own. */
  now?: () => number;
  random?: () => number;
  sender?: Pick<WebhookSender, "send" | "close">;
}

export class OutboxWorker {
  readonly #opts: OutboxWorkerOptions;
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
  #firstPassDone = false;
  #stopped = false;
  #kicking = false;
  #kickAgain = false;

  constructor(opts: OutboxWorkerOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#sender = opts.sender ?? new WebhookSender({ timeoutMs: opts.timeoutMs, allowPrivateNetworks: opts.allowPrivateNetworks, userAgent: opts.userAgent, maxSockets: opts.maxConcurrency });
  }

  /**
   * How long a claimed entry stays this worker's: its POST's timeout and then some. A gateway that dies mid-POST
   * leaves it to another gateway's worker once the lease ends. The entry's verdict (remove, reschedule) is written
   * only while the lease is still this worker's (the claim's nextAttemptAt is its token): a worker stalled past its
   * lease does not overwrite the entry another worker has claimed since (nor remove it, letting the entry behind it
   * go while that worker's POST is in flight).
   */
  get #leaseMs(): number {
    return this.#opts.timeoutMs + 30_000;
  }

  /** Cut short the POST in flight for a config that was deleted or replaced. */
  abort(taskId: string, configId: string): void {
    this.#busy.get(queueKey(taskId, configId))?.abort();
  }

  /** Start delivering; what a previous process left in the outbox is taken up by the first pass (see deferFirstPass). */
  start(): void {
    this.#started = true;
    if (this.#opts.deferFirstPass !== true) setImmediate(() => this.firstPass());
  }

  /** Looks for what waits in the outbox and starts what is due (once; later calls do nothing). */
  firstPass(): void {
    if (!this.#started || this.#stopped || this.#firstPassDone) return;
    this.#firstPassDone = true;
    void this.#opts.outbox.size().then(
      (waiting) => waiting > 0 && this.#opts.log.info({ waiting }, "push notifications waiting in the outbox on its first pass (left from before this start, or queued since)"),
      () => undefined, // the store is down: kick() says so
    );
    this.kick();
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
  kick(): void {
    if (!this.#started || this.#stopped) return;
    // One pass at a time; a kick during a pass makes another pass follow it.
    if (this.#kicking) {
      this.#kickAgain = true;
      return;
    }
    this.#kicking = true;
    void this.#pass().finally(() => {
      this.#kicking = false;
      if (this.#kickAgain) {
        this.#kickAgain = false;
        this.kick();
      }
    });
  }

  /**
   * Takes what is due, each entry leased to this worker (claim(): another gateway's worker on the same database does
   * not take it or anything behind it in its queue while the lease lasts), and starts its POST.
   */
  async #pass(): Promise<void> {
    try {
      // Queues skipped this round because their host has A2A_PUSH_MAX_CONCURRENCY_PER_HOST POSTs in flight: they
      // start when one of those ends (#attempt kicks), not from the timer.
      const skipped = new Set<string>();
      const exclude = { has: (key: string) => this.#busy.has(key) || skipped.has(key), size: 0 };
      let free = this.#opts.maxConcurrency - this.#inflight.size;
      for (let round = 0; free > 0 && round < 8; round++) {
        exclude.size = this.#busy.size + skipped.size;
        const due = await this.#opts.outbox.claim(this.#now(), free, exclude, this.#leaseMs);
        if (due.length === 0) break;
        for (const delivery of due) {
          const config = await this.#opts.configs.get(delivery.taskId, delivery.configId);
          const host = config === undefined ? undefined : hostKey(config.url);
          if (host !== undefined && (this.#perHost.get(host) ?? 0) >= this.#opts.maxConcurrencyPerHost) {
            skipped.add(queueKey(delivery.taskId, delivery.configId));
            // Not this round: the lease is given back, so it is due again at once.
            await this.#release(delivery);
            continue;
          }
          this.#attempt(delivery, config, host);
          free--;
        }
      }
      // The next wake-up: when the next queue head falls due (a slot freeing up kicks at once, see #attempt).
      if (this.#inflight.size < this.#opts.maxConcurrency) {
        exclude.size = this.#busy.size + skipped.size;
        const next = await this.#opts.outbox.nextDueAt(exclude, this.#now());
        if (next !== undefined) this.#wakeAt(next);
      }
      if (this.#opts.pollMs !== undefined) this.#wakeAt(this.#now() + this.#opts.pollMs);
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
      this.kick();
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
        this.kick();
      },
      (error: unknown) => {
        // The store failed around the POST: the entry stays queued; no immediate retry (it would spin).
        settle();
        this.#storeTrouble(error, "push delivery failed (store unavailable); trying again later", delivery.taskId);
      },
    );
    this.#inflight.add(run);
  }

  /** Gives a claimed entry back (due at once), as it was otherwise. */
  #release(delivery: PushDelivery): Promise<void> {
    return this.#opts.outbox.reschedule(delivery.id, delivery.attempts, this.#now(), delivery.lastError, delivery.nextAttemptAt);
  }

  async #deliver(delivery: PushDelivery, config: PushConfig | undefined, signal: AbortSignal): Promise<void> {
    const m = this.#opts.metrics;
    if (config === undefined) {
      if (await this.#opts.outbox.remove(delivery.id, delivery.nextAttemptAt)) m.pushFinished.inc({ outcome: "dropped" });
      return;
    }
    // A held notification ages from the end of its quiet window, when it could first be sent.
    if (this.#now() - Math.max(delivery.createdAt, delivery.heldUntil ?? 0) > this.#opts.maxAgeMs) {
      if (await this.#opts.outbox.remove(delivery.id, delivery.nextAttemptAt)) m.pushFinished.inc({ outcome: "expired" });
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
    // Cut short by stop() (it stays queued, its lease given back for the next start) or by a delete / replace of its
    // config (already dropped).
    if (signal.aborted) {
      if (this.#stopped) await this.#release(delivery);
      return;
    }
    const attempts = delivery.attempts + 1;
    const where = { taskId: delivery.taskId, configId: delivery.configId, attempts, ...(trace === undefined ? {} : traceFields(trace)) };
    m.pushAttempts.inc({ outcome: verdict.kind === "reject" ? "rejected" : verdict.kind });
    if (verdict.kind === "retry" && attempts < this.#opts.maxAttempts) {
      const delay = Math.min(this.#opts.retryMaxMs, verdict.retryAfterMs ?? this.#backoff(attempts));
      await this.#opts.outbox.reschedule(delivery.id, attempts, this.#now() + delay, verdict.reason, delivery.nextAttemptAt);
      this.#opts.log.debug({ ...where, reason: verdict.reason, retryInMs: delay }, "push notification will be retried");
      return;
    }
    // Done with it: delivered, refused by the receiver, or out of attempts. (Not counted when its config was deleted
    // meanwhile: the delete counted it as dropped.)
    if (await this.#opts.outbox.remove(delivery.id, delivery.nextAttemptAt)) {
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

/** The host a config's POSTs go to, as the per-host limit counts them (host:port). */
function hostKey(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
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
