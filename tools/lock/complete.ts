// `npm run lock`: rewrite package-lock.json from package.json with npm, then make it complete for every platform
// (tools/lock/platforms.ts says what complete means), so that `npm ci` works on a fresh clone on Linux, macOS and
// Windows. Run it after every dependency change (and after merging branches that changed dependencies).
//
// Why npm alone is not enough: npm 11 writes an entry for every optional dependency whose manifest it can fetch,
// whatever the platform (all of @esbuild/*, for instance), but silently leaves out one the registry answers 404
// for; `npm ci` then refuses the lock ("Missing: opencode-darwin-arm64@ from lock file"). The registry this project is
// built against has no 1.18.33 build of most opencode-<os>-<cpu> packages. For each missing one this tool writes the
// entry npm would have written, as far as it can be known: the exact version's manifest when the registry has it
// (version, integrity, os, cpu, libc), else the platform fields of the package's other versions (`npm view`), else the
// platform read off its name. An entry without `integrity` is fetched by name@version on the platform that needs it
// and skipped (os/cpu/libc mismatch) everywhere else; npm keeps such entries when it rewrites the lock.
//
// npm runs in a temporary directory holding only package.json and package-lock.json (and .npmrc), so node_modules is
// never read or changed. Flags: --no-refresh (complete the lock as it is, no `npm install --package-lock-only`),
// --check (change nothing; exit 1 and list the problems when the lock is incomplete).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { lockPlatformProblems, missingOptionalDependencies, platformFromName, type LockEntry, type Lockfile } from "./platforms.js";

const root = path.resolve(import.meta.dirname, "..", "..");
const lockPath = path.join(root, "package-lock.json");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

function readLock(file: string): Lockfile {
  return JSON.parse(fs.readFileSync(file, "utf8")) as Lockfile;
}

/** `npm view <spec> <fields> --json`, or undefined when the registry has no such package or version. */
function npmView(spec: string, fields: string[]): Record<string, unknown> | undefined {
  let out: string;
  try {
    out = execFileSync(npm, ["view", spec, ...fields, "--json"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], shell: process.platform === "win32" });
  } catch {
    return undefined; // E404: unknown package or version
  }
  if (out.trim() === "") return undefined;
  let value = JSON.parse(out) as unknown;
  // A range matching several versions answers an array; the last is the newest.
  if (Array.isArray(value)) value = value.at(-1);
  if (typeof value !== "object" || value === null) return fields.length === 1 ? { [fields[0]!]: value } : undefined;
  return value as Record<string, unknown>;
}

const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.every((x) => typeof x === "string") ? v : typeof v === "string" ? [v] : undefined;

/** The lock entry for optional dependency `name@spec` of the package at `parent`. */
function entryFor(name: string, spec: string, parent: LockEntry): { entry: LockEntry; source: string } {
  const flags: LockEntry = parent.dev ? { dev: true, optional: true } : parent.devOptional ? { devOptional: true } : { optional: true };
  const exact = npmView(`${name}@${spec}`, ["version", "dist.integrity", "license", "os", "cpu", "libc", "engines"]);
  if (exact !== undefined && typeof exact.version === "string") {
    const entry: LockEntry = { version: exact.version };
    if (typeof exact["dist.integrity"] === "string") entry.integrity = exact["dist.integrity"];
    Object.assign(entry, {
      ...(strings(exact.cpu) ? { cpu: strings(exact.cpu) } : {}),
      ...flags,
      ...(typeof exact.license === "string" ? { license: exact.license } : {}),
      ...(strings(exact.libc) ? { libc: strings(exact.libc) } : {}),
      ...(strings(exact.os) ? { os: strings(exact.os) } : {}),
    });
    return { entry, source: `registry manifest of ${name}@${exact.version}` };
  }
  const version = /^\d+\.\d+\.\d+(-[\w.]+)?$/.test(spec) ? spec : undefined;
  if (version === undefined) throw new Error(`${name}@${spec}: the registry has no matching version and the range names no exact one`);
  const other = npmView(name, ["version", "os", "cpu", "libc"]);
  const platform =
    other !== undefined && (strings(other.os) || strings(other.cpu))
      ? { os: strings(other.os), cpu: strings(other.cpu), libc: strings(other.libc), from: `platform fields of ${name}@${String(other.version)}` }
      : { ...platformFromName(name), from: "platform read off the package name" };
  if (platform.os === undefined && platform.cpu === undefined) throw new Error(`${name}@${spec}: not on the registry and no platform in its name`);
  const entry: LockEntry = {
    version,
    ...(platform.cpu ? { cpu: platform.cpu } : {}),
    ...flags,
    ...(platform.libc ? { libc: platform.libc } : {}),
    ...(platform.os ? { os: platform.os } : {}),
  };
  return { entry, source: `not on the registry at ${version}; ${platform.from}` };
}

