// Regression of the fuzz finding in src/server/middleware/body.ts: bodies nesting deeper than MAX_JSON_DEPTH are
// refused at the edge (PARSE_ERROR) instead of overflowing the stack in key normalization (INTERNAL_ERROR / HTTP 500).
import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../src/pipeline/body.js";

const nest = (n: number, open = "[", close = "]") => open.repeat(n) + close.repeat(n);

describe("nestsDeeperThan", () => {
  it("counts arrays and objects, up to and over the limit", () => {
    expect(nestsDeeperThan(Buffer.from(nest(MAX_JSON_DEPTH)), MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(Buffer.from(nest(MAX_JSON_DEPTH + 1)), MAX_JSON_DEPTH)).toBe(true);
    expect(nestsDeeperThan(Buffer.from('{"a":'.repeat(200) + "1" + "}".repeat(200)), MAX_JSON_DEPTH)).toBe(true);
    expect(nestsDeeperThan(Buffer.from("[".repeat(10_000)), MAX_JSON_DEPTH)).toBe(true);
  });

  it("ignores brackets inside strings, escaped quotes included", () => {
    const text = JSON.stringify({ s: "[".repeat(1000) + '\\"' + "{".repeat(1000), t: '"[[[' });
    expect(nestsDeeperThan(Buffer.from(text), MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(Buffer.from(JSON.stringify(["\\", nest(10)])), 2)).toBe(false);
  });

  it("is not fooled by multi-byte UTF-8", () => {
    expect(nestsDeeperThan(Buffer.from(JSON.stringify({ s: "🦄[".repeat(500) })), 3)).toBe(false);
  });
});
