// The upstream turn of a task (the task runtime, ./tasks.ts): the session it runs on (resolved; once more on a fresh
// session of the context when a bound one vanished upstream), its prompt, and the loop that feeds the session's events
// from the EventHub to the StreamMapper and applies what comes out to the live task: artifacts and status updates to
// the task and its streams, interrupts to the interrupt registry (a permission request a governance policy answers
// never reaches the task: ./governed.ts). Follow-up messages join the running turn. A dropped
// event stream is waited for (the reconnect grace) and caught up from snapshots; the turn has a deadline
// (OPENCODE_TIMEOUT_STREAM). A completed turn is first reviewed by the post-run governors (./turn-review.ts); its end
// goes to the lifecycle rules (./lifecycle.ts).
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { Principal } from "../auth/index.js";
import type { Routing } from "../bridge/directory.js";
import { sessionTitle, userText, type PromptPart } from "../bridge/parts.js";
import type { ResolvedSession } from "../bridge/sessions.js";
import { StreamMapper, type ArtifactOutput, type MapperOutput, type StatusOutput } from "../bridge/stream-mapper.js";
import type { A2AError } from "../contract/errors.js";
import { INTERRUPTED_STATES, isTerminal, type Message, type Metadata } from "../protocol/model.js";
import { UpstreamError } from "../upstream/errors.js";
import type { Subscription } from "../upstream/hub.js";
import { isObject } from "../util/object.js";
import type { AbortUpstream } from "./abort.js";
import type { Admission } from "./admission.js";
import { mergeShared, type TaskLifecycle } from "./lifecycle.js";
import type { ActiveTurn, LiveTask, PromptBody } from "./live-task.js";
import type { Configure, RuntimeOptions } from "./options.js";
import { modelOf, turnEnded } from "./requests.js";
import { asTaskError, errorText } from "./task-error.js";
import { TurnArtifacts } from "./turn-artifacts.js";
import { TurnReviews } from "./turn-review.js";

/** How long after an idle a follow-up OpenCode left unanswered waits for OpenCode's own next loop before it is sent again. */
const FOLLOW_UP_STALL_MS = 1_500;

type TurnOutcome = "completed" | "failed" | "vanished";

export interface TurnDeps {
  opts: RuntimeOptions;
  lifecycle: TaskLifecycle;
  admission: Admission;
  /** The runtime's live tasks: a turn that ends takes its task out. */
  live: Map<string, LiveTask>;
  abortUpstream: AbortUpstream;
}

/** What a new task's turn runs: the message, its metadata and prompt parts, where, and the session named up front. */
export interface TurnRequest {
  principal: Principal;
  message: Message;
  metadata: Metadata;
  parts: PromptPart[];
  routing: Routing;
  acceptedOutputModes: string[];
  preResolved: ResolvedSession | undefined;
  /** The OpenCode agent the turn runs as (a subtask's); OpenCode's default when absent. */
  agent?: string;
  /** An OpenCode command the turn runs, the message text being its arguments (a subtask's). */
  command?: string;
}

export class TurnLoop {
  readonly #artifacts: TurnArtifacts;
  readonly #reviews: TurnReviews;

