// The outbound A2A client (spec: extensions/opencode/peers.tsp): a facade over the official @a2a-js/sdk client for
// one peer. It reads the peer's card (a card URL as given, else `<base>/.well-known/agent-card.json`, then the older
// `agent.json`), picks one interface (a 1.0 or 0.3 line, JSON-RPC or HTTP+JSON: A2A_CLIENT_SUPPORTED_TRANSPORTS, by
// its order with A2A_CLIENT_USE_CLIENT_PREFERENCE else by the card's, 1.0 before 0.3 for the same binding, or the
// line asked for) and builds the SDK client on exactly that interface, so it is known which line and transport a
// call used. All HTTP goes through the policy's fetch (./policy.ts). Every call has a deadline
// (A2A_CLIENT_TIMEOUT_SECONDS; for a stream: the longest silence between events) and fails with a typed
// PeerCallError (./errors.ts).
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Role, type AgentCard, type AgentInterface, type Message, type StreamResponse, type Task } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from "@a2a-js/sdk/client";
import type { A2aCallResult, A2aDiscoverResult } from "../../generated/types/extensions.js";
import type { ClientTransport } from "../config/index.js";
import type { ClientSettings } from "../config/client-settings.js";
import { boundedSet } from "../util/lru.js";
import { PeerCallError, peerError } from "./errors.js";
import { FINAL_STATES, PeerAnswer } from "./events.js";
import type { PeerPolicy } from "./policy.js";

export type PeerLine = "0.3" | "1.0";

/** What a call to a peer sends: the text, and the peer's context or task to continue. */
export interface PeerMessage {
  text: string;
  contextId?: string;
  taskId?: string;
}

export interface PeerCallOptions {
  /** The caller's cancel. */
  signal?: AbortSignal;
  /** Each event as it arrives (send: also the polls' task snapshots), with the answer text it added. */
  onEvent?: (event: StreamResponse, added: string) => void;
}

/** Artifact updates whose `append` flag is remembered at most (per client; the oldest are forgotten). */
const MAX_APPEND_KEYS = 1024;

/**
 * @a2a-js/sdk 1.3.0 drops `append` from the artifact updates of a 0.3 HTTP+JSON stream (its legacy REST transport
 * converts them without the field), so appended chunks would read as replacements. This fetch reads the flags from the
 * SSE text as it passes to the SDK (by task and artifact, in order) and restore() puts them back on the events.
 */
class AppendFlags {
  readonly #flags = new Map<string, boolean[]>();

  constructor(private readonly inner: typeof fetch) {}

  readonly fetch: typeof fetch = async (input, init) => {
    const res = await this.inner(input, init);
    if (res.body === null || !(res.headers.get("content-type") ?? "").includes("text/event-stream")) return res;
    const decoder = new TextDecoder();
    let buffer = "";
    const body = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, controller) => {
          buffer += decoder.decode(chunk, { stream: true });
          for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
            this.#line(buffer.slice(0, nl));
            buffer = buffer.slice(nl + 1);
          }
          // Recorded before the SDK reads the chunk, so a flag is always there before its event.
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };

  #line(line: string): void {
    if (!line.startsWith("data:")) return;
    interface RawUpdate {
      taskId?: unknown;
      task_id?: unknown;
      append?: unknown;
      artifact?: { artifactId?: unknown; artifact_id?: unknown };
    }
    let data: { artifactUpdate?: RawUpdate; artifact_update?: RawUpdate } | undefined;
    try {
      data = JSON.parse(line.slice(5)) as typeof data;
    } catch {
      return;
    }
    const update = data?.artifactUpdate ?? data?.artifact_update;
    const artifactId = update?.artifact?.artifactId ?? update?.artifact?.artifact_id;
    if (update === undefined || typeof artifactId !== "string") return;
    const key = `${String(update.taskId ?? update.task_id ?? "")} ${artifactId}`;
    const queue = this.#flags.get(key) ?? [];
    queue.push(update.append === true);
    boundedSet(this.#flags, key, queue, MAX_APPEND_KEYS);
  }

  restore(event: StreamResponse): void {
    if (event.payload?.$case !== "artifactUpdate") return;
    const update = event.payload.value;
    const key = `${update.taskId} ${update.artifact?.artifactId ?? ""}`;
    const queue = this.#flags.get(key);
    const flag = queue?.shift();
    if (queue?.length === 0) this.#flags.delete(key);
    if (flag !== undefined) update.append = flag;
  }
}

