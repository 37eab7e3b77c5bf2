// Session state shared by every turn: bindings (owner, contextId, scopeKey) → OpenCode session, session owners
// (the first identity wins and keeps it), and pending claims on a client-named session (held for a TTL until the
// first successful turn finalizes them into ownership, or released on failure; expired claims stop blocking others).
// SQLite and in-memory implementations with the same behaviour; the clock is injectable (epoch milliseconds).
import type { StoreDatabase } from "./database.js";

export type Clock = () => number;

/** The binding scope: "" (default directory), "directory:<dir>" or "workspace:<id>" (workspace wins). */
export function sessionScopeKey(scope: { workspaceId?: string; directory?: string } = {}): string {
  if (scope.workspaceId !== undefined && scope.workspaceId !== "") return `workspace:${scope.workspaceId}`;
  if (scope.directory !== undefined && scope.directory !== "") return `directory:${scope.directory}`;
  return "";
}

export interface PendingClaim {
  sessionId: string;
  owner: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

export type ClaimOutcome =
  /** The session already belongs to this owner: no claim needed. */
  | { status: "owned" }
  /** This owner now holds the (new or renewed) pending claim. */
  | { status: "claimed"; expiresAt: number }
  /** Another identity owns the session, or holds an unexpired claim on it. */
  | { status: "forbidden"; reason: "owned" | "claimed" };

export interface SessionStore {
  getBinding(owner: string, contextId: string, scopeKey?: string): string | undefined;
  /** Upsert the binding. */
  setBinding(owner: string, contextId: string, scopeKey: string, sessionId: string): void;
  deleteBinding(owner: string, contextId: string, scopeKey?: string): boolean;
  /** Drop every binding to a session (e.g. it vanished upstream). Returns how many. */
  deleteBindingsForSession(sessionId: string): number;
  getOwner(sessionId: string): string | undefined;
  /** Record the owner unless one exists (first owner wins). Returns the effective owner. */
  setOwner(sessionId: string, owner: string): string;
  /** Take or renew a pending claim for `ttlSeconds` (A2A_PENDING_SESSION_CLAIM_TTL_SECONDS). */
  claim(sessionId: string, owner: string, ttlSeconds: number): ClaimOutcome;
  /** The unexpired claim on a session, if any. */
  getClaim(sessionId: string): PendingClaim | undefined;
  /** After a successful turn: make `owner` the owner (unless another identity owns it or holds a live claim) and drop its claim. */
  finalize(sessionId: string, owner: string): boolean;
  /** After a failed turn: drop `owner`'s claim. Returns whether one was dropped. */
  release(sessionId: string, owner: string): boolean;
  /** Delete expired claims. Returns how many. */
  purgeExpired(): number;
}

/**
 * The narrower view src/bridge/sessions.ts (`SessionRecords`) is written against: claim with a TTL in ms answering a
 * boolean, and releaseClaim. Structurally typed here so storage does not depend on the bridge.
 */
export interface SessionRecordsView {
  getBinding(owner: string, contextId: string, scopeKey: string): string | undefined;
  setBinding(owner: string, contextId: string, scopeKey: string, sessionId: string): void;
  deleteBinding(owner: string, contextId: string, scopeKey: string): void;
  getOwner(sessionId: string): string | undefined;
  setOwner(sessionId: string, owner: string): string;
  claim(sessionId: string, owner: string, ttlMs: number): boolean;
  releaseClaim(sessionId: string, owner: string): void;
}

export function sessionRecordsView(store: SessionStore): SessionRecordsView {
  return {
    getBinding: (owner, contextId, scopeKey) => store.getBinding(owner, contextId, scopeKey),
    setBinding: (owner, contextId, scopeKey, sessionId) => store.setBinding(owner, contextId, scopeKey, sessionId),
    deleteBinding: (owner, contextId, scopeKey) => void store.deleteBinding(owner, contextId, scopeKey),
    getOwner: (sessionId) => store.getOwner(sessionId),
    setOwner: (sessionId, owner) => store.setOwner(sessionId, owner),
    claim: (sessionId, owner, ttlMs) => store.claim(sessionId, owner, ttlMs / 1000).status !== "forbidden",
    releaseClaim: (sessionId, owner) => void store.release(sessionId, owner),
  };
}

const bindingKey = (owner: string, contextId: string, scopeKey: string): string => JSON.stringify([owner, contextId, scopeKey]);

// ---------------------------------------------------------------------------------------------------------------

export class MemorySessionStore implements SessionStore {
  private readonly bindings = new Map<string, { sessionId: string }>();
  private readonly owners = new Map<string, string>();
  private readonly claims = new Map<string, { owner: string; expiresAt: number }>();

