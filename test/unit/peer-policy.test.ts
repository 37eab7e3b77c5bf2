// The outbound client's network policy and credential binding (src/client/policy.ts over util/network-policy.ts):
// URL checks, allowlist matching, private and reserved addresses (IPv4, IPv6, IPv4 inside IPv6), the connect-time
// address check through the real fetch (a name that resolves to a public address and later to a private one —
// DNS rebinding — is refused at the second connection), credentials only to allowlisted hosts, no redirects; the
// error normalization and the interface choice of the facade.
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { LookupAddress } from "node:dns";
import type { AgentCard } from "@a2a-js/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chooseInterface, hostMatches, PeerCallError, peerError, PeerPolicy, authorizationOf } from "../../src/client/index.js";
import { AddressRefused, guardedLookup, isPrivateAddress, type Resolver } from "../../src/util/network-policy.js";

/** A resolver that answers from a table (each name: a list of answers, one per lookup, the last repeated). */
function table(answers: Record<string, string[]>): Resolver & { calls: string[] } {
  const seen = new Map<string, number>();
  const calls: string[] = [];
  const resolve = ((hostname: string, _options: unknown, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => {
    calls.push(hostname);
    const list = answers[hostname];
    if (list === undefined) return callback(Object.assign(new Error(`no such host ${hostname}`), { code: "ENOTFOUND" }), []);
    const i = seen.get(hostname) ?? 0;
    seen.set(hostname, i + 1);
    const address = list[Math.min(i, list.length - 1)]!;
    callback(null, [{ address, family: address.includes(":") ? 6 : 4 }]);
  }) as Resolver & { calls: string[] };
  resolve.calls = calls;
  return resolve;
}

const settings = (over: Partial<ConstructorParameters<typeof PeerPolicy>[0]> = {}) => ({
  clientAllowedHosts: [] as string[],
  clientAllowPrivateHosts: false,
  clientBearerToken: undefined as string | undefined,
  clientBasicAuth: undefined as string | undefined,
  ...over,
});

/** A local server recording what it is asked. */
const seen: { url: string; authorization?: string }[] = [];
let server: http.Server;
let port: number;
beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? "", ...(req.headers.authorization === undefined ? {} : { authorization: req.headers.authorization }) });
    if (req.url === "/redirect") return res.writeHead(302, { location: `http://127.0.0.1:${port}/elsewhere` }).end();
    res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function refusal(p: Promise<unknown>): Promise<PeerCallError> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PeerCallError);
  return error as PeerCallError;
}