  constructor(private readonly deps: TurnDeps) {
    this.#artifacts = new TurnArtifacts(deps.opts);
    this.#reviews = new TurnReviews({
      opts: deps.opts,
      lifecycle: deps.lifecycle,
      artifacts: this.#artifacts,
      apply: (live, out) => this.#apply(live, out),
      prompt: (sessionId, routing, body, signal) => this.#prompt(sessionId, routing, body, signal),
    });
  }

  /** Resolves the task's session and runs its turn; a claimed session is confirmed or released by the outcome. */
  async run(live: LiveTask, request: TurnRequest): Promise<void> {
    const { principal, message, metadata, routing } = request;
    const { sessions, log } = this.deps.opts;
    let resolved: ResolvedSession;
    try {
      resolved = request.preResolved ?? (await sessions.resolve(principal, live.contextId, metadata, routing, sessionTitle(message)));
    } catch (error) {
      this.deps.lifecycle.fail(live, asTaskError(error));
      return;
    }
    const model = modelOf(metadata);
    const body: PromptBody = {
      parts: request.parts,
      ...(model === undefined ? {} : { model }),
      ...(request.agent === undefined ? {} : { agent: request.agent }),
      ...(request.command === undefined ? {} : { command: { name: request.command, arguments: userText(message) } }),
    };
    const run = (session: ResolvedSession, mayVanish: boolean): Promise<TurnOutcome> => {
      live.sessionId = session.sessionId;
      live.update({ metadata: mergeShared(live.task.metadata, { session: { id: session.sessionId } }) });
      return sessions.withLock(session.sessionId, () => this.#turn(live, session.sessionId, routing, body, request.acceptedOutputModes, userText(message), mayVanish));
    };
    // A bound session can vanish upstream (deleted, or an OpenCode data reset): forget the binding and run the turn
    // once more on a fresh session of the same context.
    let outcome = await run(resolved, resolved.bindingKey !== undefined && !resolved.claimed);
    if (outcome === "vanished" && resolved.bindingKey !== undefined) {
      log.warn({ taskId: live.id, sessionId: resolved.sessionId }, "bound session vanished upstream; creating a new one");
      await sessions.forget(principal, resolved.bindingKey);
      try {
        resolved = await sessions.resolve(principal, live.contextId, metadata, routing, sessionTitle(message));
      } catch (error) {
        this.deps.lifecycle.fail(live, asTaskError(error));
        return;
      }
      outcome = await run(resolved, false);
    }
    if (resolved.claimed) {
      if (outcome === "completed") await sessions.confirm(principal, resolved.sessionId);
      else await sessions.release(principal, resolved.sessionId);
    }
  }

  /**
   * Sends a follow-up message into the task's running turn: OpenCode takes input while busy and answers it in the
   * same loop, so the task goes on (same session, one history) and ends when OpenCode has answered everything.
   * Waits until the turn has started upstream; refused when the turn ends first.
   */
  async followUp(live: LiveTask, message: Message, parts: PromptPart[], metadata: Metadata, configure: Configure | undefined): Promise<void> {
    const turn = await live.turnStarted();
    if (turn === undefined || isTerminal(live.state)) throw turnEnded(live.id, live.state);
    const ordinal = turn.mapper.acceptFollowUp();
    if (ordinal === undefined) throw turnEnded(live.id, live.state);
    const model = modelOf(metadata);
    // A follow-up is answered by the agent the task runs as (OpenCode's default agent otherwise).
    const body: PromptBody = { parts, ...(model === undefined ? {} : { model }), ...(turn.agent === undefined ? {} : { agent: turn.agent }) };
    turn.followUps[ordinal] = body;
    try {
      await this.#prompt(turn.sessionId, turn.routing, body, live.abort.signal);
    } catch (error) {
      turn.mapper.withdrawFollowUp(ordinal);
      throw error;
    }
    await configure?.(live.task);
    const followUp: Message = { ...message, taskId: live.id, contextId: live.contextId, role: "user" };
    live.update({ history: [...(live.task.history ?? []), followUp] });
    this.deps.opts.metrics.followUps.inc();
    this.deps.lifecycle.persistSoon(live);
  }

  /**
   * Sends the prompt. A command is not waited for: OpenCode answers it only when its whole turn is done, and the turn
   * is followed on the event stream like a prompt's; `refused` gets a failure of the command call.
   */
  #prompt(sessionId: string, routing: Routing, body: PromptBody, signal: AbortSignal, refused?: (error: unknown) => void): Promise<unknown> {
    const { upstream } = this.deps.opts;
    const { command, ...prompt } = body;
    if (command !== undefined) {
      const request = {
        command: command.name,
        arguments: command.arguments,
        ...(prompt.agent === undefined ? {} : { agent: prompt.agent }),
        ...(prompt.model === undefined ? {} : { model: `${prompt.model.providerID}/${prompt.model.modelID}` }),
      };
      void upstream
        .call("sessionCommand", (c) => sdk.sessionCommand({ ...c, path: { sessionID: sessionId }, body: request }), { ...routing, sessionId, signal, timeout: false, budget: false })
        .catch((error: unknown) => refused?.(error));
      return Promise.resolve();
    }
    return upstream.call("sessionPromptAsync", (c) => sdk.sessionPromptAsync({ ...c, path: { sessionID: sessionId }, body: prompt }), { ...routing, sessionId, signal });
  }

  /** After an idle that left follow-ups unanswered: what OpenCode still has not started on is prompted again. */
  #stalled(live: LiveTask, turn: ActiveTurn): void {
    if (turn.stallTimer !== undefined) return;
    turn.stallTimer = setTimeout(() => {
      turn.stallTimer = undefined;
      if (isTerminal(live.state)) return;
      const ordinals = turn.mapper.stalledFollowUps();
      void (async () => {
        // Each stalled follow-up waits for the next new user message again: its own, prompted once more.
        for (const ordinal of ordinals) {
          const body = turn.followUps[ordinal];
          if (body === undefined || isTerminal(live.state)) continue;
          this.deps.opts.log.warn({ taskId: live.id, sessionId: turn.sessionId }, "OpenCode went idle without answering a follow-up; sending it again");
          await this.#prompt(turn.sessionId, turn.routing, body, live.abort.signal);
        }
      })().catch((error: unknown) => {
        this.deps.lifecycle.fail(live, asTaskError(error));
        live.abort.abort();
      });
    }, FOLLOW_UP_STALL_MS);
    turn.stallTimer.unref();
  }

  /**
   * Runs one prompt on the session and maps its events. "vanished": OpenCode does not know the session (404 on
   * the prompt) and `mayVanish` allowed the caller to retry on a new one; the task is then left untouched.
   */
  async #turn(live: LiveTask, sessionId: string, routing: Routing, body: PromptBody, acceptedOutputModes: string[], text: string, mayVanish: boolean): Promise<TurnOutcome> {
    if (isTerminal(live.state)) return "failed"; // canceled while waiting for the session
    const { opts, lifecycle } = this.deps;
    let sub: Subscription | undefined;
    const timers: NodeJS.Timeout[] = [];
    try {
      sub = opts.hub.subscribe({ sessions: [sessionId], types: StreamMapper.EVENT_TYPES });
      await sub.ready(10_000);
      const mapper = new StreamMapper({
        taskId: live.id,
        contextId: live.contextId,
        sessionId,
        userText: text,
        acceptedOutputModes,
        ...(opts.artifacts === undefined ? {} : { fileMaxBytes: opts.artifacts.fileMaxBytes }),
      });
      try {
        await this.#prompt(sessionId, routing, body, live.abort.signal, (error) => {
          if (!isTerminal(live.state)) lifecycle.fail(live, asTaskError(error));
          sub?.close();
        });
      } catch (error) {
        if (mayVanish && error instanceof UpstreamError && error.kind === "http" && error.status === 404) return "vanished";
        throw error;
      }
      const turn: ActiveTurn = {
        mapper,
        sessionId,
        routing,
        followUps: [],
        ...(body.agent === undefined ? {} : { agent: body.agent }),
        ...(body.model === undefined ? {} : { model: body.model }),
      };
      live.turn = turn;
      const stop = (reason: UpstreamError | A2AError): void => {
        if (!isTerminal(live.state)) lifecycle.fail(live, reason);
        sub?.close();
      };
      if (opts.turnTimeoutMs > 0) {
        const seconds = opts.turnTimeoutMs / 1000;
        timers.push(
          setTimeout(() => {
            void this.deps.abortUpstream(sessionId, routing);
            stop(new UpstreamError({ kind: "timeout", operation: "turn", detail: `turn exceeded ${seconds} s (OPENCODE_TIMEOUT_STREAM)`, timeoutSeconds: seconds }));
          }, opts.turnTimeoutMs),
        );
      }
      live.abort.signal.addEventListener("abort", () => sub?.close(), { once: true });
      let grace: NodeJS.Timeout | undefined;
      for await (const item of sub) {
        if (isTerminal(live.state)) break;
        if (item.type === "disconnected") {
          grace ??= setTimeout(() => stop(item.error), opts.reconnectGraceMs);
          timers.push(grace);
          continue;
        }
        if (item.type === "reconnected") {
          if (grace !== undefined) clearTimeout(grace);
          grace = undefined;
          // Events emitted while the connection was down are gone; if the turn ended meanwhile, finish from a snapshot.
          const ended = await this.#resync(live, mapper, sessionId, routing);
          if (ended) break;
          continue;
        }
        let terminal = false;
        for (const out of mapper.push(item.event)) {
          if (out.kind === "terminal") terminal = true;
          else if (out.kind === "stalled") this.#stalled(live, turn);
          else await this.#apply(live, out);
        }
        live.turnChanged();
        // A completed turn is reviewed first (post-run governors); a follow-up they send keeps the turn going.
        if (terminal && !(await this.#reviews.run(live, turn, routing))) break;
      }
      if (turn.stallTimer !== undefined) clearTimeout(turn.stallTimer);
      if (isTerminal(live.state) || lifecycle.stopped) return "failed";
      return (await this.#complete(live, mapper, routing)) ? "completed" : "failed";
    } catch (error) {
      if (!isTerminal(live.state)) lifecycle.fail(live, asTaskError(error));
      return "failed";
    } finally {
      for (const t of timers) clearTimeout(t);
      sub?.close();
      // Once its writes are in the store: until then a read of the task here is answered from the live task.
      if (isTerminal(live.state) || lifecycle.stopped) void live.writes.then(() => this.deps.live.get(live.id) === live && this.deps.live.delete(live.id));
    }
  }

  /** After a reconnect: is the session still busy? If not, the turn ended while we were not listening. */
  async #resync(live: LiveTask, mapper: StreamMapper, sessionId: string, routing: Routing): Promise<boolean> {
    const { upstream, log } = this.deps.opts;
    try {
      const status = await upstream.call("sessionStatus", (c) => sdk.sessionStatus({ ...c }), { ...routing });
      if (isObject(status) && isObject(status[sessionId])) return false; // still busy: events keep coming
      const messages = await upstream.call(
        "sessionMessages",
        (c) => sdk.sessionMessages({ ...c, path: { sessionID: sessionId }, query: { ...c.query, limit: 20 } }),
        { ...routing, sessionId },
      );
      await this.#applyAll(live, mapper.resync(Array.isArray(messages) ? messages : []));
      if (!mapper.answerFinished) {
        // Not busy, yet the answer was never finished: OpenCode restarted or dropped the turn. Never a truncated
        // "completed": the task fails and keeps what arrived, marked partial.
        this.deps.lifecycle.turnLost(live, "OpenCode no longer runs this turn and its answer was never finished (it restarted or lost the turn)");
        return true;
      }
      // The idle itself was missed: the session is not busy any more, so the turn is over.
      await this.#applyAll(live, mapper.push({ id: "resync", type: "session.idle", properties: { sessionID: sessionId } }));
      return true;
    } catch (error) {
      log.warn({ err: errorText(error), taskId: live.id }, "resync after reconnect failed");
      return false;
    }
  }

  async #applyAll(live: LiveTask, outputs: MapperOutput[]): Promise<void> {
    for (const out of outputs) if (out.kind === "artifact" || out.kind === "status") await this.#apply(live, out);
  }

  /**
   * One artifact or status update of the turn: onto the task (the store at a state change), then to its streams. An
   * interrupt's binding is written (or discarded) before the update is published, so a client that sees the task
   * turn `input-required` can answer at once; the turn's event loop awaits each update in order.
   */
  async #apply(live: LiveTask, out: ArtifactOutput | StatusOutput): Promise<void> {
    if (isTerminal(live.state)) return;
    const { opts, lifecycle } = this.deps;
    if (out.kind === "artifact") {
      live.putArtifact(out.artifact);
      lifecycle.persistSoon(live);
      if (out.block === "tool_call") opts.metrics.toolCallChunks.inc();
      live.fanout.publish(out.event);
      return;
    }
    // Counted once: a request given back by governance comes here a second time.
    if (out.interrupt?.phase === "asked" && live.governed.mayGovern(out.interrupt.requestId)) {
      opts.metrics.interruptRequests.inc({ type: out.interrupt.type });
      if (this.#governs(live, out)) return;
    }
    const adjusted = live.governed.adjust(out);
    if (adjusted === undefined) return;
    const { event, interrupt } = adjusted;
    if (interrupt?.phase === "asked") {
      await opts.interrupts?.asked(live.interruptOf(interrupt));
    } else if (interrupt?.phase === "resolved") {
      opts.metrics.interruptResolved.inc({ type: interrupt.type });
      await opts.interrupts?.resolved({ requestId: interrupt.requestId, type: interrupt.type, taskId: live.id });
    }
    // Canceled (or failed) while the binding was written: the task keeps its end state.
    if (isTerminal(live.state)) return;
    const changed = event.status.state !== live.state;
    live.update({ status: event.status });
    if (changed && event.status.state !== "working") this.deps.admission.paused();
    if (changed) {
      if (interrupt !== undefined) {
        live.interrupt = interrupt;
        live.update({ metadata: mergeShared(live.task.metadata, { interrupt: interrupt.published }) });
      }
      lifecycle.changed(live, event);
      // An interrupted state is published once it is written (a client answering it may read the task anywhere).
      if (INTERRUPTED_STATES.has(event.status.state)) {
        await lifecycle.afterWrites(live);
        // Failed (its write refused), canceled or answered meanwhile: what came after is what its streams get.
        if (live.state !== event.status.state) return;
      }
    }
    live.fanout.publish(event);
    live.wake();
  }

  /**
   * A permission request a governance policy answers itself: decided before its status update reaches the task, so
   * the task never turns `input-required` for it. Given back (applied as asked) when the answer cannot be delivered.
   */
  #governs(live: LiveTask, out: StatusOutput): boolean {
    const govern = this.deps.opts.interrupts?.govern;
    const interrupt = out.interrupt;
    if (govern === undefined || interrupt?.phase !== "asked" || !live.governed.mayGovern(interrupt.requestId)) return false;
    const taken = govern.call(this.deps.opts.interrupts, live.interruptOf(interrupt), () => {
      live.governed.giveBack(interrupt.requestId);
      this.#apply(live, out).catch((error: unknown) => this.deps.opts.log.error({ err: errorText(error), taskId: live.id }, "could not apply an interrupt given back by governance"));
    });
    if (taken) live.governed.hold(interrupt.requestId);
    return taken;
  }

  async #complete(live: LiveTask, mapper: StreamMapper, routing: Routing): Promise<boolean> {
    // What the turn changed, read from OpenCode before the mapper is finished (its events continue the sequence).
    const extras = mapper.terminal === undefined ? [] : await this.#artifacts.read(live, mapper, routing, live.turn?.reviewedChanges);
    if (isTerminal(live.state) || this.deps.lifecycle.stopped) return false; // canceled (or stopped) while OpenCode was asked
    return this.deps.lifecycle.complete(live, mapper.finish(), extras);
  }
}
