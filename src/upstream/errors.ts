// One taxonomy for everything that can go wrong between the gateway and OpenCode. Transport failures, HTTP
// statuses, malformed payloads and the errors OpenCode reports in-band (an assistant message's `info.error`, a
// `session.error` event) all become an UpstreamError with a kind, the A2A task state it implies, and the
// project's typed A2A error (spec/errors/project.tsp) a handler returns.
import { A2AError, invalidParams } from "../contract/errors.js";
import type {
  ApiError,
  ContentFilterError,
  ContextOverflowError,
  MessageAbortedError,
  MessageOutputLengthError,
  ProviderAuthError,
  StructuredOutputError,
  UnknownError,
} from "../../generated/opencode/types.gen.js";
import { isObject } from "../util/object.js";
import { responseHeader } from "./request.js";

export type UpstreamFailureKind =
  /** No connection: refused, reset, DNS, socket closed before a response. */
  | "unreachable"
  /** The per-call timeout (OPENCODE_TIMEOUT / OPENCODE_TIMEOUT_STREAM) or the event stream's idle timeout. */
  | "timeout"
  /** OpenCode answered with a non-2xx status. */
  | "http"
  /** A 2xx answer whose body is not what the contract says (not JSON, wrong shape). */
  | "payload"
  /** Our own fast-fail budget (OPENCODE_MAX_CONCURRENT_REQUESTS / _STREAMS) or a slow event subscriber. */
  | "backpressure"
  /** The turn was aborted (MessageAbortedError). */
  | "aborted"
  /** OpenCode reported an error of the model/provider in-band (info.error, session.error). */
  | "model";

/** The A2A task state a failure leads to. */
export type FailureTaskState = "failed" | "auth-required" | "canceled";

export type AssistantError =
  | ProviderAuthError
  | UnknownError
  | MessageOutputLengthError
  | MessageAbortedError
  | StructuredOutputError
  | ContextOverflowError
  | ContentFilterError
  | ApiError;

export interface UpstreamErrorInit {
  kind: UpstreamFailureKind;
  /** What was being done, e.g. the SDK operation name ("sessionPromptAsync") or "event-stream". */
  operation: string;
  detail: string;
  /** HTTP status OpenCode answered with (kind "http"), or the provider's status for in-band API errors. */
  status?: number;
  /** OpenCode's error name (`NotFoundError`, `APIError`, `SessionBusyError`, …) when it sent one. */
  upstreamName?: string;
  /** The session the call was about; a 404 on a session route becomes SESSION_NOT_FOUND. */
  sessionId?: string;
  timeoutSeconds?: number;
  retryAfterSeconds?: number;
  limit?: number;
  cause?: unknown;
}

export class UpstreamError extends Error {
  readonly kind: UpstreamFailureKind;
  readonly operation: string;
  readonly detail: string;
  readonly status: number | undefined;
  readonly upstreamName: string | undefined;
  readonly sessionId: string | undefined;
  readonly timeoutSeconds: number | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly limit: number | undefined;

