// better-sqlite3 12 on Node 24 aborts the process when it garbage-collects a Statement (src/storage/pin.ts). Every
// Statement and Database of src/ and test/ must therefore stay reachable: a statement is prepared through pin.ts's
// prepare() (or StoreDatabase.statement(), which uses it), a Database is passed to pinDatabase() where it is made.
// A statement prepared any other way on the main thread is only caught on Node 24, and then only when a collection
// happens to find it (CI saw vitest's worker abort in one run out of two). Checked on the syntax tree: code inside the
// worker threads' script strings (../../src/storage/sql/readers.ts, checkpointer.ts) is not a call here; those threads
// keep their statements for their whole life.
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const PIN = path.join(ROOT, "src", "storage", "pin.ts");

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" || e.name === "fixtures" ? [] : files(full);
    return e.name.endsWith(".ts") ? [full] : [];
  });
}

/** Unpinned statements and databases in `source`: `x.prepare(…)`, `new Database(…)` not directly inside pinDatabase(…). */
function findings(file: string, source: string): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const where = (n: ts.Node): string => `${path.relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === "prepare") out.push(`${where(n)} prepare()`);
    if (ts.isNewExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === "Database") {
      const parent = n.parent;
      const pinned = ts.isCallExpression(parent) && ts.isIdentifier(parent.expression) && parent.expression.text === "pinDatabase";
      if (!pinned) out.push(`${where(n)} new Database()`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

describe("better-sqlite3 objects stay reachable", () => {
  it("src/ and test/ prepare statements through pin.ts and pin every Database they make", () => {
    const all = [...files(path.join(ROOT, "src")), ...files(path.join(ROOT, "test")), ...files(path.join(ROOT, "tools"))].filter((f) => f !== PIN);
    const found = all.flatMap((f) => findings(f, fs.readFileSync(f, "utf8")));
    expect(found).toEqual([]);
  });

  it("the check finds an unpinned statement and database (the checker itself)", () => {
    const bad = `const db = new Database(":memory:"); db.prepare("SELECT 1").get(); const ok = pinDatabase(new Database(":memory:"));`;
    expect(findings(path.join(ROOT, "x.ts"), bad)).toEqual(["x.ts:1 new Database()", "x.ts:1 prepare()"]);
    expect(findings(path.join(ROOT, "y.ts"), "const THREAD = `db.prepare(sql)`;")).toEqual([]);
  });
});