  constructor(private readonly now: Clock = Date.now) {}

  getBinding(owner: string, contextId: string, scopeKey = ""): string | undefined {
    return this.bindings.get(bindingKey(owner, contextId, scopeKey))?.sessionId;
  }

  setBinding(owner: string, contextId: string, scopeKey: string, sessionId: string): void {
    this.bindings.set(bindingKey(owner, contextId, scopeKey), { sessionId });
  }

  deleteBinding(owner: string, contextId: string, scopeKey = ""): boolean {
    return this.bindings.delete(bindingKey(owner, contextId, scopeKey));
  }

  deleteBindingsForSession(sessionId: string): number {
    let n = 0;
    for (const [key, value] of this.bindings) {
      if (value.sessionId === sessionId) {
        this.bindings.delete(key);
        n++;
      }
    }
    return n;
  }

  getOwner(sessionId: string): string | undefined {
    return this.owners.get(sessionId);
  }

  setOwner(sessionId: string, owner: string): string {
    const existing = this.owners.get(sessionId);
    if (existing !== undefined) return existing;
    this.owners.set(sessionId, owner);
    return owner;
  }

  private liveClaim(sessionId: string): { owner: string; expiresAt: number } | undefined {
    const c = this.claims.get(sessionId);
    return c !== undefined && c.expiresAt > this.now() ? c : undefined;
  }

  claim(sessionId: string, owner: string, ttlSeconds: number): ClaimOutcome {
    const existing = this.owners.get(sessionId);
    if (existing !== undefined) return existing === owner ? { status: "owned" } : { status: "forbidden", reason: "owned" };
    const c = this.liveClaim(sessionId);
    if (c !== undefined && c.owner !== owner) return { status: "forbidden", reason: "claimed" };
    const expiresAt = this.now() + ttlSeconds * 1000;
    this.claims.set(sessionId, { owner, expiresAt });
    return { status: "claimed", expiresAt };
  }

  getClaim(sessionId: string): PendingClaim | undefined {
    const c = this.liveClaim(sessionId);
    return c === undefined ? undefined : { sessionId, owner: c.owner, expiresAt: c.expiresAt };
  }

  finalize(sessionId: string, owner: string): boolean {
    const existing = this.owners.get(sessionId);
    if (existing === undefined) {
      const c = this.liveClaim(sessionId);
      if (c !== undefined && c.owner !== owner) return false;
      this.owners.set(sessionId, owner);
    }
    if (this.claims.get(sessionId)?.owner === owner) this.claims.delete(sessionId);
    return (existing ?? owner) === owner;
  }

  release(sessionId: string, owner: string): boolean {
    if (this.claims.get(sessionId)?.owner !== owner) return false;
    return this.claims.delete(sessionId);
  }

  purgeExpired(): number {
    const now = this.now();
    let n = 0;
    for (const [id, c] of this.claims) {
      if (c.expiresAt <= now) {
        this.claims.delete(id);
        n++;
      }
    }
    return n;
  }
}

// ---------------------------------------------------------------------------------------------------------------

export class SqliteSessionStore implements SessionStore {
  constructor(
    private readonly store: StoreDatabase,
    private readonly now: Clock = Date.now,
  ) {}

  getBinding(owner: string, contextId: string, scopeKey = ""): string | undefined {
    return this.store.guard("sessions.getBinding", () => {
      const row = this.store
        .statement("SELECT session_id FROM a2a_session_bindings WHERE owner = ? AND context_id = ? AND scope_key = ?")
        .get(owner, contextId, scopeKey) as { session_id: string } | undefined;
      return row?.session_id;
    });
  }

  setBinding(owner: string, contextId: string, scopeKey: string, sessionId: string): void {
    this.store.guard("sessions.setBinding", () =>
      this.store
        .statement(
          `INSERT INTO a2a_session_bindings (owner, context_id, scope_key, session_id, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (owner, context_id, scope_key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at`,
        )
        .run(owner, contextId, scopeKey, sessionId, this.now()),
    );
  }

