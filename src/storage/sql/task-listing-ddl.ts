// The schema of task listings at any table size (SQLite migration 13, PostgreSQL migration 12): an index for every
// order and filter ListTasks offers, and the counts behind its totals.
//
// Indexes. A listing is ordered by (status_timestamp DESC, id ASC) and filtered by owner (absent for an admin),
// context, state and a lower bound on status_timestamp; each filter set reads one index range in list order and
// stops after a page:
//   owner                    a2a_tasks_owner_ts          (kept from migration 1)
//   owner + context [+state] a2a_tasks_owner_context_ts  (kept from migration 1; the state is checked in the range
//                                                         of one context)
//   owner + state            a2a_tasks_owner_state_ts
//   all                      a2a_tasks_ts
//   context [+ state]        a2a_tasks_context_ts
//   state                    a2a_tasks_state_ts
// The restart sweep (TaskStore.orphans) reads a2a_tasks_unfinished, which holds only unfinished tasks (PostgreSQL
// has it since migration 9).
//
// Counts. a2a_task_counts holds, per state, how many tasks there are in all (kind 0), per owner (1), per context (2)
// and per owner and context (3); an unused part of the key is ''. Triggers on a2a_tasks keep it in the same
// transaction as the task write (whoever writes: this gateway, another one, a migration), so a total is the sum of
// at most one row per state (SQLite) or per state and shard (PostgreSQL) instead of a COUNT(*) over the tasks.
// PostgreSQL spreads each key over 16 shards (by the task id's hash) so gateways writing at once rarely wait on one
// row, and applies each write's changes in key order so two writes never lock the same rows in opposite orders.
// The per-context rows that reach zero are deleted (a context's tasks all move to a terminal state; without that
// every context would leave a zero row per state it passed through). The triggers are created before the counts are
// filled in from the existing tasks, within the migration's transaction.

const TERMINAL_LITERAL = "('completed', 'canceled', 'failed', 'rejected')";

/** The SQL condition of an unfinished task, as the partial index states it (a query must repeat it to use the index). */
export const UNFINISHED_CONDITION = `state NOT IN ${TERMINAL_LITERAL}`;

const INDEXES = `
CREATE INDEX IF NOT EXISTS a2a_tasks_owner_state_ts ON a2a_tasks (owner, state, status_timestamp DESC, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_ts ON a2a_tasks (status_timestamp DESC, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_context_ts ON a2a_tasks (context_id, status_timestamp DESC, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_state_ts ON a2a_tasks (state, status_timestamp DESC, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_unfinished ON a2a_tasks (id) WHERE ${UNFINISHED_CONDITION};
`;

const COUNTS_TABLE = (integer: string, small: string, suffix: string): string => `
CREATE TABLE IF NOT EXISTS a2a_task_counts (
  kind       ${small} NOT NULL,
  owner      TEXT NOT NULL,
  context_id TEXT NOT NULL,
  state      TEXT NOT NULL,
  shard      ${small} NOT NULL,
  n          ${integer} NOT NULL,
  PRIMARY KEY (kind, owner, context_id, state, shard)
)${suffix};
`;

/** The four count keys of a task row `t` (OLD or NEW), each as (kind, owner, context_id). */
const keys = (t: string): string[] => ["0, '', ''", `1, ${t}.owner, ''`, `2, '', ${t}.context_id`, `3, ${t}.owner, ${t}.context_id`];

const sqliteAdd = (t: string, delta: number): string =>
  `INSERT INTO a2a_task_counts (kind, owner, context_id, state, shard, n) VALUES ${keys(t)
    .map((k) => `(${k}, ${t}.state, 0, ${delta})`)
    .join(", ")} ON CONFLICT (kind, owner, context_id, state, shard) DO UPDATE SET n = n + excluded.n;`;

const sqliteDropZeros = (t: string): string =>
  [`2 AND owner = '' AND context_id = ${t}.context_id`, `3 AND owner = ${t}.owner AND context_id = ${t}.context_id`]
    .map((k) => `DELETE FROM a2a_task_counts WHERE kind = ${k} AND state = ${t}.state AND shard = 0 AND n = 0;`)
    .join("\n  ");

/** Fills the counts in from the tasks; `shard` is the shard expression (PostgreSQL) or undefined (SQLite: 0). */
const BACKFILL = (shard: string | undefined): string => {
  const value = shard ?? "0";
  const by = shard === undefined ? "" : `, ${shard}`;
  return `
DELETE FROM a2a_task_counts;
INSERT INTO a2a_task_counts (kind, owner, context_id, state, shard, n)
  SELECT 0, '', '', state, ${value}, COUNT(*) FROM a2a_tasks GROUP BY state${by}
  UNION ALL SELECT 1, owner, '', state, ${value}, COUNT(*) FROM a2a_tasks GROUP BY owner, state${by}
  UNION ALL SELECT 2, '', context_id, state, ${value}, COUNT(*) FROM a2a_tasks GROUP BY context_id, state${by}
  UNION ALL SELECT 3, owner, context_id, state, ${value}, COUNT(*) FROM a2a_tasks GROUP BY owner, context_id, state${by};
`;
};

