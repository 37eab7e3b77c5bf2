// The credential registry: A2A_BEARER_TOKEN (one admin credential), A2A_CREDENTIALS (JSON array) and
// A2A_CREDENTIALS_FILE (the same array in a file, re-read when it changes). Each credential is reduced at load time
// to the SHA-256 digest of its secret; a request's secret is hashed once and compared with every credential of its
// scheme by timingSafeEqual, without an early exit, so the time taken does not depend on which credential (if any)
// matched or on how long the presented secret is.
import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import type { AccessControl } from "../contract/catalog.js";
import { fileStamp } from "../util/file-stamp.js";
import type { CredentialResolver, Principal, Scheme, SchemeInfo } from "./index.js";

/** A credential entry as written in A2A_CREDENTIALS / A2A_CREDENTIALS_FILE. */
export interface CredentialEntry {
  id: string;
  principal: string;
  scheme: Scheme;
  /** The secret itself (for `basic`: "user:password"). Exactly one of secret / secret_hash. */
  secret?: string;
  /** `sha256:<64 hex>` of the secret, as `opencode-a2a keys create` writes it. */
  secret_hash?: string;
  trust_level: string;
  /** Replaces the trust level's scope bundle. */
  scopes?: string[];
  enabled?: boolean;
  /** RFC 3339 time after which the credential is refused. */
  expires_at?: string;
  rate_limit?: RateLimitOverride;
}

export interface RateLimitOverride {
  max_requests?: number;
  window_seconds?: number;
  max_streams?: number;
}

/** A loaded credential: everything but the secret, which only survives as its digest. */
export interface Credential {
  id: string;
  scheme: Scheme;
  digest: Buffer;
  enabled: boolean;
  expiresAt: number | undefined;
  /** Carries the per-credential rate-limit overrides. */
  principal: Principal;
}

export class CredentialError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid credentials:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "CredentialError";
  }
}

export const SCHEMES: readonly Scheme[] = ["bearer", "api_key", "basic"];
/** Prefix of generated keys, so they are recognisable in secret scanners and logs. */
export const KEY_PREFIX = "oca2a_";
const HASH = /^sha256:([0-9a-f]{64})$/;
const MIN_SECRET = 16;
export const CREDENTIAL_ID = /^[A-Za-z0-9._:@-]{1,128}$/;
const KNOWN_FIELDS = new Set(["id", "principal", "scheme", "secret", "secret_hash", "trust_level", "scopes", "enabled", "expires_at", "rate_limit", "created_at", "description"]);

export function digestOf(secret: string): Buffer {
  // One-shot crypto.hash (Node >= 20.12): the same digest as createHash().update().digest() at half the cost, which
  // matters because every authenticated request hashes its secret.
  return hash("sha256", secret, "buffer");
}

export function secretHash(secret: string): string {
  return `sha256:${digestOf(secret).toString("hex")}`;
}