  deleteBinding(owner: string, contextId: string, scopeKey = ""): boolean {
    return this.store.guard(
      "sessions.deleteBinding",
      () =>
        this.store
          .statement("DELETE FROM a2a_session_bindings WHERE owner = ? AND context_id = ? AND scope_key = ?")
          .run(owner, contextId, scopeKey).changes > 0,
    );
  }

  deleteBindingsForSession(sessionId: string): number {
    return this.store.guard(
      "sessions.deleteBindingsForSession",
      () => this.store.statement("DELETE FROM a2a_session_bindings WHERE session_id = ?").run(sessionId).changes,
    );
  }

  private ownerOf(sessionId: string): string | undefined {
    const row = this.store.statement("SELECT owner FROM a2a_session_owners WHERE session_id = ?").get(sessionId) as
      | { owner: string }
      | undefined;
    return row?.owner;
  }

  private liveClaim(sessionId: string): { owner: string; expires_at: number } | undefined {
    return this.store
      .statement("SELECT owner, expires_at FROM a2a_pending_session_claims WHERE session_id = ? AND expires_at > ?")
      .get(sessionId, this.now()) as { owner: string; expires_at: number } | undefined;
  }

  private insertOwner(sessionId: string, owner: string): void {
    this.store
      .statement("INSERT INTO a2a_session_owners (session_id, owner, created_at) VALUES (?, ?, ?) ON CONFLICT (session_id) DO NOTHING")
      .run(sessionId, owner, this.now());
  }

  getOwner(sessionId: string): string | undefined {
    return this.store.guard("sessions.getOwner", () => this.ownerOf(sessionId));
  }

  setOwner(sessionId: string, owner: string): string {
    return this.store.transaction("sessions.setOwner", () => {
      this.insertOwner(sessionId, owner);
      return this.ownerOf(sessionId) ?? owner;
    });
  }

  claim(sessionId: string, owner: string, ttlSeconds: number): ClaimOutcome {
    return this.store.transaction("sessions.claim", (): ClaimOutcome => {
      const existing = this.ownerOf(sessionId);
      if (existing !== undefined) return existing === owner ? { status: "owned" } : { status: "forbidden", reason: "owned" };
      const c = this.liveClaim(sessionId);
      if (c !== undefined && c.owner !== owner) return { status: "forbidden", reason: "claimed" };
      const now = this.now();
      const expiresAt = now + ttlSeconds * 1000;
      this.store
        .statement(
          `INSERT INTO a2a_pending_session_claims (session_id, owner, updated_at, expires_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, updated_at = excluded.updated_at, expires_at = excluded.expires_at`,
        )
        .run(sessionId, owner, now, expiresAt);
      return { status: "claimed", expiresAt };
    });
  }

  getClaim(sessionId: string): PendingClaim | undefined {
    return this.store.guard("sessions.getClaim", () => {
      const c = this.liveClaim(sessionId);
      return c === undefined ? undefined : { sessionId, owner: c.owner, expiresAt: c.expires_at };
    });
  }

  finalize(sessionId: string, owner: string): boolean {
    return this.store.transaction("sessions.finalize", () => {
      const existing = this.ownerOf(sessionId);
      if (existing === undefined) {
        const c = this.liveClaim(sessionId);
        if (c !== undefined && c.owner !== owner) return false;
        this.insertOwner(sessionId, owner);
      }
      this.store.statement("DELETE FROM a2a_pending_session_claims WHERE session_id = ? AND owner = ?").run(sessionId, owner);
      return (existing ?? owner) === owner;
    });
  }

  release(sessionId: string, owner: string): boolean {
    return this.store.guard(
      "sessions.release",
      () => this.store.statement("DELETE FROM a2a_pending_session_claims WHERE session_id = ? AND owner = ?").run(sessionId, owner).changes > 0,
    );
  }

  purgeExpired(): number {
    return this.store.guard(
      "sessions.purgeExpired",
      () => this.store.statement("DELETE FROM a2a_pending_session_claims WHERE expires_at <= ?").run(this.now()).changes,
    );
  }
}