/** The most a card may be. */
const CARD_MAX_BYTES = 1024 * 1024;

/** The line an interface speaks (undefined: neither of ours). */
function lineOf(version: string): PeerLine | undefined {
  if (version === "" || /^0\.3(\.|$)/.test(version)) return "0.3";
  if (/^1\.0(\.|$)/.test(version)) return "1.0";
  return undefined;
}

/** Whether the URL names a card rather than an agent's base URL. */
function isCardUrl(url: URL): boolean {
  return url.pathname.endsWith(".json") || url.pathname.includes("/.well-known/");
}

/**
 * The interface a call uses: among the card's interfaces on an allowed transport (and the asked line), the first by
 * the client's transport order (A2A_CLIENT_USE_CLIENT_PREFERENCE) or the card's order, 1.0 before 0.3 on a binding.
 */
export function chooseInterface(card: AgentCard, transports: ClientTransport[], useClientPreference: boolean, line?: PeerLine): AgentInterface | undefined {
  const usable = card.supportedInterfaces.filter((i) => {
    const l = lineOf(i.protocolVersion);
    return l !== undefined && (line === undefined || l === line) && (transports as string[]).includes(i.protocolBinding);
  });
  const rank = (i: AgentInterface): number[] => [
    useClientPreference ? (transports as string[]).indexOf(i.protocolBinding) : card.supportedInterfaces.findIndex((c) => c.protocolBinding === i.protocolBinding),
    lineOf(i.protocolVersion) === "1.0" ? 0 : 1,
    card.supportedInterfaces.indexOf(i),
  ];
  return usable.sort((a, b) => {
    const [ra, rb] = [rank(a), rank(b)];
    for (let k = 0; k < ra.length; k++) if (ra[k] !== rb[k]) return ra[k]! - rb[k]!;
    return 0;
  })[0];
}

