// Which OpenCode session a turn runs in (seed 000 "session binding"):
//   1. `metadata.shared.session.id` names one explicitly. A session already owned by another principal →
//      SESSION_FORBIDDEN; an unowned one is claimed for A2A_PENDING_SESSION_CLAIM_TTL_SECONDS and becomes the
//      caller's after its first successful turn (released on failure); an unknown one → SESSION_NOT_FOUND.
//   2. Otherwise (principal, contextId, directory|workspace) is bound to one session, created on first use —
//      exactly once even when the first requests of a context arrive concurrently.
// Turns on one session are serialized (OpenCode would queue a second prompt into the same turn otherwise).
import type { Logger } from "pino";
import { A2AError, invalidParams } from "../contract/errors.js";
import type { Principal } from "../auth/index.js";
import type { Metadata } from "../protocol/model.js";
import type { SessionCreateBody, UpstreamClient } from "../upstream/client.js";
import { routingKey, type Routing } from "./directory.js";
import { isObject } from "../util/object.js";

/** The persistence the resolver needs (src/storage implements it for SQLite, memory and PostgreSQL). */
export interface SessionRecords {
  getBinding(owner: string, contextId: string, scopeKey: string): Promise<string | undefined>;
  setBinding(owner: string, contextId: string, scopeKey: string, sessionId: string): Promise<void>;
  deleteBinding(owner: string, contextId: string, scopeKey: string): Promise<void>;
  getOwner(sessionId: string): Promise<string | undefined>;
  /** Records the owner unless one exists; returns the owner now on record. */
  setOwner(sessionId: string, owner: string): Promise<string>;
  /** Claims an unowned session for `ttlMs`; false when another principal owns it or holds an unexpired claim. */
  claim(sessionId: string, owner: string, ttlMs: number): Promise<boolean>;
  releaseClaim(sessionId: string, owner: string): Promise<void>;
}

/** What deciding who may use a session reads: the owner on record, else the holder of a pending claim. */
export interface SessionOwnership {
  getOwner(sessionId: string): Promise<string | undefined>;
  getClaim(sessionId: string): Promise<{ owner: string } | undefined>;
}

/**
 * Whether `principal` may see and use the session: an admin always; else its owner, or (unowned) the holder of its
 * pending claim (a task's first turn on a session the gateway had not seen). The one rule of the sessions methods
 * and the messages between sessions.
 */
export async function mayUseSession(records: SessionOwnership, principal: Pick<Principal, "id" | "admin">, sessionId: string): Promise<boolean> {
  if (principal.admin) return true;
  const owner = await records.getOwner(sessionId);
  if (owner !== undefined) return owner === principal.id;
  return (await records.getClaim(sessionId))?.owner === principal.id;
}

/** The items whose session `principal` may use (mayUseSession), in their order. */
export async function usableSessions<T>(records: SessionOwnership, principal: Pick<Principal, "id" | "admin">, items: readonly T[], sessionOf: (item: T) => string): Promise<T[]> {
  if (principal.admin) return [...items];
  const usable = await Promise.all(items.map((item) => mayUseSession(records, principal, sessionOf(item))));
  return items.filter((_, i) => usable[i]);
}

export interface ResolvedSession {
  sessionId: string;
  /** Explicit session claimed for this turn: call `confirm` after a successful turn, `release` after a failure. */
  claimed: boolean;
  /** The binding key, so a vanished session can be re-created once. */
  bindingKey?: { contextId: string; scopeKey: string };
}

/** `metadata.shared.session.id` of a message or request, if any. */
export function explicitSessionId(metadata: Metadata | undefined): string | undefined {
  const shared = isObject(metadata?.shared) ? metadata.shared : undefined;
  const session = isObject(shared?.session) ? shared.session : undefined;
  const id = session?.id;
  if (id === undefined) return undefined;
  if (typeof id !== "string" || !/^ses[\w-]{1,200}$/.test(id)) {
    const field = "metadata.shared.session.id";
    throw invalidParams("session id must look like an OpenCode session id (ses_…)", [{ field, description: "must look like ses_…" }], {}, "field");
  }
  return id;
}

export class SessionResolver {
  readonly #creating = new Map<string, Promise<string>>();
  readonly #locks = new Map<string, Promise<void>>();
  /** The claim renewals of running turns on claimed sessions: the timer, and the renewal in flight (if any). */
  readonly #renewals = new Map<string, { timer: ReturnType<typeof setInterval>; inFlight: Promise<void> }>();

  constructor(
    private readonly records: SessionRecords,
    private readonly upstream: UpstreamClient,
    private readonly claimTtlMs: number,
    /** Where a failed background claim renewal is logged. */
    private readonly log?: Pick<Logger, "warn">,
  ) {}

