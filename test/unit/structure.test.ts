// The structure of src/ as a checked fact: the folder rules of tools/lint/layers.js (which the lint also enforces)
// hold for the real import graph, and neither files nor folders import each other in a cycle, type-only imports
// included. Imports are read with the TypeScript scanner, so commented-out or string lookalikes do not count.
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { LAYERS } from "../../tools/lint/layers.js";

const SRC = path.resolve(import.meta.dirname, "../../src");
/** Files directly in src/ (the entry point) may import any folder. */
const ROOT = ".";
/** Longest file allowed under src/ (lines). */
const MAX_LINES = 400;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith(".ts") ? [full] : [];
  });
}

/** The src/ file a relative specifier names (`./x.js` → x.ts, `./dir` → dir/index.ts); undefined outside src/. */
function resolve(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const base = path.resolve(path.dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, ".ts"), `${base}.ts`, path.join(base, "index.ts")];
  const hit = candidates.find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
  return hit !== undefined && hit.startsWith(SRC + path.sep) ? hit : undefined;
}

const folderOf = (file: string): string => {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length === 1 ? ROOT : rel[0]!;
};

function importGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    const info = ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true);
    const targets = new Set<string>();
    for (const ref of info.importedFiles) {
      const target = resolve(file, ref.fileName);
      if (target !== undefined) targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** Strongly connected components with more than one node, or a node that reaches itself (Tarjan). */
function cycles<T>(graph: Map<T, Set<T>>): T[][] {
  let next = 0;
  const index = new Map<T, number>();
  const low = new Map<T, number>();
  const stack: T[] = [];
  const onStack = new Set<T>();
  const found: T[][] = [];
  const visit = (v: T): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: T[] = [];
    let w: T;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || graph.get(v)?.has(v)) found.push(scc);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const files = importGraph();
const rel = (f: string): string => path.relative(SRC, f);

function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const [file, targets] of files) {
    const from = folderOf(file);
    const edges = graph.get(from) ?? new Set<string>();
    for (const t of targets) if (folderOf(t) !== from) edges.add(folderOf(t));
    graph.set(from, edges);
  }
  return graph;
}

describe("src/ structure", () => {
  it("the layer table only reaches down, so it allows no folder cycle", () => {
    const order = Object.keys(LAYERS);
    for (const [i, folder] of order.entries()) {
      for (const allowed of LAYERS[folder as keyof typeof LAYERS]) {
        expect(order.indexOf(allowed), `${folder} may import ${allowed}, listed after it`).toBeGreaterThanOrEqual(0);
        expect(order.indexOf(allowed), `${folder} may import ${allowed}, listed after it`).toBeLessThan(i);
      }
    }
  });

  it("every folder of src/ has an entry in the layer table and imports only what it allows", () => {
    const violations: string[] = [];
    for (const [folder, targets] of folderGraph()) {
      if (folder === ROOT) continue;
      const allowed = (LAYERS as Record<string, readonly string[]>)[folder];
      if (allowed === undefined) {
        violations.push(`src/${folder} is not in tools/lint/layers.js`);
        continue;
      }
      for (const t of targets) if (t !== ROOT && !allowed.includes(t)) violations.push(`src/${folder} imports src/${t}`);
      if (targets.has(ROOT)) violations.push(`src/${folder} imports the entry point`);
    }
    expect(violations).toEqual([]);
  });

  it("no folder imports another in a cycle", () => {
    expect(cycles(folderGraph())).toEqual([]);
  });

  it("no file imports another in a cycle (type-only imports included)", () => {
    expect(cycles(files).map((scc) => scc.map(rel).sort())).toEqual([]);
  });

  it(`no file in src/ is longer than ${MAX_LINES} lines`, () => {
    const long = [...files.keys()].flatMap((f) => {
      const lines = fs.readFileSync(f, "utf8").split("\n").length - 1;
      return lines > MAX_LINES ? [`${rel(f)}: ${lines}`] : [];
    });
    expect(long).toEqual([]);
  });

  it("finds a cycle when there is one (the checker itself)", () => {
    const g = new Map([["a", new Set(["b"])], ["b", new Set(["c"])], ["c", new Set(["a"])], ["d", new Set(["d"])], ["e", new Set<string>()]]);
    expect(cycles(g).map((c) => c.sort())).toEqual([["a", "b", "c"], ["d"]]);
  });
});
