// Logs for people (A2A_LOG_FORMAT) and the start-up summary (seed 000): pretty lines only when asked for or on a
// terminal, JSON otherwise; one summary line with the store, durability, upstream mode and version, lines, public URL.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { loadConfig } from "../../src/config/index.js";
import { createLogger, prettyLogs, prettyStream } from "../../src/logging/index.js";
import { logStartupSummary, redactUrl, startupSummary } from "../../src/server/summary.js";
import { openStorage } from "../../src/storage/index.js";
import { startUpstream } from "../../src/upstream/index.js";
import { startStubUpstream } from "../../tools/upstream/stub.js";
import { Capture } from "../support/logs.js";
import { TEST_TOKEN } from "../support/gateway.js";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "a2a-summary-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe("A2A_LOG_FORMAT", () => {
  it("auto is pretty only on a terminal; json and pretty force their format", () => {
    expect(prettyLogs("auto", true)).toBe(true);
    expect(prettyLogs("auto", false)).toBe(false);
    expect(prettyLogs("auto", undefined)).toBe(false);
    expect(prettyLogs("json", true)).toBe(false);
    expect(prettyLogs("pretty", false)).toBe(true);
  });

  it("is read and checked by the config module (default auto)", () => {
    expect(loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN }).logFormat).toBe("auto");
    expect(loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN, A2A_LOG_FORMAT: "pretty" }).logFormat).toBe("pretty");
    expect(() => loadConfig({ A2A_BEARER_TOKEN: TEST_TOKEN, A2A_LOG_FORMAT: "xml" })).toThrow(/A2A_LOG_FORMAT/);
  });

  it("pretty lines are for people (level, message, fields), not JSON; secrets are still redacted", async () => {
    const sink = new Capture();
    const log = pino({ level: "info", redact: { paths: ["token"], censor: "[redacted]" } }, prettyStream(sink, false));
    log.info({ trace_id: "abc", token: "s3cret" }, "hello people");
    await new Promise((r) => setTimeout(r, 50));
    expect(sink.text).toContain("INFO");
    expect(sink.text).toContain("hello people");
    expect(sink.text).toContain("trace_id");
    expect(sink.text).not.toContain("s3cret");
    expect(() => JSON.parse(sink.lines[0]!)).toThrow();
  });

  it("an explicit destination stays JSON whatever the format", () => {
    const sink = new Capture();
    createLogger("info", sink, "pretty").info("json still");
    expect(JSON.parse(sink.lines[0]!).msg).toBe("json still");
  });
});

describe("start-up summary", () => {
  it("redactUrl keeps the user name, hides the password and query values", () => {
    expect(redactUrl("postgres://app:hunter2@db:5432/a2a?sslpassword=x#frag")).toBe("postgres://app:[redacted]@db:5432/a2a?[redacted]");
    expect(redactUrl("http://127.0.0.1:4096")).toBe("http://127.0.0.1:4096");
    expect(redactUrl("sqlite:///./opencode-a2a.db")).toBe("sqlite:///./opencode-a2a.db");
  });

  it("one line: store backend, URL and durability (SQLite file, WAL), upstream mode and OpenCode version, lines, public URL", async () => {
    const stub = await startStubUpstream({ version: "9.8.7" });
    const url = `sqlite:///${path.join(tmp, "tasks.db")}`;
    const env = { A2A_BEARER_TOKEN: TEST_TOKEN, OPENCODE_BASE_URL: stub.url, A2A_TASK_STORE_DATABASE_URL: url, A2A_PUBLIC_URL: "https://a2a.example.com" };
    const config = loadConfig(env);
    const upstream = await startUpstream(config, pino({ level: "silent" }));
    const storage = await openStorage({ backend: "sqlite", url });
    try {
      const sink = new Capture();
      await logStartupSummary(createLogger("info", sink), config, storage, upstream, ["0.3", "1.0"]);
      expect(sink.lines).toHaveLength(1);
      const line = JSON.parse(sink.lines[0]!);
      expect(line).toMatchObject({
        level: 30,
        store: { backend: "sqlite", url },
        upstream: { mode: "external", opencode_version: "9.8.7", healthy: true },
        protocol: { lines: ["0.3", "1.0"], default_line: "0.3", transports: ["jsonrpc", "http+json"] },
        public_url: "https://a2a.example.com",
        tracing: { propagation: "w3c-trace-context" },
      });
      expect(line.store.durability).toMatch(/^sqlite file \(.*tasks\.db\), journal WAL/);
      expect(line.msg).toContain("OpenCode external 9.8.7");

      const memory = await openStorage({ backend: "memory" });
      const summary = await startupSummary(config, memory, upstream, ["1.0"]);
      expect(summary.store).toMatchObject({ backend: "memory", url: undefined });
      expect(summary.store.durability).toMatch(/^memory \(ephemeral/);
      memory.close();
    } finally {
      storage.close();
      await upstream.stop();
      await stub.close();
    }
  });
});
