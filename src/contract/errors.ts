// One error family for the whole gateway. Every A2AError names a reason from the generated error catalog;
// transports only shape it (src/protocol/errors.ts).
export interface A2AErrorOptions {
  /** HTTP status that overrides the catalog's (e.g. 415 for a non-JSON body, which shares -32005). */
  httpStatus?: number;
  /** Extra REST response headers (Retry-After, WWW-Authenticate). */
  headers?: Record<string, string>;
  /** 1.0 BadRequest field violations. */
  fieldViolations?: { field: string; description: string }[];
}

export class A2AError extends Error {
  constructor(
    readonly reason: string,
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
