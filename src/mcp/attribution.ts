// Who made an MCP tool call that came with the OpenCode credential (A2A_MCP_TOKEN). The MCP request itself names no
// OpenCode session, message or tool call, so the call is matched with the OpenCode tool part that made it: a part
// of a session running a turn this gateway started (a live task's, or one a delivered message started: the
// callers), of the same tool (`<server>_a2a_call` inside OpenCode), in state `running`, with the same input. The part is looked for in the sessions' latest messages (OpenCode usually
// publishes it before it calls the server) and then on the upstream event hub for a bounded time. A matched part is
// claimed: it never vouches for a second call. No match: the call is nobody's and is refused.
//
// Limits: a call made by a subagent in a child session of a caller's session is not matched (only the caller's own
// session is followed); two calls of the same tool with the same input in flight at once in two callers' sessions
// are attributed to either (both were made with the same input in turns of this gateway; each principal still
// needs the scope).
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { Principal } from "../auth/index.js";
import type { Routing } from "../bridge/directory.js";
import type { EventHub, Subscription } from "../upstream/hub.js";
import type { UpstreamClient } from "../upstream/client.js";
import { boundedAdd } from "../util/lru.js";

/** A session running a turn the gateway started: a live task's (with its ids), or a delivered message's. */
export interface CallerSession {
  sessionId: string;
  /** Who its tool calls act for (the task's owner, the message's sender or acceptor). */
  principal: Principal;
  routing: Routing;
  taskId?: string;
  contextId?: string;
}

export interface AttributionDeps {
  /** The sessions running such turns now (the first entry of a session wins). */
  callers: () => readonly CallerSession[];
  hub: EventHub;
  upstream: UpstreamClient;
  /** How long to wait for the tool part to appear (default 3 s). */
  waitMs?: number;
}

/** The caller a call was matched with, and the OpenCode tool call (session + call id). */
export interface Attributed {
  caller: CallerSession;
  sessionId: string;
  callId: string;
}

interface ToolPart {
  type: "tool";
  sessionID: string;
  callID: string;
  tool: string;
  state: { status: string; input?: unknown };
}

const MESSAGES_LOOKED_AT = 4;
const CLAIMS_KEPT = 4096;

/** JSON with object keys sorted: inputs compare by value whatever their key order. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj)
      .filter((k) => obj[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(obj[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function isToolPart(part: unknown): part is ToolPart {
  if (typeof part !== "object" || part === null) return false;
  const p = part as Partial<ToolPart>;
  return p.type === "tool" && typeof p.sessionID === "string" && typeof p.callID === "string" && typeof p.tool === "string" && typeof p.state === "object" && p.state !== null;
}

/** OpenCode names an MCP tool `<server>_<tool>` (the gateway's server is `a2a` in its own config, any name in others). */
export function sameTool(partTool: string, tool: string): boolean {
  return partTool === tool || partTool.endsWith(`_${tool}`);
}

export class CallAttribution {
  readonly #deps: AttributionDeps;
  /** Claimed tool calls (`session/callID`), oldest first. */
  readonly #claimed = new Set<string>();

  constructor(deps: AttributionDeps) {
    this.#deps = deps;
  }

  /**
   * The caller whose OpenCode tool call this is, or undefined (none within the wait, or the request went away). With
   * `exclusive` (a tool whose answer depends on the calling session: the messaging tools), the other callers'
   * sessions are read once more after the match: when one of them holds the same call (same tool, same input,
   * running, unclaimed), the MCP request could be either's, so the match is given up and `rivals` names them.
   */
  async attribute(tool: string, input: unknown, signal?: AbortSignal, exclusive = false): Promise<(Attributed & { rivals?: string[] }) | undefined> {
    const bySession = new Map<string, CallerSession>();
    for (const c of this.#deps.callers()) if (!bySession.has(c.sessionId)) bySession.set(c.sessionId, c);
    if (bySession.size === 0) return undefined;
    const callers = [...bySession.values()];
    const wanted = canonical(input);
    /** A running, unclaimed part of this call in a caller's session (not claimed by looking). */
    const candidate = (part: unknown): Attributed | undefined => {
      if (!isToolPart(part) || part.state.status !== "running" || !sameTool(part.tool, tool)) return undefined;
      const caller = bySession.get(part.sessionID);
      if (caller === undefined || canonical(part.state.input ?? {}) !== wanted) return undefined;
      if (this.#claimed.has(`${part.sessionID}/${part.callID}`)) return undefined;
      return { caller, sessionId: part.sessionID, callId: part.callID };
    };
    const match = (part: unknown): Attributed | undefined => {
      const found = candidate(part);
      if (found !== undefined) this.#claim(`${found.sessionId}/${found.callId}`);
      return found;
    };
    // Subscribe first, then read the snapshots: a part published in between is seen by one or the other.
    const sub = this.#deps.hub.subscribe({ sessions: bySession.keys(), types: new Set(["message.part.updated"]) });
    const deadline = Date.now() + (this.#deps.waitMs ?? 3_000);
    let found: Attributed | undefined;
    try {
      found = (await this.#snapshots(callers, match, signal)) ?? (await this.#watch(sub, match, deadline, signal));
    } finally {
      sub.close();
    }
    if (found === undefined || !exclusive) return found;
    const others = callers.filter((c) => c.sessionId !== found.sessionId);
    const rivals: string[] = [];
    const collect = (part: unknown): undefined => {
      const rival = candidate(part);
      if (rival !== undefined) rivals.push(rival.sessionId);
      return undefined;
    };
    if (others.length > 0) await this.#snapshots(others, collect, signal);
    if (rivals.length === 0) return found;
    this.#claimed.delete(`${found.sessionId}/${found.callId}`);
    return { ...found, rivals: [...new Set(rivals)] };
  }

  #claim(key: string): void {
    boundedAdd(this.#claimed, key, CLAIMS_KEPT);
  }

  async #snapshots(callers: readonly CallerSession[], match: (part: unknown) => Attributed | undefined, signal?: AbortSignal): Promise<Attributed | undefined> {
    const lists = await Promise.all(
      callers.map((t) =>
        this.#deps.upstream
          .call(
            "sessionMessages",
            (c) => sdk.sessionMessages({ ...c, path: { sessionID: t.sessionId }, query: { ...c.query, limit: MESSAGES_LOOKED_AT } }),
            { ...t.routing, sessionId: t.sessionId, timeout: 2_000, ...(signal === undefined ? {} : { signal }) },
          )
          .catch(() => []),
      ),
    );
    for (const list of lists) {
      if (!Array.isArray(list)) continue;
      for (const message of list as { parts?: unknown[] }[]) for (const part of message?.parts ?? []) {
        const found = match(part);
        if (found !== undefined) return found;
      }
    }
    return undefined;
  }

  async #watch(sub: Subscription, match: (part: unknown) => Attributed | undefined, deadline: number, signal?: AbortSignal): Promise<Attributed | undefined> {
    // Bounded: at most one read per event until the deadline, and the deadline ends the wait.
    while (Date.now() < deadline && signal?.aborted !== true) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), Math.max(0, deadline - Date.now()));
      });
      try {
        const next = await Promise.race([sub.next(), timeout]);
        if (next === "timeout" || next.done === true) return undefined;
        const item = next.value;
        if (item.type !== "event" || item.event.type !== "message.part.updated") continue;
        const found = match((item.event.properties as { part?: unknown }).part);
        if (found !== undefined) return found;
      } finally {
        clearTimeout(timer);
      }
    }
    return undefined;
  }
}
