// The README's configuration table must list exactly the variables of the config module, with their defaults.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { variables } from "../../src/config/index.js";
import { packageRoot } from "../../src/contract/catalog.js";

const readme = fs.readFileSync(path.join(packageRoot, "README.md"), "utf8");

function readmeRows(): Map<string, string> {
  const section = readme.split("## Configuration")[1]!.split("\n## ")[0]!;
  const rows = new Map<string, string>();
  for (const line of section.split("\n")) {
    const m = /^\| `([A-Z0-9_]+)` \| (.+?) \| /.exec(line);
    if (m) rows.set(m[1]!, m[2]!.replace(/`/g, ""));
  }
  return rows;
}

describe("README configuration table", () => {
  const rows = readmeRows();
  const declared = Object.values(variables) as { name: string; defaultText: string }[];

  it("lists every variable of the config module with its default", () => {
    for (const v of declared) {
      expect(rows.has(v.name), `${v.name} missing from README`).toBe(true);
      expect(rows.get(v.name), `default of ${v.name}`).toBe(v.defaultText);
    }
  });

  it("lists no variable the config module does not read", () => {
    const names = new Set(declared.map((v) => v.name));
    for (const name of rows.keys()) expect(names.has(name), `${name} is in README but not read by src/config`).toBe(true);
  });
});
