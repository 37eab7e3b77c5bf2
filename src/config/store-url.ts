// Where the store lives: parses A2A_TASK_STORE_DATABASE_URL (seed 000's SQLAlchemy-style URL form) into a file
// path or an in-memory database, and the one error type for storage start-up failures (bad URL, unsafe file,
// schema newer than the code). Runtime failures are A2AError("TASK_STORE_UNAVAILABLE") instead (database.ts).
import path from "node:path";

export const TASK_STORE_URL_VARIABLE = "A2A_TASK_STORE_DATABASE_URL";
export const DEFAULT_TASK_STORE_DATABASE_URL = "sqlite:///./opencode-a2a.db";
/** A2A_TASK_STORE_READERS default: reader threads of a SQLite file for listings. */
export const DEFAULT_TASK_STORE_READERS = 2;
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

export type StoreLocation = { kind: "memory" } | { kind: "file"; path: string } | { kind: "postgres"; url: string };

const SCHEMES = ["sqlite+aiosqlite:///", "sqlite:///"] as const;
const ACCEPTED_FORMS =
  "sqlite:///relative/path.db (relative to the working directory), sqlite:////absolute/path.db, " +
  "sqlite:///:memory: (the sqlite+aiosqlite:/// spelling is accepted too), postgres://user:password@host:5432/database " +
  "(or postgresql://; any node-postgres connection URL)";

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
  if (/^postgres(ql)?:\/\//i.test(value)) {
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      return fail("not a valid URL");
    }
    if (parsed.hostname === "" && !parsed.searchParams.has("host")) return fail("no server host");
    return { kind: "postgres", url: value };
  }
  if (scheme === undefined) return fail("unsupported scheme (SQLite or PostgreSQL)");
  const rest = value.slice(scheme.length);
  if (rest === ":memory:") return { kind: "memory" };
  if (rest === "" || rest === "/") return fail("no database path");
  if (/[?#\0]/.test(rest)) return fail("query strings, fragments and NUL bytes are not supported");
  if (rest.endsWith("/")) return fail("the path names a directory");
  // sqlite:////abs → rest "/abs" (absolute); sqlite:///rel → rest "rel" (relative to cwd).
  return { kind: "file", path: path.isAbsolute(rest) ? path.normalize(rest) : path.resolve(cwd, rest) };
}

/** A printable description of a location for the start-up log (a PostgreSQL URL without its password). */
export function describeStoreLocation(location: StoreLocation): string {
  if (location.kind === "postgres") return `postgresql ${redactUrl(location.url)}`;
  return location.kind === "memory" ? "sqlite (in-memory)" : `sqlite file ${location.path}`;
}
