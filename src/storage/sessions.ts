// Session state shared by every turn: bindings (owner, contextId, scopeKey) → OpenCode session, session owners
// (the first identity wins and keeps it), and pending claims on a client-named session (held for a TTL until the
// first successful turn finalizes them into ownership, or released on failure; expired claims stop blocking others).
// One Kysely implementation serves SQLite (the memory backend included) and PostgreSQL; the clock is injectable
// (epoch milliseconds). Gateways sharing one PostgreSQL database decide every contested question in single SQL
// statements (see SqlSessionStore): no call reads a row and then writes on what it read.
import type { Kysely } from "kysely";
import { int, storeCall } from "./sql/rows.js";
import { PreparedQuery } from "./sql/prepared.js";
import type { SqlSchema } from "./sql/schema.js";

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
  getBinding(owner: string, contextId: string, scopeKey?: string): Promise<string | undefined>;
  /** Upsert the binding. */
  setBinding(owner: string, contextId: string, scopeKey: string, sessionId: string): Promise<void>;
  deleteBinding(owner: string, contextId: string, scopeKey?: string): Promise<boolean>;
  /** Drop every binding to a session (e.g. it vanished upstream). Returns how many. */
  deleteBindingsForSession(sessionId: string): Promise<number>;
  getOwner(sessionId: string): Promise<string | undefined>;
  /** Record the owner unless one exists (first owner wins). Returns the effective owner. */
  setOwner(sessionId: string, owner: string): Promise<string>;
  /** Take or renew a pending claim for `ttlSeconds` (A2A_PENDING_SESSION_CLAIM_TTL_SECONDS). */
  claim(sessionId: string, owner: string, ttlSeconds: number): Promise<ClaimOutcome>;
  /** The unexpired claim on a session, if any. */
  getClaim(sessionId: string): Promise<PendingClaim | undefined>;
  /** After a successful turn: make `owner` the owner (unless another identity owns it or holds a live claim) and drop its claim. */
  finalize(sessionId: string, owner: string): Promise<boolean>;
  /** After a failed turn: drop `owner`'s claim. Returns whether one was dropped. */
  release(sessionId: string, owner: string): Promise<boolean>;
  /** Delete expired claims. Returns how many. */
  purgeExpired(): Promise<number>;
}

/**
 * The narrower view src/bridge/sessions.ts (`SessionRecords`) is written against: claim with a TTL in ms answering a
 * boolean, and releaseClaim. Structurally typed here so storage does not depend on the bridge.
 */
export interface SessionRecordsView {
  getBinding(owner: string, contextId: string, scopeKey: string): Promise<string | undefined>;
  setBinding(owner: string, contextId: string, scopeKey: string, sessionId: string): Promise<void>;
  deleteBinding(owner: string, contextId: string, scopeKey: string): Promise<void>;
  getOwner(sessionId: string): Promise<string | undefined>;
  setOwner(sessionId: string, owner: string): Promise<string>;
  claim(sessionId: string, owner: string, ttlMs: number): Promise<boolean>;
  releaseClaim(sessionId: string, owner: string): Promise<void>;
}

export function sessionRecordsView(store: SessionStore): SessionRecordsView {
  return {
    getBinding: (owner, contextId, scopeKey) => store.getBinding(owner, contextId, scopeKey),
    setBinding: (owner, contextId, scopeKey, sessionId) => store.setBinding(owner, contextId, scopeKey, sessionId),
    deleteBinding: async (owner, contextId, scopeKey) => void (await store.deleteBinding(owner, contextId, scopeKey)),
    getOwner: (sessionId) => store.getOwner(sessionId),
    setOwner: (sessionId, owner) => store.setOwner(sessionId, owner),
    claim: async (sessionId, owner, ttlMs) => (await store.claim(sessionId, owner, ttlMs / 1000)).status !== "forbidden",
    releaseClaim: async (sessionId, owner) => void (await store.release(sessionId, owner)),
  };
}

/**
 * How long finalize holds the claim it takes while it records the owner (ms): it is dropped at once when the owner
 * is recorded, or by the caller's release when recording fails; only a gateway dying in between leaves it to expire.
 */
const FINALIZE_LEASE_MS = 30_000;

