// Outbound call failures as typed codes (spec: PeerErrorCode). Whatever the peer, the transport or the network did
// (an @a2a-js/sdk error of either line and binding, an HTTP status, a refused or failed connection, a timeout) becomes
// one PeerCallError with a code, a message and the known details; the message never carries a credential.
import type { PeerError, PeerErrorCode } from "../../generated/types/extensions.js";
import { AddressRefused } from "../util/network-policy.js";

export class PeerCallError extends Error {
  constructor(
    readonly code: PeerErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "PeerCallError";
  }

  toJSON(): PeerError {
    return { code: this.code, message: this.message, ...(Object.keys(this.details).length === 0 ? {} : { details: this.details }) };
  }
}

/** The A2A error names (@a2a-js/sdk error classes, the peer's `reason`) and what they mean here. */
const BY_REASON: Record<string, PeerErrorCode> = {
  TaskNotFoundError: "a2a_task_not_found",
  TASK_NOT_FOUND: "a2a_task_not_found",
  TaskNotCancelableError: "a2a_unsupported_operation",
  TASK_NOT_CANCELABLE: "a2a_unsupported_operation",
  UnsupportedOperationError: "a2a_unsupported_operation",
  UNSUPPORTED_OPERATION: "a2a_unsupported_operation",
  PushNotificationNotSupportedError: "a2a_unsupported_operation",
  ContentTypeNotSupportedError: "a2a_invalid_input",
  RequestMalformedError: "a2a_invalid_input",
  InvalidAgentResponseError: "a2a_peer_protocol_error",
  VersionNotSupportedError: "a2a_unsupported_operation",
  ExtensionSupportRequiredError: "a2a_unsupported_operation",
};

const RETRYABLE_STATUS = new Set([408, 425, 429, 502, 503, 504]);
const RETRYABLE_NET = new Set(["ECONNRESET", "EPIPE", "ETIMEDOUT", "EAI_AGAIN", "UND_ERR_SOCKET", "UND_ERR_CLOSED"]);
const UNREACHABLE_NET = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"]);

/** An HTTP status as a code. */
export function codeOfStatus(status: number): PeerErrorCode {
  if (status === 401) return "a2a_peer_auth_failed";
  if (status === 403) return "a2a_peer_permission_denied";
  if (status === 404) return "a2a_unsupported_operation";
  if (RETRYABLE_STATUS.has(status)) return "a2a_retryable_unavailable";
  if (status >= 500) return "a2a_unavailable";
  if (status >= 400) return "a2a_invalid_input";
  return "a2a_peer_protocol_error";
}

/** The errors a failure wraps (`cause` chains), outermost first. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e: unknown = error; e !== undefined && e !== null && chain.length < 8; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

/**
 * Any failure of an outbound call as a PeerCallError. `timedOut`: the call's own deadline aborted it (an abort is
 * otherwise the caller's cancel, reported as a2a_call_failed).
 */
export function peerError(error: unknown, timedOut = false): PeerCallError {
  const chain = causes(error);
  for (const e of chain) if (e instanceof PeerCallError) return e;
  for (const e of chain) {
    if (e instanceof AddressRefused) return new PeerCallError("a2a_target_refused", e.message, { host: e.host, address: e.address });
  }
  const first = chain[0] as { name?: string; message?: string } | undefined;
  if (timedOut || chain.some((e) => (e as { name?: string }).name === "TimeoutError")) {
    return new PeerCallError("a2a_timeout", "the peer did not answer in time");
  }
  for (const e of chain) {
    const err = e as { name?: string; reason?: string; statusCode?: number; envelopeCode?: number; code?: unknown; message?: string };
    const reason = err.reason ?? err.name;
    if (reason !== undefined && BY_REASON[reason] !== undefined) {
      return new PeerCallError(BY_REASON[reason]!, err.message ?? reason, { reason, ...(err.statusCode === undefined ? {} : { status: err.statusCode }) });
    }
    if (typeof err.statusCode === "number") return new PeerCallError(codeOfStatus(err.statusCode), err.message ?? `HTTP ${err.statusCode}`, { status: err.statusCode });
    // "HTTP error for <url>! Status: 401 …" / "… : 503" (the SDK's message for a non-A2A error answer)
    const status = /Status:? (\d{3})\b/.exec(err.message ?? "")?.[1] ?? /: (\d{3})\b/.exec(err.message ?? "")?.[1];
    if (status !== undefined && /HTTP|Failed to fetch|status/i.test(err.message ?? "")) {
      return new PeerCallError(codeOfStatus(Number(status)), err.message ?? `HTTP ${status}`, { status: Number(status) });
    }
    if (typeof err.envelopeCode === "number") return new PeerCallError("a2a_peer_protocol_error", err.message ?? `JSON-RPC error ${err.envelopeCode}`, { jsonrpc_code: err.envelopeCode });
    if (typeof err.code === "string" && RETRYABLE_NET.has(err.code)) return new PeerCallError("a2a_retryable_unavailable", `the connection to the peer failed (${err.code})`, { errno: err.code });
    if (typeof err.code === "string" && UNREACHABLE_NET.has(err.code)) return new PeerCallError("a2a_unavailable", `the peer cannot be reached (${err.code})`, { errno: err.code });
  }
  if (first?.name === "AbortError") return new PeerCallError("a2a_call_failed", "the call was canceled");
  if (first instanceof SyntaxError) return new PeerCallError("a2a_peer_protocol_error", `the peer's answer is not JSON (${first.message})`);
  return new PeerCallError("a2a_call_failed", first?.message ?? String(error));
}