/** Adds an entry for every missing optional dependency; returns what it added. */
export function completeLock(lock: Lockfile, log: (line: string) => void = () => {}): number {
  let added = 0;
  for (const m of missingOptionalDependencies(lock)) {
    const hoisted = `node_modules/${m.name}`;
    const at = lock.packages[hoisted] === undefined ? hoisted : `${m.parent}/node_modules/${m.name}`;
    if (lock.packages[at] !== undefined) continue; // added for an earlier parent
    const { entry, source } = entryFor(m.name, m.spec, lock.packages[m.parent]!);
    lock.packages[at] = entry;
    log(`  + ${at}@${entry.version} (${entry.os?.join("/") ?? "any os"} ${entry.cpu?.join("/") ?? "any cpu"}${entry.libc ? ` ${entry.libc.join("/")}` : ""}): ${source}`);
    added++;
  }
  // npm's own order of the packages map: the root first, then by path.
  const sorted = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b, "en"))));
  lock.packages = sorted;
  return added;
}

/** npm install --package-lock-only in a scratch copy of the manifest; returns the lock npm wrote. */
function npmLock(dir: string): void {
  execFileSync(npm, ["install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: dir,
    stdio: ["ignore", "inherit", "inherit"],
    shell: process.platform === "win32",
  });
}

function main(args: string[]): number {
  if (args.includes("--check")) {
    const problems = lockPlatformProblems(readLock(lockPath));
    for (const p of problems) process.stderr.write(`package-lock.json: ${p}\n`);
    if (problems.length) process.stderr.write("run `npm run lock` to complete it\n");
    return problems.length ? 1 : 0;
  }
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-lock-"));
  try {
    for (const file of ["package.json", "package-lock.json", ".npmrc"])
      if (fs.existsSync(path.join(root, file))) fs.copyFileSync(path.join(root, file), path.join(scratch, file));
    const scratchLock = path.join(scratch, "package-lock.json");
    if (!args.includes("--no-refresh")) {
      process.stdout.write("npm install --package-lock-only (in a scratch copy of package.json)\n");
      npmLock(scratch);
    }
    const lock = readLock(scratchLock);
    process.stdout.write("optional platform binaries the lock lacks:\n");
    const added = completeLock(lock, (line) => process.stdout.write(`${line}\n`));
    if (added === 0) process.stdout.write("  none\n");
    fs.writeFileSync(scratchLock, `${JSON.stringify(lock, null, 2)}\n`);
    if (added > 0 && !args.includes("--no-refresh")) {
      // Let npm rewrite the completed lock once more in its own format; it must keep every entry.
      npmLock(scratch);
    }
    const result = readLock(scratchLock);
    const problems = lockPlatformProblems(result);
    if (problems.length) {
      for (const p of problems) process.stderr.write(`package-lock.json: ${p}\n`);
      process.stderr.write("the lock is still incomplete; package-lock.json was not changed\n");
      return 1;
    }
    const before = fs.existsSync(lockPath) ? fs.readFileSync(lockPath, "utf8") : "";
    const after = fs.readFileSync(scratchLock, "utf8");
    if (before === after) process.stdout.write("package-lock.json is complete and unchanged\n");
    else {
      fs.writeFileSync(lockPath, after);
      process.stdout.write("package-lock.json written (complete for every platform); commit it\n");
    }
    return 0;
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

const isEntry = process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename);
if (isEntry) process.exit(main(process.argv.slice(2)));
