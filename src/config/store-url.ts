// Where the store lives: parses A2A_TASK_STORE_DATABASE_URL (seed 000's SQLAlchemy-style URL form) into a file
// path or an in-memory database, and the one error type for storage start-up failures (bad URL, unsafe file,
// schema newer than the code). Runtime failures are A2AError("TASK_STORE_UNAVAILABLE") instead (database.ts).
import path from "node:path";

export const TASK_STORE_URL_VARIABLE = "A2A_TASK_STORE_DATABASE_URL";
export const DEFAULT_TASK_STORE_DATABASE_URL = "sqlite:///./opencode-a2a.db";
/** A2A_TASK_STORE_CACHE_SIZE default: tasks the SQLite store keeps parsed in memory. */
export const DEFAULT_TASK_CACHE_SIZE = 10_000;

export type StorageErrorCode = "INVALID_URL" | "INVALID_BACKEND" | "UNSAFE_PATH" | "SCHEMA_TOO_NEW" | "OPEN_FAILED";

/** A storage start-up failure: the process should refuse to start with this message. */
export class StorageError extends Error {
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "StorageError";
  }
}

export type StoreLocation = { kind: "memory" } | { kind: "file"; path: string };

const SCHEMES = ["sqlite+aiosqlite:///", "sqlite:///"] as const;
const ACCEPTED_FORMS =
  "sqlite:///relative/path.db (relative to the working directory), sqlite:////absolute/path.db, " +
  "sqlite:///:memory: (the sqlite+aiosqlite:/// spelling is accepted too)";

/**
 * The URL with its password (in the user info, or a `password` query parameter) replaced by `***`: a server URL may
 * carry one and it is never printed. Works on malformed URLs too (a password holding `@` or `/`): everything between
 * `user:` and the last `@` is hidden.
 */
export function redactUrl(url: string): string {
  const out = url.replace(/([?&]password=)[^&#]*/gi, "$1***");
  const m = /^([a-z][a-z0-9+.-]*:\/\/)(.*)@([^@]*)$/is.exec(out);
  if (m === null || !m[2]!.includes(":")) return out;
  return `${m[1]}${m[2]!.slice(0, m[2]!.indexOf(":"))}:***@${m[3]}`;
}

/** Parse a store URL. Relative paths resolve against `cwd`. Throws StorageError("INVALID_URL") naming the variable. */
export function parseStoreUrl(url: string = DEFAULT_TASK_STORE_DATABASE_URL, cwd: string = process.cwd()): StoreLocation {
  const fail = (why: string): never => {
    throw new StorageError("INVALID_URL", `${TASK_STORE_URL_VARIABLE}=${JSON.stringify(redactUrl(url))} is invalid: ${why}. Accepted forms: ${ACCEPTED_FORMS}`);
  };
  const value = url.trim();
  const scheme = SCHEMES.find((s) => value.toLowerCase().startsWith(s));
  if (/^postgres(ql)?:\/\//i.test(value)) return fail("PostgreSQL is not yet a backend of the whole store in this build (only the message and subtask-call stores have one); use SQLite");
  if (scheme === undefined) return fail("unsupported scheme (only local SQLite is supported)");
  const rest = value.slice(scheme.length);
  if (rest === ":memory:") return { kind: "memory" };
  if (rest === "" || rest === "/") return fail("no database path");
  if (/[?#\0]/.test(rest)) return fail("query strings, fragments and NUL bytes are not supported");
  if (rest.endsWith("/")) return fail("the path names a directory");
  // sqlite:////abs → rest "/abs" (absolute); sqlite:///rel → rest "rel" (relative to cwd).
  return { kind: "file", path: path.isAbsolute(rest) ? path.normalize(rest) : path.resolve(cwd, rest) };
}

/** A printable description of a location (no credentials exist in SQLite URLs; this is for the start-up log). */
export function describeStoreLocation(location: StoreLocation): string {
  return location.kind === "memory" ? "sqlite (in-memory)" : `sqlite file ${location.path}`;
}
