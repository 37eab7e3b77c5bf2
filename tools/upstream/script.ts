/**
 * One vocabulary for scripted model turns, shared by the scripted OpenAI-compatible model server
 * (tools/upstream/model-server.ts, which drives a real `opencode serve`) and the stub upstream
 * (tools/upstream/stub.ts, which imitates `opencode serve` itself). A test scripts the same replies for both,
 * so the e2e parity test can compare what the real server and the stub emit for one scenario.
 *
 * A "reply" answers one model request (one POST /v1/chat/completions). A user turn that calls a tool needs two
 * replies: the tool call, then the text that follows the tool result.
 */

/** Plain streamed assistant text. */
export interface TextReply {
  kind: "text";
  /** Content chunks, streamed in order (one SSE chunk each). */
  chunks: string[];
  /** Reasoning chunks streamed before the text (`delta.reasoning_content`). */
  reasoning?: string[];
  /** Delay before each chunk, in ms (default 0). */
  delayMs?: number;
  /** Token usage reported in the final usage chunk (defaults are derived from the chunk counts). */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens?: number };
}

/** One or more tool calls in one assistant step (`finish_reason: "tool_calls"`). */
export interface ToolReply {
  kind: "tool";
  calls: ToolCall[];
  delayMs?: number;
}

export interface ToolCall {
  /** OpenCode tool name: bash, read, write, edit, glob, grep, todowrite, question, task, webfetch, skill. */
  name: string;
  /** Tool arguments (JSON-encoded into `function.arguments`). */
  args: Record<string, unknown>;
  /** Call id; default `call_<n>`. */
  id?: string;
}

/** An HTTP error answer (use 4xx: OpenCode retries 5xx with backoff). */
export interface ErrorReply {
  kind: "error";
  status: number;
  message: string;
}

/**
 * A stream that sends `chunks` (default one) and then stalls until the client disconnects or `holdMs` passes
 * (then it finishes normally). For cancel/abort and kill-mid-stream tests.
 */
export interface HangReply {
  kind: "hang";
  chunks?: string[];
  holdMs?: number;
}

export type Reply = TextReply | ToolReply | ErrorReply | HangReply;

export const text = (chunks: string[] | string, extra: Omit<TextReply, "kind" | "chunks"> = {}): TextReply => ({
  kind: "text",
  chunks: typeof chunks === "string" ? [chunks] : chunks,
  ...extra,
});

export const tool = (name: string, args: Record<string, unknown>, extra: { id?: string; delayMs?: number } = {}): ToolReply => ({
  kind: "tool",
  calls: [{ name, args, ...(extra.id === undefined ? {} : { id: extra.id }) }],
  ...(extra.delayMs === undefined ? {} : { delayMs: extra.delayMs }),
});

export const failure = (status: number, message: string): ErrorReply => ({ kind: "error", status, message });

export const hang = (extra: Omit<HangReply, "kind"> = {}): HangReply => ({ kind: "hang", ...extra });

/** What a hang reply streams when it names no chunks. */
export const DEFAULT_HANG_CHUNKS = ["partial"];
/** The prompt tokens the scripted model server reports for every request. */
export const PROMPT_TOKENS = 10;

/** The token usage the scripted model server reports for a reply (prompt 10; completion = chunks / calls). */
export function replyUsage(reply: Reply): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  if (reply.kind === "text" && reply.usage !== undefined) {
    const { prompt_tokens, completion_tokens } = reply.usage;
    return { prompt_tokens, completion_tokens, total_tokens: reply.usage.total_tokens ?? prompt_tokens + completion_tokens };
  }
  const completion =
    reply.kind === "text"
      ? reply.chunks.length + (reply.reasoning?.length ?? 0)
      : reply.kind === "tool"
        ? reply.calls.length
        : reply.kind === "hang"
          ? (reply.chunks ?? DEFAULT_HANG_CHUNKS).length
          : 0;
  return { prompt_tokens: PROMPT_TOKENS, completion_tokens: completion, total_tokens: PROMPT_TOKENS + completion };
}
