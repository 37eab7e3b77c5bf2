// The OpenCode pin and the upstream snapshot move together: package.json pins opencode-ai exactly, the installed
// package is that version, and spec/upstream/opencode.openapi.json (from which generated/opencode is built)
// was captured from it. `tools/upstream/snapshot.ts --check` (run by .ci/run) re-captures it from the binary.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { packageRoot } from "../../src/contract/catalog.js";
import { opencodeVersion, resolveOpencodeBinary } from "../../src/upstream/binary.js";

const readJson = (file: string) => JSON.parse(fs.readFileSync(path.join(packageRoot, file), "utf8"));

describe("opencode-ai pin", () => {
  it("is an exact version, installed, and the version of the upstream snapshot", () => {
    const pin: string = readJson("package.json").dependencies["opencode-ai"];
    expect(pin).toMatch(/^\d+\.\d+\.\d+$/);
    expect(opencodeVersion()).toBe(pin);
    expect(readJson("spec/upstream/opencode.openapi.json")["x-opencode-version"]).toBe(pin);
  });

  it("resolves the platform binary, never the postinstall stub", () => {
    const binary = resolveOpencodeBinary();
    expect(binary).toMatch(/opencode-(linux|darwin|windows)-[a-z0-9]+(-baseline)?(-musl)?[/\\]bin[/\\]opencode(\.exe)?$/);
    expect(fs.statSync(binary).size).toBeGreaterThan(1_000_000);
    expect(() => resolveOpencodeBinary("/nonexistent/opencode")).toThrow(/OPENCODE_BINARY does not exist/);
  });
});
