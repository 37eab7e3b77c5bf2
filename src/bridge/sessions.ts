// Which OpenCode session a turn runs in (seed 000 "session binding"):
//   1. `metadata.shared.session.id` names one explicitly. A session already owned by another principal →
//      SESSION_FORBIDDEN; an unowned one is claimed for A2A_PENDING_SESSION_CLAIM_TTL_SECONDS and becomes the
//      caller's after its first successful turn (released on failure); an unknown one → SESSION_NOT_FOUND.
//   2. Otherwise (principal, contextId, directory|workspace) is bound to one session, created on first use —
//      exactly once even when the first requests of a context arrive concurrently.
// Turns on one session are serialized (OpenCode would queue a second prompt into the same turn otherwise).
import { A2AError, invalidParams } from "../contract/errors.js";
import type { Principal } from "../auth/index.js";
import type { Metadata } from "../protocol/model.js";
import type { SessionCreateBody, UpstreamClient } from "../upstream/client.js";
import { routingKey, type Routing } from "./directory.js";
import { isObject } from "../util/object.js";

/** The persistence the resolver needs (src/storage implements it for SQLite and memory). */
export interface SessionRecords {
  getBinding(owner: string, contextId: string, scopeKey: string): string | undefined;
  setBinding(owner: string, contextId: string, scopeKey: string, sessionId: string): void;
  deleteBinding(owner: string, contextId: string, scopeKey: string): void;
  getOwner(sessionId: string): string | undefined;
  /** Records the owner unless one exists; returns the owner now on record. */
  setOwner(sessionId: string, owner: string): string;
  /** Claims an unowned session for `ttlMs`; false when another principal holds an unexpired claim. */
  claim(sessionId: string, owner: string, ttlMs: number): boolean;
  releaseClaim(sessionId: string, owner: string): void;
}

/** What deciding who may use a session reads: the owner on record, else the holder of a pending claim. */
export interface SessionOwnership {
  getOwner(sessionId: string): string | undefined;
  getClaim(sessionId: string): { owner: string } | undefined;
}

/**
 * Whether `principal` may see and use the session: an admin always; else its owner, or (unowned) the holder of its
 * pending claim (a task's first turn on a session the gateway had not seen). The one rule of the sessions methods
 * and the messages between sessions.
 */
export function mayUseSession(records: SessionOwnership, principal: Pick<Principal, "id" | "admin">, sessionId: string): boolean {
  if (principal.admin) return true;
  const owner = records.getOwner(sessionId);
  if (owner !== undefined) return owner === principal.id;
  return records.getClaim(sessionId)?.owner === principal.id;
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
  readonly #renewals = new Map<string, { close(): void }>();

  constructor(
    private readonly records: SessionRecords,
    private readonly upstream: UpstreamClient,
    private readonly claimTtlMs: number,
  ) {}

  async resolve(principal: Principal, contextId: string, metadata: Metadata | undefined, routing: Routing, title: string): Promise<ResolvedSession> {
    const explicit = explicitSessionId(metadata);
    if (explicit !== undefined) return this.#explicit(principal, explicit, routing);
    const scopeKey = routingKey(routing);
    const bound = this.records.getBinding(principal.id, contextId, scopeKey);
    if (bound !== undefined) return { sessionId: bound, claimed: false, bindingKey: { contextId, scopeKey } };
    const key = JSON.stringify([principal.id, contextId, scopeKey]);
    let pending = this.#creating.get(key);
    if (pending === undefined) {
      pending = (async () => {
        const session = await this.upstream.createSession({ title }, routing);
        this.records.setOwner(session.id, principal.id);
        this.records.setBinding(principal.id, contextId, scopeKey, session.id);
        return session.id;
      })().finally(() => this.#creating.delete(key));
      this.#creating.set(key, pending);
    }
    return { sessionId: await pending, claimed: false, bindingKey: { contextId, scopeKey } };
  }

  /** The session `contextId` is bound to for the caller at `routing`, if any (no session is created). */
  bound(principal: Principal, contextId: string, routing: Routing): string | undefined {
    return this.records.getBinding(principal.id, contextId, routingKey(routing));
  }

  /**
   * A new session of the caller from `body` (e.g. a subagent's child session: `parentID`, `agent`, `permission`). It
   * is the caller's at once and bound to no context.
   */
  async createOwned(principal: Pick<Principal, "id">, body: SessionCreateBody, routing: Routing): Promise<string> {
    const session = await this.upstream.createSession(body, routing);
    this.records.setOwner(session.id, principal.id);
    return session.id;
  }

  /** Forgets a binding whose session vanished upstream (the next resolve creates a new one). */
  forget(principal: Principal, bindingKey: { contextId: string; scopeKey: string }): void {
    this.records.deleteBinding(principal.id, bindingKey.contextId, bindingKey.scopeKey);
  }

  async #explicit(principal: Principal, sessionId: string, routing: Routing): Promise<ResolvedSession> {
    const owner = this.records.getOwner(sessionId);
    if (owner !== undefined) {
      if (owner !== principal.id) throw refused(principal, sessionId);
      return { sessionId, claimed: false };
    }
    if (!this.records.claim(sessionId, principal.id, this.claimTtlMs)) throw refused(principal, sessionId);
    try {
      await this.upstream.getSession(sessionId, routing);
    } catch (error) {
      this.records.releaseClaim(sessionId, principal.id);
      throw error;
    }
    // The claim is renewed while the turn runs (it may wait on a question for longer than the TTL), so no other
    // principal can take the session over before the turn ends.
    const key = claimKey(principal, sessionId);
    this.#renewals.get(key)?.close();
    const renew = setInterval(() => this.records.claim(sessionId, principal.id, this.claimTtlMs), Math.max(100, this.claimTtlMs / 3));
    renew.unref();
    this.#renewals.set(key, { close: () => clearInterval(renew) });
    return { sessionId, claimed: true };
  }

  /** After a successful turn on a claimed session: the caller owns it now. */
  confirm(principal: Principal, sessionId: string): void {
    this.#stopRenewal(principal, sessionId);
    this.records.setOwner(sessionId, principal.id);
    this.records.releaseClaim(sessionId, principal.id);
  }

  release(principal: Principal, sessionId: string): void {
    this.#stopRenewal(principal, sessionId);
    this.records.releaseClaim(sessionId, principal.id);
  }

  #stopRenewal(principal: Principal, sessionId: string): void {
    const key = claimKey(principal, sessionId);
    this.#renewals.get(key)?.close();
    this.#renewals.delete(key);
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