/** An SDK user message of `text`. */
function userMessage(m: PeerMessage): Message {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    contextId: m.contextId ?? "",
    taskId: m.taskId ?? "",
    parts: [{ content: { $case: "text", value: m.text }, metadata: undefined, filename: "", mediaType: "text/plain" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** Runs `fn` with a signal that aborts at the caller's cancel or after `ms`; a timeout becomes a2a_timeout. */
async function bounded<T>(ms: number, signal: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const timeout = AbortSignal.timeout(ms);
  try {
    return await fn(signal === undefined ? timeout : AbortSignal.any([signal, timeout]));
  } catch (error) {
    throw peerError(error, timeout.aborted && signal?.aborted !== true);
  }
}

export class PeerClient {
  private constructor(
    private readonly client: Client,
    readonly card: AgentCard,
    /** Where the card was read. */
    readonly cardUrl: string,
    readonly line: PeerLine,
    readonly transport: ClientTransport,
    private readonly settings: ClientSettings,
    private readonly appendFlags?: AppendFlags,
  ) {}

  /** Reads the peer's card and builds the client (PeerCallError when the peer or its card will not do). */
  static async open(target: string, settings: ClientSettings, policy: PeerPolicy, line?: PeerLine, signal?: AbortSignal): Promise<PeerClient> {
    const url = policy.check(target);
    const { card, cardUrl } = await readCard(url, settings, policy, signal);
    const chosen = chooseInterface(card, settings.clientSupportedTransports, settings.clientUseClientPreference, line);
    if (chosen === undefined) {
      const offered = card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion || "0.3"}`).join(", ") || "none";
      const wanted = `${settings.clientSupportedTransports.join(" or ")}${line === undefined ? "" : ` on A2A ${line}`}`;
      throw new PeerCallError("a2a_invalid_agent_card", `the peer offers no interface this client may use (wanted ${wanted}; offered ${offered})`, { card_url: cardUrl });
    }
    // Every interface URL is checked by the policy too (a card may point anywhere).
    policy.check(chosen.url);
    const legacyCompat = { enabled: true };
    const fetchImpl = policy.fetch;
    const appendFlags = lineOf(chosen.protocolVersion) === "0.3" && chosen.protocolBinding === "HTTP+JSON" ? new AppendFlags(fetchImpl) : undefined;
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat }), new RestTransportFactory({ fetchImpl: appendFlags?.fetch ?? fetchImpl, legacyCompat })],
        preferredTransports: [chosen.protocolBinding as ClientTransport],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat }),
      }),
    );
    let client: Client;
    try {
      client = await factory.createFromAgentCard({ ...card, supportedInterfaces: [chosen] });
    } catch (error) {
      throw peerError(error);
    }
    return new PeerClient(client, card, cardUrl, lineOf(chosen.protocolVersion)!, chosen.protocolBinding as ClientTransport, settings, appendFlags);
  }

  get #timeoutMs(): number {
    return this.settings.clientTimeout * 1000;
  }

  /** The peer's agent card as it was read (normalized to 1.0; cached with the client for A2A_CLIENT_CACHE_TTL_SECONDS). */
  getAgentCard(): AgentCard {
    return this.card;
  }

  /** The card, summarized (the a2a_discover tool). */
  summary(): A2aDiscoverResult {
    const card = this.card;
    const versions = [...new Set(card.supportedInterfaces.map((i) => lineOf(i.protocolVersion) ?? i.protocolVersion))];
    return {
      url: this.cardUrl,
      name: card.name,
      ...(card.description === "" ? {} : { description: card.description }),
      ...(card.version === "" ? {} : { version: card.version }),
      protocol_versions: versions,
      interfaces: card.supportedInterfaces.map((i) => ({ url: i.url, transport: i.protocolBinding, protocol_version: i.protocolVersion || "0.3" })),
      skills: card.skills.map((s) => ({ id: s.id, name: s.name, ...(s.description === "" ? {} : { description: s.description }), ...(s.tags.length === 0 ? {} : { tags: s.tags }) })),
      streaming: card.capabilities?.streaming === true,
      push_notifications: card.capabilities?.pushNotifications === true,
      default_input_modes: card.defaultInputModes,
      default_output_modes: card.defaultOutputModes,
    };
  }

  /** The call's result as the tool and the CLI give it. */
  result(answer: PeerAnswer): A2aCallResult {
    const question = answer.question;
    return {
      url: this.cardUrl,
      ...(answer.taskId === undefined ? {} : { task_id: answer.taskId }),
      ...(answer.contextId === undefined ? {} : { context_id: answer.contextId }),
      state: answer.state,
      text: answer.text,
      ...(question === undefined ? {} : { question }),
      protocol_version: this.line,
      transport: this.transport,
    };
  }

  /**
   * message/stream (SendStreamingMessage): the peer's events as they arrive (a peer without streaming answers once).
   * Fails with a2a_timeout when the peer stays silent for A2A_CLIENT_TIMEOUT_SECONDS.
   */
  async *sendMessage(message: PeerMessage, opts: PeerCallOptions = {}): AsyncGenerator<StreamResponse> {
    yield* this.#stream((signal) => this.client.sendMessageStream({ tenant: "", message: userMessage(message), configuration: undefined, metadata: undefined }, { signal }), opts);
  }

  /** tasks/resubscribe (SubscribeToTask): the task's live events. */
  async *subscribe(taskId: string, opts: PeerCallOptions = {}): AsyncGenerator<StreamResponse> {
    yield* this.#stream((signal) => this.client.resubscribeTask({ tenant: "", id: taskId }, { signal }), opts);
  }

  /**
   * The whole exchange: streams the message, then (A2A_CLIENT_POLLING_FALLBACK_ENABLED) polls a task that is still
   * running with backoff until it is terminal, input-required or auth-required, or the fallback's time is up.
   */
  async send(message: PeerMessage, opts: PeerCallOptions = {}): Promise<PeerAnswer> {
    const answer = new PeerAnswer();
    // A task that waits for the caller ends the send even when the peer keeps its stream open (this gateway does, to
    // show the interrupt's resolution): the stream is left and its request aborted.
    const stop = new AbortController();
    const signal = opts.signal === undefined ? stop.signal : AbortSignal.any([opts.signal, stop.signal]);
    try {
      for await (const event of this.sendMessage(message, { ...opts, signal })) {
        opts.onEvent?.(event, answer.add(event));
        if (FINAL_STATES.has(answer.state)) break;
      }
    } finally {
      stop.abort();
    }
    if (!this.settings.clientPollingFallback || FINAL_STATES.has(answer.state) || answer.taskId === undefined) return answer;
    const s = this.settings;
    const deadline = Date.now() + s.clientPollingTimeout * 1000;
    for (let wait = s.clientPollingInitialInterval * 1000; Date.now() < deadline; wait = Math.min(wait * s.clientPollingBackoff, s.clientPollingMaxInterval * 1000)) {
      try {
        await sleep(Math.min(wait, Math.max(0, deadline - Date.now())), undefined, opts.signal === undefined ? {} : { signal: opts.signal });
      } catch {
        throw new PeerCallError("a2a_call_failed", "the call was canceled");
      }
      const task = await this.getTask(answer.taskId, opts.signal);
      const added = answer.addResult(task);
      opts.onEvent?.({ payload: { $case: "task", value: task } } as StreamResponse, added);
      if (FINAL_STATES.has(answer.state)) break;
    }
    return answer;
  }

  getTask(taskId: string, signal?: AbortSignal, historyLength?: number): Promise<Task> {
    return bounded(this.#timeoutMs, signal, (s) => this.client.getTask({ tenant: "", id: taskId, ...(historyLength === undefined ? {} : { historyLength }) }, { signal: s }));
  }

  cancelTask(taskId: string, signal?: AbortSignal): Promise<Task> {
    return bounded(this.#timeoutMs, signal, (s) => this.client.cancelTask({ tenant: "", id: taskId, metadata: undefined }, { signal: s }));
  }

  /** A stream with an idle deadline: aborted when no event came for A2A_CLIENT_TIMEOUT_SECONDS. */
  async *#stream(open: (signal: AbortSignal) => AsyncGenerator<StreamResponse>, opts: PeerCallOptions): AsyncGenerator<StreamResponse> {
    const idle = new AbortController();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        idle.abort();
      }, this.#timeoutMs);
    };
    const signal = opts.signal === undefined ? idle.signal : AbortSignal.any([opts.signal, idle.signal]);
    arm();
    try {
      for await (const event of open(signal)) {
        arm();
        this.appendFlags?.restore(event);
        yield event;
      }
    } catch (error) {
      throw peerError(error, timedOut);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The peer's card: the URL itself when it names a card, else the well-known paths under it. */
async function readCard(url: URL, settings: ClientSettings, policy: PeerPolicy, signal?: AbortSignal): Promise<{ card: AgentCard; cardUrl: string }> {
  const base = url.href.endsWith("/") ? url.href : `${url.href}/`;
  const candidates = isCardUrl(url) ? [url.href] : [new URL(".well-known/agent-card.json", base).href, new URL(".well-known/agent.json", base).href];
  const resolver = new DefaultAgentCardResolver({ legacyCompat: { enabled: true } });
  let lastStatus: number | undefined;
  for (const candidate of candidates) {
    const raw = await bounded(settings.clientCardFetchTimeout * 1000, signal, async (s) => {
      const res = await policy.fetch(candidate, { headers: { accept: "application/json" }, signal: s });
      if (res.status === 404 && candidate !== candidates.at(-1)) {
        await res.body?.cancel();
        return undefined;
      }
      if (!res.ok) {
        await res.body?.cancel();
        lastStatus = res.status;
        throw new PeerCallError(res.status === 404 ? "a2a_invalid_agent_card" : codeOf(res.status), `reading the peer's card at ${candidate} gave HTTP ${res.status}`, { status: res.status, card_url: candidate });
      }
      const text = await res.text();
      if (Buffer.byteLength(text) > CARD_MAX_BYTES) throw new PeerCallError("a2a_invalid_agent_card", `the peer's card at ${candidate} is larger than ${CARD_MAX_BYTES} bytes`);
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new PeerCallError("a2a_invalid_agent_card", `the peer's card at ${candidate} is not JSON`, { card_url: candidate });
      }
    });
    if (raw === undefined) continue;
    let card: AgentCard;
    try {
      card = resolver.normalizeAgentCard(raw);
    } catch (error) {
      throw new PeerCallError("a2a_invalid_agent_card", `the peer's card at ${candidate} is not an A2A agent card (${error instanceof Error ? error.message : String(error)})`, { card_url: candidate });
    }
    if (typeof card?.name !== "string" || !Array.isArray(card.supportedInterfaces)) {
      throw new PeerCallError("a2a_invalid_agent_card", `the peer's card at ${candidate} is not an A2A agent card`, { card_url: candidate });
    }
    return { card, cardUrl: candidate };
  }
  throw new PeerCallError("a2a_invalid_agent_card", `the peer has no agent card under ${base}`, { ...(lastStatus === undefined ? {} : { status: lastStatus }) });
}

function codeOf(status: number): PeerCallError["code"] {
  return peerError(Object.assign(new Error(`HTTP ${status}`), { statusCode: status })).code;
}
