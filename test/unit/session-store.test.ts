// The session store (bindings, first owner wins, pending claims with a TTL, finalize/release/purge, the resolver's
// SessionRecords view) on every backend: memory, SQLite file and PostgreSQL (the test run's throwaway cluster, one
// fresh database per case). Then, on PostgreSQL, what several gateways sharing one database rely on: two stores on
// two separate pools racing for the same session — setOwner, claim, claim against finalize — and exactly one wins.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { A2AError } from "../../src/contract/errors.js";
import { openStorage, sessionRecordsView, SqlSessionStore, type SessionStore } from "../../src/storage/index.js";
import { openPostgres, type PostgresDatabase } from "../../src/storage/sql/postgres.js";
import { freshDatabase, openTestPostgres, postgresUrl } from "../support/postgres.js";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-session-store-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
let seq = 0;

/** A controllable clock (epoch ms). */
const clock = () => {
  let t = 1_700_000_000_000;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
};

interface Opened {
  store: SessionStore;
  close(): Promise<void>;
  /** Makes every later call fail as the database would. */
  break(): Promise<void>;
}

type Open = (now: () => number) => Promise<Opened>;
const backends: [string, Open][] = [
  [
    "memory",
    async (now) => {
      const storage = await openStorage({ backend: "memory", now });
      return { store: storage.sessions, close: () => storage.close(), break: () => storage.close() };
    },
  ],
  [
    "sqlite",
    async (now) => {
      const storage = await openStorage({ backend: "sqlite", url: `sqlite:///${path.join(tmp, `case-${++seq}.db`)}`, now });
      return { store: storage.sessions, close: () => storage.close(), break: () => storage.close() };
    },
  ],
];
if (postgresUrl !== undefined) {
  backends.push([
    "postgres",
    async (now) => {
      const pg = await openTestPostgres();      return {
        store: new SqlSessionStore(pg.db, now),

        close: pg.close,

        break: pg.break,
      };
    },
  ]);
}