/** A new random secret: the prefix and 32 random bytes in base64url. */
export function generateSecret(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

/** The scheme names published in the cards (securitySchemes keys) and the OpenAPI document. */
export const SCHEME_INFO: Record<Scheme, SchemeInfo> = {
  bearer: { name: "bearerAuth", kind: "bearer" },
  api_key: { name: "apiKeyAuth", kind: "apiKey" },
  basic: { name: "basicAuth", kind: "basic" },
};

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function positiveInt(v: unknown): boolean {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/**
 * Validate and load credential entries (`source` names where they came from in messages). Every problem is
 * collected; none of them quotes a secret.
 */
export function loadCredentials(raw: unknown, source: string, access: AccessControl): Credential[] {
  const problems: string[] = [];
  if (!Array.isArray(raw)) throw new CredentialError([`${source}: expected a JSON array of credential objects`]);
  const levels = new Map(access.trust_levels.map((l) => [l.name, l]));
  const known = new Set(access.scopes.map((s) => s.name));
  const out: Credential[] = [];
  raw.forEach((entry, index) => {
    const where = `${source}[${index}]`;
    if (!isObj(entry)) {
      problems.push(`${where}: expected an object`);
      return;
    }
    const bad = (field: string, expected: string) => problems.push(`${where}.${field}: expected ${expected}`);
    const before = problems.length;
    for (const key of Object.keys(entry)) if (!KNOWN_FIELDS.has(key)) problems.push(`${where}: unknown field ${JSON.stringify(key)}`);
    const { id, principal, scheme, secret, secret_hash, trust_level, scopes, enabled, expires_at, rate_limit } = entry;
    if (typeof id !== "string" || !CREDENTIAL_ID.test(id)) bad("id", "1-128 characters of A-Z a-z 0-9 . _ : @ -");
    if (typeof principal !== "string" || principal.trim() === "" || principal.length > 256) bad("principal", "a non-empty string (at most 256 characters)");
    if (typeof scheme !== "string" || !SCHEMES.includes(scheme as Scheme)) bad("scheme", `one of ${SCHEMES.join(", ")}`);
    if ((secret === undefined) === (secret_hash === undefined)) problems.push(`${where}: give exactly one of secret and secret_hash`);
    else if (secret !== undefined) {
      if (typeof secret !== "string" || secret.length < MIN_SECRET) bad("secret", `a string of at least ${MIN_SECRET} characters`);
      else if (scheme === "basic" && !/^[^:]+:.+$/.test(secret)) bad("secret", '"user:password" for the basic scheme');
    } else if (typeof secret_hash !== "string" || !HASH.test(secret_hash)) bad("secret_hash", '"sha256:" followed by 64 lowercase hex digits');
    const level = typeof trust_level === "string" ? levels.get(trust_level) : undefined;
    if (!level) bad("trust_level", `one of ${[...levels.keys()].join(", ")}`);
    if (scopes !== undefined) {
      if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === "string")) bad("scopes", "an array of scope names");
      else for (const s of scopes) if (!known.has(s)) problems.push(`${where}.scopes: unknown scope ${JSON.stringify(s)}`);
    }
    if (enabled !== undefined && typeof enabled !== "boolean") bad("enabled", "true or false");
    let expiresAt: number | undefined;
    if (expires_at !== undefined) {
      expiresAt = typeof expires_at === "string" && /^\d{4}-\d{2}-\d{2}T/.test(expires_at) ? Date.parse(expires_at) : NaN;
      if (Number.isNaN(expiresAt)) bad("expires_at", "an RFC 3339 date-time");
    }
    if (rate_limit !== undefined) {
      if (!isObj(rate_limit)) bad("rate_limit", "an object with max_requests, window_seconds, max_streams");
      else {
        for (const key of Object.keys(rate_limit))
          if (!["max_requests", "window_seconds", "max_streams"].includes(key)) problems.push(`${where}.rate_limit: unknown field ${JSON.stringify(key)}`);
        if (rate_limit.max_requests !== undefined && !positiveInt(rate_limit.max_requests)) bad("rate_limit.max_requests", "an integer ≥ 0 (0 = no limit)");
        if (rate_limit.max_streams !== undefined && !positiveInt(rate_limit.max_streams)) bad("rate_limit.max_streams", "an integer ≥ 0 (0 = no limit)");
        if (rate_limit.window_seconds !== undefined && !(typeof rate_limit.window_seconds === "number" && rate_limit.window_seconds > 0 && rate_limit.window_seconds <= 86_400))
          bad("rate_limit.window_seconds", "a number of seconds in (0, 86400]");
      }
    }
    if (problems.length !== before) return;
    const digest = secret !== undefined ? digestOf(secret as string) : Buffer.from(HASH.exec(secret_hash as string)![1]!, "hex");
    const granted = new Set((scopes as string[] | undefined) ?? level!.scopes);
    out.push({
      id: id as string,
      scheme: scheme as Scheme,
      digest,
      enabled: enabled !== false,
      expiresAt,
      principal: {
        id: (principal as string).trim(),
        credentialId: id as string,
        trustLevel: level!.name,
        scopes: granted,
        admin: level!.sees_all_principals,
        rateLimit: (rate_limit as RateLimitOverride | undefined) ?? {},
      },
    });
  });
  const ids = new Set<string>();
  const digests = new Set<string>();
  for (const c of out) {
    if (ids.has(c.id)) problems.push(`${source}: credential id ${JSON.stringify(c.id)} appears twice`);
    ids.add(c.id);
    const key = `${c.scheme}:${c.digest.toString("hex")}`;
    if (digests.has(key)) problems.push(`${source}: credential ${JSON.stringify(c.id)} has the same ${c.scheme} secret as another credential`);
    digests.add(key);
  }
  if (problems.length) throw new CredentialError(problems);
  return out;
}

/** Reads and parses a credentials file; a missing file is an empty registry (the CLI creates it). */
export function readCredentialsFile(file: string): unknown[] {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw new CredentialError([`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`]);
  }
  if (text.trim() === "") return [];
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!Array.isArray(parsed)) throw new CredentialError([`${file}: expected a JSON array of credential objects`]);
    return parsed;
  } catch (err) {
    if (err instanceof CredentialError) throw err;
    throw new CredentialError([`${file}: not valid JSON`]);
  }
}

export interface RegistrySources {
  bearerToken?: string | undefined;
  /** A2A_CREDENTIALS text. */
  credentials?: string | undefined;
  credentialsFile?: string | undefined;
}

export interface RegistryOptions {
  access: AccessControl;
  /** Called when a changed credentials file cannot be loaded (the previous credentials stay in force). */
  onReloadError?: (error: Error) => void;
  now?: () => number;
  /** How often the file's size and mtime are checked while requests come in (ms). */
  recheckMs?: number;
}

/** Principal of A2A_BEARER_TOKEN (kept as "admin" so tasks stored by earlier builds keep their owner). */
export const ENV_TOKEN_PRINCIPAL = "admin";
export const ENV_TOKEN_ID = "env:A2A_BEARER_TOKEN";

interface Presented {
  scheme: Scheme;
  digest: Buffer;
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const raw = headers[name];
  return Array.isArray(raw) ? raw[0] : raw;
}

