// What a complete package-lock.json is for this project: every package that ships per-platform binaries as optional
// dependencies (opencode-ai's opencode-<os>-<cpu>[-baseline][-musl], esbuild's @esbuild/*, rolldown's, lightningcss's,
// …) has a lock entry for EVERY one of those optional dependencies, each with the platform it is for (`os`/`cpu`,
// `libc` on musl builds). `npm ci` on macOS or Windows resolves the optional dependencies of the lock's packages; one
// that has no entry fails the whole install ("Missing: opencode-darwin-arm64@ from lock file"), and an entry without
// `os`/`cpu` would be fetched on every platform. The expected set comes from the lock itself: each entry's
// `optionalDependencies`. Used by tools/lock/complete.ts (`npm run lock`) and test/unit/lockfile.test.ts.

export interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  optional?: boolean;
  dev?: boolean;
  devOptional?: boolean;
  link?: boolean;
  optionalDependencies?: Record<string, string>;
  [field: string]: unknown;
}

export interface Lockfile {
  name?: string;
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
  [field: string]: unknown;
}

export interface MissingOptional {
  /** Lock path of the package that declares the optional dependency, e.g. `node_modules/opencode-ai`. */
  parent: string;
  name: string;
  spec: string;
}

/**
 * Where Node (and npm) would find `name` for the package at lock path `from`: its own node_modules first, then each
 * enclosing node_modules up to the root. Undefined when the lock has no such entry.
 */
export function resolveInLock(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = dir === "" ? `node_modules/${name}` : `${dir}/node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (dir === "") return undefined;
    const cut = dir.lastIndexOf("/node_modules/");
    dir = cut === -1 ? "" : dir.slice(0, cut);
  }
}

/** Optional dependencies of the lock's packages that have no entry the package would resolve. */
export function missingOptionalDependencies(lock: Lockfile): MissingOptional[] {
  const missing: MissingOptional[] = [];
  for (const [parent, entry] of Object.entries(lock.packages)) {
    if (entry.link) continue;
    for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
      if (resolveInLock(lock.packages, parent, name) === undefined) missing.push({ parent, name, spec });
    }
  }
  return missing;
}

/** Every problem that makes the lock incomplete for some platform; empty when `npm ci` can resolve it anywhere. */
export function lockPlatformProblems(lock: Lockfile): string[] {
  const problems: string[] = [];
  if (lock.lockfileVersion < 2) problems.push(`lockfileVersion ${lock.lockfileVersion}: npm 7+ lock files (2 or 3) carry per-package os/cpu`);
  for (const m of missingOptionalDependencies(lock))
    problems.push(`${m.parent} declares optional dependency ${m.name}@${m.spec}, which has no entry in the lock`);
  for (const [parent, entry] of Object.entries(lock.packages)) {
    const optional = Object.entries(entry.optionalDependencies ?? {});
    // A package ships per-platform binaries when at least one of its optional dependencies names a platform.
    const targets = optional.map(([name]) => resolveInLock(lock.packages, parent, name)).filter((p): p is string => p !== undefined);
    const platformSpecific = targets.some((p) => lock.packages[p]!.os !== undefined || lock.packages[p]!.cpu !== undefined);
    if (!platformSpecific) continue;
    for (const [name, spec] of optional) {
      const at = resolveInLock(lock.packages, parent, name);
      if (at === undefined) continue;
      const target = lock.packages[at]!;
      if (target.os === undefined && target.cpu === undefined)
        problems.push(`${at} (optional binary of ${parent}) has neither "os" nor "cpu": every platform would fetch it`);
      if (/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(spec) && target.version !== spec)
        problems.push(`${at} is version ${target.version ?? "(none)"} but ${parent} pins ${name}@${spec}`);
    }
  }
  return problems;
}

const OS_WORDS: Record<string, string> = {
  darwin: "darwin",
  macos: "darwin",
  linux: "linux",
  windows: "win32",
  win32: "win32",
  freebsd: "freebsd",
  openbsd: "openbsd",
  netbsd: "netbsd",
  sunos: "sunos",
  aix: "aix",
  android: "android",
};
const CPU_WORDS = new Set(["x64", "arm64", "arm", "ia32", "ppc64", "s390x", "riscv64", "loong64", "mips64el"]);

/**
 * The platform a binary package is for, read off its name (`opencode-linux-x64-baseline-musl` → linux, x64, musl),
 * for packages the registry cannot describe. Undefined when the name names no os or cpu.
 */
export function platformFromName(name: string): Pick<LockEntry, "os" | "cpu" | "libc"> | undefined {
  const words = name.replace(/^@[^/]+\//, "").split(/[-_.]/);
  const os = words.map((w) => OS_WORDS[w]).find((w) => w !== undefined);
  const cpu = words.find((w) => CPU_WORDS.has(w));
  if (os === undefined && cpu === undefined) return undefined;
  return {
    ...(os === undefined ? {} : { os: [os] }),
    ...(cpu === undefined ? {} : { cpu: [cpu] }),
    ...(words.includes("musl") ? { libc: ["musl"] } : words.includes("gnu") || words.includes("glibc") ? { libc: ["glibc"] } : {}),
  };
}
