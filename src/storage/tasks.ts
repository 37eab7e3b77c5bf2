// The task store: compact canonical snapshots of the internal Task (src/protocol/model.ts) with the owner and the
// turn's binding (session, directory, accepted output modes), in SQLite or PostgreSQL with the same behaviour.
// - First terminal state wins: a save never overwrites a stored terminal state (one conditional UPDATE in SQL).
// - Listing is owner-scoped (undefined owner = admin, all tasks), ordered by status timestamp descending then id
//   ascending, with 0.3 offset pagination (limit/offset → total, hasMore) and 1.0 keyset pagination (pageSize/
//   pageToken → nextPageToken, totalSize). Page tokens are HMAC-signed (timestamp, id) cursors bound to the query's
//   filters, so tampered or foreign tokens are rejected with INVALID_PARAMS.
//
// The shared records and listing rules are in task-records.ts; the one implementation, for SQLite and PostgreSQL, in
// tasks-sql.ts.
export * from "./task-records.js";
export { SqlTaskStore, type SqlTaskStoreOptions } from "./tasks-sql.js";
