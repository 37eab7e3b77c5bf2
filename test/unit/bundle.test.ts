// tools/build/bundle.mjs: the bundle the `opencode-a2a` command runs loads Node's built-in modules by require(), never
// by an ES import, whose module namespace reads every export of the built-in: on Node 22+ that includes node:http's
// getters that load undici (~85 ms of a Node 24 start). Checked on the bundle's text, and in a fresh process that
// imports it (which catches the undici load itself on Node 22+; on Node 20 node:http has no such getters).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { isBuiltin } from "node:module";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { packageRoot } from "../../src/contract/catalog.js";

const bundleDir = path.join(packageRoot, "dist", "bundle");
const files = [path.join(bundleDir, "main.js"), ...fs.readdirSync(path.join(bundleDir, "chunks")).filter((f) => f.endsWith(".js")).map((f) => path.join(bundleDir, "chunks", f))];

describe("bundle", () => {
  it("has no ES import of a Node built-in in any of its files; the built-ins go through the require wrapper", () => {
    const texts = files.map((f) => ({ file: path.basename(f), text: fs.readFileSync(f, "utf8") }));
    // Static (`from "x"`, `import "x"`) and dynamic (`import("x")`) imports whose specifier is a built-in.
    const imports = texts.flatMap(({ file, text }) =>
      [...text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*"([^"]+)"/g)].map((m) => m[1]!).filter((spec) => isBuiltin(spec)).map((spec) => `${file}: ${spec}`),
    );
    expect(imports).toEqual([]);
    // The plugin's wrapper module of node:http (koa's own require of it would be there without the plugin too).
    expect(texts.some(({ text }) => text.includes('"builtin-require:node:http"'))).toBe(true);
  });

  it("importing it reads none of node:http's lazy exports: undici is not loaded", () => {
    const script = `await import(${JSON.stringify(files[0]!)}); process.stdout.write(JSON.stringify(process.moduleLoadList.filter((m) => m.includes("undici"))));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: packageRoot, encoding: "utf8" })) as string[];
    expect(loaded).toEqual([]);
  });
});
