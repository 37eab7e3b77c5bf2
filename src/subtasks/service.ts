// opencode.subtasks.run / get / cancel (seed 003): named OpenCode agents run as subtasks, one A2A task per item.
//
// An accepted item is a task of the caller, listed under the call's context, that runs its agent in a new child
// session of the caller's context session (the session of `parent_task_id`, else the one the context is bound to;
// a session without parent when there is none), the way OpenCode's own task tool starts a subagent: the session is
// created with `parentID`, then prompted with `agent` (and `model`), or the item's command is run with `agent`.
// Items are checked one by one (routing, agent, command, model, the rate limit): a bad item is `rejected`, an
// upstream failure while its session is created `failed`, and the others still run. Tasks are created `submitted`;
// groups run in the order given, the items of a group together, and never more than A2A_MAX_PARALLEL_SUBTASKS of one
// caller at once (./slots.ts). The call is kept (storage/subtask-calls.ts) for get and cancel.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { SubtasksRunParamsBounds, type SubtaskItem, type SubtaskLimits, type SubtasksCallResult, type SubtasksRunParams } from "../../generated/types/extensions.js";
import type { Principal } from "../auth/index.js";
import type { AccessLimits } from "../auth/limits.js";
import type { Metrics } from "../observability/metrics.js";
import { resolveRouting, type Routing, type RoutingPolicy } from "../bridge/directory.js";
import { explicitSessionId, type SessionResolver } from "../bridge/sessions.js";
import type { ProtocolLine } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";
import { invalid } from "../protocol/codec/common.js";
import { isTerminal, type Metadata, type SendParams, type TaskState } from "../protocol/model.js";
import type { TaskRuntime } from "../runtime/tasks.js";
import type { SubtaskCallItem, SubtaskCallRecord, SubtaskCallStore } from "../storage/subtask-calls.js";
import { withTrace, type TraceContext } from "../tracing/index.js";
import type { UpstreamClient } from "../upstream/client.js";
import { isUpstreamFailure, itemError, prefixed } from "./item-error.js";
import { childPermission, NameLookup } from "./names.js";
import { SubtaskSlots } from "./slots.js";

export interface SubtaskServiceOptions {
  runtime: TaskRuntime;
  sessions: SessionResolver;
  upstream: UpstreamClient;
  calls: SubtaskCallStore;
  routing: RoutingPolicy;
  /** A2A_MAX_PARALLEL_SUBTASKS. */
  maxParallel: number;
  /** The rate limits: every item after the first (which its request paid for) is counted. */
  limits?: AccessLimits;
  metrics?: Metrics;
  log: Pick<Logger, "warn">;
}

/** The limits the extended card publishes (`params.limits` of the opencode-subtasks extension). */
export function subtaskLimits(maxParallel: number): SubtaskLimits {
  return {
    max_parallel_subtasks: maxParallel,
    max_items_per_call: SubtasksRunParamsBounds.items.maxItems,
    excess_items: "queue",
    ungrouped_items: "sequential",
    group_order: "after_previous_group_ended",
  };
}

/** One item of a call as given, with where its fields are (`items.N.` or, for a single subtask, nothing). */
interface ItemInput {
  at: string;
  spec: SubtaskItem;
  clientId: string;
  /** Its group's key (an item without `parallel_group` is a group of its own). */
  group: string;
}

/** An accepted item: its task, and the gate its turn waits behind. */
interface Accepted {
  taskId: string;
  open(go: boolean): void;
}

const SINGLE_FIELDS = ["agent", "prompt", "description", "command", "model", "parallel_group", "client_id"] as const;

export class SubtaskService {
  readonly #slots: SubtaskSlots;

  constructor(private readonly opts: SubtaskServiceOptions) {
    this.#slots = new SubtaskSlots(opts.maxParallel);
  }

  /** Subtasks of a principal running now. */
  running(owner: string): number {
    return this.#slots.running(owner);
  }

