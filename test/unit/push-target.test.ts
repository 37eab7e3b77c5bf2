// Where a push notification may go (src/push/target.ts): the SSRF address policy (isPrivateAddress), the config
// check at set time (checkPushConfig: URL shape, private hosts, header values, auth scheme tokens; INVALID_PARAMS
// naming the field), hostOf, and guardedLookup (the connection-time DNS check) called directly.
import type { LookupAddress } from "node:dns";
import { describe, expect, it } from "vitest";
import { expectA2AError } from "../support/errors.js";
import type { PushConfig } from "../../src/protocol/model.js";
import { checkPushConfig, guardedLookup, hostOf, isPrivateAddress, MAX_HEADER_VALUE_LENGTH, MAX_URL_LENGTH, PushTargetRefused } from "../../src/push/target.js";

type Config = Omit<PushConfig, "taskId" | "id">;

const invalidParams = (fn: () => unknown) => expectA2AError(fn, "INVALID_PARAMS");

const refusedField = (config: Config, field = "cfg", allowPrivate = false): unknown =>
  invalidParams(() => checkPushConfig(config, field, allowPrivate)).data.field;

describe("isPrivateAddress", () => {
  it.each([
    // IPv4 loopback, 127/8
    ["127.0.0.1", true],
    ["127.255.255.254", true],
    // RFC 1918
    ["10.0.0.1", true],
    ["10.255.255.255", true],
    ["172.16.0.1", true],
    ["172.31.255.255", true],
    ["172.15.255.255", false],
    ["172.32.0.1", false],
    ["192.168.0.1", true],
    ["192.168.255.255", true],
    ["192.169.0.1", false],
    // link-local incl. cloud metadata
    ["169.254.169.254", true],
    ["169.254.0.1", true],
    ["169.255.0.1", false],
    // CGNAT 100.64/10
    ["100.64.0.1", true],
    ["100.127.255.255", true],
    ["100.63.255.255", false],
    ["100.128.0.1", false],
    // "this network" 0/8
    ["0.0.0.0", true],
    ["0.1.2.3", true],
    // multicast 224/4 and reserved 240/4 incl. broadcast
    ["224.0.0.1", true],
    ["239.255.255.255", true],
    ["240.0.0.1", true],
    ["255.255.255.255", true],
    // documentation / benchmarking
    ["192.0.2.10", true],
    ["198.18.0.1", true],
    ["203.0.113.5", true],
    // public IPv4
    ["8.8.8.8", false],
    ["1.1.1.1", false],
    ["93.184.216.34", false],
    ["223.255.255.255", false],
    // IPv6
    ["::1", true],
    ["::", true],
    ["fc00::1", true],
    ["fd12:3456:789a::1", true],
    ["fe80::1", true],
    ["febf:ffff::1", true],
    ["ff02::1", true],
    ["ff0e::101", true],
    ["2001:db8::1", true],
    ["64:ff9b::7f00:1", true],
    // IPv4-mapped IPv6: judged by the embedded IPv4 address, dotted or hex
    ["::ffff:127.0.0.1", true],
    ["::FFFF:127.0.0.1", true],
    ["::ffff:10.1.2.3", true],
    ["::ffff:169.254.169.254", true],
    ["::ffff:7f00:1", true],
    ["::ffff:8.8.8.8", false],
    ["::ffff:808:808", false],
    // public IPv6
    ["2001:4860:4860::8888", false],
    ["2606:4700:4700::1111", false],
    ["fe00::1", false], // between the link-local fe80::/10 and nothing reserved
    // deprecated forms that embed or imply a private address
    ["::127.0.0.1", true], // IPv4-compatible
    ["::a00:1", true],
    ["2002:7f00:1::1", true], // 6to4
    ["2001:0:4136:e378::1", true], // Teredo
    ["fec0::1", true], // site-local
  ])("%s → %s", (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });

  it.each(["localhost", "example.com", "", "not an address", "127.0.0.1.nip.io", "[::1]"])("refuses a non-address %j", (value) => {
    expect(isPrivateAddress(value)).toBe(true);
  });
});

