// src/storage/sql/prepared.ts: one module-level prepared query serves every database of the process, compiled once per
// database (its dialect's own SQL) and shared with that database's transactions; arguments (nulls too) are swapped into
// the compiled parameters, the query's own constants stay; an argument that is not a bound value is refused at build.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CamelCasePlugin, type Kysely } from "kysely";
import { openStorage, type Storage } from "../../src/storage/index.js";
import { PreparedQuery } from "../../src/storage/sql/prepared.js";
import type { SqlSchema } from "../../src/storage/sql/schema.js";
import { openTestPostgres, postgresUrl } from "../support/postgres.js";

let builds = 0;
const byKey = new PreparedQuery<[key: string], { key: string; value: string }>((db, key) => {
  builds++;
  return db.selectFrom("a2a_store_meta").select(["key", "value"]).where("key", "=", key).where("value", "!=", "a constant of the query");
});
const put = new PreparedQuery<[key: string, value: string | null], unknown>((db, key, value) => {
  builds++;
  return db.insertInto("a2a_store_meta").values({ key, value: value as string });
});

const sqlOf = (storage: Storage): Kysely<SqlSchema> => storage.sql;

describe("PreparedQuery", () => {
  const opened: Storage[] = [];
  let pg: Awaited<ReturnType<typeof openTestPostgres>> | undefined;
  beforeAll(async () => {
    opened.push(await openStorage({ backend: "memory" }), await openStorage({ backend: "memory" }));
    if (postgresUrl !== undefined) pg = await openTestPostgres();
  });
  afterAll(async () => {
    for (const s of opened) await s.close();
    await pg?.close();
  });

  it("compiles once per database, for its root instance and every transaction; each call binds its own arguments", async () => {
    const [a, b] = opened.map(sqlOf) as [Kysely<SqlSchema>, Kysely<SqlSchema>];
    builds = 0;
    await put.execute(a, "k1", "v1");
    await put.execute(a, "k2", "v2");
    await a.transaction().execute(async (trx) => {
      await put.execute(trx, "k3", "v3");
      expect(await byKey.execute(trx, "k3")).toEqual([{ key: "k3", value: "v3" }]);
    });
    expect(builds).toBe(2); // put and byKey, once each
    expect(await byKey.execute(a, "k1")).toEqual([{ key: "k1", value: "v1" }]);
    expect(await byKey.execute(a, "k2")).toEqual([{ key: "k2", value: "v2" }]);
    expect(await byKey.execute(a, "nope")).toEqual([]);
    expect(builds).toBe(2);
    // Another database: compiled for it once, and the first one's form is still used for the first.
    expect(await byKey.execute(b, "k1")).toEqual([]);
    await put.execute(b, "k1", "other");
    expect(await byKey.execute(b, "k1")).toEqual([{ key: "k1", value: "other" }]);
    expect(await byKey.execute(a, "k1")).toEqual([{ key: "k1", value: "v1" }]);
    expect(builds).toBe(4);
  });

  it("binds null arguments, and reports the affected rows of a write", async () => {
    const a = sqlOf(opened[0]!);
    // value is NOT NULL: the null reaches the database as a bound null, which refuses it.
    await expect(put.execute(a, "null-value", null)).rejects.toThrow(/NOT NULL/i);
    const result = await put.run(a, "counted", "x");
    expect(Number(result.numAffectedRows)).toBe(1);
  });

  it("refuses a query whose argument is not a bound value", async () => {
    const bad = new PreparedQuery<[column: string], unknown>((db) => db.selectFrom("a2a_store_meta").select("key"));
    await expect(bad.execute(sqlOf(opened[0]!), "key")).rejects.toThrow(/argument 0 is not a bound parameter/);
  });

  it("refuses a Kysely instance with plugins, before and after the query was compiled for its dialect", async () => {
    const a = sqlOf(opened[0]!);
    const camel = a.withPlugin(new CamelCasePlugin());
    const fresh = new PreparedQuery<[key: string], { key: string }>((db, key) => db.selectFrom("a2a_store_meta").select("key").where("key", "=", key));
    await expect(fresh.execute(camel, "k1")).rejects.toThrow(/has plugins \(CamelCasePlugin\)/);
    expect(await fresh.execute(a, "k1")).toEqual([{ key: "k1" }]);
    await expect(fresh.execute(camel, "k1")).rejects.toThrow(/has plugins \(CamelCasePlugin\)/);
  });

  it.runIf(postgresUrl !== undefined)("the same query on PostgreSQL compiles to its own SQL, next to SQLite's", async () => {
    const db = pg!.db;
    const sqlite = sqlOf(opened[0]!);
    builds = 0;
    await put.execute(db, "pg1", "v1");
    await db.transaction().execute(async (trx) => {
      expect(await byKey.execute(trx, "pg1")).toEqual([{ key: "pg1", value: "v1" }]);
    });
    expect(builds).toBe(2);
    expect(await byKey.execute(sqlite, "k1")).toEqual([{ key: "k1", value: "v1" }]);
    expect(await byKey.execute(db, "pg1")).toEqual([{ key: "pg1", value: "v1" }]);
    expect(builds).toBe(2);
  });
});
