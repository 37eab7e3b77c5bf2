// Start-up checks of the installation (src/cli/preflight.ts): what is missing is named with its fix.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { checkInstallation, InstallationError, opencodeBinaryProblem, sqliteBindingProblem } from "../../src/cli/preflight.js";

describe("installation checks", () => {
  it("passes on this checkout (binding built, OpenCode binary installed)", () => {
    expect(sqliteBindingProblem()).toBeUndefined();
    expect(opencodeBinaryProblem({ opencodeBaseUrl: undefined, opencodeBinary: undefined })).toBeUndefined();
    expect(() => checkInstallation(loadConfig({ A2A_BEARER_TOKEN: "preflight-token" }))).not.toThrow();
  });

  it("names a missing OpenCode binary in managed mode with the fix, and ignores it with OPENCODE_BASE_URL", () => {
    const missing = "/nonexistent/opencode-for-preflight";
    const problem = opencodeBinaryProblem({ opencodeBaseUrl: undefined, opencodeBinary: missing });
    expect(problem).toContain(missing);
    expect(problem).toContain("npm ci");
    expect(problem).toContain("OPENCODE_BASE_URL");
    expect(opencodeBinaryProblem({ opencodeBaseUrl: "http://127.0.0.1:4096", opencodeBinary: missing })).toBeUndefined();
    const config = loadConfig({ A2A_BEARER_TOKEN: "preflight-token", OPENCODE_BINARY: missing });
    expect(() => checkInstallation(config)).toThrow(InstallationError);
    expect(() => checkInstallation(config)).toThrow(/incomplete installation/);
  });
});
