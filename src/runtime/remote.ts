// Tasks whose turn runs on another gateway of the same database (src/cluster). The runtime (./tasks.ts) forwards what
// only the running instance can do to it: a message to the task (a follow-up or the answer to its interrupt), a
// stream of its events (SubscribeToTask, or message/stream continuing it), cancel, and the interrupt steps. The
// running instance serves these ops with its own runtime (serveTasks), so the caller's rights are checked there too.
import type { Principal } from "../auth/index.js";
import { principalFromWire, principalToWire, type Cluster, type Peers, type WirePrincipal } from "../cluster/index.js";
import { A2AError } from "../contract/errors.js";
import { INTERRUPTED_STATES, isTerminal, type SendParams, type StreamEvent, type Task } from "../protocol/model.js";
import type { TaskStore } from "../storage/tasks.js";
import { TraceContext } from "../tracing/index.js";
import { BoundedQueue } from "../util/queue.js";
import { backlogExceeded, STREAM_BACKLOG_LIMIT, streamHandle, type EventQueue, type StreamHandle } from "./fanout.js";
import type { Configure, PendingInterrupt, RuntimeOptions } from "./options.js";

/** How long a message forwarded to a running task may take to be taken there (it may wait for a turn slot). */
const SEND_TIMEOUT_MS = 5 * 60_000;
/** How often a blocking call forwarded to another instance also reads the task from the store. */
const SETTLED_POLL_MS = 2_000;

const OP = {
  send: "tasks.send",
  stream: "tasks.stream",
  subscribe: "tasks.subscribe",
  cancel: "tasks.cancel",
  pending: "tasks.pendingInterrupt",
  resume: "tasks.resume",
  settled: "tasks.settled",
} as const;

interface WireTrace {
  traceId: string;
  spanId: string;
  sampled: boolean;
  tracestate?: string;
  parentSpanId?: string;
}

const traceToWire = (t: TraceContext | undefined): WireTrace | undefined =>
  t === undefined
    ? undefined
    : {
        traceId: t.traceId,
        spanId: t.spanId,
        sampled: t.sampled,
        ...(t.tracestate === undefined ? {} : { tracestate: t.tracestate }),
        ...(t.parentSpanId === undefined ? {} : { parentSpanId: t.parentSpanId }),
      };
const traceFromWire = (w: WireTrace | undefined): TraceContext | undefined =>
  w === undefined ? undefined : new TraceContext(w.traceId, w.spanId, w.sampled, w.tracestate, w.parentSpanId);

interface Asked {
  principal: WirePrincipal;
}
interface AskedTask extends Asked {
  taskId: string;
}
interface AskedSend extends Asked {
  params: SendParams;
  trace?: WireTrace;
}

/** The asking side: which instance runs a task, and the ops sent to it. */
export class RemoteTasks {
  constructor(
    private readonly cluster: Cluster,
    private readonly peers: Peers,
    private readonly store: TaskStore,
    private readonly cancelTimeoutMs: number,
    private readonly isLive: (taskId: string) => boolean,
  ) {}

  /**
   * The forwarding of `runtime`, which also serves the other instances' ops (serveTasks); undefined when the gateway
   * is alone (no PostgreSQL). `isLive`: whether a task's turn runs here.
   */
  static serving(opts: Pick<RuntimeOptions, "cluster" | "store" | "cancelAbortTimeoutMs">, runtime: ServedRuntime, isLive: (taskId: string) => boolean): RemoteTasks | undefined {
    const cluster = opts.cluster;
    if (cluster?.peers === undefined) return undefined;
    serveTasks(cluster.peers, runtime);
    return new RemoteTasks(cluster, cluster.peers, opts.store, opts.cancelAbortTimeoutMs + 5_000, isLive);
  }

  /**
   * The other live instance running the task's turn, when there is one (undefined: none, this one, or a task
   * `principal` may not see: it is answered here, as TASK_NOT_FOUND, without asking anyone).
   */
  async runner(taskId: string | undefined, principal?: Principal): Promise<string | undefined> {
    if (taskId === undefined || this.isLive(taskId)) return undefined;
    const record = await this.store.get(taskId);
    const instance = record?.instance;
    if (record === undefined || instance === undefined || instance === this.cluster.instance || isTerminal(record.task.status.state)) return undefined;
    if (principal !== undefined && record.owner !== principal.id && !principal.admin) return undefined;
    return (await this.cluster.isAlive(instance)) ? instance : undefined;
  }

  /**
   * message/send to a task running on `peer`: `configure` (the push config sent with it) is stored first, so it sees
   * every state change the message causes; the message is taken there at once (non-blocking), then, when blocking,
   * this waits for the task to settle there.
   */
  async send(peer: string, principal: Principal, params: SendParams, configure: Configure | undefined, trace: TraceContext | undefined): Promise<Task> {
    await this.#configure(params, configure);
    const blocking = params.configuration?.blocking !== false;
    const taken = { ...params, configuration: { ...params.configuration, blocking: false } };
    const task = await this.peers.call<Task>(peer, OP.send, { principal: principalToWire(principal), params: taken, trace: traceToWire(trace) } satisfies AskedSend, SEND_TIMEOUT_MS);
    return blocking ? this.settled(peer, principal, task.id, task.status.timestamp) : task;
  }