  async run(principal: Principal, params: SubtasksRunParams, line: ProtocolLine, trace?: TraceContext): Promise<SubtasksCallResult> {
    const inputs = itemsOf(params);
    const callRouting = withTrace(resolveRouting(params.metadata as Metadata | undefined, this.opts.routing), trace);
    const parent = await this.#parent(principal, params, callRouting);
    const callId = randomUUID();
    const names = new NameLookup(this.opts.upstream);

    // The checks, all items at once (each reads OpenCode's lists at most once per routing).
    const checked = await Promise.all(inputs.map((input) => this.#check(input, callRouting, names, trace)));
    const items: SubtaskCallItem[] = inputs.map((input) => ({ client_id: input.clientId, status: "accepted", ...(input.spec.parallel_group === undefined ? {} : { parallel_group: input.spec.parallel_group }) }));
    let charged = false;
    for (const [i, c] of checked.entries()) {
      if ("error" in c) {
        Object.assign(items[i]!, { status: isUpstreamFailure(c.error) ? "failed" : "rejected", error: itemError(c.error, line) });
        continue;
      }
      // Every item counts against the rate limit; the call's request paid for the first.
      if (!charged) {
        charged = true;
        continue;
      }
      const verdict = await this.opts.limits?.charge(principal);
      if (verdict?.error !== undefined) Object.assign(items[i]!, { status: "rejected", error: itemError(verdict.error, line) });
    }

    // Child sessions for the accepted items (in parallel), then their tasks in the order given.
    const parentRules = await this.#parentRules(parent, callRouting);
    const sessions = await Promise.all(
      inputs.map(async (input, i) => {
        if (items[i]!.status !== "accepted") return undefined;
        const { routing, agent } = checked[i] as Checked;
        const body = {
          title: `${input.spec.description} (@${input.spec.agent} subagent)`,
          agent: input.spec.agent,
          permission: childPermission(parentRules, agent),
          ...(parent.sessionId === undefined ? {} : { parentID: parent.sessionId }),
        };
        try {
          return await this.opts.sessions.createOwned(principal, body, routing);
        } catch (error) {
          Object.assign(items[i]!, { status: "failed", error: itemError(error, line) });
          return undefined;
        }
      }),
    );
    const groups = new Map<string, Accepted[]>();
    for (const [i, input] of inputs.entries()) {
      const sessionId = sessions[i];
      if (sessionId === undefined) continue;
      let open!: (go: boolean) => void;
      const gate = new Promise<boolean>((resolve) => (open = resolve));
      try {
        const task = await this.opts.runtime.send(principal, sendParams(input, parent.contextId, sessionId), undefined, trace, {
          agent: input.spec.agent,
          ...(input.spec.command === undefined ? {} : { command: input.spec.command }),
          gate,
          opencode: { subtask: subtaskMetadata(input, callId, parent) },
        });
        items[i]!.task_id = task.id;
        const group = groups.get(input.group) ?? [];
        group.push({ taskId: task.id, open });
        groups.set(input.group, group);
      } catch (error) {
        Object.assign(items[i]!, { status: "failed", error: itemError(error, line) });
      }
    }
    for (const i of items) this.opts.metrics?.subtaskItems.inc({ status: i.status });
    const record: SubtaskCallRecord = { call_id: callId, owner: principal.id, context_id: parent.contextId, created_at: Date.now(), items };
    try {
      await this.opts.calls.create(record);
    } catch (error) {
      // Not kept: nothing of the call starts; its tasks end canceled.
      for (const group of groups.values()) for (const a of group) a.open(false);
      throw error;
    }
    this.#schedule(principal.id, [...groups.values()]);
    if (params.wait === true) await this.#settled(principal, [...groups.values()]);
    return this.#result(principal, record);
  }

  async get(principal: Principal, callId: string): Promise<SubtasksCallResult> {
    return this.#result(principal, await this.#call(principal, callId));
  }

  /** Cancels the call's items that have not ended (of one group, when given): waiting ones first, so none starts. */
  async cancel(principal: Principal, callId: string, group?: string): Promise<SubtasksCallResult> {
    const record = await this.#call(principal, callId);
    const targets = record.items.filter((i) => i.task_id !== undefined && (group === undefined || i.parallel_group === group));
    const states = new Map(await Promise.all(targets.map(async (i) => [i.task_id!, await this.#state(principal, i.task_id!)] as const)));
    const order = [...targets.filter((i) => states.get(i.task_id!) === "submitted"), ...targets.filter((i) => states.get(i.task_id!) !== "submitted")];
    await Promise.all(
      order.map(async (i) => {
        const state = states.get(i.task_id!);
        if (state === undefined || isTerminal(state)) return;
        try {
          await this.opts.runtime.cancel(principal, i.task_id!);
        } catch (error) {
          // It ended meanwhile (TASK_NOT_CANCELABLE): its answer shows how.
          if (!(error instanceof A2AError && error.reason === "TASK_NOT_CANCELABLE")) throw error;
        }
      }),
    );
    return this.#result(principal, record);
  }

  async #call(principal: Principal, callId: string): Promise<SubtaskCallRecord> {
    const record = await this.opts.calls.get(callId);
    if (record === undefined || (record.owner !== principal.id && principal.admin !== true)) {
      throw new A2AError("SUBTASK_CALL_NOT_FOUND", `Subtask call ${callId} not found`, { call_id: callId });
    }
    return record;
  }

  /** The context and parent session of the call's subtasks. */
  async #parent(principal: Principal, params: SubtasksRunParams, routing: Routing): Promise<Parent> {
    if (params.parent_task_id !== undefined) {
      const task = await this.opts.runtime.visible(principal, params.parent_task_id);
      if (params.context_id !== undefined && params.context_id !== task.contextId) {
        throw invalid("context_id", `must be the context of parent task ${task.id} (${task.contextId}) or left out`);
      }
      const sessionId = explicitSessionId(task.metadata) ?? undefined;
      return { contextId: task.contextId, taskId: task.id, ...(sessionId === undefined ? {} : { sessionId }) };
    }
    const contextId = params.context_id ?? randomUUID();
    const sessionId = params.context_id === undefined ? undefined : await this.opts.sessions.bound(principal, contextId, routing);
    return { contextId, ...(sessionId === undefined ? {} : { sessionId }) };
  }

  /** The permission rules of the parent session (its children inherit some); none when it cannot be read. */
  async #parentRules(parent: Parent, routing: Routing): Promise<unknown> {
    if (parent.sessionId === undefined) return [];
    try {
      return (await this.opts.upstream.getSession(parent.sessionId, routing)).permission ?? [];
    } catch (error) {
      this.opts.log.warn({ err: String(error), sessionId: parent.sessionId }, "parent session of a subtask call could not be read; its rules are not inherited");
      return [];
    }
  }

  /** An item's routing, agent, command and model, checked; or the error that rejects (or, upstream, fails) it. */
  async #check(input: ItemInput, callRouting: Routing, names: NameLookup, trace: TraceContext | undefined): Promise<Checked | { error: unknown }> {
    const { spec, at } = input;
    try {
      const routing = spec.metadata === undefined ? callRouting : withTrace(resolveRouting(spec.metadata as Metadata, this.opts.routing), trace);
      const agent = await names.agent(spec.agent, routing);
      if (agent === undefined) throw invalid(`${at}agent`, `names no OpenCode agent (GET /agent has no ${JSON.stringify(spec.agent)})`);
      if (spec.command !== undefined && !(await names.hasCommand(spec.command, routing))) {
        throw invalid(`${at}command`, `names no OpenCode command (GET /command has no ${JSON.stringify(spec.command)})`);
      }
      if (spec.model !== undefined && !(await names.hasModel(spec.model.providerID, spec.model.modelID, routing))) {
        throw invalid(`${at}model`, `names no model OpenCode offers (${spec.model.providerID}/${spec.model.modelID})`);
      }
      return { routing, agent };
    } catch (error) {
      return { error: error instanceof A2AError && typeof error.data.field === "string" && !error.data.field.startsWith(at) ? prefixed(error, at) : error };
    }
  }

  /** Groups in the order given; within one, every item as soon as the caller has a free slot. */
  #schedule(owner: string, groups: Accepted[][]): void {
    void (async () => {
      for (const group of groups) {
        await Promise.all(
          group.map(async (item) => {
            const ended = this.opts.runtime.ended(item.taskId);
            const slot = this.#slots.take(owner);
            const go = await Promise.race([slot.granted.then(() => true), ended.then(() => false)]);
            item.open(go);
            if (go) await ended;
            slot.release();
          }),
        );
      }
    })().catch((error: unknown) => this.opts.log.warn({ err: String(error) }, "subtask scheduling stopped"));
  }

  /** `wait: true`: every group in turn until each item is terminal; a group with an item waiting for input stops it. */
  async #settled(principal: Principal, groups: Accepted[][]): Promise<void> {
    for (const group of groups) {
      const tasks = await Promise.all(group.map((item) => this.opts.runtime.settled(principal, item.taskId)));
      if (tasks.some((t) => !isTerminal(t.status.state))) return;
    }
  }