describe.each(backends)("%s", (_name, open) => {
  let opened: Opened;
  let s: SessionStore;
  let time: ReturnType<typeof clock>;
  beforeEach(async () => {
    time = clock();
    opened = await open(time.now);
    s = opened.store;
  });
  afterEach(() => opened.close());

  it("binds (owner, contextId, scopeKey) to a session", async () => {
    expect(await s.getBinding("alice", "c1")).toBeUndefined();
    await s.setBinding("alice", "c1", "", "ses_a");
    await s.setBinding("alice", "c1", "directory:/w", "ses_b");
    await s.setBinding("alice", "c1", "workspace:ws1", "ses_c");
    await s.setBinding("bob", "c1", "", "ses_d");
    expect(await s.getBinding("alice", "c1")).toBe("ses_a");
    expect(await s.getBinding("alice", "c1", "directory:/w")).toBe("ses_b");
    expect(await s.getBinding("alice", "c1", "workspace:ws1")).toBe("ses_c");
    expect(await s.getBinding("bob", "c1", "")).toBe("ses_d");
    await s.setBinding("alice", "c1", "", "ses_a2");
    expect(await s.getBinding("alice", "c1", "")).toBe("ses_a2");
    expect(await s.deleteBinding("alice", "c1", "")).toBe(true);
    expect(await s.deleteBinding("alice", "c1", "")).toBe(false);
    expect(await s.getBinding("alice", "c1", "")).toBeUndefined();
    await s.setBinding("carol", "c9", "", "ses_b");
    expect(await s.deleteBindingsForSession("ses_b")).toBe(2);
    expect(await s.deleteBindingsForSession("ses_b")).toBe(0);
    expect(await s.getBinding("alice", "c1", "directory:/w")).toBeUndefined();
    expect(await s.getBinding("alice", "c1", "workspace:ws1")).toBe("ses_c");
  });

  it("keeps the first owner of a session", async () => {
    expect(await s.getOwner("ses_1")).toBeUndefined();
    expect(await s.setOwner("ses_1", "alice")).toBe("alice");
    expect(await s.setOwner("ses_1", "bob")).toBe("alice");
    expect(await s.getOwner("ses_1")).toBe("alice");
  });

  it("claims, renews, expires, finalizes and releases pending claims", async () => {
    expect(await s.claim("ses_1", "alice", 60)).toEqual({ status: "claimed", expiresAt: time.now() + 60_000 });
    expect(await s.claim("ses_1", "bob", 60)).toEqual({ status: "forbidden", reason: "claimed" });
    expect(await s.getClaim("ses_1")).toEqual({ sessionId: "ses_1", owner: "alice", expiresAt: time.now() + 60_000 });
    time.advance(30_000);
    expect(await s.claim("ses_1", "alice", 60)).toEqual({ status: "claimed", expiresAt: time.now() + 60_000 }); // renewed
    time.advance(59_999);
    expect((await s.claim("ses_1", "bob", 60)).status).toBe("forbidden");
    time.advance(1);
    expect(await s.getClaim("ses_1")).toBeUndefined(); // expired: no longer blocks
    expect((await s.claim("ses_1", "bob", 60)).status).toBe("claimed");
    expect(await s.finalize("ses_1", "alice")).toBe(false); // bob holds the live claim
    expect(await s.getOwner("ses_1")).toBeUndefined();
    expect((await s.getClaim("ses_1"))?.owner).toBe("bob"); // untouched by the refused finalize
    expect(await s.finalize("ses_1", "bob")).toBe(true);
    expect(await s.getOwner("ses_1")).toBe("bob");
    expect(await s.getClaim("ses_1")).toBeUndefined();
    expect(await s.claim("ses_1", "bob", 60)).toEqual({ status: "owned" });
    expect(await s.claim("ses_1", "alice", 60)).toEqual({ status: "forbidden", reason: "owned" });
    expect(await s.getClaim("ses_1")).toBeUndefined(); // a claim on an owned session writes nothing
    expect(await s.finalize("ses_1", "alice")).toBe(false);
    expect(await s.finalize("ses_1", "bob")).toBe(true);
    expect(await s.getOwner("ses_1")).toBe("bob");

    expect((await s.claim("ses_2", "alice", 10)).status).toBe("claimed");
    expect(await s.release("ses_2", "bob")).toBe(false);
    expect(await s.release("ses_2", "alice")).toBe(true);
    expect(await s.release("ses_2", "alice")).toBe(false);
    expect((await s.claim("ses_2", "bob", 10)).status).toBe("claimed");

    await s.claim("ses_3", "carol", 1);
    await s.claim("ses_4", "carol", 100);
    time.advance(5_000);
    expect(await s.purgeExpired()).toBe(1); // only ses_3 (1 s); ses_2 (10 s) and ses_4 (100 s) are live
    expect((await s.getClaim("ses_2"))?.owner).toBe("bob");
  });

  it("finalizes without a claim, over an expired claim of another, and not over another's live one", async () => {
    expect(await s.finalize("ses_free", "alice")).toBe(true);
    expect(await s.getOwner("ses_free")).toBe("alice");
    await s.claim("ses_old", "bob", 1);
    time.advance(1_000);
    expect(await s.finalize("ses_old", "alice")).toBe(true);
    expect(await s.getOwner("ses_old")).toBe("alice");
    expect(await s.getClaim("ses_old")).toBeUndefined();
    await s.claim("ses_live", "bob", 60);
    expect(await s.finalize("ses_live", "alice")).toBe(false);
    expect(await s.getClaim("ses_live")).toEqual({ sessionId: "ses_live", owner: "bob", expiresAt: time.now() + 60_000 });
  });

  it("purges only expired claims", async () => {
    await s.claim("ses_a", "x", 1);
    await s.claim("ses_b", "x", 10);
    time.advance(1_000);
    expect(await s.purgeExpired()).toBe(1);
    expect((await s.getClaim("ses_b"))?.owner).toBe("x");
    expect(await s.purgeExpired()).toBe(0);
  });

  it("serves the resolver's SessionRecords view", async () => {
    const view = sessionRecordsView(s);
    expect(await view.claim("ses_1", "alice", 5_000)).toBe(true);
    expect(await view.claim("ses_1", "bob", 5_000)).toBe(false);
    await view.releaseClaim("ses_1", "alice");
    expect(await view.claim("ses_1", "bob", 5_000)).toBe(true);
    time.advance(5_000);
    expect(await view.claim("ses_1", "alice", 5_000)).toBe(true);
    expect(await view.setOwner("ses_1", "alice")).toBe("alice");
    expect(await view.getOwner("ses_1")).toBe("alice");
    expect(await view.claim("ses_1", "bob", 5_000)).toBe(false);
    await view.setBinding("alice", "c", "", "ses_1");
    expect(await view.getBinding("alice", "c", "")).toBe("ses_1");
    await view.deleteBinding("alice", "c", "");
    expect(await view.getBinding("alice", "c", "")).toBeUndefined();
  });

  it("a database failure is TASK_STORE_UNAVAILABLE naming the operation", async () => {
    await opened.break();
    for (const [call, operation] of [
      [() => s.getBinding("alice", "c1"), "sessions.getBinding"],
      [() => s.setOwner("ses_1", "alice"), "sessions.setOwner"],
      [() => s.claim("ses_1", "alice", 5), "sessions.claim"],
      [() => s.finalize("ses_1", "alice"), "sessions.finalize"],
      [() => s.purgeExpired(), "sessions.purgeExpired"],
    ] as const) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(A2AError);
      expect(error).toMatchObject({ reason: "TASK_STORE_UNAVAILABLE", data: { operation } });
    }
  });
});

