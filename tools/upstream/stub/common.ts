/**
 * Small pieces every part of the stub uses: OpenCode-style ids, typed events, the HTTP errors a handler throws and
 * the JSON answer, and the abortable waits a running turn is made of.
 */
import type { ServerResponse } from "node:http";
import type { Event } from "../../../generated/opencode/types.gen.js";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
let idTime = 0;
let idCounter = 0;

/** OpenCode-style id: prefix_ + 12 hex (ms * 0x1000 + counter; bit-inverted for sessions) + 14 base62. */
export function newId(prefix: "ses" | "msg" | "prt" | "evt" | "per" | "que", descending = false): string {
  const now = Date.now();
  if (now !== idTime) {
    idTime = now;
    idCounter = 0;
  }
  idCounter++;
  let value = BigInt(now) * 0x1000n + BigInt(idCounter);
  if (descending) value = ~value & 0xffffffffffffn;
  let rand = "";
  for (let i = 0; i < 14; i++) rand += BASE62[Math.floor(Math.random() * 62)];
  return `${prefix}_${value.toString(16).padStart(12, "0").slice(-12)}${rand}`;
}

type EventType = Event["type"];
type EventOf<K extends EventType> = Extract<Event, { type: K }>;

/** A typed event: the generated `Event` union checks every payload the stub emits. */
export function ev<K extends EventType>(type: K, properties: EventOf<K>["properties"]): EventOf<K> {
  return { id: newId("evt"), type, properties } as EventOf<K>;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ----- HTTP answers ------------------------------------------------------------------------------------------------

/** Thrown by a handler: the stub answers `status` with `body` as JSON. */
export interface HttpError {
  status: number;
  body: unknown;
}

export const notFound = (message: string): HttpError => ({ status: 404, body: { name: "NotFoundError", data: { message } } });
export const badRequest = (message: string): HttpError => ({
  status: 400,
  body: { name: "BadRequest", data: { message, kind: "Payload" } },
});
/** What the real server answers for a body it cannot decode. */
export const undecodable = (): HttpError => ({ status: 400, body: { _tag: "BadRequest" } });
/** The real server's answer to an internal failure (an unknown command or agent, sharing disabled). */
export const unexpected = (): HttpError => ({
  status: 500,
  body: { name: "UnknownError", data: { message: "Unexpected server error. Check server logs for details.", ref: "err_stub" } },
});

export function isHttpError(value: unknown): value is HttpError {
  return isObject(value) && typeof value.status === "number" && "body" in value;
}

export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), vary: "Origin", ...headers });
  res.end(text);
}

// ----- abortable waits ---------------------------------------------------------------------------------------------

export class Aborted extends Error {}

/** Resolves after ms; rejects with Aborted when signal aborts first. ms = Infinity waits for the abort. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(new Aborted());
  return new Promise((resolveSleep, reject) => {
    const onAbort = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      reject(new Aborted());
    };
    const timer = Number.isFinite(ms)
      ? setTimeout(() => {
          signal.removeEventListener("abort", onAbort);
          resolveSleep();
        }, ms)
      : undefined;
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Waits for promise; rejects with Aborted when signal aborts first. */
export function until<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Aborted());
  return new Promise((resolveUntil, reject) => {
    const onAbort = (): void => reject(new Aborted());
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolveUntil(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