describe("addresses", () => {
  it.each([
    ["127.0.0.1", true],
    ["10.1.2.3", true],
    ["172.16.0.1", true],
    ["192.168.1.1", true],
    ["169.254.169.254", true],
    ["100.64.0.1", true],
    ["0.0.0.0", true],
    ["224.0.0.1", true],
    ["::1", true],
    ["::", true],
    ["fe80::1", true],
    ["fd00::1", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:10.0.0.1", true],
    ["64:ff9b::7f00:1", true],
    ["2002:7f00:1::", true],
    ["8.8.8.8", false],
    ["93.184.216.34", false],
    ["2606:4700::1111", false],
    ["::ffff:8.8.8.8", false],
  ])("%s private: %s", (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });

  it("the connect-time lookup checks every answer: a name that resolves public, then private (rebinding), is refused the second time", async () => {
    const resolve = table({ "peer.example": ["93.184.216.34", "127.0.0.1"] });
    const lookup = guardedLookup(false, (host, address) => new AddressRefused(host, address, "peer", "A2A_CLIENT_ALLOW_PRIVATE_HOSTS"), resolve);
    const once = () =>
      new Promise<{ error: Error | null; address: string }>((done) => lookup("peer.example", { family: 0 }, (error, address) => done({ error, address: String(address) })));
    expect(await once()).toEqual({ error: null, address: "93.184.216.34" });
    const second = await once();
    expect(second.error).toBeInstanceOf(AddressRefused);
    expect(second.error!.message).toContain("127.0.0.1");
    expect(second.error!.message).toContain("A2A_CLIENT_ALLOW_PRIVATE_HOSTS is off");
  });
});

describe("allowlist entries", () => {
  it.each([
    ["peer.example", "peer.example", "443", true],
    ["PEER.example.", "peer.example", "80", true],
    ["peer.example:8443", "peer.example", "8443", true],
    ["peer.example:8443", "peer.example", "443", false],
    ["*.example", "a.peer.example", "443", true],
    ["*.example", "example", "443", false],
    ["*.example", "notexample", "443", false],
    ["*", "anything.test", "1", true],
    ["127.0.0.1", "127.0.0.1", "9999", true],
    ["[::1]:8000", "::1", "8000", true],
    ["::1", "::1", "8000", true],
    ["other.example", "peer.example", "443", false],
  ])("%s matches %s:%s → %s", (entry, host, port, expected) => {
    expect(hostMatches(entry, host, port)).toBe(expected);
  });
});

describe("peer URLs", () => {
  const policy = new PeerPolicy(settings());
  afterAll(() => policy.close());

  it.each([
    ["ftp://peer.example/", "a2a_invalid_input", "http or https"],
    ["not a url", "a2a_invalid_input", "not an absolute"],
    ["https://user:secret@peer.example/", "a2a_invalid_input", "user name or password"],
    ["https://peer.example/#frag", "a2a_invalid_input", "fragment"],
    [`https://peer.example/${"a".repeat(2100)}`, "a2a_invalid_input", "longer than"],
    ["http://127.0.0.1:8000/", "a2a_target_refused", "A2A_CLIENT_ALLOW_PRIVATE_HOSTS is off"],
    ["http://[::1]/", "a2a_target_refused", "loopback"],
    ["http://169.254.169.254/latest/meta-data", "a2a_target_refused", "private"],
    ["http://[::ffff:10.0.0.1]/", "a2a_target_refused", "private"],
    ["http://localhost:3000/", "a2a_target_refused", "loopback"],
    ["http://api.localhost/", "a2a_target_refused", "loopback"],
  ])("%s → %s", (url, code, words) => {
    let error: unknown;
    try {
      policy.check(url);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PeerCallError);
    expect((error as PeerCallError).code).toBe(code);
    expect((error as PeerCallError).message).toContain(words);
    // no secret of the URL in the message
    expect((error as PeerCallError).message).not.toContain("secret");
  });

  it("a public name passes the URL check (its addresses are checked at connect time)", () => {
    expect(policy.check("https://peer.example/a2a").href).toBe("https://peer.example/a2a");
  });

  it("with an allowlist, other hosts are refused", () => {
    const listed = new PeerPolicy(settings({ clientAllowedHosts: ["*.example.org", "peer.example:8443"] }));
    expect(listed.check("https://a.example.org/").host).toBe("a.example.org");
    expect(listed.check("https://peer.example:8443/").host).toBe("peer.example:8443");
    for (const url of ["https://peer.example/", "https://example.org/", "https://evil.test/"]) {
      expect(() => listed.check(url)).toThrow(/not in A2A_CLIENT_ALLOWED_HOSTS/);
    }
    void listed.close();
  });
});

describe("connections through the policy's fetch", () => {
  it("a name resolving to a private address is refused at connect time; nothing reaches the server", async () => {
    const policy = new PeerPolicy(settings(), table({ "rebind.test": ["127.0.0.1"] }));
    const before = seen.length;
    const error = await refusal(policy.fetch(`http://rebind.test:${port}/card`).catch((e: unknown) => Promise.reject(peerError(e))));
    expect(error.code).toBe("a2a_target_refused");
    expect(error.details).toMatchObject({ host: "rebind.test", address: "127.0.0.1" });
    expect(seen.length).toBe(before);
    await policy.close();
  });

  it("with private hosts allowed the same name connects; credentials go only to allowlisted hosts", async () => {
    const resolve = table({ "peer.test": ["127.0.0.1"], "other.test": ["127.0.0.1"] });
    // no allowlist: any host, no credentials (even one a caller set itself)
    const open = new PeerPolicy(settings({ clientAllowPrivateHosts: true, clientBearerToken: "tok-123" }), resolve);
    let res = await open.fetch(`http://peer.test:${port}/a`, { headers: { authorization: "Bearer smuggled" } });
    expect(res.status).toBe(200);
    expect(seen.at(-1)).toEqual({ url: "/a" });
    await open.close();
    // listed: the credential is sent to the listed host only; another host is refused before any connection
    const listed = new PeerPolicy(settings({ clientAllowPrivateHosts: true, clientAllowedHosts: ["peer.test"], clientBearerToken: "tok-123" }), resolve);
    res = await listed.fetch(`http://peer.test:${port}/b`);
    expect(res.status).toBe(200);
    expect(seen.at(-1)).toEqual({ url: "/b", authorization: "Bearer tok-123" });
    const before = seen.length;
    expect((await refusal(listed.fetch(`http://other.test:${port}/c`))).code).toBe("a2a_target_refused");
    expect(seen.length).toBe(before);
    expect(resolve.calls).not.toContain("other.test");
    await listed.close();
  });

  it("redirects are not followed", async () => {
    const policy = new PeerPolicy(settings({ clientAllowPrivateHosts: true }));
    const before = seen.length;
    const error = await refusal(policy.fetch(`http://127.0.0.1:${port}/redirect`));
    expect(error.code).toBe("a2a_peer_protocol_error");
    expect(error.message).toContain("redirect");
    expect(seen.slice(before).map((s) => s.url)).toEqual(["/redirect"]);
    await policy.close();
  });

  it("Basic credentials: user:password is encoded, a base64 value kept; the bearer token wins", () => {
    expect(authorizationOf({ clientBearerToken: undefined, clientBasicAuth: "ci:pa:ss" })).toBe(`Basic ${Buffer.from("ci:pa:ss").toString("base64")}`);
    expect(authorizationOf({ clientBearerToken: undefined, clientBasicAuth: "Y2k6cGFzcw==" })).toBe("Basic Y2k6cGFzcw==");
    expect(authorizationOf({ clientBearerToken: "t", clientBasicAuth: "a:b" })).toBe("Bearer t");
    expect(authorizationOf({ clientBearerToken: undefined, clientBasicAuth: undefined })).toBeUndefined();
  });
});

describe("errors", () => {
  it.each([
    [Object.assign(new Error("x"), { statusCode: 401 }), "a2a_peer_auth_failed"],
    [Object.assign(new Error("x"), { statusCode: 403 }), "a2a_peer_permission_denied"],
    [Object.assign(new Error("x"), { statusCode: 503 }), "a2a_retryable_unavailable"],
    [Object.assign(new Error("x"), { statusCode: 500 }), "a2a_unavailable"],
    [new Error("HTTP error for http://h/! Status: 401 Unauthorized"), "a2a_peer_auth_failed"],
    [Object.assign(new Error("Task not found"), { name: "TaskNotFoundError" }), "a2a_task_not_found"],
    [Object.assign(new Error("nope"), { reason: "UNSUPPORTED_OPERATION" }), "a2a_unsupported_operation"],
    [new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) }), "a2a_unavailable"],
    [new TypeError("fetch failed", { cause: Object.assign(new Error("reset"), { code: "ECONNRESET" }) }), "a2a_retryable_unavailable"],
    [new TypeError("fetch failed", { cause: new AddressRefused("h", "10.0.0.1", "peer", "A2A_CLIENT_ALLOW_PRIVATE_HOSTS") }), "a2a_target_refused"],
    [Object.assign(new Error("The operation was aborted due to timeout"), { name: "TimeoutError" }), "a2a_timeout"],
    [Object.assign(new Error("rpc"), { envelopeCode: -32603 }), "a2a_peer_protocol_error"],
    [new Error("something else"), "a2a_call_failed"],
  ])("%s → %s", (error, code) => {
    expect(peerError(error).code).toBe(code);
  });
});

