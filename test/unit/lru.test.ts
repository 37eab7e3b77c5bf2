import { describe, expect, it } from "vitest";
import { boundedAdd, boundedSet, lruGet } from "../../src/util/lru.js";

describe("bounded maps and sets", () => {
  it("lruGet moves a hit to the end, so boundedSet drops the least recently used first", () => {
    const map = new Map<string, number>();
    boundedSet(map, "a", 1, 2);
    boundedSet(map, "b", 2, 2);
    expect(lruGet(map, "a")).toBe(1);
    expect(lruGet(map, "z")).toBeUndefined();
    boundedSet(map, "c", 3, 2);
    expect([...map.keys()]).toEqual(["a", "c"]);
  });

  it("boundedSet of a present key replaces it at the end without dropping another", () => {
    const map = new Map([["a", 1], ["b", 2]]);
    boundedSet(map, "a", 9, 2);
    expect([...map]).toEqual([["b", 2], ["a", 9]]);
  });

  it("boundedAdd keeps the newest members; a bound of 0 keeps nothing", () => {
    const set = new Set<string>();
    for (const v of ["a", "b", "c", "a"]) boundedAdd(set, v, 2);
    expect([...set]).toEqual(["c", "a"]);
    const none = new Set<string>();
    boundedAdd(none, "a", 0);
    const empty = new Map<string, number>();
    boundedSet(empty, "a", 1, 0);
    expect(none.size + empty.size).toBe(0);
  });
});
