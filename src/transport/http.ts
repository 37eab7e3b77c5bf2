// Response helpers shared by the transports.
import type { Context } from "koa";
import type { AccessLimits } from "../auth/limits.js";
import type { Call, MethodHandler } from "../operations/index.js";
import { EventStream, withRelease } from "../operations/stream.js";
import { EncodedJson } from "../protocol/encoded.js";

/**
 * A JSON body serialized once: with an object body Koa would stringify it twice (koa-compress asks for the
 * length before Koa writes it). An answer encoded once (src/protocol/encoded.ts) is written as its text.
 */
export function json(ctx: Context, value: unknown): void {
  ctx.type = "application/json";
  ctx.body = value instanceof EncodedJson ? value.text : JSON.stringify(value);
}

/**
 * Run a handler; a streaming call first takes one of the credential's stream slots (STREAM_LIMIT_EXCEEDED when none
 * is free), which the returned stream gives back when it closes, or which is given back at once on failure.
 */
export async function invoke(handler: MethodHandler, params: Record<string, unknown>, call: Call, limits: AccessLimits, streaming: boolean): Promise<unknown> {
  const release = streaming ? await limits.openStream(call.principal) : undefined;
  let result: unknown;
  try {
    result = await handler(params, call);
  } catch (err) {
    release?.();
    throw err;
  }
  if (release === undefined) return result;
  if (result instanceof EventStream) return withRelease(result, release);
  release();
  return result;
}
