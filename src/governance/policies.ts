// Governance policies (spec: GovernancePolicies): ordered rules from the file named by A2A_GOVERNANCE_POLICIES_FILE
// that decide OpenCode permission requests before a client sees them. The file is checked against the generated
// validator and the unsafe combinations below; it is re-read when it changes the way the credentials file is
// (src/auth/credentials.ts: its size, mtime and inode are compared at most once a second, when a request is decided).
// At start a bad file stops the gateway (ConfigError); a later bad version is logged and the last good rules stay.
import fs from "node:fs";
import path from "node:path";
import type { GovernancePolicies, GovernancePolicyRule, GovernorConfig, GovernorFollowUp } from "../../generated/types/extensions.js";
import { ConfigError } from "../config/index.js";
import { explain, preloadValidators, validate } from "../contract/validate.js";
import { fileStamp } from "../util/file-stamp.js";

const SCHEMA = "extensions/GovernancePolicies";

/** OpenCode's permission types (`permission` of `permission.asked`); a rule naming another one is refused. */
export const PERMISSION_TYPES: ReadonlySet<string> = new Set([
  "bash",
  "edit",
  "read",
  "glob",
  "grep",
  "list",
  "external_directory",
  "webfetch",
  "websearch",
  "codesearch",
  "task",
  "todowrite",
  "todoread",
  "lsp",
  "skill",
  "doom_loop",
  "plan_enter",
  "plan_exit",
]);

/** The permissions whose patterns are paths (globs with segments); the others' patterns are text (commands, URLs, names). */
const PATH_PERMISSIONS: ReadonlySet<string> = new Set(["edit", "read", "glob", "grep", "list", "external_directory", "lsp"]);

/** A permission request as a rule sees it. */
export interface PolicyRequest {
  permission: string;
  patterns: string[];
  /** The task's owner and the trust level it started the task at. */
  principal: string;
  trustLevel?: string;
}

/** The rule that decided a request, and what it decided. */
export interface PolicyMatch {
  rule: GovernancePolicyRule;
  decision: "approve" | "reject" | "manual";
  /** The reply sent to OpenCode (approve: `once` or `always`; reject: `reject`). */
  reply?: "once" | "always" | "reject";
}

/** A pattern `*`, `**`, `**\/*`, …: it matches everything. */
const matchesAll = (pattern: string): boolean => pattern.replace(/[*/]/g, "") === "";

/** Rules that approve whatever they are given: any permission, no patterns, or a match-all pattern. */
function broad(rule: GovernancePolicyRule): boolean {
  return rule.permission === "*" || rule.patterns === undefined || rule.patterns.some(matchesAll);
}

/** The unsafe combinations of the rules (empty when there are none); each names its rule. */
export function unsafeCombinations(rules: GovernancePolicyRule[], trustLevels: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  rules.forEach((rule, index) => {
    const name = `rule "${rule.id}" (rules[${index}])`;
    if (seen.has(rule.id)) problems.push(`${name}: the id is used by an earlier rule`);
    seen.add(rule.id);
    if (rule.permission !== "*" && !PERMISSION_TYPES.has(rule.permission)) {
      problems.push(`${name}: unknown permission "${rule.permission}" (one of ${[...PERMISSION_TYPES].join(", ")}, or *)`);
    }
    if ((rule.patterns ?? []).some((p) => p.trim() === "")) problems.push(`${name}: an empty pattern`);
    if (rule.reply !== undefined && rule.decision !== "approve") problems.push(`${name}: reply is only for approve rules`);
    const isBroad = broad(rule);
    if (rule.decision === "approve" && rule.reply === "always") {
      if (rule.permission === "bash" || rule.permission === "*") {
        problems.push(`${name}: approve with reply "always" on bash would let OpenCode run the command's prefix unasked for the rest of the session`);
      } else if (isBroad) problems.push(`${name}: approve with reply "always" on a rule that matches everything`);
    }
    if (rule.decision === "approve" && isBroad && rule.allow_broad !== true) {
      const what = rule.permission === "*" ? "every permission" : `"${rule.permission}"`;
      problems.push(`${name}: approves every request of ${what} (permission *, no patterns, or a pattern * / **); set allow_broad: true to mean it`);
    }
    if (rule.allow_broad === true && !(rule.decision === "approve" && isBroad)) problems.push(`${name}: allow_broad is only for approve rules that match everything`);
    for (const level of rule.trust_levels ?? []) {
      if (!trustLevels.has(level)) problems.push(`${name}: unknown trust level "${level}" (one of ${[...trustLevels].join(", ")})`);
    }
  });
  return problems;
}

const escape = (s: string): string => s.replace(/[.+^${}()|[\]\\]/g, "\\$&");

