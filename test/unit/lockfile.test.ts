// package-lock.json must let `npm ci` resolve on every platform: each package's optional platform binaries
// (opencode-ai's opencode-<os>-<cpu>…, esbuild's, …) all have an entry with the platform they are for. The expected
// set comes from the lock itself (each entry's optionalDependencies). `npm run lock` repairs it.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { packageRoot } from "../../src/contract/catalog.js";
import { lockPlatformProblems, platformFromName, resolveInLock, type Lockfile } from "../../tools/lock/platforms.js";

const lockText = fs.readFileSync(path.join(packageRoot, "package-lock.json"), "utf8");
const fresh = (): Lockfile => JSON.parse(lockText) as Lockfile;

describe("package-lock.json carries every platform's optional binaries", () => {
  it("has an entry with os/cpu for every optional dependency of every package that ships platform binaries", () => {
    expect(lockPlatformProblems(fresh())).toEqual([]);
  });

  it("names each of opencode-ai's platform packages with its platform", () => {
    const lock = fresh();
    const opencode = lock.packages["node_modules/opencode-ai"]!;
    const names = Object.keys(opencode.optionalDependencies ?? {});
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) {
      const at = resolveInLock(lock.packages, "node_modules/opencode-ai", name);
      expect(at, name).toBeDefined();
      const entry = lock.packages[at!]!;
      expect(entry.version, name).toBe(opencode.optionalDependencies![name]);
      expect(entry.os ?? entry.cpu, `${name} os/cpu`).toBeDefined();
      expect(entry.optional, `${name} optional`).toBe(true);
    }
    // Each platform opencode-ai's postinstall knows is covered: macOS, Linux (glibc and musl) and Windows.
    const platforms = new Set(names.map((n) => lock.packages[resolveInLock(lock.packages, "node_modules/opencode-ai", n)!]!.os?.[0]));
    expect([...platforms].sort()).toEqual(["darwin", "linux", "win32"]);
    expect(names.filter((n) => lock.packages[`node_modules/${n}`]!.libc?.includes("musl")).length).toBeGreaterThan(0);
  });

  it("fails when one platform's entry is removed (a copy of the lock)", () => {
    const lock = fresh();
    delete lock.packages["node_modules/opencode-darwin-arm64"];
    const problems = lockPlatformProblems(lock);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("opencode-darwin-arm64");
    expect(problems[0]).toContain("node_modules/opencode-ai");
  });

  it("fails for esbuild's binaries too, and when an entry loses its platform or its pinned version", () => {
    const lock = fresh();
    const esbuild = Object.keys(lock.packages["node_modules/esbuild"]?.optionalDependencies ?? {});
    expect(esbuild.length).toBeGreaterThan(0);
    delete lock.packages[resolveInLock(lock.packages, "node_modules/esbuild", esbuild[0]!)!];
    const linux = lock.packages["node_modules/opencode-linux-x64"]!;
    delete linux.os;
    delete linux.cpu;
    lock.packages["node_modules/opencode-windows-x64"]!.version = "0.0.1";
    const problems = lockPlatformProblems(lock).join("\n");
    expect(problems).toContain(esbuild[0]);
    expect(problems).toMatch(/opencode-linux-x64 .*neither "os" nor "cpu"/);
    expect(problems).toMatch(/opencode-windows-x64 is version 0\.0\.1/);
  });

  it("finds a nested entry before the hoisted one, as Node resolves", () => {
    const packages = { "node_modules/a": {}, "node_modules/a/node_modules/b": {}, "node_modules/b": {} };
    expect(resolveInLock(packages, "node_modules/a", "b")).toBe("node_modules/a/node_modules/b");
    expect(resolveInLock(packages, "node_modules/c", "b")).toBe("node_modules/b");
    expect(resolveInLock(packages, "node_modules/a", "d")).toBeUndefined();
  });

  it("reads the platform off a binary package's name when the registry cannot describe it", () => {
    expect(platformFromName("opencode-linux-x64-baseline-musl")).toEqual({ os: ["linux"], cpu: ["x64"], libc: ["musl"] });
    expect(platformFromName("opencode-windows-arm64")).toEqual({ os: ["win32"], cpu: ["arm64"] });
    expect(platformFromName("@esbuild/darwin-x64")).toEqual({ os: ["darwin"], cpu: ["x64"] });
    expect(platformFromName("left-pad")).toBeUndefined();
  });
});
