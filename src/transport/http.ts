// Response helpers shared by the transports.
import type { Context } from "koa";

/**
 * A JSON body serialized once: with an object body Koa would stringify it twice (koa-compress asks for the
 * length before Koa writes it).
 */
export function json(ctx: Context, value: unknown): void {
  ctx.type = "application/json";
  ctx.body = JSON.stringify(value);
}
