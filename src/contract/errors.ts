// One error family for the whole gateway. Every A2AError names a reason from the generated error catalog (a reason
// the catalog does not declare is a compile error); transports only shape it (src/protocol/errors.ts).
import type { ErrorReason } from "../../generated/types/methods.js";

export type { ErrorReason };

/** One offending field of a request: `field` in the dotted form of the wire names (1.0 BadRequest field violation). */
export interface Violation {
  field: string;
  description: string;
}

export interface A2AErrorOptions {
  /** HTTP status that overrides the catalog's (e.g. 415 for a non-JSON body, which shares -32005). */
  httpStatus?: number;
  /** Extra REST response headers (Retry-After, WWW-Authenticate). */
  headers?: Record<string, string>;
  /** 1.0 BadRequest field violations. */
  fieldViolations?: Violation[];
}

export class A2AError extends Error {
  constructor(
    readonly reason: ErrorReason,
    message?: string,
    readonly data: Record<string, unknown> = {},
    readonly options: A2AErrorOptions = {},
  ) {
    super(message ?? reason);
    this.name = "A2AError";
  }

  /** True when the caller supplied a message of its own (else the catalog's default message is used). */
  get hasCustomMessage(): boolean {
    return this.message !== this.reason;
  }
}

/**
 * The one INVALID_PARAMS builder. `fields` are the offending fields, each a name (described by the message) or a
 * violation with its own description. error.data names the first (`field`) and, with `shape` "fields" (the default),
 * every one (`fields`); `data` adds to error.data and its keys win (`detail`, `request_id`, ...). The violations are
 * the 1.0 BadRequest field violations. Without fields, error.data is `data` alone and no BadRequest is sent.
 */
export function invalidParams(
  message: string,
  fields: string | readonly (string | Violation)[],
  data: Record<string, unknown> = {},
  shape: "fields" | "field" = "fields",
): A2AError {
  const violations = (typeof fields === "string" ? [fields] : fields).map((f) => (typeof f === "string" ? { field: f, description: message } : f));
  const first = violations[0];
  const named = first === undefined ? {} : shape === "field" ? { field: first.field } : { field: first.field, fields: violations.map((v) => v.field) };
  return new A2AError("INVALID_PARAMS", message, { ...named, ...data }, violations.length === 0 ? {} : { fieldViolations: violations });
}

/**
 * The INVALID_PARAMS error of a payload that failed its checks, worded "<what>: <first field> <its description>"
 * (the wording of the schema validators and of the codecs), naming every offending field.
 */
export function invalidPayload(what: string, violations: readonly Violation[]): A2AError {
  const first = violations[0]!;
  return invalidParams(`${what}: ${first.field} ${first.description}`, violations, { detail: first.description });
}

/** An error of another layer that knows its typed A2A shape (e.g. src/upstream's UpstreamError). */
export interface A2AConvertible {
  toA2AError(): A2AError;
}

function isConvertible(err: unknown): err is A2AConvertible {
  return err instanceof Error && typeof (err as Partial<A2AConvertible>).toA2AError === "function";
}

/** True for errors that map to a typed A2A error; anything else is an unexpected failure (INTERNAL_ERROR). */
export function isExpectedError(err: unknown): boolean {
  return err instanceof A2AError || isConvertible(err);
}

export function toA2AError(err: unknown): A2AError {
  if (err instanceof A2AError) return err;
  if (isConvertible(err)) return err.toA2AError();
  return new A2AError("INTERNAL_ERROR");
}
