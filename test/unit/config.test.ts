// loadConfig: defaults, parsing, and one ConfigError listing every bad variable.
import { describe, expect, it } from "vitest";
import fs from "node:fs";
import path from "node:path";
import { loadClientSettings } from "../../src/config/client-settings.js";
import { ConfigError, loadConfig, secretVariables, variables } from "../../src/config/index.js";

const TOKEN = "unit-test-token-0123456789";

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error("loadConfig accepted a bad environment");
}

describe("loadConfig", () => {
  it("a token alone is a complete configuration with documented defaults", () => {
    const config = loadConfig({ A2A_BEARER_TOKEN: TOKEN }, "9.9.9");
    expect(config.bearerToken).toBe(TOKEN);
    expect(config.defaultLine).toBe("0.3");
    expect(config.host).toBe(variables.host.defaultText);
    expect(String(config.port)).toBe(variables.port.defaultText);
    expect(String(config.maxRequestBodyBytes)).toBe(variables.maxRequestBodyBytes.defaultText);
    expect(String(config.gzipMinimumSize)).toBe(variables.gzipMinimumSize.defaultText);
    expect(config.agentVersion).toBe("9.9.9");
    expect(config.publicUrl).toBe(`http://${config.host}:${config.port}`);
    expect(config.toggles).toEqual({ A2A_ENABLE_SESSION_SHELL: false, A2A_ENABLE_WORKSPACE_MUTATIONS: false, A2A_ENABLE_SUBTASKS: true, A2A_ENABLE_MESSAGES: true });
  });

  it("parses integers, booleans, lists, URLs and the default line", () => {
    const config = loadConfig({
      A2A_BEARER_TOKEN: ` ${TOKEN} `,
      A2A_PORT: "0",
      A2A_DEFAULT_PROTOCOL_VERSION: "1.0",
      A2A_ENABLE_SESSION_SHELL: "yes",
      A2A_ENABLE_WORKSPACE_MUTATIONS: "off",
      A2A_SANDBOX_WRITABLE_ROOTS: '["/a", "/b"]',
      A2A_NETWORK_ALLOWED_DOMAINS: "a.example, b.example,,",
      A2A_PUBLIC_URL: "https://gw.example/base///",
      A2A_LOG_LEVEL: "WARNING",
      A2A_HOST: "::1",
    });
    expect(config.bearerToken).toBe(TOKEN);
    expect(config.port).toBe(0);
    expect(config.defaultLine).toBe("1.0");
    expect(config.toggles).toEqual({ A2A_ENABLE_SESSION_SHELL: true, A2A_ENABLE_WORKSPACE_MUTATIONS: false, A2A_ENABLE_SUBTASKS: true, A2A_ENABLE_MESSAGES: true });
    expect(config.sandboxWritableRoots).toEqual(["/a", "/b"]);
    expect(config.networkAllowedDomains).toEqual(["a.example", "b.example"]);
    expect(config.publicUrl).toBe("https://gw.example/base");
    expect(config.logLevel).toBe("warn");
  });

  it("an IPv6 host is bracketed in the default public URL", () => {
    expect(loadConfig({ A2A_BEARER_TOKEN: TOKEN, A2A_HOST: "::1", A2A_PORT: "9000" }).publicUrl).toBe("http://[::1]:9000");
  });

  it("a missing token is an error naming A2A_BEARER_TOKEN", () => {
    const problems = problemsOf({});
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/A2A_BEARER_TOKEN/);
    expect(problemsOf({ A2A_BEARER_TOKEN: "   " })[0]).toMatch(/A2A_BEARER_TOKEN/);
  });

  it("a short token is refused without echoing it", () => {
    const problems = problemsOf({ A2A_BEARER_TOKEN: "s3cr3t" });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/A2A_BEARER_TOKEN/);
    expect(problems.join("\n")).not.toContain("s3cr3t");
  });

  it("ConfigError lists every bad variable at once", () => {
    const bad = {
      A2A_PORT: "abc",
      A2A_DEFAULT_PROTOCOL_VERSION: "2.0",
      A2A_MAX_REQUEST_BODY_BYTES: "0",
      A2A_HTTP_GZIP_MINIMUM_SIZE: "-1",
      A2A_ENABLE_SESSION_SHELL: "maybe",
      A2A_PUBLIC_URL: "ftp://example.com",
      A2A_LOG_LEVEL: "loud",
      A2A_SANDBOX_MODE: "jail",
      A2A_SANDBOX_WRITABLE_ROOTS: "[1, 2]",
    };
    let caught: unknown;
    try {
      loadConfig(bad);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const { problems, message } = caught as ConfigError;
    const names = [...Object.keys(bad), "A2A_BEARER_TOKEN"];
    expect(problems).toHaveLength(names.length);
    for (const name of names) {
      expect(problems.some((p) => p.startsWith(name)), name).toBe(true);
      expect(message).toContain(name);
    }
    expect(message).toMatch(/^invalid configuration:/);
  });

  it("out-of-range and non-integer numbers are refused", () => {
    for (const port of ["65536", "-1", "1.5", "8e3", ""]) {
      const env = { A2A_BEARER_TOKEN: TOKEN, A2A_PORT: port };
      if (port === "") expect(loadConfig(env).port).toBe(8000);
      else expect(problemsOf(env)[0], port).toMatch(/^A2A_PORT=/);
    }
  });

  it("A2A_DEFAULT_PROTOCOL_VERSION accepts exactly the protocol lines", () => {
    for (const v of ["0.3", "1.0"]) expect(loadConfig({ A2A_BEARER_TOKEN: TOKEN, A2A_DEFAULT_PROTOCOL_VERSION: v }).defaultLine).toBe(v);
    for (const v of ["2.0", "1.0.0", "0.3.0", "1"]) expect(problemsOf({ A2A_BEARER_TOKEN: TOKEN, A2A_DEFAULT_PROTOCOL_VERSION: v })[0]).toMatch(/^A2A_DEFAULT_PROTOCOL_VERSION/);
  });

  it("the bearer token is declared secret", () => {
    expect(secretVariables).toContain("A2A_BEARER_TOKEN");
  });

  it("every variable name is unique and documented", () => {
    const all = Object.values(variables as Record<string, { name: string; description: string }>);
    expect(new Set(all.map((v) => v.name)).size).toBe(all.length);
    for (const v of all) {
      // Our own names, or the standard OpenTelemetry exporter variables (read under their specified names).
      expect(v.name).toMatch(/^((A2A|OPENCODE)_[A-Z0-9_]+|OTEL_EXPORTER_OTLP_(TRACES_)?ENDPOINT)$/);
      expect(v.description.length, v.name).toBeGreaterThan(0);
    }
  });
});

