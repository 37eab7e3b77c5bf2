// PostgreSQL for the tests: the vitest global setup starts one throwaway cluster per run (tools/postgres/cluster.ts)
// and hands its URL to every test process as A2A_TEST_POSTGRES_URL (or uses the one the environment gives). Each
// test that needs a database makes its own (freshDatabase), dropped afterwards. Without PostgreSQL binaries the
// PostgreSQL cases are skipped, except under CI=true, where the setup fails the run instead.
import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import pg from "pg";
import { openPostgres } from "../../src/storage/sql/postgres.js";
import type { SqlSchema } from "../../src/storage/sql/schema.js";

/** The cluster's URL (the `postgres` database), when PostgreSQL runs for this test run. */
export const postgresUrl: string | undefined = process.env.A2A_TEST_POSTGRES_URL || undefined;

/** A new, empty database on the test cluster; drop() removes it (closing what is still connected to it). */
export async function freshDatabase(): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  if (postgresUrl === undefined) throw new Error("no PostgreSQL for this test run (A2A_TEST_POSTGRES_URL)");
  const name = `a2a_${randomUUID().replace(/-/g, "").slice(0, 20)}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A fresh database on the test cluster opened as the gateway opens it (migrated), for a store suite's PostgreSQL
 * backend: `db` for the stores; close() ends the pool and drops the database; break() only ends the pool, so every
 * later call fails as on a lost server.
 */
export async function openTestPostgres(): Promise<{ db: Kysely<SqlSchema>; close(): Promise<void>; break(): Promise<void> }> {
  const database = await freshDatabase();
  const pg = await openPostgres(database.url);
  let ended = false;
  const end = async (): Promise<void> => {
    if (!ended) await pg.close();
    ended = true;
  };
  return {
    db: pg.db,
    close: async () => {
      await end();
      await database.drop();
    },
    break: end,
  };
}
