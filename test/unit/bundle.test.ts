// tools/build/bundle.mjs: the bundle the `opencode-a2a` command runs loads Node's built-in modules by require(), never
// by an ES import, whose module namespace reads every export of the built-in: on Node 22+ that includes node:http's
// getters that load undici (~85 ms of a Node 24 start). Checked on the bundle's text, and in a fresh process that
// imports it (which catches the undici load itself on Node 22+; on Node 20 node:http has no such getters).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { packageRoot } from "../../src/contract/catalog.js";

const bundleDir = path.join(packageRoot, "dist", "bundle");
const files = [path.join(bundleDir, "main.js"), ...fs.readdirSync(path.join(bundleDir, "chunks")).filter((f) => f.endsWith(".js")).map((f) => path.join(bundleDir, "chunks", f))];

describe("bundle", () => {
  it("has no ES import of a Node built-in in any of its files", () => {
    const imports = files.flatMap((f) => [...fs.readFileSync(f, "utf8").matchAll(/\bfrom\s*"((?:node:)?[a-z_/]+)"/g)].map((m) => `${path.basename(f)}: ${m[1]}`));
    expect(imports.filter((i) => !i.endsWith(": better-sqlite3") && !i.endsWith(": opencode-ai") && !i.endsWith(": pino-pretty"))).toEqual([]);
    // The built-ins are there, by require.
    expect(fs.readFileSync(files[0]!, "utf8")).toContain('require("node:http")');
  });

  it("importing it reads none of node:http's lazy exports: undici is not loaded", () => {
    const script = `await import(${JSON.stringify(files[0]!)}); process.stdout.write(JSON.stringify(process.moduleLoadList.filter((m) => m.includes("undici"))));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: packageRoot, encoding: "utf8" })) as string[];
    expect(loaded).toEqual([]);
  });
});
