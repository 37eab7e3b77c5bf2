// The old generation's growth between two full garbage collections, bounded on every Node line.
//
// After each full collection V8 lets the old generation grow to what survived it times a factor it picks between 1.1
// and 4 from its collection and allocation speeds; on a 64-bit machine with a large heap limit it is near 4. The
// gateway's live heap is small (about 40 MB under bench:scale's listing load at 1M tasks), and what its requests leave
// behind survives young collections often enough to be promoted, so the old generation climbed to 108 MB on Node 24
// (72 MB of it in use before the next collection), and the main thread's heap (120–169 MB) was most of the process's
// anonymous memory. `--heap-growing-percent` fixes that factor; V8 reads it every time it sets the next trigger, so a
// running process can set it for itself. boundOldGeneration() sets it to HEAP_GROWING_PERCENT (a factor of 1.5).
// Measured under bench:scale at 1M tasks: RssAnon after the load 183–189 MB on Node 24 (231–253 MB without it) and
// 165 MB on Node 20, the main thread's heap 94–103 MB; bench:tasks put the cost at 3–10% more CPU per turn. The flag is global to the process: the reader threads' isolates get it too. Nothing is done when
// the process was started with the flag of its own (node's arguments): an operator's choice is kept as given.
import v8 from "node:v8";

/** How much the old generation may grow past what survived the last full collection, in percent. */
export const HEAP_GROWING_PERCENT = 50;

const FLAG = /--heap[-_]growing[-_]percent\b/;

/** Whether the process was started with `--heap-growing-percent` (V8 flags are node arguments, not NODE_OPTIONS). */
export function oldGenerationConfigured(execArgv: readonly string[] = process.execArgv): boolean {
  return execArgv.some((a) => FLAG.test(a));
}

/** Sets V8's old-generation growth to `percent` (see the header); false when the process was given its own. */
export function boundOldGeneration(percent: number = HEAP_GROWING_PERCENT): boolean {
  if (oldGenerationConfigured()) return false;
  v8.setFlagsFromString(`--heap-growing-percent=${Math.max(1, Math.floor(percent))}`);
  return true;
}