  async resolve(principal: Principal, contextId: string, metadata: Metadata | undefined, routing: Routing, title: string): Promise<ResolvedSession> {
    const explicit = explicitSessionId(metadata);
    if (explicit !== undefined) return this.#explicit(principal, explicit, routing);
    const scopeKey = routingKey(routing);
    const bound = await this.records.getBinding(principal.id, contextId, scopeKey);
    if (bound !== undefined) return { sessionId: bound, claimed: false, bindingKey: { contextId, scopeKey } };
    const key = JSON.stringify([principal.id, contextId, scopeKey]);
    let pending = this.#creating.get(key);
    if (pending === undefined) {
      pending = (async () => {
        const session = await this.upstream.createSession({ title }, routing);
        await this.records.setOwner(session.id, principal.id);
        await this.records.setBinding(principal.id, contextId, scopeKey, session.id);
        return session.id;
      })().finally(() => this.#creating.delete(key));
      this.#creating.set(key, pending);
    }
    return { sessionId: await pending, claimed: false, bindingKey: { contextId, scopeKey } };
  }

  /** The session `contextId` is bound to for the caller at `routing`, if any (no session is created). */
  bound(principal: Principal, contextId: string, routing: Routing): Promise<string | undefined> {
    return this.records.getBinding(principal.id, contextId, routingKey(routing));
  }

  /**
   * A new session of the caller from `body` (e.g. a subagent's child session: `parentID`, `agent`, `permission`). It
   * is the caller's at once and bound to no context.
   */
  async createOwned(principal: Pick<Principal, "id">, body: SessionCreateBody, routing: Routing): Promise<string> {
    const session = await this.upstream.createSession(body, routing);
    await this.records.setOwner(session.id, principal.id);
    return session.id;
  }

  /** Forgets a binding whose session vanished upstream (the next resolve creates a new one). */
  forget(principal: Principal, bindingKey: { contextId: string; scopeKey: string }): Promise<void> {
    return this.records.deleteBinding(principal.id, bindingKey.contextId, bindingKey.scopeKey);
  }

  async #explicit(principal: Principal, sessionId: string, routing: Routing): Promise<ResolvedSession> {
    const owner = await this.records.getOwner(sessionId);
    if (owner !== undefined) {
      if (owner !== principal.id) throw refused(principal, sessionId);
      return { sessionId, claimed: false };
    }
    if (!(await this.records.claim(sessionId, principal.id, this.claimTtlMs))) throw refused(principal, sessionId);
    try {
      await this.upstream.getSession(sessionId, routing);
    } catch (error) {
      await this.records.releaseClaim(sessionId, principal.id);
      throw error;
    }
    // The claim is renewed while the turn runs (it may wait on a question for longer than the TTL), so no other
    // principal can take the session over before the turn ends.
    // A renewal runs after the one before it has settled; a failed one is logged (the next tick tries again).
    const key = claimKey(principal, sessionId);
    if (this.#renewals.has(key)) clearInterval(this.#renewals.get(key)!.timer);
    const renewal = {
      inFlight: this.#renewals.get(key)?.inFlight ?? Promise.resolve(),
      timer: setInterval(() => {
        renewal.inFlight = renewal.inFlight
          .then(() => this.records.claim(sessionId, principal.id, this.claimTtlMs))
          .then(
            () => undefined,
            (error: unknown) => this.log?.warn({ err: String(error), sessionId }, "renewing the pending claim on a session failed"),
          );
      }, Math.max(100, this.claimTtlMs / 3)),
    };
    renewal.timer.unref();
    this.#renewals.set(key, renewal);
    return { sessionId, claimed: true };
  }

  /** After a successful turn on a claimed session: the caller owns it now. */
  async confirm(principal: Principal, sessionId: string): Promise<void> {
    await this.#stopRenewal(principal, sessionId);
    await this.records.setOwner(sessionId, principal.id);
    await this.records.releaseClaim(sessionId, principal.id);
  }

  async release(principal: Principal, sessionId: string): Promise<void> {
    await this.#stopRenewal(principal, sessionId);
    await this.records.releaseClaim(sessionId, principal.id);
  }

  /** Stops the renewal and waits for the one in flight, so no renewal lands after the claim is dropped. */
  async #stopRenewal(principal: Principal, sessionId: string): Promise<void> {
    const key = claimKey(principal, sessionId);
    const renewal = this.#renewals.get(key);
    if (renewal === undefined) return;
    clearInterval(renewal.timer);
    this.#renewals.delete(key);
    await renewal.inFlight;
  }

  /** Runs `fn` when every earlier turn on `sessionId` has finished. */
  async withLock<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#locks.get(sessionId) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((r) => (release = r));
    const chained = previous.then(() => current);
    this.#locks.set(sessionId, chained);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.#locks.get(sessionId) === chained) this.#locks.delete(sessionId);
    }
  }
}

const claimKey = (principal: Principal, sessionId: string): string => `${principal.id}\u0000${sessionId}`;

/** Another principal's session: forbidden for an admin (who sees every session), not found for anyone else. */
function refused(principal: Principal, sessionId: string): A2AError {
  return principal.admin
    ? new A2AError("SESSION_FORBIDDEN", undefined, { session_id: sessionId })
    : new A2AError("SESSION_NOT_FOUND", undefined, { session_id: sessionId });
}
