// Payload logging's rendering (src/logging/payloads.ts): deep redaction, file bytes, truncation, the sessions guard,
// and when it is active at all.
import { describe, expect, it } from "vitest";
import {
  isPrivateMethod,
  isSecretKey,
  payloadLog,
  payloadLoggingActive,
  PayloadLog,
  REDACTED,
  redactPayload,
  renderPayload,
  SUPPRESSED,
  truncate,
} from "../../src/logging/payloads.js";
import { createLogger } from "../../src/logging/index.js";
import { Capture } from "../support/logs.js";

const SECRET = "s3cr3t-value-4e1b";

describe("redactPayload", () => {
  it("redacts secret-bearing keys at any depth, whatever their spelling", () => {
    const value = {
      message: { parts: [{ text: "hello" }], metadata: { deep: { deeper: { token: SECRET, apiKey: SECRET, api_key: SECRET } } } },
      configuration: {
        pushNotificationConfig: { url: "https://hook.example", token: SECRET, authentication: { schemes: ["Bearer"], credentials: SECRET } },
      },
      headers: { Authorization: `Bearer ${SECRET}`, "X-API-Key": SECRET, "proxy-authorization": SECRET, Cookie: SECRET },
      list: [[{ password: SECRET, secret: SECRET, bearerToken: SECRET, client_secret: SECRET }]],
    };
    const out = redactPayload(value) as any;
    expect(JSON.stringify(out)).not.toContain(SECRET);
    expect(out.message.parts[0].text).toBe("hello");
    expect(out.message.metadata.deep.deeper).toEqual({ token: REDACTED, apiKey: REDACTED, api_key: REDACTED });
    expect(out.configuration.pushNotificationConfig).toEqual({
      url: "https://hook.example",
      token: REDACTED,
      authentication: { schemes: ["Bearer"], credentials: REDACTED },
    });
    expect(out.headers.Authorization).toBe(REDACTED);
    expect(out.headers["X-API-Key"]).toBe(REDACTED);
    // The input is left alone.
    expect(value.configuration.pushNotificationConfig.token).toBe(SECRET);
  });

  it("redacts a whole secret-bearing object or array, not just strings", () => {
    const out = redactPayload({ credentials: [{ id: "a", secret: SECRET }], config: { credentials: { a: SECRET } } }) as any;
    expect(out).toEqual({ credentials: REDACTED, config: { credentials: REDACTED } });
  });

  it("keeps keys that only look alike (usage tokens, ids, page tokens' neighbours)", () => {
    const value = { tokens: { input: 3, output: 4 }, inputTokens: 3, credentialId: "ci", taskId: "t1" };
    expect(redactPayload(value)).toEqual(value);
  });

  it("replaces file bytes (0.3 `bytes`, 1.0 `raw`, data URLs) by a length note", () => {
    const b64 = Buffer.alloc(3000, 7).toString("base64");
    const out = redactPayload({
      parts: [
        { kind: "file", file: { bytes: b64, mimeType: "image/png", name: "a.png" } },
        { raw: b64, mediaType: "image/png", filename: "b.png" },
        { type: "file", url: `data:image/png;base64,${b64}` },
        { type: "file", url: "https://example.com/x.png" },
      ],
      buffer: Buffer.from("abcd"),
    }) as any;
    const text = JSON.stringify(out);
    expect(text).not.toContain(b64);
    expect(out.parts[0].file).toEqual({ bytes: `[base64, ${b64.length} chars]`, mimeType: "image/png", name: "a.png" });
    expect(out.parts[1].raw).toBe(`[base64, ${b64.length} chars]`);
    expect(out.parts[2].url).toBe(`[data URL, ${`data:image/png;base64,${b64}`.length} chars]`);
    expect(out.parts[3].url).toBe("https://example.com/x.png");
    expect(out.buffer).toBe("[bytes, 4 bytes]");
  });

  it("survives cycles, toJSON, bigint and undefined members", () => {
    const a: any = { name: "a", when: new Date(0), n: 10n, gone: undefined };
    a.self = a;
    a.list = [a];
    expect(redactPayload(a)).toEqual({ name: "a", when: "1970-01-01T00:00:00.000Z", n: "10", self: "[circular]", list: ["[circular]"] });
    // A shared (non-cyclic) object is rendered at each place.
    const shared = { x: 1 };
    expect(redactPayload({ p: shared, q: shared })).toEqual({ p: { x: 1 }, q: { x: 1 } });
  });

  it("names the secret keys of REDACT_PATHS", () => {
    for (const k of ["token", "credentials", "secret", "password", "authorization", "apiKey", "api_key", "x-api-key", "X-Api-Key", "bearerToken", "opencodePassword"])
      expect(isSecretKey(k), k).toBe(true);
    for (const k of ["tokens", "text", "id", "credentialId", "authentication"]) expect(isSecretKey(k), k).toBe(false);
  });
});