describe("the interface a call uses", () => {
  const card = (interfaces: [string, string][]): AgentCard =>
    ({ name: "p", supportedInterfaces: interfaces.map(([protocolBinding, protocolVersion]) => ({ url: `http://p/${protocolBinding}/${protocolVersion}`, protocolBinding, protocolVersion, tenant: "" })) }) as unknown as AgentCard;
  const both: ("JSONRPC" | "HTTP+JSON")[] = ["JSONRPC", "HTTP+JSON"];

  it("the card's order, 1.0 before 0.3 on the same binding", () => {
    const c = card([["HTTP+JSON", "0.3"], ["JSONRPC", "1.0"], ["HTTP+JSON", "1.0"], ["JSONRPC", "0.3"]]);
    expect(chooseInterface(c, both, false)).toMatchObject({ protocolBinding: "HTTP+JSON", protocolVersion: "1.0" });
    // the client's order when it prefers its own
    expect(chooseInterface(c, both, true)).toMatchObject({ protocolBinding: "JSONRPC", protocolVersion: "1.0" });
    expect(chooseInterface(c, ["HTTP+JSON"], true, "0.3")).toMatchObject({ protocolBinding: "HTTP+JSON", protocolVersion: "0.3" });
  });

  it("a forced line or transport the peer does not offer: none", () => {
    expect(chooseInterface(card([["JSONRPC", "0.3"]]), both, false, "1.0")).toBeUndefined();
    expect(chooseInterface(card([["GRPC", "1.0"]]), both, false)).toBeUndefined();
    expect(chooseInterface(card([["JSONRPC", "2.0"]]), both, false)).toBeUndefined();
  });
});