const ownedOutcome = (existing: string, owner: string): ClaimOutcome => (existing === owner ? { status: "owned" } : { status: "forbidden", reason: "owned" });

/**
 * The session store of both SQL backends (SQLite, the memory backend's in-memory SQLite, and PostgreSQL), written
 * once with Kysely. Every statement is atomic on its own; contested decisions never rest on an earlier read:
 *   - owners are insert-only: setOwner is one INSERT … ON CONFLICT DO UPDATE (a no-op update) RETURNING the owner on
 *     record, so of racing callers exactly one inserts and every one gets the same answer; an owner once read stays;
 *   - a claim is taken or renewed by one INSERT … ON CONFLICT DO UPDATE … WHERE (the same owner, or an expired
 *     claim) RETURNING: the claims row is the per-session mutex, and of racing claimers exactly one gets a row back;
 *   - finalize first takes that mutex the same way (a short lease for the caller), and only then records the owner
 *     and drops the claim, so no claim is granted while an owner is being recorded; claim re-reads the owner after
 *     taking the mutex and drops its claim when an owner appeared in between.
 * No transaction spans an await (on SQLite the connection is shared with the synchronous stores).
 */
/** getBinding()'s read (every new task of a context): a prepared query (./sql/prepared.ts). */
const bindingOf = new PreparedQuery<[owner: string, contextId: string, scopeKey: string], { session_id: string }>((db, owner, contextId, scopeKey) =>
  db.selectFrom("a2a_session_bindings").select("session_id").where("owner", "=", owner).where("context_id", "=", contextId).where("scope_key", "=", scopeKey),
);

export class SqlSessionStore implements SessionStore {
  constructor(
    private readonly db: Kysely<SqlSchema>,
    private readonly now: Clock = Date.now,
  ) {}

  getBinding(owner: string, contextId: string, scopeKey = ""): Promise<string | undefined> {
    return storeCall("sessions.getBinding", async () => (await bindingOf.execute(this.db, owner, contextId, scopeKey))[0]?.session_id);
  }

  setBinding(owner: string, contextId: string, scopeKey: string, sessionId: string): Promise<void> {
    return storeCall("sessions.setBinding", async () => {
      const updatedAt = BigInt(this.now());
      await this.db
        .insertInto("a2a_session_bindings")
        .values({ owner, context_id: contextId, scope_key: scopeKey, session_id: sessionId, updated_at: updatedAt })
        .onConflict((oc) => oc.columns(["owner", "context_id", "scope_key"]).doUpdateSet({ session_id: sessionId, updated_at: updatedAt }))
        .execute();
    });
  }

  deleteBinding(owner: string, contextId: string, scopeKey = ""): Promise<boolean> {
    return storeCall("sessions.deleteBinding", async () => {
      const result = await this.db
        .deleteFrom("a2a_session_bindings")
        .where("owner", "=", owner)
        .where("context_id", "=", contextId)
        .where("scope_key", "=", scopeKey)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    });
  }

  deleteBindingsForSession(sessionId: string): Promise<number> {
    return storeCall("sessions.deleteBindingsForSession", async () => {
      const result = await this.db.deleteFrom("a2a_session_bindings").where("session_id", "=", sessionId).executeTakeFirst();
      return int(result.numDeletedRows);
    });
  }

