// `opencode-a2a keys`: the command layer over the credentials file (A2A_CREDENTIALS_FILE): options, checks and
// output. `create` has the store (../auth/key-store.ts) append the credential with only the secret's SHA-256 hash
// and prints the secret once on stdout; `list`, `revoke` and `delete` never see a secret.
import path from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { CREDENTIAL_ID, CredentialError, ENV_TOKEN_ID, KEY_PREFIX, SCHEMES, type CredentialEntry } from "../auth/credentials.js";
import type { Scheme } from "../auth/index.js";
import { addKey, deleteKey, KeyStoreError, readKeys, revokeKey } from "../auth/key-store.js";
import { catalog as defaultCatalog, type AccessControl } from "../contract/catalog.js";

export interface KeysIO {
  /** Receives everything meant for stdout (the only place a secret is ever written). */
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** Environment for A2A_CREDENTIALS_FILE / A2A_CREDENTIALS; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Scope vocabulary and trust levels; default the contract's catalog.access_control. */
  access?: AccessControl;
  now?: () => Date;
}

/** Usage error (exit 2) or failure (exit 1); the message never contains a secret. */
class CliError extends Error {
  constructor(
    message: string,
    readonly code: 1 | 2,
  ) {
    super(message);
  }
}

const usage = (message: string) => new CliError(message, 2);
const failure = (message: string) => new CliError(message, 1);

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const DURATION = /^(\d+)(s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

export function keysUsage(access: AccessControl = defaultCatalog.access_control): string {
  const levels = access.trust_levels.map((l) => `  ${l.name.padEnd(12)}${l.description}`).join("\n");
  const scopes = wrap(access.scopes.map((s) => s.name).join(", "), 100, "  ");
  return `opencode-a2a keys: manage the credentials file the gateway reads (A2A_CREDENTIALS_FILE)

Usage:
  opencode-a2a keys create --trust LEVEL --principal NAME [options]
  opencode-a2a keys list   [--file PATH] [--json]
  opencode-a2a keys revoke --id ID [--file PATH] [--json]
  opencode-a2a keys delete --id ID [--file PATH] [--json]

keys create: generates a secret (prefix ${KEY_PREFIX}), appends the credential to the file and prints the secret ONCE.
The file keeps only its SHA-256 hash, so a lost secret cannot be shown again: create a new key and revoke the old one.
  --trust LEVEL                   trust level (required): ${access.trust_levels.map((l) => l.name).join(" | ")}
  --principal NAME                identity owning the key's tasks and sessions (required); keys may share one
  --scheme SCHEME                 how clients send the secret (default bearer):
                                    bearer   Authorization: Bearer <secret>
                                    api_key  X-API-Key: <secret>
                                    basic    Authorization: Basic base64(<user>:<password>) (needs --user)
  --user NAME                     basic only: the user name; the password is generated
  --id ID                         credential id (default key_<8 hex>), unique in the file; shown in audit logs
  --scopes A,B                    grant exactly these scopes instead of the trust level's bundle
  --expires-in DURATION           refuse the key after this long: 90m, 12h, 30d, 2w
  --expires-at TIME               refuse the key after this RFC 3339 time, e.g. 2026-01-31T00:00:00Z
  --rate-limit-max-requests N     requests per window for this key (0 = no limit; default A2A_RATE_LIMIT_MAX_REQUESTS)
  --rate-limit-window-seconds N   window of that limit in seconds (default A2A_RATE_LIMIT_WINDOW_SECONDS)
  --rate-limit-max-streams N      open SSE streams for this key (0 = no limit; default A2A_RATE_LIMIT_MAX_STREAMS)
  --description TEXT              free-form note stored with the key

keys list: id, principal, scheme, trust level, scopes ("bundle" or how many), enabled, expiry. Never a secret.
keys revoke: sets "enabled": false and keeps the entry; keys delete: removes the entry.

Options of every command:
  --file PATH                     credentials file (default $A2A_CREDENTIALS_FILE)
  --json                          print one JSON object instead of text
  -h, --help                      this help

Trust levels:
${levels}
Scopes:
${scopes}

A running gateway re-reads the file within about a second. Changes are made under a lock (<file>.lock), written
atomically with mode 0600 (a new directory gets 0700), and refused when the file or the result would not load.
Exit codes: 0 done, 1 failed (nothing written), 2 usage error.`;
}

function wrap(text: string, width: number, indent: string): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(indent + line);
  return lines.join("\n");
}

