// The young generation's size, kept where Node 20 keeps it on every Node line.
//
// V8 grows a heap's new space by doubling its two semi-spaces while much of what it allocates survives. Node 20 stops
// at 16 MB semi-spaces (32 MB of new space); Node 22 and later let them grow to 64 MB (128 MB). Under load the
// gateway's new space reaches that size on Node 24 and its pages stay resident: measured, the difference is most of
// the gap between the RSS of the two lines. `--max-semi-space-size` caps it, but V8 reads that flag only when it
// creates a heap, so a running process cannot set it for itself; V8 does read `--semi-space-growth-factor` at every
// growth step. capYoungGeneration() therefore watches the new space after each garbage collection and sets the
// growth factor to 1 (no growth) while it is at or above the cap, and back to V8's default below it (a collection
// that shrank it under memory pressure leaves it free to grow to the cap again). The check runs after a collection,
// in the gc observer's callback, so a burst of collections within one stretch of work can take it a step past the
// cap; Node 24's V8 also adds pages to the new space besides doubling it. Measured: a test process with a 2 MB cap
// peaks at a 4 MB new space on Node 20 and 8–13 MB on Node 24 (128 MB uncapped); the gateway under bench:scale's load
// on Node 24 keeps a main-thread heap of 81–85 MB (111 MB uncapped, 85 MB on Node 20) and 174–183 MB of RssAnon
// (209 MB uncapped).
//
// The reader threads get the same limit as a worker resource limit (youngGenerationLimit(), see
// ../storage/sql/readers.ts). Nothing is done when the process was started with a young-generation flag of its own
// (in NODE_OPTIONS or node's arguments): an operator's choice is kept as given.
import { PerformanceObserver } from "node:perf_hooks";
import v8 from "node:v8";

/** Node 20's largest semi-space (MB): the cap on every line. */
export const SEMI_SPACE_CAP_MB = 16;

/** V8's default growth factor of the new space. */
const DEFAULT_GROWTH_FACTOR = 2;

const FLAG = /--(max-semi-space-size|min-semi-space-size|semi-space-growth-factor|max-young-generation-size)\b/;

/** Whether the process was started with a young-generation flag (node arguments or NODE_OPTIONS). */
export function youngGenerationConfigured(execArgv: readonly string[] = process.execArgv, nodeOptions: string | undefined = process.env.NODE_OPTIONS): boolean {
  return execArgv.some((a) => FLAG.test(a)) || (nodeOptions !== undefined && FLAG.test(nodeOptions));
}

/**
 * A worker's `resourceLimits.maxYoungGenerationSizeMb` for the same cap (V8 sizes a young generation at three semi-spaces),
 * or undefined when the process was started with a young-generation flag of its own.
 */
export function youngGenerationLimit(): number | undefined {
  return youngGenerationConfigured() ? undefined : SEMI_SPACE_CAP_MB * 3;
}

export interface YoungGenerationCap {
  /** Whether growth is off now (the new space is at the cap). */
  readonly holding: boolean;
  stop(): void;
}

/**
 * Starts watching this thread's new space (see the header). Returns undefined when a young-generation flag was given.
 * `capMb` is the largest semi-space allowed (default SEMI_SPACE_CAP_MB); the new space holds two.
 */
export function capYoungGeneration(capMb: number = SEMI_SPACE_CAP_MB): YoungGenerationCap | undefined {
  if (youngGenerationConfigured()) return undefined;
  const capBytes = 2 * capMb * 1024 * 1024;
  const newSpaceBytes = (): number => v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space")?.space_size ?? 0;
  let holding = false;
  const check = (): void => {
    const hold = newSpaceBytes() >= capBytes;
    if (hold === holding) return;
    holding = hold;
    v8.setFlagsFromString(`--semi-space-growth-factor=${hold ? 1 : DEFAULT_GROWTH_FACTOR}`);
  };
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ["gc"] });
  check();
  return {
    get holding() {
      return holding;
    },
    stop: () => {
      observer.disconnect();
      if (holding) v8.setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
      holding = false;
    },
  };
}
