// src/util/old-generation.ts: with the bound, the old generation of a process that keeps a live set and promotes
// short-lived objects stays well below where V8's own growth takes it (checked in fresh processes, the same work in
// each); an operator's own --heap-growing-percent is kept.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { HEAP_GROWING_PERCENT, oldGenerationConfigured } from "../../src/util/old-generation.js";

const built = path.resolve(import.meta.dirname, "../../dist/src/util/old-generation.js");

/**
 * The largest old space (MB) a fresh process reaches while it keeps about 40 MB live and replaces the members of a
 * ring of 100,000 objects 3,000,000 times (each lives long enough to be promoted), and what boundOldGeneration said.
 */
function largestOldSpace(bound: boolean, nodeArgs: string[] = []): { largest: number; set: boolean | null } {
  const script = `
    import v8 from "node:v8";
    import { boundOldGeneration } from ${JSON.stringify(built)};
    const set = ${bound ? "boundOldGeneration()" : "null"};
    const live = [];
    for (let i = 0; i < 300000; i++) live.push({ s: "x".repeat(64) + i, n: i });
    const ring = new Array(100000);
    let largest = 0;
    for (let i = 0; i < 3000000; i++) {
      ring[i % ring.length] = { a: "y".repeat(50) + i, b: [i, i + 1] };
      if (i % 1000 === 0) largest = Math.max(largest, v8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space").space_size);
    }
    process.stdout.write(JSON.stringify({ largest: largest / 2 ** 20, set, live: live.length }));`;
  const out = execFileSync(process.execPath, [...nodeArgs, "--input-type=module", "-e", script], { encoding: "utf8", env: { PATH: process.env.PATH ?? "" }, timeout: 60_000 });
  return JSON.parse(out) as { largest: number; set: boolean | null };
}

describe("old generation bound", () => {
  it("keeps the old generation well below V8's own growth", () => {
    expect(HEAP_GROWING_PERCENT).toBe(50);
    const free = largestOldSpace(false);
    const bounded = largestOldSpace(true);
    expect(bounded.set).toBe(true);
    expect(bounded.largest).toBeGreaterThan(40); // the live set is there
    expect(bounded.largest).toBeLessThan(free.largest * 0.85);
  }, 120_000);

  it("does nothing when the process was started with --heap-growing-percent", () => {
    const given = largestOldSpace(true, ["--heap-growing-percent=300"]);
    expect(given.set).toBe(false);
    expect(oldGenerationConfigured(["--heap-growing-percent=20"])).toBe(true);
    expect(oldGenerationConfigured(["--heap_growing_percent=20"])).toBe(true);
    expect(oldGenerationConfigured(["--max-old-space-size=512"])).toBe(false);
  }, 120_000);
});