describe("the outbound client's settings", () => {
  it("are exactly the A2A_CLIENT_* variables the spec declares (PeerClientSettings), credentials secret", () => {
    const schema = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "../../generated/json-schema/extensions/PeerClientSettings.json"), "utf8")) as { properties: Record<string, unknown> };
    const declared = Object.keys(schema.properties).sort();
    const read = Object.values(variables)
      .map((v) => v.name)
      .filter((n) => n.startsWith("A2A_CLIENT_"))
      .sort();
    expect(read).toEqual(declared);
    expect(read).toHaveLength(15);
    expect(secretVariables).toEqual(expect.arrayContaining(["A2A_CLIENT_BEARER_TOKEN", "A2A_CLIENT_BASIC_AUTH"]));
  });

  it("load alone (no gateway token needed), with the seed's defaults; bad values are listed", () => {
    const s = loadClientSettings({});
    expect(s).toMatchObject({
      clientTimeout: 30,
      clientCardFetchTimeout: 5,
      clientUseClientPreference: false,
      clientSupportedTransports: ["JSONRPC", "HTTP+JSON"],
      clientCacheTtl: 900,
      clientCacheMaxSize: 256,
      clientPollingFallback: false,
      clientPollingInitialInterval: 0.5,
      clientPollingMaxInterval: 2,
      clientPollingBackoff: 2,
      clientPollingTimeout: 10,
      clientAllowedHosts: [],
      clientAllowPrivateHosts: false,
    });
    expect(loadClientSettings({ A2A_CLIENT_SUPPORTED_TRANSPORTS: "HTTP+JSON, JSONRPC, HTTP+JSON" }).clientSupportedTransports).toEqual(["HTTP+JSON", "JSONRPC"]);
    let error: unknown;
    try {
      loadClientSettings({ A2A_CLIENT_SUPPORTED_TRANSPORTS: "GRPC", A2A_CLIENT_POLLING_FALLBACK_BACKOFF_MULTIPLIER: "0.5", A2A_CLIENT_TIMEOUT_SECONDS: "soon" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((p) => p.split("=")[0])).toEqual(["A2A_CLIENT_TIMEOUT_SECONDS", "A2A_CLIENT_SUPPORTED_TRANSPORTS", "A2A_CLIENT_POLLING_FALLBACK_BACKOFF_MULTIPLIER"]);
  });
});