  constructor(init: UpstreamErrorInit) {
    super(`${init.operation}: ${init.detail}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "UpstreamError";
    this.kind = init.kind;
    this.operation = init.operation;
    this.detail = init.detail;
    this.status = init.status;
    this.upstreamName = init.upstreamName;
    this.sessionId = init.sessionId;
    this.timeoutSeconds = init.timeoutSeconds;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.limit = init.limit;
  }

  /** The A2A task state this failure puts a task into. */
  get taskState(): FailureTaskState {
    if (this.kind === "aborted") return "canceled";
    if (this.kind === "model" && (this.upstreamName === "ProviderAuthError" || this.status === 401 || this.status === 403)) {
      return "auth-required";
    }
    return "failed";
  }

  /** The project's typed A2A error for this failure (shaped per protocol line by the transports). */
  toA2AError(): A2AError {
    switch (this.kind) {
      case "unreachable":
        return new A2AError("UPSTREAM_UNREACHABLE", undefined, { detail: this.detail });
      case "timeout":
        return new A2AError("UPSTREAM_TIMEOUT", undefined, { timeout_seconds: this.timeoutSeconds ?? null, detail: this.detail });
      case "payload":
        return new A2AError("UPSTREAM_PAYLOAD_ERROR", undefined, { detail: this.detail });
      case "backpressure": {
        const retry = this.retryAfterSeconds ?? 1;
        return new A2AError(
          "UPSTREAM_BACKPRESSURE",
          undefined,
          { limit: this.limit ?? null, retry_after_seconds: retry },
          { headers: { "Retry-After": String(retry) } },
        );
      }
      case "http":
        if (this.status === 404 && this.sessionId !== undefined) {
          return new A2AError("SESSION_NOT_FOUND", undefined, { session_id: this.sessionId });
        }
        if (this.status === 429) {
          const retry = this.retryAfterSeconds ?? 1;
          return new A2AError(
            "UPSTREAM_BACKPRESSURE",
            "OpenCode is rate limiting the gateway",
            { limit: null, retry_after_seconds: retry },
            { headers: { "Retry-After": String(retry) } },
          );
        }
        return new A2AError(
          "UPSTREAM_HTTP_ERROR",
          this.status === 409 ? "OpenCode session is busy" : undefined,
          { upstream_status: this.status ?? null, detail: this.detail },
          // A busy session is a conflict the caller can retry; every other upstream status is a bad gateway.
          this.status === 409 ? { httpStatus: 409 } : {},
        );
      case "aborted":
      case "model":
        return new A2AError("UPSTREAM_HTTP_ERROR", this.detail, {
          upstream_status: this.status ?? null,
          detail: this.upstreamName === undefined ? this.detail : `${this.upstreamName}: ${this.detail}`,
        });
    }
  }
}

/** The innermost `code` of an error chain (undici wraps socket errors as `TypeError: fetch failed` + cause). */
function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && isObject(current); depth++) {
    if (typeof current.code === "string") return current.code;
    current = current.cause;
  }
  return undefined;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = errorCode(error);
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return [error.message, cause, code].filter((s, i, all) => s && all.indexOf(s) === i).join(": ");
}

/** Classifies an exception thrown by fetch or by the generated client while calling OpenCode. */
export function classifyThrown(
  error: unknown,
  operation: string,
  context: { timedOut?: boolean; timeoutSeconds?: number; sessionId?: string } = {},
): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (error instanceof A2AError) throw error; // already the caller's typed error (a parameter refused below)
  const base = { operation, cause: error, ...(context.sessionId === undefined ? {} : { sessionId: context.sessionId }) };
  if (context.timedOut) {
    return new UpstreamError({
      ...base,
      kind: "timeout",
      detail: `no answer within ${context.timeoutSeconds ?? "?"} s`,
      ...(context.timeoutSeconds === undefined ? {} : { timeoutSeconds: context.timeoutSeconds }),
    });
  }
  if (error instanceof SyntaxError) return new UpstreamError({ ...base, kind: "payload", detail: `invalid JSON: ${error.message}` });
  // encodeURIComponent refused a parameter while the call's URL was built (a string holding an unpaired UTF-16
  // surrogate): the caller's input, never sent to OpenCode.
  if (error instanceof URIError) {
    throw invalidParams(`A parameter of ${operation} cannot be put in an OpenCode URL (it holds an unpaired UTF-16 surrogate)`, [], { detail: error.message });
  }
  if (error instanceof Error && error.name === "AbortError") {
    return new UpstreamError({ ...base, kind: "aborted", detail: "the call was canceled by the gateway" });
  }
  // Everything else fetch throws is a transport failure (refused, reset, DNS, socket closed mid-body);
  // the innermost code (ECONNREFUSED, UND_ERR_SOCKET, …) is kept in the detail.
  return new UpstreamError({ ...base, kind: "unreachable", detail: describe(error) });
}

/** Extracts OpenCode's error name and message from an error body (`{name, data:{message}}` or `{_tag, message}`). */
function bodyInfo(body: unknown): { name?: string; message?: string } {
  if (typeof body === "string") return body.trim() === "" ? {} : { message: body.slice(0, 500) };
  if (!isObject(body)) return {};
  const name = typeof body.name === "string" ? body.name : typeof body._tag === "string" ? body._tag : undefined;
  const data = isObject(body.data) ? body.data : undefined;
  const message =
    typeof data?.message === "string" ? data.message : typeof body.message === "string" ? body.message : undefined;
  return { ...(name === undefined ? {} : { name }), ...(message === undefined ? {} : { message }) };
}

function retryAfter(response: Response): number | undefined {
  const header = responseHeader(response, "retry-after");
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** Classifies a non-2xx answer of OpenCode. */
export function classifyHttp(response: Response, body: unknown, operation: string, sessionId?: string): UpstreamError {
  const info = bodyInfo(body);
  const retry = retryAfter(response);
  return new UpstreamError({
    kind: "http",
    operation,
    status: response.status,
    detail: `HTTP ${response.status}${info.message === undefined ? "" : `: ${info.message}`}`,
    ...(info.name === undefined ? {} : { upstreamName: info.name }),
    ...(sessionId === undefined ? {} : { sessionId }),
    ...(retry === undefined ? {} : { retryAfterSeconds: retry }),
  });
}

/** Classifies an error OpenCode reported in-band: an assistant message's `info.error` or a `session.error`. */
export function classifyAssistantError(error: AssistantError | undefined, operation: string, sessionId?: string): UpstreamError {
  const name = error?.name ?? "UnknownError";
  const data: Record<string, unknown> = isObject(error?.data) ? error.data : {};
  const message = typeof data.message === "string" ? data.message : name;
  const status = typeof data.statusCode === "number" ? data.statusCode : undefined;
  return new UpstreamError({
    kind: name === "MessageAbortedError" ? "aborted" : "model",
    operation,
    detail: message,
    upstreamName: name,
    ...(status === undefined ? {} : { status }),
    ...(sessionId === undefined ? {} : { sessionId }),
  });
}