// Each case races the two gateways ROUNDS times, on a fresh session each round.
describe.skipIf(postgresUrl === undefined)("postgres: two gateways on one database", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let one: PostgresDatabase;
  let two: PostgresDatabase;
  let a: SqlSessionStore;
  let b: SqlSessionStore;
  const time = clock();
  beforeEach(async () => {
    database = await freshDatabase();
    one = await openPostgres(database.url);
    two = await openPostgres(database.url);
    a = new SqlSessionStore(one.db, time.now);
    b = new SqlSessionStore(two.db, time.now);
  });
  afterEach(async () => {
    await one.close();
    await two.close();
    await database.drop();
  });

  const ROUNDS = 40;

  it("setOwner: the first owner wins, and both gateways are told the same one", async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const [x, y] = await Promise.all([a.setOwner(`ses_o${i}`, "alice"), b.setOwner(`ses_o${i}`, "bob")]);
      expect(x).toBe(y);
      expect(["alice", "bob"]).toContain(x);
      expect(await a.getOwner(`ses_o${i}`)).toBe(x);
    }
  });

  it("claim: exactly one identity gets the claim", async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const [x, y] = await Promise.all([a.claim(`ses_c${i}`, "alice", 60), b.claim(`ses_c${i}`, "bob", 60)]);
      const won = [x, y].filter((o) => o.status === "claimed");
      expect(won).toHaveLength(1);
      expect([x, y].filter((o) => o.status === "forbidden")).toHaveLength(1);
      expect((await a.getClaim(`ses_c${i}`))?.owner).toBe(x.status === "claimed" ? "alice" : "bob");
    }
  });

  it("claim against finalize: never a claim granted on a session another identity came to own", async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const id = `ses_f${i}`;
      const [claimed, finalized] = await Promise.all([a.claim(id, "alice", 60), b.finalize(id, "bob")]);
      const owner = await a.getOwner(id);
      if (claimed.status === "claimed") {
        // Alice's claim stood: Bob could not become the owner.
        expect(finalized).toBe(false);
        expect(owner).toBeUndefined();
        expect((await a.getClaim(id))?.owner).toBe("alice");
      } else {
        expect(finalized).toBe(true);
        expect(owner).toBe("bob");
        expect(await a.getClaim(id)).toBeUndefined();
      }
    }
  });

  it("several gateways finalizing the same session: one owner, told truthfully", async () => {
    for (let i = 0; i < ROUNDS; i++) {
      const id = `ses_m${i}`;
      const [x, y] = await Promise.all([a.finalize(id, "alice"), b.finalize(id, "bob")]);
      expect([x, y].filter(Boolean)).toHaveLength(1);
      expect(await b.getOwner(id)).toBe(x ? "alice" : "bob");
    }
  });
});
