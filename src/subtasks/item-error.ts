// The error of one subtask item (`items[].error`): the error the gateway would answer for the item alone, as its
// reason, the code of that reason on the caller's line, the message and the offending field of the call's params.
import type { SubtaskItemError } from "../../generated/types/extensions.js";
import { errorEntry, type ProtocolLine } from "../contract/catalog.js";
import { A2AError, invalidParams } from "../contract/errors.js";
import { UpstreamError } from "../upstream/errors.js";

export function asA2AError(error: unknown): A2AError {
  if (error instanceof A2AError) return error;
  if (error instanceof UpstreamError) return error.toA2AError();
  return new A2AError("INTERNAL_ERROR", error instanceof Error ? error.message : String(error));
}

export function itemError(error: unknown, line: ProtocolLine): SubtaskItemError {
  const e = asA2AError(error);
  const entry = errorEntry(line, e.reason);
  const field = e.data.field;
  return { reason: e.reason, code: entry.code, message: e.hasCustomMessage ? e.message : entry.message, ...(typeof field === "string" ? { field } : {}) };
}

/** An INVALID_PARAMS about a field of an item's own metadata, renamed to the field's place in the call (`items.N.…`). */
export function prefixed(error: A2AError, at: string): A2AError {
  const field = `${at}${String(error.data.field)}`;
  const description = typeof error.data.detail === "string" ? error.data.detail : error.message;
  return error.reason === "INVALID_PARAMS" ? invalidParams(error.message, [{ field, description }], { detail: description }) : error;
}

/** Whether the item failed upstream (`failed`) rather than being refused by the checks (`rejected`). */
export const isUpstreamFailure = (error: unknown): boolean => error instanceof UpstreamError || (error instanceof A2AError && error.reason.startsWith("UPSTREAM_"));