export const SQLITE_TASK_LISTING = `${INDEXES}${COUNTS_TABLE("INTEGER", "INTEGER", " WITHOUT ROWID")}
CREATE TRIGGER IF NOT EXISTS a2a_tasks_count_insert AFTER INSERT ON a2a_tasks BEGIN
  ${sqliteAdd("NEW", 1)}
END;
CREATE TRIGGER IF NOT EXISTS a2a_tasks_count_update AFTER UPDATE OF state, owner, context_id ON a2a_tasks
  WHEN OLD.state IS NOT NEW.state OR OLD.owner IS NOT NEW.owner OR OLD.context_id IS NOT NEW.context_id BEGIN
  ${sqliteAdd("OLD", -1)}
  ${sqliteDropZeros("OLD")}
  ${sqliteAdd("NEW", 1)}
END;
CREATE TRIGGER IF NOT EXISTS a2a_tasks_count_delete AFTER DELETE ON a2a_tasks BEGIN
  ${sqliteAdd("OLD", -1)}
  ${sqliteDropZeros("OLD")}
END;
${BACKFILL(undefined)}`;

const PG_SHARD = "(hashtext(id) & 15)";

export const POSTGRES_TASK_LISTING = `${INDEXES}${COUNTS_TABLE("BIGINT", "SMALLINT", "")}
CREATE OR REPLACE FUNCTION a2a_tasks_count() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO a2a_task_counts AS c (kind, owner, context_id, state, shard, n)
    SELECT d.kind, d.owner, d.context_id, d.state, d.shard, sum(d.n) FROM (
      SELECT k.kind, CASE WHEN k.kind IN (1, 3) THEN t.owner ELSE '' END AS owner,
             CASE WHEN k.kind IN (2, 3) THEN t.context_id ELSE '' END AS context_id, t.state, t.shard, t.n
        FROM (VALUES (0::SMALLINT), (1::SMALLINT), (2::SMALLINT), (3::SMALLINT)) AS k (kind)
        CROSS JOIN (
          SELECT OLD.owner, OLD.context_id, OLD.state, (hashtext(OLD.id) & 15)::SMALLINT, -1::BIGINT WHERE TG_OP <> 'INSERT'
          UNION ALL
          SELECT NEW.owner, NEW.context_id, NEW.state, (hashtext(NEW.id) & 15)::SMALLINT, 1::BIGINT WHERE TG_OP <> 'DELETE'
        ) AS t (owner, context_id, state, shard, n)
    ) d
    GROUP BY d.kind, d.owner, d.context_id, d.state, d.shard
    ORDER BY d.kind, d.owner, d.context_id, d.state, d.shard
    ON CONFLICT (kind, owner, context_id, state, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  IF TG_OP <> 'INSERT' THEN
    DELETE FROM a2a_task_counts c
      WHERE c.kind IN (2, 3) AND c.context_id = OLD.context_id AND c.owner IN ('', OLD.owner) AND c.state = OLD.state
        AND c.shard = (hashtext(OLD.id) & 15) AND c.n = 0;
  END IF;
  RETURN NULL;
END
$fn$;
LOCK TABLE a2a_tasks IN SHARE ROW EXCLUSIVE MODE;
DROP TRIGGER IF EXISTS a2a_tasks_count_insert ON a2a_tasks;
DROP TRIGGER IF EXISTS a2a_tasks_count_update ON a2a_tasks;
DROP TRIGGER IF EXISTS a2a_tasks_count_delete ON a2a_tasks;
CREATE TRIGGER a2a_tasks_count_insert AFTER INSERT ON a2a_tasks FOR EACH ROW EXECUTE PROCEDURE a2a_tasks_count();
CREATE TRIGGER a2a_tasks_count_update AFTER UPDATE OF state, owner, context_id ON a2a_tasks FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.owner IS DISTINCT FROM NEW.owner OR OLD.context_id IS DISTINCT FROM NEW.context_id)
  EXECUTE PROCEDURE a2a_tasks_count();
CREATE TRIGGER a2a_tasks_count_delete AFTER DELETE ON a2a_tasks FOR EACH ROW EXECUTE PROCEDURE a2a_tasks_count();
${BACKFILL(PG_SHARD)}`;
