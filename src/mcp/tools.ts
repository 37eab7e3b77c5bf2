// The MCP tools themselves (spec: extensions/opencode/peers.tsp), whoever calls them: `a2a_call` sends a message to
// a peer through the gateway's PeerClients and reports the peer's work as progress lines (throttled) while it runs;
// `a2a_discover` summarizes the peer's card. Each gives a CallToolResult: the answer as text plus the contract shape
// as structuredContent, or, on failure, a tool error result (`isError: true`) whose text and `_meta` carry the
// PeerError {code, message}. The caller's abort cancels the outbound call.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { A2aCallInput, A2aCallResult, A2aDiscoverInput, PeerError } from "../../generated/types/extensions.js";
import { describeEvent, PeerCallError, peerError, type PeerClients } from "../client/index.js";
import { validate } from "../contract/validate.js";

/** Where a failed call's PeerError is in the result's `_meta`. */
export const PEER_ERROR_META = "opencode-a2a/peer_error";

/** Progress lines are sent at most this often (the last one before the result always goes out). */
export const PROGRESS_INTERVAL_MS = 250;
/** A progress line's text is cut to this many characters. */
const PROGRESS_MAX_CHARS = 2_000;

export type ToolName = "a2a_call" | "a2a_discover";

/** The peer host of a tool input's URL, for the audit log (never the path, query or user info). */
export function peerHost(input: unknown): string | undefined {
  const url = (input as { url?: unknown } | undefined)?.url;
  if (typeof url !== "string") return undefined;
  try {
    return new URL(url).host || undefined;
  } catch {
    return undefined;
  }
}

/** The tool input, checked against its contract schema (a2a_invalid_input naming each bad field). */
export async function checkInput<T>(tool: ToolName, input: unknown): Promise<T> {
  const id = tool === "a2a_call" ? "extensions/A2aCallInput" : "extensions/A2aDiscoverInput";
  const verdict = await validate(id, input ?? {});
  if (!verdict.ok) {
    const fields = verdict.violations.map((v) => `${v.field} ${v.description}`).join("; ");
    throw new PeerCallError("a2a_invalid_input", `invalid ${tool} input: ${fields}`);
  }
  return input as T;
}

/** A failure as a tool error result. */
export function errorResult(error: PeerError): CallToolResult {
  return {
    isError: true,
    content: [{ type: "text", text: `${error.code}: ${error.message}` }],
    _meta: { [PEER_ERROR_META]: error },
  };
}

/** Progress lines, at most one per PROGRESS_INTERVAL_MS: the lines in between are joined into the next one. */
class Throttle {
  #pending: string[] = [];
  #last = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly send: (line: string) => void) {}

  push(line: string): void {
    if (line === "") return;
    this.#pending.push(line);
    const wait = this.#last + PROGRESS_INTERVAL_MS - Date.now();
    if (wait <= 0) this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), wait);
  }

  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const text = this.#pending.join("");
    this.#pending = [];
    this.#last = Date.now();
    this.send(text.length > PROGRESS_MAX_CHARS ? `${text.slice(0, PROGRESS_MAX_CHARS)}…` : text);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** The text a model reads: the answer, or what the peer asks and how to answer it. */
function resultText(result: A2aCallResult): string {
  if (result.state === "input-required" || result.state === "auth-required") {
    const how = result.task_id === undefined ? "" : ` Answer with a2a_call and task_id "${result.task_id}".`;
    return `The peer needs ${result.state === "input-required" ? "input" : "authorization"} (${result.state}): ${result.question ?? result.text}.${how}`;
  }
  if (result.state === "completed" || result.state === "unknown") return result.text;
  return `The peer's task ended ${result.state}.${result.text === "" ? "" : `\n${result.text}`}`;
}

/**
 * a2a_call: the message to the peer, its progress as lines, its end as a result. The stream is read until the
 * peer's task is terminal or waits for input or authorization (a peer may keep the stream open while it waits, as
 * this gateway does), then closed.
 */
export async function callPeer(clients: PeerClients, input: A2aCallInput, progress: ((line: string) => void) | undefined, signal: AbortSignal): Promise<CallToolResult> {
  const throttle = progress === undefined ? undefined : new Throttle(progress);
  try {
    const peer = await clients.get(input.url, undefined, signal);
    const message = { text: input.message, ...(input.context_id === undefined ? {} : { contextId: input.context_id }), ...(input.task_id === undefined ? {} : { taskId: input.task_id }) };
    // PeerClient.send: the stream until the task is terminal or waits, then (A2A_CLIENT_POLLING_FALLBACK_*) polls.
    const answer = await peer.send(message, {
      signal,
      onEvent: (event, added) => {
        const line = describeEvent(event);
        if (line !== undefined) throttle?.push(`[${line}]\n`);
        throttle?.push(added);
      },
    });
    throttle?.flush();
    const result = peer.result(answer);
    return { content: [{ type: "text", text: resultText(result) }], structuredContent: result as unknown as Record<string, unknown> };
  } catch (error) {
    return errorResult(peerError(error).toJSON());
  } finally {
    throttle?.stop();
  }
}

/** a2a_discover: the peer's card, summarized. */
export async function discoverPeer(clients: PeerClients, input: A2aDiscoverInput, signal: AbortSignal): Promise<CallToolResult> {
  try {
    const summary = (await clients.get(input.url, undefined, signal)).summary();
    return { content: [{ type: "text", text: JSON.stringify(summary) }], structuredContent: summary as unknown as Record<string, unknown> };
  } catch (error) {
    return errorResult(peerError(error).toJSON());
  }
}