const common = {
  file: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies ParseArgsConfig["options"];

const createOptions = {
  ...common,
  trust: { type: "string" },
  principal: { type: "string" },
  scheme: { type: "string" },
  user: { type: "string" },
  id: { type: "string" },
  scopes: { type: "string" },
  "expires-in": { type: "string" },
  "expires-at": { type: "string" },
  "rate-limit-max-requests": { type: "string" },
  "rate-limit-window-seconds": { type: "string" },
  "rate-limit-max-streams": { type: "string" },
  description: { type: "string" },
} as const satisfies ParseArgsConfig["options"];

const idOptions = { ...common, id: { type: "string" } } as const satisfies ParseArgsConfig["options"];

function parse<O extends NonNullable<ParseArgsConfig["options"]>>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw usage(err instanceof Error ? err.message : String(err));
  }
}

/** Runs `opencode-a2a keys <argv…>`; resolves to the exit code. */
export async function keysCommand(argv: string[], io: KeysIO = {}): Promise<number> {
  const out = io.stdout ?? ((t: string) => void process.stdout.write(t));
  const err = io.stderr ?? ((t: string) => void process.stderr.write(t));
  const ctx: Ctx = { out, env: io.env ?? process.env, access: io.access ?? defaultCatalog.access_control, now: io.now ?? (() => new Date()) };
  const [sub, ...rest] = argv;
  try {
    if (sub === undefined) throw usage("missing command: create, list, revoke or delete");
    if (sub === "--help" || sub === "-h" || sub === "help" || rest.includes("--help") || rest.includes("-h")) {
      out(`${keysUsage(ctx.access)}\n`);
      return 0;
    }
    switch (sub) {
      case "create":
        await create(parse(rest, createOptions), ctx);
        return 0;
      case "list":
        list(parse(rest, common), ctx);
        return 0;
      case "revoke":
      case "delete":
        await removeOrRevoke(sub, parse(rest, idOptions), ctx);
        return 0;
      default:
        throw usage(`unknown command: keys ${sub}`);
    }
  } catch (e) {
    if (e instanceof CliError) {
      err(`opencode-a2a keys: ${e.message}\n`);
      if (e.code === 2) err(`Run \`opencode-a2a keys --help\` for the options.\n`);
      return e.code;
    }
    if (e instanceof KeyStoreError) {
      err(`opencode-a2a keys: ${e.message}\n`);
      return 1;
    }
    if (e instanceof CredentialError) {
      err(`opencode-a2a keys: ${e.message}\nNothing was written.\n`);
      return 1;
    }
    err(`opencode-a2a keys: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}

interface Ctx {
  out: (text: string) => void;
  env: NodeJS.ProcessEnv;
  access: AccessControl;
  now: () => Date;
}

function credentialsFile(values: { file?: string | undefined }, ctx: Ctx): string {
  const file = values.file ?? ctx.env.A2A_CREDENTIALS_FILE;
  if (file === undefined || file.trim() === "")
    throw usage("no credentials file: pass --file PATH or set A2A_CREDENTIALS_FILE (the file the gateway reads)");
  return path.resolve(file);
}

// ---------------------------------------------------------------------------------------------------------------
// create

type CreateValues = ReturnType<typeof parse<typeof createOptions>>;

function nonNegativeInt(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw usage(`--${name}: expected an integer ≥ 0, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** Checks every option before the file is touched; returns the entry without its secret. */
function buildEntry(v: CreateValues, ctx: Ctx): { entry: Omit<CredentialEntry, "secret_hash">; user: string | undefined } {
  const levels = ctx.access.trust_levels.map((l) => l.name);
  if (v.trust === undefined) throw usage(`--trust is required: one of ${levels.join(", ")}`);
  const level = ctx.access.trust_levels.find((l) => l.name === v.trust);
  if (!level) throw usage(`--trust: unknown trust level ${JSON.stringify(v.trust)}; expected one of ${levels.join(", ")}`);
  const principal = v.principal?.trim();
  if (!principal) throw usage("--principal is required: the identity that owns the key's tasks and sessions");
  if (principal.length > 256) throw usage("--principal: at most 256 characters");
  const scheme = (v.scheme ?? "bearer") as Scheme;
  if (!SCHEMES.includes(scheme)) throw usage(`--scheme: expected one of ${SCHEMES.join(", ")}, got ${JSON.stringify(v.scheme)}`);
  let user: string | undefined;
  if (scheme === "basic") {
    if (v.user === undefined) throw usage("--scheme basic needs --user NAME (the password is generated)");
    user = v.user;
    // eslint-disable-next-line no-control-regex -- refusing control characters is the point
    if (!/^[^:\x00-\x1f\x7f]{1,128}$/.test(user)) throw usage("--user: 1-128 characters, no colon and no control characters");
  } else if (v.user !== undefined) throw usage("--user applies only to --scheme basic");
  if (v.id !== undefined) {
    if (!CREDENTIAL_ID.test(v.id)) throw usage("--id: 1-128 characters of A-Z a-z 0-9 . _ : @ -");
    if (v.id.startsWith("env:")) throw usage('--id: ids starting with "env:" are reserved for credentials from the environment');
  }
  let scopes: string[] | undefined;
  if (v.scopes !== undefined) {
    scopes = [...new Set(v.scopes.split(",").map((s) => s.trim()).filter((s) => s !== ""))];
    if (scopes.length === 0) throw usage("--scopes: give at least one scope (or leave it out for the trust level's bundle)");
    const known = new Set(ctx.access.scopes.map((s) => s.name));
    const unknown = scopes.filter((s) => !known.has(s));
    if (unknown.length)
      throw usage(`--scopes: unknown scope${unknown.length > 1 ? "s" : ""} ${unknown.map((s) => JSON.stringify(s)).join(", ")}; declared: ${[...known].join(", ")}`);
  }
  let expiresAt: string | undefined;
  const now = ctx.now();
  if (v["expires-in"] !== undefined && v["expires-at"] !== undefined) throw usage("give --expires-in or --expires-at, not both");
  if (v["expires-in"] !== undefined) {
    const m = DURATION.exec(v["expires-in"]);
    if (!m || Number(m[1]) <= 0) throw usage(`--expires-in: expected a positive duration such as 90m, 12h, 30d, 2w; got ${JSON.stringify(v["expires-in"])}`);
    expiresAt = new Date(now.getTime() + Number(m[1]) * UNIT_MS[m[2]!]!).toISOString();
  }
  if (v["expires-at"] !== undefined) {
    const t = RFC3339.test(v["expires-at"]) ? Date.parse(v["expires-at"]) : NaN;
    if (Number.isNaN(t)) throw usage(`--expires-at: expected an RFC 3339 time such as 2026-01-31T00:00:00Z; got ${JSON.stringify(v["expires-at"])}`);
    if (t <= now.getTime()) throw usage(`--expires-at: ${v["expires-at"]} has already passed`);
    expiresAt = new Date(t).toISOString();
  }
  const rateLimit: NonNullable<CredentialEntry["rate_limit"]> = {};
  const maxRequests = nonNegativeInt("rate-limit-max-requests", v["rate-limit-max-requests"]);
  if (maxRequests !== undefined) rateLimit.max_requests = maxRequests;
  const windowRaw = v["rate-limit-window-seconds"];
  if (windowRaw !== undefined) {
    const w = /^\d+(\.\d+)?$/.test(windowRaw) ? Number(windowRaw) : NaN;
    if (!(w > 0 && w <= 86_400)) throw usage(`--rate-limit-window-seconds: expected seconds in (0, 86400], got ${JSON.stringify(windowRaw)}`);
    rateLimit.window_seconds = w;
  }
  const maxStreams = nonNegativeInt("rate-limit-max-streams", v["rate-limit-max-streams"]);
  if (maxStreams !== undefined) rateLimit.max_streams = maxStreams;
  const entry: Omit<CredentialEntry, "secret_hash"> & Record<string, unknown> = {
    id: v.id ?? "",
    principal,
    scheme,
    trust_level: level.name,
  };
  if (scopes) entry.scopes = scopes;
  entry.enabled = true;
  if (expiresAt) entry.expires_at = expiresAt;
  if (Object.keys(rateLimit).length) entry.rate_limit = rateLimit;
  if (v.description !== undefined) entry.description = v.description;
  entry.created_at = now.toISOString();
  return { entry, user };
}

/** Ids of A2A_CREDENTIALS (best effort): the gateway refuses an id that appears in two sources. */
function envIds(ctx: Ctx): Set<string> {
  const ids = new Set<string>([ENV_TOKEN_ID]);
  try {
    const parsed = JSON.parse(ctx.env.A2A_CREDENTIALS ?? "[]") as unknown;
    if (Array.isArray(parsed)) for (const e of parsed) if (e && typeof (e as { id?: unknown }).id === "string") ids.add((e as { id: string }).id);
  } catch {
    // Not our job to validate A2A_CREDENTIALS here.
  }
  return ids;
}

async function create(v: CreateValues, ctx: Ctx): Promise<void> {
  const file = credentialsFile(v, ctx);
  const { entry, user } = buildEntry(v, ctx);
  const taken = envIds(ctx);
  if (v.id !== undefined && taken.has(v.id)) throw failure(`credential id ${JSON.stringify(v.id)} is already used by A2A_CREDENTIALS`);
  const { id, secret } = await addKey(file, ctx.access, entry, { user, reserved: taken });
  entry.id = id;
  const password = user === undefined ? undefined : secret.slice(user.length + 1);
  if (v.json) {
    ctx.out(
      `${JSON.stringify({
        id: entry.id,
        principal: entry.principal,
        scheme: entry.scheme,
        trust_level: entry.trust_level,
        scopes: entry.scopes ?? null,
        expires_at: entry.expires_at ?? null,
        ...(user === undefined ? {} : { user, password }),
        secret,
        file,
      })}\n`,
    );
    return;
  }
  const scopeText = entry.scopes ? `${entry.scopes.length} scope${entry.scopes.length === 1 ? "" : "s"}: ${entry.scopes.join(", ")}` : `the ${entry.trust_level} bundle`;
  const lines = [
    `Created credential ${entry.id} in ${file}`,
    `  principal ${entry.principal}, trust level ${entry.trust_level} (${scopeText}), scheme ${entry.scheme}${entry.expires_at ? `, expires ${entry.expires_at}` : ""}`,
    "",
  ];
  if (user === undefined) {
    lines.push(`Secret (shown only once, store it now):`, "", `  ${secret}`, "");
    lines.push(entry.scheme === "bearer" ? `Clients send:  Authorization: Bearer <secret>` : `Clients send:  X-API-Key: <secret>`);
  } else {
    lines.push(`Basic credentials (the password is shown only once, store it now):`, "", `  user:     ${user}`, `  password: ${password}`, "");
    lines.push(`Clients send:  Authorization: Basic base64(<user>:<password>)   (curl -u <user>:<password>)`);
  }
  lines.push(`A gateway reading this file (A2A_CREDENTIALS_FILE) accepts the key within about a second.`);
  ctx.out(`${lines.join("\n")}\n`);
}

// ---------------------------------------------------------------------------------------------------------------
// list

interface ListRow {
  id: string;
  principal: string;
  scheme: string;
  trust_level: string;
  scopes: string[] | null;
  enabled: boolean;
  expires_at: string | null;
  created_at: string | null;
  description: string | null;
}

function list(v: { file?: string | undefined; json?: boolean | undefined }, ctx: Ctx): void {
  const file = credentialsFile(v, ctx);
  const entries = readKeys(file, ctx.access);
  const rows: ListRow[] = entries.map((raw) => {
    const e = raw as CredentialEntry & { created_at?: string; description?: string };
    return {
      id: e.id,
      principal: e.principal,
      scheme: e.scheme,
      trust_level: e.trust_level,
      scopes: e.scopes ?? null,
      enabled: e.enabled !== false,
      expires_at: e.expires_at ?? null,
      created_at: e.created_at ?? null,
      description: e.description ?? null,
    };
  });
  if (v.json) {
    ctx.out(`${JSON.stringify({ file, credentials: rows })}\n`);
    return;
  }
  if (rows.length === 0) {
    ctx.out(`No credentials in ${file}\n`);
    return;
  }
  const now = ctx.now().getTime();
  const table = [
    ["ID", "PRINCIPAL", "SCHEME", "TRUST", "SCOPES", "ENABLED", "EXPIRES"],
    ...rows.map((r) => [
      r.id,
      r.principal,
      r.scheme,
      r.trust_level,
      r.scopes === null ? "bundle" : String(r.scopes.length),
      r.enabled ? "yes" : "no",
      r.expires_at === null ? "never" : `${r.expires_at}${Date.parse(r.expires_at) <= now ? " (expired)" : ""}`,
    ]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  const text = table.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")).join("\n");
  ctx.out(`${text}\n${rows.length} credential${rows.length === 1 ? "" : "s"} in ${file}\n`);
}

// ---------------------------------------------------------------------------------------------------------------
// revoke / delete

async function removeOrRevoke(command: "revoke" | "delete", v: { file?: string | undefined; json?: boolean | undefined; id?: string | undefined }, ctx: Ctx): Promise<void> {
  const file = credentialsFile(v, ctx);
  if (v.id === undefined || v.id === "") throw usage(`keys ${command} needs --id ID (see \`opencode-a2a keys list\`)`);
  const id = v.id;
  const { changed, enabledLeft } = await (command === "delete" ? deleteKey : revokeKey)(file, ctx.access, id);
  if (v.json) {
    ctx.out(`${JSON.stringify(command === "delete" ? { id, deleted: true, file } : { id, enabled: false, changed, file })}\n`);
  } else if (command === "delete") ctx.out(`Deleted credential ${id} from ${file}\n`);
  else if (!changed) ctx.out(`Credential ${id} was already revoked in ${file}\n`);
  else ctx.out(`Revoked credential ${id} in ${file} (a running gateway refuses it within about a second)\n`);
  if (enabledLeft === 0 && changed && !v.json)
    ctx.out(`Note: no enabled credential is left in ${file}; the gateway needs A2A_BEARER_TOKEN or A2A_CREDENTIALS to start.\n`);
}