describe("truncate and renderPayload", () => {
  it("leaves short text alone and cuts long text with the original length", () => {
    expect(truncate("abc", 0)).toBe("abc");
    expect(truncate("abc", 3)).toBe("abc");
    expect(truncate("abcdef", 3)).toBe("abc…[truncated, 6 chars]");
  });

  it("never splits a surrogate pair", () => {
    const out = truncate("ab😀cd", 3);
    expect(out.startsWith("ab…")).toBe(true);
    expect(out).toContain("truncated, 6 chars");
  });

  it("renders JSON, redacted, bounded by the limit", () => {
    const body = { token: SECRET, text: "x".repeat(500) };
    const full = renderPayload(body, 0);
    expect(JSON.parse(full)).toEqual({ token: REDACTED, text: "x".repeat(500) });
    const cut = renderPayload(body, 40);
    expect(cut).not.toContain(SECRET);
    expect(cut).toMatch(/…\[truncated, \d+ chars\]$/);
    expect(cut.startsWith(full.slice(0, 40))).toBe(true);
    expect(cut.length).toBeLessThanOrEqual(40 + "…[truncated, 999999 chars]".length);
    expect(renderPayload(undefined, 0)).toBe("undefined");
  });
});

describe("activation and the sessions guard", () => {
  it("is active only with logPayloads and a logger at debug or below", () => {
    const at = (level: "info" | "debug" | "trace") => createLogger(level, new Capture());
    expect(payloadLoggingActive({ logPayloads: false, logBodyLimit: 0 }, at("debug"))).toBe(false);
    expect(payloadLoggingActive({ logPayloads: true, logBodyLimit: 0 }, at("info"))).toBe(false);
    expect(payloadLoggingActive({ logPayloads: true, logBodyLimit: 0 }, at("debug"))).toBe(true);
    expect(payloadLoggingActive({ logPayloads: true, logBodyLimit: 0 }, at("trace"))).toBe(true);
    expect(payloadLog({ logPayloads: true, logBodyLimit: 0 }, at("info"))).toBeUndefined();
    expect(payloadLog({ logPayloads: true, logBodyLimit: 7 }, at("debug"))).toBeInstanceOf(PayloadLog);
  });

  it("recognises opencode.sessions.* only", () => {
    expect(isPrivateMethod("opencode.sessions.get")).toBe(true);
    expect(isPrivateMethod("opencode.sessions.messages.list")).toBe(true);
    expect(isPrivateMethod("OpenCode.Sessions.shell")).toBe(true);
    expect(isPrivateMethod("opencode.sessionsx")).toBe(false);
    expect(isPrivateMethod("a2a.interrupt.permission.reply")).toBe(false);
    expect(isPrivateMethod(undefined)).toBe(false);
  });

  it("logs a sessions call without its params or result", () => {
    const sink = new Capture();
    const log = new PayloadLog(createLogger("debug", sink), 0);
    log.rpcCall({ jsonrpc: "2.0", id: 9, method: "opencode.sessions.get", params: { session_id: "private-ses-77" } }, { result: { title: "private-title-88" } });
    log.rpcCall({ jsonrpc: "2.0", id: 10, method: "tasks/get", params: { id: "t-1", token: SECRET } }, { error: { code: -32001, message: "Task not found" } });
    log.rpcCall({ jsonrpc: "2.0", method: "tasks/cancel", params: { id: "t-2" } }, null);
    log.rpcCall(42, { error: { code: -32600 } });
    const [sessions, get, note, bad] = sink.lines.map((l) => JSON.parse(l));
    expect(sink.text).not.toContain("private-ses-77");
    expect(sink.text).not.toContain("private-title-88");
    expect(sink.text).not.toContain(SECRET);
    expect(sessions).toMatchObject({ level: 20, msg: "jsonrpc call", method: "opencode.sessions.get", id: 9, body: SUPPRESSED });
    expect(get).toMatchObject({ method: "tasks/get", id: 10 });
    expect(JSON.parse(get.params)).toEqual({ id: "t-1", token: REDACTED });
    expect(JSON.parse(get.error)).toEqual({ code: -32001, message: "Task not found" });
    expect(note).toMatchObject({ method: "tasks/cancel", notification: true });
    expect(bad).toMatchObject({ request: "42" });
  });
});
