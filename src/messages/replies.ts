// Request-response (`await_reply`): the answer a session gives to a delivered message. The caller subscribes to the
// session's events before prompting; this waits for the turn to end (OpenCode's idle), bounded by a timeout and the
// caller's signal, and reads the answer: the text of the session's newest assistant message (never reasoning).
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { Routing } from "../bridge/directory.js";
import type { Subscription } from "../upstream/hub.js";
import type { UpstreamClient } from "../upstream/client.js";
import { isObject } from "../util/object.js";

/** The event types that end a turn. */
export const TURN_END_TYPES: ReadonlySet<string> = new Set(["session.idle", "session.status", "session.error"]);

/**
 * Waits for the session's next idle; false when the time ran out, the signal aborted (or had already), the stream
 * ended first or the subscription failed (e.g. it overflowed: UPSTREAM_BACKPRESSURE). Never rejects.
 */
export async function turnEnded(sub: Subscription, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
  const idle = (async (): Promise<boolean> => {
    for await (const item of sub) {
      if (item.type !== "event") continue;
      const e = item.event as { type: string; properties?: { status?: { type?: string } } };
      if (e.type === "session.idle" || (e.type === "session.status" && e.properties?.status?.type === "idle")) return true;
    }
    return false;
  })();
  try {
    return (await within(idle, timeoutMs, signal)) ?? false;
  } finally {
    sub.close();
  }
}

/** `promise`'s value, or undefined when `ms` pass or `signal` aborts first (a rejection is undefined too: it is handled where the promise is made). */
export async function within<T>(promise: Promise<T | undefined>, ms: number, signal?: AbortSignal): Promise<T | undefined> {
  if (signal?.aborted === true) return undefined;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stop = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    onAbort = () => resolve(undefined);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise.catch(() => undefined), stop]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
  }
}

/** The text of the session's newest assistant message created at or after `sinceMs` (undefined when there is none). */
export async function latestAnswer(upstream: UpstreamClient, sessionId: string, routing: Routing, sinceMs: number): Promise<string | undefined> {
  const messages = await upstream.call(
    "sessionMessages",
    (c) => sdk.sessionMessages({ ...c, path: { sessionID: sessionId }, query: { ...c.query, limit: 20 } }),
    { ...routing, sessionId, validate: Array.isArray },
  );
  const list = messages as unknown[];
  for (let i = list.length - 1; i >= 0; i--) {
    const m = list[i];
    if (!isObject(m) || !isObject(m.info) || m.info.role !== "assistant") continue;
    const created = isObject(m.info.time) && typeof m.info.time.created === "number" ? m.info.time.created : 0;
    if (created < sinceMs) return undefined;
    const parts = Array.isArray(m.parts) ? m.parts : [];
    const text = parts
      .filter((p): p is { type: "text"; text: string } => isObject(p) && p.type === "text" && typeof p.text === "string" && p.ignored !== true && p.synthetic !== true)
      .map((p) => p.text)
      .join("");
    if (text !== "") return text;
  }
  return undefined;
}
