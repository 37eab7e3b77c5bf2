// src/util/background-start.ts: start-up work that waits a little after the gateway serves; it never holds the process.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startInBackground } from "../../src/util/background-start.js";

describe("startInBackground", () => {
  it("runs the work at once with no delay, and after the delay otherwise", async () => {
    const now: string[] = [];
    startInBackground(() => now.push("now"), 0);
    expect(now).toEqual(["now"]);
    let ran = false;
    const done = new Promise<void>((resolve) => startInBackground(() => resolve(void (ran = true)), 60));
    // A shorter timer set after it fires first (timers run in due order), however late the loop is.
    await new Promise((r) => setTimeout(r, 30));
    expect(ran).toBe(false);
    await done;
    expect(ran).toBe(true);
  });

  it("does not keep the process alive for the work", () => {
    const module = path.resolve(import.meta.dirname, "../../src/util/background-start.ts");
    const script = `import { startInBackground } from ${JSON.stringify(module)}; startInBackground(() => process.stdout.write("ran"), 30_000);`;
    // Held by the timer, the process would run 30 s and execFileSync would throw at its 20 s timeout.
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
    expect(out).toBe("");
  });
});
