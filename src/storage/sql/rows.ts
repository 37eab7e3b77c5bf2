// Reading the rows of the stores written once for both SQL backends: SQLite gives integers as bigint (./sqlite-dialect.ts),
// PostgreSQL gives BIGINT and COUNT(*) as decimal strings and SMALLINT as numbers. Flags are stored as 0/1 integers
// on both (better-sqlite3 binds no booleans). Every failure of a store call becomes TASK_STORE_UNAVAILABLE naming
// the operation, as the SQLite stores' guard does.
import { storeUnavailable } from "../database.js";

type Integer = bigint | number | string;

/** A 64-bit integer column. */
export const big = (v: Integer): bigint => (typeof v === "bigint" ? v : BigInt(v));
export const bigOrNull = (v: Integer | null): bigint | null => (v === null ? null : big(v));
/** A count or a small integer. */
export const int = (v: Integer): number => Number(v);
/** A 0/1 flag column. */
export const flag = (v: Integer | boolean): boolean => v === true || Number(v) === 1;
export const bit = (b: boolean): number => (b ? 1 : 0);

/** Runs one store call, turning any database failure into TASK_STORE_UNAVAILABLE (`operation` names it). */
export async function storeCall<T>(operation: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw storeUnavailable(operation, err);
  }
}