/**
 * A pattern as a regular expression. Text: `*` any text, `?` one character, a trailing ` *` also matches the bare
 * command. Paths: `*` and `?` stay in one segment, `**` spans segments (`a/**` matches `a/b/c`, `**\/x` matches `x`).
 */
export function compilePattern(pattern: string, kind: "text" | "path"): RegExp {
  if (kind === "text") {
    const bare = pattern.endsWith(" *") ? pattern.slice(0, -2) : undefined;
    const body = (p: string): string =>
      p
        .split("")
        .map((c) => (c === "*" ? ".*" : c === "?" ? "." : escape(c)))
        .join("");
    return new RegExp(bare === undefined ? `^${body(pattern)}$` : `^${body(bare)}(?: .*)?$`, "s");
  }
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*" && pattern[i + 1] === "*") {
      const slash = pattern[i + 2] === "/";
      out += slash ? "(?:.*/)?" : ".*";
      i += slash ? 2 : 1;
    } else if (c === "*") out += "[^/]*";
    else if (c === "?") out += "[^/]";
    else out += escape(c);
  }
  return new RegExp(`^${out}$`, "s");
}

interface CompiledRule {
  rule: GovernancePolicyRule;
  /** The rule's patterns for text and for path requests (a `*` rule meets both); none when it has no patterns. */
  text?: RegExp[];
  path?: RegExp[];
}

function compileRule(rule: GovernancePolicyRule): CompiledRule {
  if (rule.patterns === undefined) return { rule };
  const kinds: ("text" | "path")[] = rule.permission === "*" ? ["text", "path"] : [PATH_PERMISSIONS.has(rule.permission) ? "path" : "text"];
  const compiled: CompiledRule = { rule };
  for (const kind of kinds) compiled[kind] = rule.patterns.map((p) => compilePattern(p, kind));
  return compiled;
}

/** Whether the rule matches: permission, owner conditions, then patterns (approve: every one; reject/manual: one). */
function matches(compiled: CompiledRule, request: PolicyRequest): boolean {
  const { rule } = compiled;
  if (rule.permission !== "*" && rule.permission !== request.permission) return false;
  if (rule.principals !== undefined && !rule.principals.includes(request.principal)) return false;
  if (rule.trust_levels !== undefined && (request.trustLevel === undefined || !rule.trust_levels.includes(request.trustLevel))) return false;
  if (rule.patterns === undefined) return true;
  const regexes = (PATH_PERMISSIONS.has(request.permission) ? compiled.path : compiled.text) ?? [];
  const hit = (p: string): boolean => regexes.some((re) => re.test(p));
  if (request.patterns.length === 0) return false;
  return rule.decision === "approve" ? request.patterns.every(hit) : request.patterns.some(hit);
}

/** Where an executable named by a command governor is: an absolute path to an executable file, or a name on PATH. */
export function findExecutable(name: string, searchPath: string = process.env.PATH ?? ""): string | undefined {
  const executable = (file: string): boolean => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      // (root passes the access check on any file: an executable has an execute bit)
      const stat = fs.statSync(file);
      return stat.isFile() && (stat.mode & 0o111) !== 0;
    } catch {
      return false;
    }
  };
  if (path.isAbsolute(name)) return executable(name) ? name : undefined;
  if (name.includes("/") || name === "") return undefined;
  for (const dir of searchPath.split(path.delimiter)) {
    if (dir === "") continue;
    const file = path.join(dir, name);
    if (executable(file)) return file;
  }
  return undefined;
}

/** The unsafe or incomplete combinations of the governors (empty when there are none); each names its governor. */
export function governorProblems(governors: GovernorConfig[], followUp: GovernorFollowUp | undefined, trustLevels: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  governors.forEach((g, index) => {
    const name = `governor "${g.id}" (governors[${index}])`;
    if (seen.has(g.id)) problems.push(`${name}: the id is used by an earlier governor`);
    seen.add(g.id);
    if (g.kind === "agent") {
      if (g.prompt === undefined) problems.push(`${name}: an agent governor needs a prompt (the reviewer's instructions)`);
      for (const field of ["command", "env"] as const) if (g[field] !== undefined) problems.push(`${name}: ${field} is only for command governors`);
    } else {
      if (g.command === undefined) problems.push(`${name}: a command governor needs command (the executable and its arguments)`);
      else if (findExecutable(g.command[0]!) === undefined) {
        problems.push(`${name}: command "${g.command[0]}" is neither an absolute path to an executable file nor a name found on PATH`);
      }
      for (const field of ["prompt", "agent", "model"] as const) if (g[field] !== undefined) problems.push(`${name}: ${field} is only for agent governors`);
    }
    for (const level of g.trust_levels ?? []) {
      if (!trustLevels.has(level)) problems.push(`${name}: unknown trust level "${level}" (one of ${[...trustLevels].join(", ")})`);
    }
  });
  if (followUp !== undefined && governors.length === 0) problems.push("follow_up: there are no governors to send follow-ups for");
  return problems;
}