  async #state(principal: Principal, taskId: string): Promise<TaskState | undefined> {
    try {
      return (await this.opts.runtime.visible(principal, taskId)).status.state;
    } catch {
      return undefined;
    }
  }

  async #result(principal: Principal, record: SubtaskCallRecord): Promise<SubtasksCallResult> {
    const items = await Promise.all(record.items.map(async (item) => {
      const state = item.task_id === undefined ? undefined : await this.#state(principal, item.task_id);
      return { ...item, ...(state === undefined ? {} : { state }) };
    }));
    const sizes = new Map<string, number>();
    for (const item of record.items) if (item.task_id !== undefined && item.parallel_group !== undefined) sizes.set(item.parallel_group, (sizes.get(item.parallel_group) ?? 0) + 1);
    return { call_id: record.call_id, context_id: record.context_id, items, parallel: [...sizes.values()].some((n) => n > 1) };
  }
}

interface Checked {
  routing: Routing;
  /** The agent as OpenCode lists it. */
  agent: Record<string, unknown>;
}

interface Parent {
  contextId: string;
  taskId?: string;
  sessionId?: string;
}

/** The items of the call: `items[]`, or the one subtask given at the top level (never both). */
function itemsOf(params: SubtasksRunParams): ItemInput[] {
  const single = SINGLE_FIELDS.filter((f) => params[f] !== undefined);
  let specs: { spec: SubtaskItem; at: string }[];
  if (params.items !== undefined) {
    if (single.length > 0) throw invalid(single[0]!, "is a field of one subtask: give either items or one subtask's fields, not both");
    specs = params.items.map((spec, i) => ({ spec, at: `items.${i}.` }));
  } else {
    for (const f of ["agent", "prompt", "description"] as const) if (params[f] === undefined) throw invalid(f, "is required (or give items)");
    const spec = Object.fromEntries(SINGLE_FIELDS.filter((f) => params[f] !== undefined).map((f) => [f, params[f]])) as unknown as SubtaskItem;
    specs = [{ spec: params.metadata === undefined ? spec : { ...spec, metadata: params.metadata }, at: "" }];
  }
  const seen = new Set<string>();
  return specs.map(({ spec: given, at }, i) => {
    // `/review` and `review` name the same command
    const spec = given.command === undefined ? given : { ...given, command: given.command.replace(/^\//, "") };
    const clientId = spec.client_id ?? String(i);
    if (seen.has(clientId)) throw invalid(`${at}client_id`, `repeats ${JSON.stringify(clientId)}: client ids are unique per call`);
    seen.add(clientId);
    return { spec, at, clientId, group: spec.parallel_group === undefined ? `\u0000${i}` : `g:${spec.parallel_group}` };
  });
}

/** The message/send an item is: its prompt, in the call's context, on its child session, with its model and routing. */
function sendParams(input: ItemInput, contextId: string, sessionId: string): SendParams {
  const { spec } = input;
  const opencode = spec.metadata?.opencode;
  return {
    message: { messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: spec.prompt }], contextId },
    configuration: { blocking: false },
    metadata: {
      shared: { session: { id: sessionId }, ...(spec.model === undefined ? {} : { model: spec.model }) },
      ...(opencode === undefined ? {} : { opencode: opencode as Metadata }),
    },
  };
}

/** `metadata.opencode.subtask` of an item's task. */
function subtaskMetadata(input: ItemInput, callId: string, parent: Parent): Metadata {
  const { spec } = input;
  return {
    agent: spec.agent,
    description: spec.description,
    ...(spec.command === undefined ? {} : { command: spec.command }),
    ...(spec.parallel_group === undefined ? {} : { parallel_group: spec.parallel_group }),
    client_id: input.clientId,
    call_id: callId,
    parent: { ...(parent.taskId === undefined ? {} : { task_id: parent.taskId }), ...(parent.sessionId === undefined ? {} : { session_id: parent.sessionId }) },
  };
}