  async stream(peer: string, principal: Principal, params: SendParams, configure: Configure | undefined, trace: TraceContext | undefined): Promise<StreamHandle> {
    await this.#configure(params, configure);
    return streamHandle(await this.#open(peer, OP.stream, { principal: principalToWire(principal), params, trace: traceToWire(trace) } satisfies AskedSend));
  }

  async #configure(params: SendParams, configure: Configure | undefined): Promise<void> {
    if (configure === undefined || params.message.taskId === undefined) return;
    const record = await this.store.get(params.message.taskId);
    if (record !== undefined) await configure(record.task);
  }

  async subscribe(peer: string, principal: Principal, taskId: string, line: "0.3" | "1.0"): Promise<StreamHandle> {
    return streamHandle(await this.#open(peer, OP.subscribe, { principal: principalToWire(principal), taskId, line }));
  }

  /** Canceled there; undefined when that instance is gone (its turn with it: the caller cancels the record). */
  async cancel(peer: string, principal: Principal, taskId: string): Promise<Task | undefined> {
    try {
      return await this.peers.call<Task>(peer, OP.cancel, { principal: principalToWire(principal), taskId } satisfies AskedTask, this.cancelTimeoutMs);
    } catch (error) {
      // Only a gone instance lets the record be canceled here: a slow one still runs the turn.
      if (error instanceof A2AError && error.reason === "GATEWAY_PEER_UNREACHABLE" && !(await this.cluster.isAlive(peer))) return undefined;
      throw error;
    }
  }

  async pendingInterrupt(peer: string, principal: Principal, taskId: string): Promise<PendingInterrupt | undefined> {
    const pending = await this.peers.call<PendingInterrupt | null>(peer, OP.pending, { principal: principalToWire(principal), taskId } satisfies AskedTask);
    return pending ?? undefined;
  }

  resume(peer: string, principal: Principal, taskId: string): Promise<Task> {
    return this.peers.call(peer, OP.resume, { principal: principalToWire(principal), taskId } satisfies AskedTask);
  }

  /**
   * Resolves when the task is terminal or interrupted: told by `peer`, or read from the store (where the running
   * instance writes those states before it tells anyone), whichever comes first; so a lost answer never hangs it.
   * The store is trusted for an interrupted state only when it is newer than `after` (the status the wait began at).
   */
  async settled(peer: string, principal: Principal, taskId: string, after?: string): Promise<Task> {
    let done = false;
    const asked = this.peers.call<Task>(peer, OP.settled, { principal: principalToWire(principal), taskId } satisfies AskedTask, 0);
    const polled = (async (): Promise<Task> => {
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, SETTLED_POLL_MS).unref());
        if (done) return new Promise<never>(() => undefined);
        const record = await this.store.get(taskId);
        const state = record?.task.status.state;
        if (record === undefined || state === undefined) continue;
        const newer = after !== undefined && Date.parse(record.task.status.timestamp ?? "") > Date.parse(after);
        if (isTerminal(state) || (newer && INTERRUPTED_STATES.has(state))) return record.task;
      }
    })();
    try {
      return await Promise.race([asked, polled]);
    } finally {
      done = true;
      asked.catch(() => undefined);
    }
  }

  #open(peer: string, op: string, body: unknown): Promise<EventQueue> {
    return this.peers.open(peer, op, body, (detach) => new BoundedQueue<StreamEvent, A2AError>(STREAM_BACKLOG_LIMIT, backlogExceeded, detach));
  }
}

/** What serveTasks needs of the runtime of the instance running the task. */
export interface ServedRuntime {
  send(principal: Principal, params: SendParams, configure?: Configure, trace?: TraceContext): Promise<Task>;
  stream(principal: Principal, params: SendParams, configure?: Configure, trace?: TraceContext): Promise<StreamHandle>;
  subscribe(principal: Principal, taskId: string, line: "0.3" | "1.0"): Promise<StreamHandle>;
  cancel(principal: Principal, taskId: string): Promise<Task>;
  pendingInterrupt(principal: Principal, taskId: string): Promise<PendingInterrupt | undefined>;
  resume(principal: Principal, taskId: string): Promise<Task>;
  settled(principal: Principal, taskId: string): Promise<Task>;
}

/** The running side: this instance's runtime answers the ops other instances forward to it. */
export function serveTasks(peers: Peers, runtime: ServedRuntime): void {
  const who = (body: Asked): Principal => principalFromWire(body.principal);
  peers.handle(OP.send, (body: AskedSend) => runtime.send(who(body), body.params, undefined, traceFromWire(body.trace)));
  // A stream served to another gateway ends with the task's final (or interrupted) event, which the runtime
  // publishes only once that state is stored (TaskLifecycle.afterWrites): a client there reads it after the stream.
  peers.handleStream(OP.stream, (body: AskedSend) => runtime.stream(who(body), body.params, undefined, traceFromWire(body.trace)));
  peers.handleStream(OP.subscribe, (body: AskedTask & { line: "0.3" | "1.0" }) => runtime.subscribe(who(body), body.taskId, body.line));
  peers.handle(OP.cancel, (body: AskedTask) => runtime.cancel(who(body), body.taskId));
  peers.handle(OP.pending, async (body: AskedTask) => (await runtime.pendingInterrupt(who(body), body.taskId)) ?? null);
  peers.handle(OP.resume, (body: AskedTask) => runtime.resume(who(body), body.taskId));
  peers.handle(OP.settled, (body: AskedTask) => runtime.settled(who(body), body.taskId));
}