/** A policy file's content: its rules, governors and follow-up setting. */
export interface ParsedPolicies {
  rules: GovernancePolicyRule[];
  governors: GovernorConfig[];
  followUp?: GovernorFollowUp;
}

/** Parses and checks a policy file's content; throws ConfigError naming the file and every problem. */
export function parsePolicies(text: string, source: string, trustLevels: ReadonlySet<string>): ParsedPolicies {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError([`${source}: not valid JSON (${error instanceof Error ? error.message : String(error)})`]);
  }
  const verdict = validate(SCHEMA, value);
  // The validator is loaded before the first parse (GovernancePolicySet.open), so the verdict is never a promise.
  if (verdict instanceof Promise || !verdict.ok) throw new ConfigError(explain(SCHEMA, value).map((v) => `${source}: ${v.field} ${v.description}`));
  const file = value as GovernancePolicies;
  const rules = file.rules ?? [];
  const governors = file.governors ?? [];
  const problems = [...unsafeCombinations(rules, trustLevels), ...governorProblems(governors, file.follow_up, trustLevels)];
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `${source}: ${p}`));
  return { rules, governors, ...(file.follow_up === undefined ? {} : { followUp: file.follow_up }) };
}

export interface PolicySetOptions {
  /** The contract's trust levels (rules may only name these). */
  trustLevels: ReadonlySet<string>;
  /** A changed file that cannot be loaded (the previous rules stay in force). */
  onReloadError?: (error: Error) => void;
  /** A changed file was loaded. */
  onReload?: (counts: { rules: number; governors: number }) => void;
  /** How often the file's size and mtime are checked while requests are decided (ms; default 1000). */
  recheckMs?: number;
}

export class GovernancePolicySet {
  #rules: CompiledRule[] = [];
  #governors: GovernorConfig[] = [];
  #followUp: GovernorFollowUp | undefined;
  #stamp = "";
  #checkedAt = 0;

  private constructor(
    private readonly file: string,
    private readonly opts: PolicySetOptions,
  ) {}

  /** Loads the file; throws ConfigError when it is missing, invalid or unsafe. */
  static async open(file: string, opts: PolicySetOptions): Promise<GovernancePolicySet> {
    await preloadValidators([SCHEMA]);
    const set = new GovernancePolicySet(file, opts);
    set.#load(true);
    return set;
  }

  /** The rules in force, in order. */
  get rules(): GovernancePolicyRule[] {
    this.#recheck();
    return this.#rules.map((c) => c.rule);
  }

  /** The post-run governors in force, in order. */
  get governors(): GovernorConfig[] {
    this.#recheck();
    return this.#governors;
  }

  /** The follow-up setting in force (undefined: follow-up prompts are only recorded). */
  get followUp(): GovernorFollowUp | undefined {
    this.#recheck();
    return this.#followUp;
  }

  /** The first rule matching the request; undefined when none does (the manual flow). */
  decide(request: PolicyRequest): PolicyMatch | undefined {
    this.#recheck();
    const hit = this.#rules.find((c) => matches(c, request));
    if (hit === undefined) return undefined;
    const { rule } = hit;
    if (rule.decision === "manual") return { rule, decision: "manual" };
    return { rule, decision: rule.decision, reply: rule.decision === "reject" ? "reject" : (rule.reply ?? "once") };
  }

  #load(initial: boolean): void {
    const stamp = fileStamp(this.file);
    if (!initial && stamp === this.#stamp) return;
    try {
      let text: string;
      try {
        text = fs.readFileSync(this.file, "utf8");
      } catch (error) {
        throw new ConfigError([`A2A_GOVERNANCE_POLICIES_FILE: cannot read ${this.file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`]);
      }
      const parsed = parsePolicies(text, `A2A_GOVERNANCE_POLICIES_FILE (${this.file})`, this.opts.trustLevels);
      this.#rules = parsed.rules.map(compileRule);
      this.#governors = parsed.governors;
      this.#followUp = parsed.followUp;
      this.#stamp = stamp;
      if (!initial) this.opts.onReload?.({ rules: parsed.rules.length, governors: parsed.governors.length });
    } catch (error) {
      if (initial) throw error;
      // Keep deciding with the previous rules; report once per file version.
      this.#stamp = stamp;
      this.opts.onReloadError?.(error as Error);
    }
  }

  #recheck(): void {
    const now = Date.now();
    if (now - this.#checkedAt < (this.opts.recheckMs ?? 1000)) return;
    this.#checkedAt = now;
    this.#load(false);
  }
}