  async #ownerOf(sessionId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom("a2a_session_owners").select("owner").where("session_id", "=", sessionId).executeTakeFirst();
    return row?.owner;
  }

  /** Inserts the owner unless one exists; the owner on record either way (one statement). */
  async #recordOwner(sessionId: string, owner: string): Promise<string> {
    const row = await this.db
      .insertInto("a2a_session_owners")
      .values({ session_id: sessionId, owner, created_at: BigInt(this.now()) })
      .onConflict((oc) => oc.column("session_id").doUpdateSet({ owner: (eb) => eb.ref("a2a_session_owners.owner") }))
      .returning("owner")
      .executeTakeFirstOrThrow();
    return row.owner;
  }

  /**
   * Takes or renews `owner`'s claim unless another identity holds a live one (one statement); the expiry now on
   * record, or undefined when refused. A renewal by the same owner sets `expiresAt`, even to an earlier time.
   */
  async #takeClaim(sessionId: string, owner: string, now: number, expiresAt: number, keepLater = false): Promise<number | undefined> {
    const row = await this.db
      .insertInto("a2a_pending_session_claims")
      .values({ session_id: sessionId, owner, updated_at: BigInt(now), expires_at: BigInt(expiresAt) })
      .onConflict((oc) =>
        oc
          .column("session_id")
          .doUpdateSet((eb) => ({
            owner: eb.ref("excluded.owner"),
            updated_at: eb.ref("excluded.updated_at"),
            expires_at: keepLater
              ? eb
                  .case()
                  .when(eb.and([eb("a2a_pending_session_claims.owner", "=", eb.ref("excluded.owner")), eb("a2a_pending_session_claims.expires_at", ">", eb.ref("excluded.expires_at"))]))
                  .then(eb.ref("a2a_pending_session_claims.expires_at"))
                  .else(eb.ref("excluded.expires_at"))
                  .end()
              : eb.ref("excluded.expires_at"),
          }))
          .where((eb) => eb.or([eb("a2a_pending_session_claims.owner", "=", eb.ref("excluded.owner")), eb("a2a_pending_session_claims.expires_at", "<=", BigInt(now))])),
      )
      .returning("expires_at")
      .executeTakeFirst();
    return row === undefined ? undefined : int(row.expires_at);
  }

  async #dropClaim(sessionId: string, owner: string): Promise<boolean> {
    const result = await this.db.deleteFrom("a2a_pending_session_claims").where("session_id", "=", sessionId).where("owner", "=", owner).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  getOwner(sessionId: string): Promise<string | undefined> {
    return storeCall("sessions.getOwner", () => this.#ownerOf(sessionId));
  }

  setOwner(sessionId: string, owner: string): Promise<string> {
    return storeCall("sessions.setOwner", () => this.#recordOwner(sessionId, owner));
  }

  claim(sessionId: string, owner: string, ttlSeconds: number): Promise<ClaimOutcome> {
    return storeCall("sessions.claim", async (): Promise<ClaimOutcome> => {
      const existing = await this.#ownerOf(sessionId);
      if (existing !== undefined) return ownedOutcome(existing, owner);
      const now = this.now();
      const expiresAt = await this.#takeClaim(sessionId, owner, now, now + ttlSeconds * 1000);
      // An owner recorded since the first read wins over the claim (finalize records one only while holding the
      // claims row, so after this re-read no other identity can become the owner while our claim is live).
      const since = await this.#ownerOf(sessionId);
      if (since !== undefined) {
        if (expiresAt !== undefined) await this.#dropClaim(sessionId, owner);
        return ownedOutcome(since, owner);
      }
      return expiresAt === undefined ? { status: "forbidden", reason: "claimed" } : { status: "claimed", expiresAt };
    });
  }

  getClaim(sessionId: string): Promise<PendingClaim | undefined> {
    return storeCall("sessions.getClaim", async () => {
      const row = await this.db
        .selectFrom("a2a_pending_session_claims")
        .select(["owner", "expires_at"])
        .where("session_id", "=", sessionId)
        .where("expires_at", ">", BigInt(this.now()))
        .executeTakeFirst();
      return row === undefined ? undefined : { sessionId, owner: row.owner, expiresAt: int(row.expires_at) };
    });
  }

  finalize(sessionId: string, owner: string): Promise<boolean> {
    return storeCall("sessions.finalize", async () => {
      const existing = await this.#ownerOf(sessionId);
      if (existing === undefined) {
        // Hold the claims row first (refused while another identity holds a live claim), then record the owner.
        const now = this.now();
        if ((await this.#takeClaim(sessionId, owner, now, now + FINALIZE_LEASE_MS, true)) === undefined) return false;
      }
      const effective = existing ?? (await this.#recordOwner(sessionId, owner));
      await this.#dropClaim(sessionId, owner);
      return effective === owner;
    });
  }

  release(sessionId: string, owner: string): Promise<boolean> {
    return storeCall("sessions.release", () => this.#dropClaim(sessionId, owner));
  }

  purgeExpired(): Promise<number> {
    return storeCall("sessions.purgeExpired", async () => {
      const result = await this.db.deleteFrom("a2a_pending_session_claims").where("expires_at", "<=", BigInt(this.now())).executeTakeFirst();
      return int(result.numDeletedRows);
    });
  }
}
