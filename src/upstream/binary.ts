// Locating the OpenCode binary that the `opencode-ai` npm dependency installed.
//
// `opencode-ai` ships a shell stub at bin/opencode.exe that its postinstall replaces with the platform binary;
// when install scripts were skipped the stub only prints an error. So we run the platform package's binary
// directly (node_modules/opencode-<platform>-<arch>[-baseline][-musl]/bin/opencode), choosing the same build the
// postinstall would: -baseline when the CPU lacks AVX2, -musl on musl libc.
import { existsSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { isObject } from "../util/object.js";

const require = createRequire(import.meta.url);

/** Directory of the installed opencode-ai package (Node module resolution from this package). */
export function opencodePackageDir(): string {
  try {
    return dirname(require.resolve("opencode-ai/package.json"));
  } catch {
    throw new Error("the opencode-ai package is not installed (npm install installs it as a dependency)");
  }
}

/** Version of the installed opencode-ai package. */
export function opencodeVersion(): string {
  const file = join(opencodePackageDir(), "package.json");
  const pkg: unknown = JSON.parse(readFileSync(file, "utf8"));
  const version = isObject(pkg) ? pkg.version : undefined;
  if (typeof version !== "string" || version === "") throw new Error(`${file}: no "version"`);
  return version;
}

function cpuHasAvx2(): boolean {
  try {
    return /(^|\s)avx2(\s|$)/im.test(readFileSync("/proc/cpuinfo", "utf8"));
  } catch {
    return false;
  }
}

function isMusl(): boolean {
  if (process.platform !== "linux") return false;
  if (existsSync("/etc/alpine-release")) return true;
  // Node's diagnostic report names the glibc it runs on; the field is absent on musl.
  const report: unknown = process.report.getReport();
  const header: unknown = isObject(report) ? report.header : undefined;
  return !(isObject(header) && typeof header.glibcVersionRuntime === "string");
}

/** Platform package names in order of preference (the order opencode-ai's postinstall uses). */
export function platformPackageCandidates(): string[] {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  const arch = process.arch;
  const base = `opencode-${platform}-${arch}`;
  const baseline = arch === "x64" && !cpuHasAvx2();
  if (platform === "linux") {
    if (isMusl()) {
      if (arch !== "x64") return [`${base}-musl`, base];
      return baseline
        ? [`${base}-baseline-musl`, `${base}-musl`, `${base}-baseline`, base]
        : [`${base}-musl`, `${base}-baseline-musl`, base, `${base}-baseline`];
    }
    if (arch !== "x64") return [base, `${base}-musl`];
    return baseline
      ? [`${base}-baseline`, base, `${base}-baseline-musl`, `${base}-musl`]
      : [base, `${base}-baseline`, `${base}-musl`, `${base}-baseline-musl`];
  }
  if (arch === "x64") return baseline ? [`${base}-baseline`, base] : [base, `${base}-baseline`];
  return [base];
}

/**
 * Absolute path of the OpenCode platform binary. `override` (OPENCODE_BINARY) wins when given and must exist.
 */
export function resolveOpencodeBinary(override?: string): string {
  if (override !== undefined) {
    if (!existsSync(override) || !statSync(override).isFile()) throw new Error(`OPENCODE_BINARY does not exist: ${override}`);
    return override;
  }
  const from = opencodePackageDir();
  const exe = process.platform === "win32" ? "opencode.exe" : "opencode";
  const candidates = platformPackageCandidates();
  for (const name of candidates) {
    let dir: string;
    try {
      dir = dirname(require.resolve(`${name}/package.json`, { paths: [from] }));
    } catch {
      continue;
    }
    const binary = join(dir, "bin", exe);
    if (existsSync(binary) && statSync(binary).isFile()) return binary;
  }
  throw new Error(
    `no OpenCode platform binary found next to ${from}; looked for ${candidates.join(", ")} ` +
      "(reinstall with optional dependencies enabled, or set OPENCODE_BINARY)",
  );
}
