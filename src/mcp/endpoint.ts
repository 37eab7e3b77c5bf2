// The MCP endpoint `POST /mcp` (contract: spec/mcp.tsp): the official MCP SDK's Streamable HTTP transport in
// stateless mode, one low-level Server and transport per HTTP request, answering with SSE so the progress
// notifications of a2a_call reach the client before its result. Tools: a2a_call and a2a_discover (./tools.ts), and
// the messaging tools list-session, send-message and buffer (./messages-tools.ts) when enabled. The edge has
// already authenticated the request and checked `peers.call`; here the OpenCode credential is held to loopback
// addresses and each of its tool calls is attributed to the session that made it (./attribution.ts): it acts for
// that turn's principal, whose own scopes must include the tool's (`peers.call`; sessions.read / sessions.control
// for the messaging tools), and the messaging tools send from that session. Every tool call, allowed or refused, is
// one audit entry (`mcp/<tool>`, the peer's host, the outcome); never the message text, never a credential.
import type { Context } from "koa";
import type { Logger } from "pino";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, CancelledNotificationSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { A2aCallInput, A2aDiscoverInput } from "../../generated/types/extensions.js";
import type { Principal } from "../auth/index.js";
import type { Routing } from "../bridge/directory.js";
import { peerError, PeerCallError, PeerClients } from "../client/index.js";
import type { ClientSettings } from "../config/client-settings.js";
import { packageVersion } from "../contract/catalog.js";
import { A2AError, toA2AError } from "../contract/errors.js";
import type { AuditRecorder } from "../observability/audit.js";
import type { RequestState } from "../pipeline/state.js";
import type { CallAttribution } from "./attribution.js";
import { isLoopback, isOpencodeCaller, PEERS_CALL } from "./credential.js";
import { ERROR_META, messagingError, type MessagingTools } from "./messages-tools.js";
import { toolSchema } from "./schemas.js";
import { callPeer, checkInput, discoverPeer, errorResult, peerHost, PEER_ERROR_META, type ToolName } from "./tools.js";

export interface McpEndpointDeps {
  /** The outbound client's settings (A2A_CLIENT_*): one PeerClients per endpoint, so one per gateway. */
  settings: ClientSettings;
  /** Attribution of the OpenCode credential's calls (absent without an upstream: its calls are then refused). */
  attribution?: CallAttribution | undefined;
  /** The messaging tools (absent: not offered). */
  messaging?: MessagingTools | undefined;
  /** The audit log (absent when A2A_AUDIT_LOG_ENABLED=false). */
  recorder?: AuditRecorder | undefined;
  log: Pick<Logger, "warn" | "debug">;
}

let tools: Tool[] | undefined;

/** The a2a tools, from the contract's schemas (built once). */
export function toolList(): Tool[] {
  tools ??= [
    {
      name: "a2a_call",
      title: "Call an A2A agent",
      description:
        "Send a message to another A2A agent (its base URL or agent card URL) and return its answer. To continue the peer's conversation pass context_id; to answer a peer that asked a question (state input-required) pass its task_id.",
      inputSchema: toolSchema("A2aCallInput"),
      outputSchema: toolSchema("A2aCallResult"),
    },
    {
      name: "a2a_discover",
      title: "Read an A2A agent's card",
      description: "Summarize another A2A agent's card: name, description, skills, protocol versions and transports.",
      inputSchema: toolSchema("A2aDiscoverInput"),
      outputSchema: toolSchema("A2aDiscoverResult"),
    },
  ] as Tool[];
  return tools;
}

/** Who a tool call acts for: the caller, or the principal of the turn the OpenCode credential's call was matched with. */
interface Acting {
  principal: Principal;
  credentialId: string;
  taskId?: string | undefined;
  contextId?: string | undefined;
  sessionId?: string | undefined;
  routing?: Routing | undefined;
}

const isPeerTool = (name: string): name is ToolName => name === "a2a_call" || name === "a2a_discover";

