// The PostgreSQL connection of the stores (A2A_TASK_STORE_DATABASE_URL=postgres://… or postgresql://…): a node-postgres
// pool under Kysely, the schema migrated at open (./postgres-migrations.ts) under an advisory lock so gateways that
// start together migrate once, and a refusal of a schema newer than this build (as for SQLite).
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { StorageError } from "../../config/store-url.js";
import { POSTGRES_MIGRATIONS } from "./postgres-migrations.js";
import type { SqlSchema } from "./schema.js";

/** The schema name of the version table (as SQLite's `a2a_schema_version.name`). */
export const POSTGRES_SCHEMA_NAME = "opencode-a2a";
/** pg_advisory_xact_lock key of the migration (any fixed 64-bit number the operator's database does not use). */
const MIGRATION_LOCK = 0x0a2a_5ca1ab1en;

export const LATEST_POSTGRES_VERSION = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1]?.version ?? 0;

export interface PostgresOptions {
  /** Pool size (default 10). */
  maxConnections?: number;
  /** How long a query may wait for a free connection (ms, default 30000). */
  connectionTimeoutMs?: number;
}

export interface PostgresDatabase {
  db: Kysely<SqlSchema>;
  pool: pg.Pool;
  /** The schema version before and after the open. */
  migration: { from: number; to: number };
  close(): Promise<void>;
}

/** Applies the pending migrations in one transaction under the advisory lock; refuses a newer schema. */
export async function migratePostgres(db: Kysely<SqlSchema>): Promise<{ from: number; to: number }> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
    await sql`CREATE TABLE IF NOT EXISTS a2a_schema_version (name TEXT PRIMARY KEY, version INTEGER NOT NULL)`.execute(trx);
    const row = await sql<{ version: number }>`SELECT version FROM a2a_schema_version WHERE name = ${POSTGRES_SCHEMA_NAME}`.execute(trx);
    const from = row.rows[0]?.version ?? 0;
    if (from > LATEST_POSTGRES_VERSION) {
      throw new StorageError("SCHEMA_TOO_NEW", `The PostgreSQL schema is at version ${from}, newer than this build knows (${LATEST_POSTGRES_VERSION}): run a newer opencode-a2a`);
    }
    for (const migration of POSTGRES_MIGRATIONS) {
      if (migration.version <= from) continue;
      await sql.raw(migration.sql).execute(trx);
    }
    if (from < LATEST_POSTGRES_VERSION) {
      await sql`INSERT INTO a2a_schema_version (name, version) VALUES (${POSTGRES_SCHEMA_NAME}, ${LATEST_POSTGRES_VERSION})
                ON CONFLICT (name) DO UPDATE SET version = EXCLUDED.version`.execute(trx);
    }
    return { from, to: LATEST_POSTGRES_VERSION };
  });
}

/** Connects, checks the server answers, and migrates. Throws StorageError when it cannot. */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<PostgresDatabase> {
  const pool = new pg.Pool({ connectionString: url, max: options.maxConnections ?? 10, connectionTimeoutMillis: options.connectionTimeoutMs ?? 30_000 });
  // An idle client that loses its connection emits on the pool; without a listener that would end the process.
  pool.on("error", () => undefined);
  const db = new Kysely<SqlSchema>({ dialect: new PostgresDialect({ pool }) });
  try {
    const migration = await migratePostgres(db);
    return { db, pool, migration, close: () => db.destroy() };
  } catch (err) {
    await db.destroy().catch(() => undefined);
    if (err instanceof StorageError) throw err;
    throw new StorageError("OPEN_FAILED", `Cannot open the PostgreSQL task store: ${(err as Error).message}`, { cause: err });
  }
}