describe("hostOf", () => {
  it.each([
    ["http://Example.COM:8080/x", "example.com"],
    ["http://example.com./x", "example.com"],
    ["http://[::1]:9/x", "::1"],
    ["http://[FE80::1]/", "fe80::1"],
    ["https://127.0.0.1/", "127.0.0.1"],
  ])("%s → %s", (url, host) => {
    expect(hostOf(new URL(url))).toBe(host);
  });
});

describe("checkPushConfig", () => {
  describe("URL", () => {
    it("returns the normalised URL of an acceptable http or https URL", () => {
      expect(checkPushConfig({ url: "https://Hooks.Example.com/a/b?x=1" }, "cfg", false)).toBe("https://hooks.example.com/a/b?x=1");
      expect(checkPushConfig({ url: "http://hooks.example.com" }, "cfg", false)).toBe("http://hooks.example.com/");
      expect(checkPushConfig({ url: "http://8.8.8.8:8080/hook" }, "cfg", false)).toBe("http://8.8.8.8:8080/hook");
    });

    it.each(["ftp://example.com/hook", "file:///etc/passwd", "ws://example.com/", "javascript:alert(1)", "data:text/plain,hi", "mailto:a@example.com"])(
      "refuses the non-http(s) URL %s",
      (url) => {
        expect(refusedField({ url })).toBe("cfg.url");
      },
    );

    it.each(["", "example.com/hook", "/relative/path", "http://", "https://exa mple.com/", "http://[::1/"])("refuses the unparseable or relative URL %j", (url) => {
      expect(refusedField({ url })).toBe("cfg.url");
    });

    it("refuses a user name or password in the URL", () => {
      const e1 = invalidParams(() => checkPushConfig({ url: "https://user:secret@example.com/hook" }, "cfg", false));
      expect(e1.data).toMatchObject({ field: "cfg.url", fields: ["cfg.url"] });
      expect(String(e1.data.detail)).toMatch(/user name or password/);
      expect(refusedField({ url: "https://user@example.com/hook" })).toBe("cfg.url");
      expect(refusedField({ url: "https://:secret@example.com/hook" })).toBe("cfg.url");
    });

    it("refuses a fragment", () => {
      const error = invalidParams(() => checkPushConfig({ url: "https://example.com/hook#frag" }, "cfg", false));
      expect(error.data.field).toBe("cfg.url");
      expect(String(error.data.detail)).toMatch(/fragment/);
    });

    it(`accepts ${MAX_URL_LENGTH} characters and refuses one more`, () => {
      const prefix = "https://example.com/";
      const exact = prefix + "a".repeat(MAX_URL_LENGTH - prefix.length);
      expect(exact).toHaveLength(MAX_URL_LENGTH);
      expect(checkPushConfig({ url: exact }, "cfg", false)).toBe(exact);
      const error = invalidParams(() => checkPushConfig({ url: exact + "a" }, "cfg", false));
      expect(error.data.field).toBe("cfg.url");
      expect(String(error.data.detail)).toMatch(String(MAX_URL_LENGTH));
    });

    const privateUrls = [
      "http://localhost/hook",
      "http://LOCALHOST:8080/hook",
      "http://localhost./hook",
      "http://api.localhost/hook",
      "http://a.b.localhost./hook",
      "http://127.0.0.1:9000/hook",
      "http://127.1/hook",
      "http://2130706433/hook", // 127.0.0.1 as a number
      "http://0x7f.0.0.1/hook",
      "http://10.0.0.5/hook",
      "http://172.20.1.1/hook",
      "http://192.168.1.1/hook",
      "http://169.254.169.254/latest/meta-data/",
      "http://100.64.1.1/hook",
      "http://0.0.0.0/hook",
      "http://224.0.0.1/hook",
      "http://[::1]/hook",
      "http://[::]/hook",
      "http://[fd00::1]/hook",
      "http://[fe80::1]/hook",
      "http://[::ffff:127.0.0.1]/hook",
      "http://[::ffff:10.0.0.1]/hook",
    ];

    it.each(privateUrls)("refuses %s when private networks are not allowed", (url) => {
      const error = invalidParams(() => checkPushConfig({ url }, "pushNotificationConfig", false));
      expect(error.data.field).toBe("pushNotificationConfig.url");
      expect(String(error.data.detail)).toMatch(/A2A_PUSH_ALLOW_PRIVATE_NETWORKS/);
    });

    it.each(privateUrls)("accepts %s when private networks are allowed", (url) => {
      expect(checkPushConfig({ url }, "pushNotificationConfig", true)).toBe(new URL(url).href);
    });

    it.each(["http://localhost.example.com/hook", "http://mylocalhost/hook", "http://[::ffff:8.8.8.8]/hook", "http://172.32.0.1/hook", "http://example.com/localhost"])(
      "does not mistake %s for a private target",
      (url) => {
        expect(checkPushConfig({ url }, "cfg", false)).toBe(new URL(url).href);
      },
    );

    it("still checks the URL shape when private networks are allowed", () => {
      expect(refusedField({ url: "ftp://localhost/" }, "cfg", true)).toBe("cfg.url");
      expect(refusedField({ url: "http://u:p@localhost/" }, "cfg", true)).toBe("cfg.url");
    });
  });

  describe("header values", () => {
    const url = "https://example.com/hook";

    it("accepts printable ASCII, Latin-1, spaces and tabs", () => {
      expect(() =>
        checkPushConfig({ url, token: "tok en\t~!é", authentication: { schemes: ["Bearer"], credentials: "abc.def-ghi_jkl=" } }, "cfg", false),
      ).not.toThrow();
    });

    it.each([
      ["CR", "a\rb"],
      ["LF", "a\nb"],
      ["CRLF injection", "tok\r\nX-Injected: 1"],
      ["NUL", "a\u0000b"],
      ["DEL", "a\u007fb"],
      ["a character above Latin-1", "a\u20acb"],
    ])("refuses a token with %s", (_name, token) => {
      const error = invalidParams(() => checkPushConfig({ url, token }, "cfg", false));
      expect(error.data.field).toBe("cfg.token");
    });

    it.each([
      ["CR", "a\rb"],
      ["LF", "a\nb"],
      ["NUL", "a\u0000b"],
    ])("refuses credentials with %s", (_name, credentials) => {
      expect(refusedField({ url, authentication: { schemes: ["Bearer"], credentials } })).toBe("cfg.authentication.credentials");
    });

    it("refuses a control character in a scheme, naming its index", () => {
      expect(refusedField({ url, authentication: { schemes: ["Bearer", "Ba\r\nsic"] } })).toBe("cfg.authentication.schemes[1]");
      // 1.0 configs carry one `authentication.scheme`: the caller names it so.
      const flat = invalidParams(() => checkPushConfig({ url, authentication: { schemes: ["Bea rer"] } }, "", false, () => "authentication.scheme"));
      expect(flat.data.field).toBe("authentication.scheme");
    });

    it(`bounds a header value to ${MAX_HEADER_VALUE_LENGTH} characters`, () => {
      expect(() => checkPushConfig({ url, token: "t".repeat(MAX_HEADER_VALUE_LENGTH) }, "cfg", false)).not.toThrow();
      expect(refusedField({ url, token: "t".repeat(MAX_HEADER_VALUE_LENGTH + 1) })).toBe("cfg.token");
      expect(refusedField({ url, authentication: { schemes: ["Bearer"], credentials: "c".repeat(MAX_HEADER_VALUE_LENGTH + 1) } })).toBe(
        "cfg.authentication.credentials",
      );
    });

    it.each(["Bearer", "Basic", "Digest", "x-custom.scheme_1", "!#$%&'*+.^_`|~-"])("accepts the auth scheme token %j", (scheme) => {
      expect(() => checkPushConfig({ url, authentication: { schemes: [scheme], credentials: "c" } }, "cfg", false)).not.toThrow();
    });

    it.each(["", "Bearer token", "Bea:rer", "Bea/rer", "(Bearer)", "Bearer\t", "Bé"])("refuses the auth scheme %j (not a token)", (scheme) => {
      const error = invalidParams(() => checkPushConfig({ url, authentication: { schemes: ["Bearer", scheme] } }, "cfg", false));
      expect(error.data.field).toBe("cfg.authentication.schemes[1]");
    });

    it("checks the URL before the header values", () => {
      expect(refusedField({ url: "ftp://x/", token: "a\nb" })).toBe("cfg.url");
    });
  });

  describe("field names", () => {
    it("prefixes the field given (a nested config)", () => {
      expect(refusedField({ url: "ftp://x/" }, "configuration.pushNotificationConfig")).toBe("configuration.pushNotificationConfig.url");
      expect(refusedField({ url: "https://example.com/", token: "\n" }, "configuration.taskPushNotificationConfig")).toBe(
        "configuration.taskPushNotificationConfig.token",
      );
    });

    it("names the bare field for a config at the root of the params (1.0: field \"\")", () => {
      const error = invalidParams(() => checkPushConfig({ url: "ftp://x/" }, "", false));
      expect(error.data).toMatchObject({ field: "url", fields: ["url"] });
      expect(error.options.fieldViolations).toEqual([{ field: "url", description: expect.any(String) }]);
      expect(refusedField({ url: "https://example.com/", token: "\n" }, "")).toBe("token");
      expect(refusedField({ url: "https://example.com/", authentication: { schemes: ["a b"] } }, "")).toBe("authentication.schemes[0]");
      expect(refusedField({ url: "https://example.com/", authentication: { schemes: ["Bearer"], credentials: "\r" } }, "")).toBe("authentication.credentials");
    });
  });
});