export class McpEndpoint {
  readonly clients: PeerClients;
  /**
   * Tool calls in flight by `credential id / JSON-RPC request id`. The endpoint is stateless, so a client's
   * `notifications/cancelled` arrives in a request of its own: it aborts the calls of the same credential with that
   * request id (two clients sharing a credential and a request id would both be canceled).
   */
  readonly #inflight = new Map<string, Set<AbortController>>();

  constructor(private readonly deps: McpEndpointDeps) {
    this.clients = new PeerClients(deps.settings);
  }

  /** Drops the cached peers and closes their connections. */
  close(): Promise<void> {
    return this.clients.close();
  }

  /** The Koa handler of `POST /mcp`. */
  async handle(ctx: Context): Promise<void> {
    const state = ctx.state as RequestState;
    const caller = state.principal!;
    const address = ctx.req.socket.remoteAddress;
    if (isOpencodeCaller(caller) && !isLoopback(address)) {
      throw new A2AError("UNAUTHENTICATED", "The OpenCode credential (A2A_MCP_TOKEN) is accepted from loopback addresses only");
    }
    // MCP's Streamable HTTP: the client takes both a JSON answer and an event stream (refused here, in the gateway's
    // shape, before the SDK would answer it as a JSON-RPC error).
    const accept = ctx.get("accept").toLowerCase();
    if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
      throw new A2AError("NOT_ACCEPTABLE", "POST /mcp answers application/json or text/event-stream: the Accept header must list both", {
        accept: ctx.get("accept"),
        required: "application/json, text/event-stream",
      });
    }
    let body: unknown;
    try {
      body = JSON.parse((state.rawBody ?? Buffer.alloc(0)).toString("utf8"));
    } catch {
      throw new A2AError("PARSE_ERROR", "The MCP message is not JSON");
    }
    // Ends when the client goes away: the outbound calls of this request are canceled.
    const gone = new AbortController();
    const server = new Server({ name: "opencode-a2a", version: packageVersion }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...toolList(), ...(this.deps.messaging?.tools() ?? [])] }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const progressToken = extra._meta?.progressToken;
      let count = 0;
      const progress =
        progressToken === undefined
          ? undefined
          : (message: string): void => {
              count += 1;
              extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress: count, message } }).catch(() => undefined);
            };
      const key = `${caller.credentialId}/${String(extra.requestId)}`;
      const cancel = new AbortController();
      const calls = this.#inflight.get(key) ?? new Set<AbortController>();
      calls.add(cancel);
      this.#inflight.set(key, calls);
      return this.#call(request.params.name, request.params.arguments, caller, state, address, AbortSignal.any([extra.signal, gone.signal, cancel.signal]), progress).finally(() => {
        calls.delete(cancel);
        if (calls.size === 0 && this.#inflight.get(key) === calls) this.#inflight.delete(key);
      });
    });
    server.setNotificationHandler(CancelledNotificationSchema, (notification) => {
      const requestId = notification.params.requestId;
      if (requestId === undefined) return;
      for (const cancel of this.#inflight.get(`${caller.credentialId}/${String(requestId)}`) ?? []) cancel.abort();
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    ctx.res.once("close", () => {
      gone.abort();
      void server.close().catch(() => undefined);
    });
    ctx.respond = false;
    await server.connect(transport);
    await transport.handleRequest(ctx.req, ctx.res, body);
  }

  async #call(
    name: string,
    args: unknown,
    caller: Principal,
    state: RequestState,
    address: string | undefined,
    signal: AbortSignal,
    progress: ((line: string) => void) | undefined,
  ): Promise<CallToolResult> {
    const messaging = this.deps.messaging;
    if (!isPeerTool(name) && messaging?.has(name) !== true) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${name}`);
    const started = performance.now();
    let acting: Acting = { principal: caller, credentialId: caller.credentialId };
    let result: CallToolResult;
    if (isPeerTool(name)) {
      try {
        const input = await checkInput<A2aCallInput | A2aDiscoverInput>(name, args);
        acting = await this.#acting(name, args, caller, signal, (message) => new PeerCallError("a2a_not_allowed", message));
        if (!acting.principal.scopes.has(PEERS_CALL)) {
          throw new PeerCallError("a2a_not_allowed", `the owner of the task that made this call lacks the ${PEERS_CALL} scope`);
        }
        result = name === "a2a_call" ? await callPeer(this.clients, input as A2aCallInput, progress, signal) : await discoverPeer(this.clients, input as A2aDiscoverInput, signal);
      } catch (error) {
        const failure = peerError(error);
        if (failure.code === "a2a_not_allowed") this.deps.log.warn({ tool: name, principal: acting.principal.id, credential_id: acting.credentialId, peer: peerHost(args) }, `MCP call refused: ${failure.message}`);
        result = errorResult(failure.toJSON());
      }
    } else {
      const tool = name as Parameters<MessagingTools["call"]>[0];
      try {
        await messaging!.checkInput(tool, args);
        acting = await this.#acting(name, args, caller, signal, (message) => new A2AError("UNAUTHENTICATED", message), true);
        result = await messaging!.call(tool, args ?? {}, acting, state.line, signal, progress);
      } catch (error) {
        const err = toA2AError(error);
        if (err.reason === "UNAUTHENTICATED") this.deps.log.warn({ tool: name, credential_id: acting.credentialId }, `MCP call refused: ${err.message}`);
        result = messagingError(err, state.line);
      }
    }
    this.#audit(name, args, acting, result, state, address, performance.now() - started);
    return result;
  }

  /** The caller itself, or (OpenCode credential) the turn whose tool call this is; none: `refuse`. */
  async #acting(tool: string, args: unknown, caller: Principal, signal: AbortSignal, refuse: (message: string) => Error, exclusive = false): Promise<Acting> {
    if (!isOpencodeCaller(caller)) return { principal: caller, credentialId: caller.credentialId };
    const found = await this.deps.attribution?.attribute(tool, args, signal, exclusive);
    if (found === undefined) throw refuse("no running task of this gateway made this call");
    if (found.rivals !== undefined) {
      // The answer depends on the calling session, and another session made the very same call at the same moment.
      // (The other sessions may be another principal's: they are not named.)
      throw new A2AError("SESSION_AMBIGUOUS", "another session made the same call at the same moment, so the calling session is not known: call again");
    }
    const c = found.caller;
    return { principal: c.principal, credentialId: caller.credentialId, taskId: c.taskId, contextId: c.contextId, sessionId: found.sessionId, routing: c.routing };
  }

  #audit(tool: string, args: unknown, acting: Acting, result: CallToolResult, state: RequestState, address: string | undefined, ms: number): void {
    const recorder = this.deps.recorder;
    if (recorder === undefined) return;
    const peerFailure = result.isError === true ? (result._meta?.[PEER_ERROR_META] as { code?: string } | undefined) : undefined;
    const failure = result.isError === true ? (peerFailure?.code ?? (result._meta?.[ERROR_META] as { reason?: string } | undefined)?.reason ?? "a2a_call_failed") : undefined;
    const peer = isPeerTool(tool) ? peerHost(args) : undefined;
    recorder.record({
      principal: acting.principal.id,
      credential_id: acting.credentialId,
      transport: "jsonrpc",
      line: state.line,
      method: `mcp/${tool}`,
      ...(peer === undefined ? {} : { peer }),
      ...(acting.taskId === undefined ? {} : { task_id: acting.taskId }),
      ...(acting.contextId === undefined ? {} : { context_id: acting.contextId }),
      ...(acting.sessionId === undefined ? {} : { session_id: acting.sessionId }),
      outcome: failure === undefined ? "ok" : "error",
      ...(failure === undefined ? {} : { error_reason: failure }),
      status: 200,
      duration_ms: Math.round(ms * 1000) / 1000,
      ...(address === undefined ? {} : { client_ip: address }),
      trace_id: state.trace.traceId,
    });
  }
}
