// The event hub's frame filter (./hub.ts): what can be read from a raw /global/event frame without parsing it (its
// event type, whether it may name a subscribed session), the session an event belongs to, and the payload log's
// preview of a frame. The hub sits on the path of every event of every turn: most frames (`sync` copies, events of
// sessions nobody follows, types no turn reads) are dropped on these plain string scans before JSON.parse.
import type { PayloadLog } from "../logging/payloads.js";
import { isObject } from "../util/object.js";

/** OpenCode's `sync` frames on /global/event carry this; they are dropped before parsing (see ./sse.ts). */
export const SYNC_MARKER = '"payload":{"type":"sync"';

const SESSION_KEY = '"sessionID"';
const PAYLOAD_KEY = '"payload":{';
const ID_KEY = '"id":"';
const TYPE_KEY = '"type":"';

/**
 * Whether a raw frame may concern one of `sessions`: it names one of them as a `"sessionID"` value, or names one in a
 * way a plain scan cannot read (escapes, odd spacing). A frame that names none of them cannot be routed to a
 * session subscriber (sessionIdOf reads one of its `sessionID` members), so it need not be parsed when no wildcard
 * subscriber is attached.
 */
export function mayConcern(data: string, sessions: ReadonlyMap<string, unknown>): boolean {
  for (let at = data.indexOf(SESSION_KEY); at >= 0; at = data.indexOf(SESSION_KEY, at + SESSION_KEY.length)) {
    const open = at + SESSION_KEY.length;
    if (data.charCodeAt(open) !== 58 /* : */ || data.charCodeAt(open + 1) !== 34 /* " */) return true;
    const close = data.indexOf('"', open + 2);
    if (close < 0) return true;
    const id = data.slice(open + 2, close);
    if (id.includes("\\") || sessions.has(id)) return true;
  }
  return false;
}

/**
 * The event type of a raw /global/event frame when it can be read without parsing: the payload object opens with
 * its `type`, or with an `id` string and then its `type` (OpenCode's key order). Anything else → undefined (the
 * caller parses the frame).
 */
export function frameType(data: string): string | undefined {
  let at = data.indexOf(PAYLOAD_KEY);
  if (at < 0) return undefined;
  at += PAYLOAD_KEY.length;
  if (data.startsWith(ID_KEY, at)) {
    const close = data.indexOf('"', at + ID_KEY.length);
    if (close < 0 || data.charCodeAt(close - 1) === 92 /* \ */) return undefined;
    at = close + 1;
    if (data.charCodeAt(at) !== 44 /* , */) return undefined;
    at++;
  }
  if (!data.startsWith(TYPE_KEY, at)) return undefined;
  const start = at + TYPE_KEY.length;
  const close = data.indexOf('"', start);
  if (close < 0) return undefined;
  const type = data.slice(start, close);
  return type.includes("\\") ? undefined : type;
}

/** The session an OpenCode event belongs to (properties.sessionID | info.sessionID | part.sessionID). */
export function sessionIdOf(event: { properties?: unknown }): string | undefined {
  const p = event.properties;
  if (!isObject(p)) return undefined;
  if (typeof p.sessionID === "string") return p.sessionID;
  if (isObject(p.info) && typeof p.info.sessionID === "string") return p.info.sessionID;
  if (isObject(p.part) && typeof p.part.sessionID === "string") return p.part.sessionID;
  return undefined;
}

/** The payload log's preview of one raw frame (debug only: parses the frame a second time). */
export function previewFrame(log: PayloadLog, data: string): void {
  let frame: unknown;
  try {
    frame = JSON.parse(data);
  } catch {
    log.event(undefined, undefined, undefined, data);
    return;
  }
  const payload = isObject(frame) ? frame.payload : undefined;
  if (!isObject(payload)) {
    log.event(undefined, undefined, undefined, frame);
    return;
  }
  const directory = isObject(frame) && typeof frame.directory === "string" ? frame.directory : undefined;
  log.event(
    typeof payload.type === "string" ? payload.type : undefined,
    sessionIdOf(payload),
    directory,
    payload.properties === undefined ? payload : payload.properties,
  );
}