describe("guardedLookup", () => {
  type Outcome = { error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };

  function lookup(allowPrivate: boolean, hostname: string, options: { all?: boolean; family?: number } = {}): Promise<Outcome> {
    return new Promise((resolve) => {
      const fn = guardedLookup(allowPrivate);
      (fn as unknown as (h: string, o: object, cb: (e: NodeJS.ErrnoException | null, a: string | LookupAddress[], f?: number) => void) => void)(
        hostname,
        options,
        (error, address, family) => resolve({ error, address, family }),
      );
    });
  }

  it("refuses localhost with PushTargetRefused when private networks are not allowed", async () => {
    const { error } = await lookup(false, "localhost");
    expect(error).toBeInstanceOf(PushTargetRefused);
    const refused = error as unknown as PushTargetRefused;
    expect(refused.host).toBe("localhost");
    expect(isPrivateAddress(refused.address)).toBe(true);
    expect(refused.message).toMatch(/A2A_PUSH_ALLOW_PRIVATE_NETWORKS/);
  });

  it("refuses localhost in the all-addresses form too", async () => {
    const { error } = await lookup(false, "localhost", { all: true });
    expect(error).toBeInstanceOf(PushTargetRefused);
  });

  it("refuses a private IP literal", async () => {
    const { error } = await lookup(false, "127.0.0.1");
    expect(error).toBeInstanceOf(PushTargetRefused);
    expect((error as unknown as PushTargetRefused).address).toBe("127.0.0.1");
  });

  it("resolves localhost to a loopback address when private networks are allowed", async () => {
    const { error, address, family } = await lookup(true, "localhost");
    expect(error).toBeNull();
    expect(typeof address).toBe("string");
    expect(["127.0.0.1", "::1"]).toContain(address);
    expect(family).toBe(net(address as string));
  });

  it("answers the all-addresses form with the list when allowed", async () => {
    const { error, address } = await lookup(true, "localhost", { all: true });
    expect(error).toBeNull();
    expect(Array.isArray(address)).toBe(true);
    const list = address as LookupAddress[];
    expect(list.length).toBeGreaterThan(0);
    for (const a of list) expect(isPrivateAddress(a.address)).toBe(true);
  });

  it("honours the family asked for", async () => {
    const { error, address, family } = await lookup(true, "127.0.0.1", { family: 4 });
    expect(error).toBeNull();
    expect(address).toBe("127.0.0.1");
    expect(family).toBe(4);
  });

  it("passes a resolution failure through (not a refusal)", async () => {
    const { error } = await lookup(false, "no-such-host.invalid");
    expect(error).not.toBeNull();
    expect(error).not.toBeInstanceOf(PushTargetRefused);
  });
});

function net(address: string): number {
  return address.includes(":") ? 6 : 4;
}