/** What the request presents: Authorization (Bearer or Basic) first, else X-API-Key. */
export function presentedCredential(headers: Record<string, string | string[] | undefined>): Presented | null {
  const authorization = header(headers, "authorization");
  if (authorization !== undefined) {
    const bearer = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(authorization);
    if (bearer) return { scheme: "bearer", digest: digestOf(bearer[1]!) };
    const basic = /^Basic[ \t]+([A-Za-z0-9+/=_-]+)[ \t]*$/i.exec(authorization);
    if (basic) {
      const decoded = Buffer.from(basic[1]!, "base64").toString("utf8");
      return decoded.includes(":") ? { scheme: "basic", digest: digestOf(decoded) } : null;
    }
    return null;
  }
  const apiKey = header(headers, "x-api-key");
  if (apiKey !== undefined && apiKey.trim() !== "") return { scheme: "api_key", digest: digestOf(apiKey.trim()) };
  return null;
}

/** Enabled and not expired. */
function usable(c: Credential, now: number): boolean {
  return c.enabled && (c.expiresAt === undefined || now < c.expiresAt);
}

export class CredentialRegistry implements CredentialResolver {
  #fixed: Credential[];
  #fromFile: Credential[] = [];
  #all: Credential[] = [];
  #fileStamp = "";
  #checkedAt = 0;
  readonly #opts: RegistryOptions;
  readonly #file: string | undefined;
  readonly #now: () => number;

  /** Throws CredentialError when any source is invalid or no credential at all is configured. */
  constructor(sources: RegistrySources, opts: RegistryOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#file = sources.credentialsFile;
    const fixed: Credential[] = [];
    if (sources.bearerToken !== undefined) {
      const admin = opts.access.trust_levels.find((l) => l.sees_all_principals);
      if (!admin) throw new CredentialError(["the contract declares no trust level that sees all principals"]);
      fixed.push({
        id: ENV_TOKEN_ID,
        scheme: "bearer",
        digest: digestOf(sources.bearerToken),
        enabled: true,
        expiresAt: undefined,
        principal: { id: ENV_TOKEN_PRINCIPAL, credentialId: ENV_TOKEN_ID, trustLevel: admin.name, scopes: new Set(admin.scopes), admin: true },
      });
    }
    if (sources.credentials !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(sources.credentials);
      } catch {
        throw new CredentialError(["A2A_CREDENTIALS: not valid JSON"]);
      }
      fixed.push(...loadCredentials(parsed, "A2A_CREDENTIALS", opts.access));
    }
    this.#fixed = fixed;
    if (this.#file !== undefined) this.#loadFile(true);
    this.#rebuild();
    if (!this.#all.some((c) => c.enabled)) throw new CredentialError(["no enabled credential is configured"]);
  }

  /** Every loaded credential (no secrets), e.g. for the cards and tests. */
  get credentials(): readonly Credential[] {
    this.#recheck();
    return this.#all;
  }

  get schemes(): SchemeInfo[] {
    const now = this.#now();
    const enabled = new Set(this.credentials.filter((c) => usable(c, now)).map((c) => c.scheme));
    return SCHEMES.filter((s) => enabled.has(s)).map((s) => SCHEME_INFO[s]);
  }

  /** Looks the presented secret up; null when missing, unknown, disabled or expired. */
  resolve(headers: Record<string, string | string[] | undefined>): Principal | null {
    const presented = presentedCredential(headers);
    if (presented === null) return null;
    return this.resolveCredential(presented)?.principal ?? null;
  }

  resolveCredential(presented: Presented): Credential | null {
    this.#recheck();
    let found: Credential | null = null;
    // Every credential of the scheme is compared (no early exit): the time does not tell which one matched.
    for (const c of this.#all) {
      if (c.scheme !== presented.scheme) continue;
      if (timingSafeEqual(c.digest, presented.digest)) found = c;
    }
    return found !== null && usable(found, this.#now()) ? found : null;
  }

  #rebuild(): void {
    this.#all = [...this.#fixed, ...this.#fromFile];
    const ids = new Set<string>();
    for (const c of this.#all) {
      if (ids.has(c.id)) throw new CredentialError([`credential id ${JSON.stringify(c.id)} appears in more than one source`]);
      ids.add(c.id);
    }
  }

  #loadFile(initial: boolean): void {
    const stamp = fileStamp(this.#file!);
    if (!initial && stamp === this.#fileStamp) return;
    try {
      const loaded = loadCredentials(readCredentialsFile(this.#file!), this.#file!, this.#opts.access);
      const previous = this.#fromFile;
      this.#fromFile = loaded;
      try {
        this.#rebuild();
      } catch (err) {
        this.#fromFile = previous;
        this.#rebuild();
        throw err;
      }
      this.#fileStamp = stamp;
    } catch (err) {
      if (initial) throw err;
      // Keep serving with the previous credentials; report once per file version.
      this.#fileStamp = stamp;
      this.#opts.onReloadError?.(err as Error);
    }
  }

  #recheck(): void {
    if (this.#file === undefined) return;
    const now = Date.now();
    if (now - this.#checkedAt < (this.#opts.recheckMs ?? 1000)) return;
    this.#checkedAt = now;
    this.#loadFile(false);
  }
}
