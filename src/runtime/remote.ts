// Tasks whose turn runs on another gateway of the same database (src/cluster). The runtime (./tasks.ts) forwards what
// only the running instance can do to it: a message to the task (a follow-up or the answer to its interrupt), a
// stream of its events (SubscribeToTask, or message/stream continuing it), cancel, and the interrupt steps. The
// running instance serves these ops with its own runtime (serveTasks), so the caller's rights are checked there too.
import type { Principal } from "../auth/index.js";
import { principalFromWire, principalToWire, type Cluster, type Peers, type WirePrincipal } from "../cluster/index.js";
import { A2AError } from "../contract/errors.js";
import type { Metrics } from "../observability/metrics.js";
import { isTerminal, type SendParams, type StreamEvent, type Task } from "../protocol/model.js";
import type { TaskStore } from "../storage/tasks.js";
import { TraceContext } from "../tracing/index.js";
import { BoundedQueue } from "../util/queue.js";
import { backlogExceeded, STREAM_BACKLOG_LIMIT, streamHandle, type EventQueue, type StreamHandle } from "./fanout.js";
import type { Configure, PendingInterrupt, RuntimeOptions } from "./options.js";

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
    private readonly metrics: Pick<Metrics, "streamRequests" | "streamActive">,
    private readonly cancelTimeoutMs: number,
    private readonly isLive: (taskId: string) => boolean,
  ) {}

  /**
   * The forwarding of `runtime`, which also serves the other instances' ops (serveTasks); undefined when the gateway
   * is alone (no PostgreSQL). `isLive`: whether a task's turn runs here.
   */
  static serving(opts: Pick<RuntimeOptions, "cluster" | "store" | "metrics" | "cancelAbortTimeoutMs">, runtime: ServedRuntime, isLive: (taskId: string) => boolean): RemoteTasks | undefined {
    const cluster = opts.cluster;
    if (cluster?.peers === undefined) return undefined;
    serveTasks(cluster.peers, runtime);
    return new RemoteTasks(cluster, cluster.peers, opts.store, opts.metrics, opts.cancelAbortTimeoutMs + 5_000, isLive);
  }

  /** The other live instance running the task's turn, when there is one (undefined: none, or this one). */
  async runner(taskId: string | undefined): Promise<string | undefined> {
    if (taskId === undefined || this.isLive(taskId)) return undefined;
    const record = await this.store.get(taskId);
    const instance = record?.instance;
    if (record === undefined || instance === undefined || instance === this.cluster.instance || isTerminal(record.task.status.state)) return undefined;
    return (await this.cluster.isAlive(instance)) ? instance : undefined;
  }

  /**
   * message/send to a task running on `peer`: taken there at once (non-blocking), then `configure` (the push config
   * sent with it) here, then, when blocking, the wait for the task to settle there.
   */
  async send(peer: string, principal: Principal, params: SendParams, configure: Configure | undefined, trace: TraceContext | undefined): Promise<Task> {
    const blocking = params.configuration?.blocking !== false;
    const taken = { ...params, configuration: { ...params.configuration, blocking: false } };
    const task = await this.peers.call<Task>(peer, OP.send, { principal: principalToWire(principal), params: taken, trace: traceToWire(trace) } satisfies AskedSend, 0);
    await configure?.(task);
    return blocking ? this.settled(peer, principal, task.id) : task;
  }

  async stream(peer: string, principal: Principal, params: SendParams, configure: Configure | undefined, trace: TraceContext | undefined): Promise<StreamHandle> {
    const queue = await this.#open(peer, OP.stream, { principal: principalToWire(principal), params, trace: traceToWire(trace) } satisfies AskedSend);
    if (params.message.taskId !== undefined) await configure?.({ id: params.message.taskId } as Task);
    return streamHandle(queue, this.metrics);
  }

  async subscribe(peer: string, principal: Principal, taskId: string, line: "0.3" | "1.0"): Promise<StreamHandle> {
    return streamHandle(await this.#open(peer, OP.subscribe, { principal: principalToWire(principal), taskId, line }), this.metrics);
  }

  /** Canceled there; undefined when that instance is gone (its turn with it: the caller cancels the record). */
  async cancel(peer: string, principal: Principal, taskId: string): Promise<Task | undefined> {
    try {
      return await this.peers.call<Task>(peer, OP.cancel, { principal: principalToWire(principal), taskId } satisfies AskedTask, this.cancelTimeoutMs);
    } catch (error) {
      if (error instanceof A2AError && error.reason === "GATEWAY_PEER_UNREACHABLE") return undefined;
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

  settled(peer: string, principal: Principal, taskId: string): Promise<Task> {
    return this.peers.call(peer, OP.settled, { principal: principalToWire(principal), taskId } satisfies AskedTask, 0);
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
  peers.handleStream(OP.stream, (body: AskedSend) => runtime.stream(who(body), body.params, undefined, traceFromWire(body.trace)));
  peers.handleStream(OP.subscribe, (body: AskedTask & { line: "0.3" | "1.0" }) => runtime.subscribe(who(body), body.taskId, body.line));
  peers.handle(OP.cancel, (body: AskedTask) => runtime.cancel(who(body), body.taskId));
  peers.handle(OP.pending, async (body: AskedTask) => (await runtime.pendingInterrupt(who(body), body.taskId)) ?? null);
  peers.handle(OP.resume, (body: AskedTask) => runtime.resume(who(body), body.taskId));
  peers.handle(OP.settled, (body: AskedTask) => runtime.settled(who(body), body.taskId));
}
