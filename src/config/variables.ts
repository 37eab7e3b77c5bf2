// The kinds of configuration variable (./index.ts declares every variable once with them): each parses one
// environment value into its typed form or throws a message naming the variable and what it expects.
import { catalog } from "../contract/catalog.js";

export type Env = Record<string, string | undefined>;

export interface Variable<T> {
  name: string;
  /** Default as documented in the README (`—` when unset). */
  defaultText: string;
  description: string;
  secret?: boolean;
  parse(raw: string | undefined, env: Env): T;
}

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function fail(name: string, raw: string, expected: string): never {
  throw new Error(`${name}=${JSON.stringify(raw)}: expected ${expected}`);
}

export function str(name: string, def: string | undefined, description: string, secret = false): Variable<string | undefined> {
  return {
    name,
    defaultText: def ?? "—",
    description,
    secret,
    parse: (raw) => (raw === undefined || raw.trim() === "" ? def : raw.trim()),
  };
}

export function bounded(pattern: RegExp, what: string) {
  return (name: string, def: number, min: number, max: number, description: string): Variable<number> => ({
    name,
    defaultText: String(def),
    description,
    parse(raw) {
      if (raw === undefined || raw.trim() === "") return def;
      const v = raw.trim();
      const n = Number(v);
      if (!pattern.test(v) || n < min || n > max) fail(name, raw, `${what} in ${min}..${max}`);
      return n;
    },
  });
}

export const int = bounded(/^-?\d+$/, "an integer");
export const seconds = bounded(/^\d+(\.\d+)?$/, "a number of seconds");

export function bool(name: string, def: boolean, description: string): Variable<boolean> {
  return {
    name,
    defaultText: String(def),
    description,
    parse(raw) {
      if (raw === undefined || raw.trim() === "") return def;
      const v = raw.trim().toLowerCase();
      if (["1", "true", "yes", "on"].includes(v)) return true;
      if (["0", "false", "no", "off"].includes(v)) return false;
      fail(name, raw, "true or false");
    },
  };
}

export function oneOf<T extends string>(name: string, values: readonly T[], def: T, description: string): Variable<T> {
  return {
    name,
    defaultText: def,
    description,
    parse(raw) {
      if (raw === undefined || raw.trim() === "") return def;
      const v = raw.trim();
      if (!(values as readonly string[]).includes(v)) fail(name, raw, `one of ${values.join(", ")}`);
      return v as T;
    },
  };
}

export function list(name: string, description: string): Variable<string[]> {
  return {
    name,
    defaultText: "—",
    description,
    parse(raw) {
      if (raw === undefined || raw.trim() === "") return [];
      const t = raw.trim();
      if (t.startsWith("[")) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(t);
        } catch {
          fail(name, raw, "a JSON array of strings or a comma-separated list");
        }
        if (!Array.isArray(parsed) || !parsed.every((x) => typeof x === "string"))
          fail(name, raw, "a JSON array of strings or a comma-separated list");
        return parsed as string[];
      }
      return t.split(",").map((s) => s.trim()).filter(Boolean);
    },
  };
}

export const TRANSPORTS = ["JSONRPC", "HTTP+JSON"] as const;
export type ClientTransport = (typeof TRANSPORTS)[number];

/**
 * An ordered list of `allowed` values, each kept once; unset or empty: all of them. With `none`, the word `none` is
 * the empty list.
 */
function choices<T extends string>(name: string, allowed: readonly T[], description: string, none = false): Variable<T[]> {
  const base = list(name, description);
  return {
    ...base,
    defaultText: allowed.join(","),
    parse(raw, env) {
      if (none && raw?.trim().toLowerCase() === "none") return [];
      const given = base.parse(raw, env);
      if (given.length === 0) return [...allowed];
      if (given.some((t) => !(allowed as readonly string[]).includes(t))) fail(name, raw ?? "", `a list of ${allowed.join(", ")}${none ? ", or none" : ""}`);
      return [...new Set(given)] as T[];
    },
  };
}

/** An ordered list of A2A transports (`JSONRPC`, `HTTP+JSON`), each at most once. */
export const transports = (name: string, description: string): Variable<ClientTransport[]> => choices(name, TRANSPORTS, description);

export function url(name: string, def: string | undefined, description: string): Variable<string | undefined> {
  return {
    name,
    defaultText: def ?? "—",
    description,
    parse(raw) {
      const v = raw === undefined || raw.trim() === "" ? def : raw.trim();
      if (v === undefined) return undefined;
      let u: URL;
      try {
        u = new URL(v);
      } catch {
        fail(name, v, "an absolute http(s) URL");
      }
      if (u.protocol !== "http:" && u.protocol !== "https:") fail(name, v, "an absolute http(s) URL");
      return v.replace(/\/+$/, "");
    },
  };
}

export function logLevel(): Variable<LogLevel> {
  const aliases: Record<string, LogLevel> = { warning: "warn", critical: "fatal", notset: "trace", off: "silent" };
  return {
    name: "A2A_LOG_LEVEL",
    defaultText: "warn",
    description: "Log level: fatal, error, warn, info, debug, trace, silent (Python names such as WARNING are accepted).",
    parse(raw) {
      if (raw === undefined || raw.trim() === "") return "warn";
      const v = raw.trim().toLowerCase();
      const level = aliases[v] ?? v;
      if (!(LOG_LEVELS as readonly string[]).includes(level)) fail("A2A_LOG_LEVEL", raw, `one of ${LOG_LEVELS.join(", ")}`);
      return level as LogLevel;
    },
  };
}

/** A list of extension URIs, each one of the catalog's extensions (spec/extensions); anything else is a configuration error. */
export function extensionList(name: string, description: string): Variable<string[]> {
  const base = list(name, description);
  return {
    ...base,
    parse(raw, env) {
      const uris = base.parse(raw, env);
      const known = new Set(catalog.extensions.map((e) => e.uri));
      const unknown = uris.filter((u) => !known.has(u));
      if (unknown.length)
        throw new Error(`${name}: unknown extension URI${unknown.length > 1 ? "s" : ""} ${unknown.map((u) => JSON.stringify(u)).join(", ")}; expected URIs of the catalog's extensions (the extended card lists them)`);
      return [...new Set(uris)];
    },
  };
}

export const MESSAGES_TOOLS = ["list-session", "send-message", "buffer"] as const;
export type MessagesTool = (typeof MESSAGES_TOOLS)[number];

/** Which messaging tools the MCP endpoint offers: a list of MESSAGES_TOOLS, `none`, or unset for all. */
export const messagesTools = (name: string, description: string): Variable<MessagesTool[]> => choices(name, MESSAGES_TOOLS, description, true);

/** A JSON object (its shape is checked against the contract when the gateway starts). */
export function jsonObject(name: string, description: string): Variable<Record<string, unknown>> {
  return {
    name,
    defaultText: "—",
    description,
    parse(raw) {
      if (raw === undefined || raw.trim() === "") return {};
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        fail(name, raw, "a JSON object");
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) fail(name, raw, "a JSON object");
      return parsed as Record<string, unknown>;
    },
  };
}
