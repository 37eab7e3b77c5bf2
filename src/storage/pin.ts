// better-sqlite3 12 on Node 24 aborts the process when a Statement object is garbage-collected: its destructor
// runs outside any V8 context and node::RemoveEnvironmentCleanupHook asserts (`(env) != nullptr`). It is fixed
// only in better-sqlite3 13, which needs Node 22+ (this project supports Node 20.19+). So every statement the
// store prepares, and every Database (which caches its transaction statements), stays reachable for the life of
// the process. They are few: one statement per distinct SQL text per database; pragmas go through exec(), which
// creates no Statement.
import type Database from "better-sqlite3";

const pinned = new Set<unknown>();

export function pinDatabase(db: Database.Database): Database.Database {
  pinned.add(db);
  return db;
}

export function prepare(db: Database.Database, sql: string): Database.Statement {
  const statement = db.prepare(sql);
  pinned.add(statement);
  return statement;
}
