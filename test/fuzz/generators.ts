// fast-check generators of malformed, oversized, wrongly typed and hostile requests against the gateway. Method
// names, params schemas and REST routes come from the generated catalog; valid params from test/support/samples.ts
// (plus realistic send bodies per protocol mode), then mutated. `@@TASK@@` stands for a task id the run has seen.
import fc from "fast-check";
import { gzipSync } from "node:zlib";
import { catalog, type MethodEntry, type RouteEntry } from "../../src/contract/catalog.js";
import { sample } from "../support/samples.js";
import { TASK_PLACEHOLDER, type FuzzRequest, type HttpRequest, type RawRequest } from "./wire.js";

export interface GenContext {
  port: number;
  token: string;
  /** A2A_MAX_REQUEST_BODY_BYTES of the run. */
  limit: number;
  /** OPENCODE_WORKSPACE_ROOT and a directory outside it (absolute). */
  root: string;
  outside: string;
}

type Json = unknown;
const T = TASK_PLACEHOLDER;

// ---- small pools of hostile values -------------------------------------------------------------------------------

export const HOSTILE_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "%00",
  "../../etc/passwd",
  "..\\..\\windows\\win.ini",
  "/etc/shadow",
  "file:///etc/passwd",
  "http://169.254.169.254/latest/meta-data/",
  "<script>alert(1)</script>",
  "' OR '1'='1' --",
  "${jndi:ldap://x/a}",
  "{{7*7}}",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "\ud800",
  "\udfff\ud800",
  "\u202egnp.exe",
  "\ufeff",
  "🦄🦄🦄",
  "Ω≈ç√∫˜µ≤≥÷",
  "TASK_STATE_COMPLETED",
  "ROLE_AGENT",
  "agent",
  "input-required",
  "NaN",
  "-1",
  "1e309",
  "null",
  "true",
  "[]",
  "{}",
  "x".repeat(300),
];

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 8 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 8 }) },
);

/** A value of the wrong type for almost any field. */
export const wrongValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.constantFrom(-1, 0, 1.5, -0.0, 2 ** 53 + 1, 1e308, -1e308, Number.MAX_SAFE_INTEGER),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  hostileString,
  fc.constant([]),
  fc.constant({}),
  fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
  fc.dictionary(hostileString, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
);

const KEYS = ["__proto__", "constructor", "prototype", "toString", "kind", "metadata", "message_id", "context_id", "task_id", "history_length", "id", "extra", "parts", "content", "role", "@type", "", "\u0000"];

// ---- protocol modes and realistic bodies ------------------------------------------------------------------------

export type Mode = "rpc03" | "rpc10" | "rest03" | "rest10";
const MODES: Mode[] = ["rpc03", "rpc10", "rest03", "rest10"];

const RPC_NAMES = {
  rpc03: { send: "message/send", stream: "message/stream", get: "tasks/get", cancel: "tasks/cancel", subscribe: "tasks/resubscribe", list: "tasks/list" },
  rpc10: { send: "SendMessage", stream: "SendStreamingMessage", get: "GetTask", cancel: "CancelTask", subscribe: "SubscribeToTask", list: "ListTasks" },
} as const;

function message(mode: Mode, messageId: string, text: string, extra: Record<string, Json> = {}): Record<string, Json> {
  if (mode === "rpc03") return { kind: "message", role: "user", messageId, parts: [{ kind: "text", text }], ...extra };
  if (mode === "rest03") return { role: "ROLE_USER", messageId, content: [{ text }], ...extra };
  return { role: "ROLE_USER", messageId, parts: [{ text }], ...extra };
}

function sendParams(mode: Mode, messageId: string, text: string, blocking: boolean, metadata?: Json, messageExtra: Record<string, Json> = {}): Record<string, Json> {
  const configuration = mode === "rpc03" || mode === "rest03" ? { blocking } : { returnImmediately: !blocking };
  return { message: message(mode, messageId, text, messageExtra), configuration, ...(metadata === undefined ? {} : { metadata }) };
}

export function rpcEnvelope(method: Json, params: Json, id: Json | undefined): Record<string, Json> {
  return { jsonrpc: "2.0", ...(id === undefined ? {} : { id }), method, ...(params === undefined ? {} : { params }) };
}

// ---- helpers ----------------------------------------------------------------------------------------------------

const json = (v: Json): Buffer => Buffer.from(JSON.stringify(v) ?? "null", "utf8");

/** Sets `obj[key] = value` as an own enumerable property (also for `__proto__`). */
function define(obj: Record<string, Json>, key: string, value: Json): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

function paths(value: Json, prefix: (string | number)[] = [], out: (string | number)[][] = [], depth = 0): (string | number)[][] {
  out.push(prefix);
  if (depth > 8 || value === null || typeof value !== "object") return out;
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...prefix, i], out, depth + 1));
  else for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out, depth + 1);
  return out;
}

interface Mutation {
  pick: number;
  op: "replace" | "delete" | "add" | "wrap" | "snake";
  key: string;
  value: Json;
}

const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  pick: fc.nat(),
  op: fc.constantFrom<Mutation["op"]>("replace", "replace", "replace", "delete", "add", "wrap", "snake"),
  key: fc.oneof(fc.constantFrom(...KEYS), hostileString),
  value: wrongValue,
});

function clone<V>(v: V): V {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as V);
}

/** Applies mutations at positions picked among every path of the value (the root included). */
export function mutate(base: Json, mutations: Mutation[]): Json {
  let root: Json = clone(base);
  for (const original of mutations) {
    // Generated values may be shared instances (fc.constant): never insert them by reference.
    const m = { ...original, value: clone(original.value) };
    const all = paths(root);
    const p = all[m.pick % all.length]!;
    if (p.length === 0) {
      if (m.op === "add" && root !== null && typeof root === "object" && !Array.isArray(root)) define(root as Record<string, Json>, m.key, m.value);
      else if (m.op === "wrap") root = [root];
      else if (m.op !== "delete" && m.op !== "snake") root = m.value;
      continue;
    }
    let parent: any = root;
    for (const seg of p.slice(0, -1)) parent = parent[seg];
    const last = p[p.length - 1]!;
    switch (m.op) {
      case "replace":
        parent[last] = m.value;
        break;
      case "delete":
        if (Array.isArray(parent)) parent.splice(Number(last), 1);
        else delete parent[last];
        break;
      case "add": {
        const target = parent[last];
        if (target !== null && typeof target === "object" && !Array.isArray(target)) define(target, m.key, m.value);
        else if (Array.isArray(target)) target.push(m.value);
        else parent[last] = m.value;
        break;
      }
      case "wrap":
        parent[last] = [parent[last]];
        break;
      case "snake":
        if (typeof last === "string" && !Array.isArray(parent)) {
          const snake = last.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
          if (snake !== last) define(parent, snake, m.value);
        }
        break;
    }
  }
  return root;
}

// ---- the generator ----------------------------------------------------------------------------------------------

export function hostileRequests(ctx: GenContext): fc.Arbitrary<FuzzRequest> {
  const good = { authorization: `Bearer ${ctx.token}` };
  const jsonType = { "content-type": "application/json" };
  const LIMIT = ctx.limit;
  const host = `127.0.0.1:${ctx.port}`;

  const methods = catalog.methods;
  const methodNames = methods.map((m) => m.name);
  const bases = new Map<string, Json>();
  for (const m of methods) {
    let base: Json;
    try {
      base = sample(m.params_schema);
    } catch {
      base = {};
    }
    if (m.operation && /task|cancel|subscribe|get/i.test(m.operation) && base && typeof base === "object" && "id" in (base as object))
      (base as Record<string, Json>).id = T;
    bases.set(m.name, base);
  }
  const baseFor = (m: MethodEntry, uuid: string): Json => {
    const mode: Mode = m.line === "1.0" ? "rpc10" : "rpc03";
    if (m.operation === "send" || m.operation === "stream" || /message\/(send|stream)|^Send/.test(m.name))
      return sendParams(mode, uuid, "fuzz hello", false);
    return bases.get(m.name);
  };

  const restRoutes = catalog.routes.filter((r) => r.kind !== "jsonrpc");
  const a2aRoutes = restRoutes.filter((r) => r.kind === "a2a");
  const bodyRoutes = a2aRoutes.filter((r) => r.verb === "POST");
  const publicRoutes = restRoutes.filter((r) => r.public);

  const versionArb: fc.Arbitrary<string | undefined> = fc.oneof(
    { weight: 8, arbitrary: fc.constant(undefined) },
    { weight: 4, arbitrary: fc.constantFrom("0.3", "1.0") },
    {
      weight: 2,
      arbitrary: fc.constantFrom("", " 1.0 ", "\t0.3", "1.0.0", "0.3.0", "2.0", "1", "0", "v1.0", "1.0,0.3", "0.2", "1.1", "01.0", "1.0\u00a0", "１.０", "null", "*"),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  );
  const idArb: fc.Arbitrary<Json | undefined> = fc.oneof(
    { weight: 6, arbitrary: fc.nat() },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
  const gzipArb = fc.oneof({ weight: 4, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.constant({ "accept-encoding": "gzip" }) });
  const withVersion = (v: string | undefined): Record<string, string> => (v === undefined ? {} : { "A2A-Version": v });

  const rpc = (body: Buffer, headers: Record<string, string>, family: string, extra: Partial<HttpRequest> = {}): HttpRequest => ({
    kind: "http",
    family,
    method: "POST",
    path: "/",
    headers: { ...good, ...jsonType, ...headers },
    body,
    ...extra,
  });

  /** Path segments for `{id}`-style placeholders. */
  const segmentArb: fc.Arbitrary<string> = fc.oneof(
    { weight: 4, arbitrary: fc.constant(T) },
    { weight: 2, arbitrary: fc.uuid() },
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        "..%2f..%2fetc%2fpasswd",
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "%2e%2e",
        "..",
        ".",
        "%00",
        "a%00b",
        "%ZZ",
        "%E0%A4%A",
        "%C0%AF",
        "%ED%A0%80",
        "%F0%9F%A6%84",
        "%EF%BB%BF",
        "x%3Acancel",
        "%3A",
        "%2F",
        "%5C..%5C",
        "%20",
        "%0D%0ASet-Cookie:%20x=1",
        "%25",
        "%252e%252e",
        "__proto__",
        "constructor",
        "null",
        "undefined",
        "-1",
        "1e999",
        `${T}%00`,
        `${T}%20`,
        `${T}..%2f`,
      ),
    },
    { weight: 2, arbitrary: fc.string({ maxLength: 20 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 6 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 12_000 }).map((n) => "a".repeat(n)) },
  );
  const queryArb: fc.Arbitrary<string> = fc.oneof(
    { weight: 5, arbitrary: fc.constant("") },
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        "?historyLength=-1",
        "?historyLength=abc",
        "?historyLength=1e9",
        "?historyLength=0",
        "?historyLength=1&historyLength=2",
        "?pageSize=0",
        "?pageSize=101",
        "?pageSize=1.5",
        "?pageSize=1&pageSize=2",
        "?status=NOPE",
        "?status=TASK_STATE_COMPLETED",
        "?status=completed",
        "?pageToken=garbage",
        "?pageToken=%00",
        "?includeArtifacts=maybe",
        "?statusTimestampAfter=yesterday",
        "?statusTimestampAfter=2026-13-45T99:99:99Z",
        `?id=${T}`,
        "?id=other",
        "?taskId=x&configId=y",
        "?body=x",
        "?__proto__=1",
        "?constructor=x&toString=y",
        "?A2A-Version=2.0",
        "?A2A-Version=1.0",
        "?A2A-Version=1.0&A2A-Version=0.3",
        "?contextId=%00",
        "?%ZZ=%ZZ",
        "?=",
        "?&&&",
        "?a[b]=c",
        `?x=${"y".repeat(4000)}`,
      ),
    },
    { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 10 }), { maxKeys: 4 }).map((d) => `?${new URLSearchParams(d)}`) },
  );

  function fill(route: RouteEntry, segments: string[]): string {
    let i = 0;
    return route.path.replace(/\{\w+\}/g, () => segments[i++ % segments.length] ?? T);
  }

  // 1. JSON-RPC: a catalog method with its valid sample params, mutated (wrong types, removed/added members).
  const rpcMutated = fc
    .record({
      method: fc.constantFrom(...methodNames),
      version: fc.oneof({ weight: 3, arbitrary: fc.constant("auto" as const) }, { weight: 2, arbitrary: fc.constant("other" as const) }, { weight: 1, arbitrary: versionArb }),
      id: idArb,
      uuid: fc.uuid(),
      mutations: fc.array(mutationArb, { minLength: 0, maxLength: 4 }),
      snake: fc.boolean(),
      gzip: gzipArb,
    })
    .map(({ method, version, id, uuid, mutations, gzip }) => {
      const m = methods.find((x) => x.name === method)!;
      const params = mutate(baseFor(m, uuid), mutations);
      let headers: Record<string, string>;
      if (version === "auto") headers = m.line ? { "A2A-Version": m.line } : {};
      else if (version === "other") headers = m.line ? { "A2A-Version": m.line === "0.3" ? "1.0" : "0.3" } : { "A2A-Version": "1.0" };
      else headers = withVersion(version);
      return rpc(json(rpcEnvelope(method, params, id)), { ...headers, ...gzip }, "rpc-mutated-params");
    });

  // 2. JSON-RPC envelopes with hostile members.
  const rpcEnvelopeArb = fc
    .record({
      jsonrpc: fc.oneof({ weight: 3, arbitrary: fc.constant("2.0" as Json) }, { weight: 2, arbitrary: fc.constantFrom<Json>("1.0", "2", 2, 2.0, null, "2.0 ", undefined) }),
      id: fc.oneof(idArb, fc.constantFrom<Json>(1.5, -1, 2 ** 53, Number.MAX_VALUE, true, [], {}, [1], { a: 1 }, "", "x".repeat(5000))),
      method: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom<Json>(...methodNames) },
        {
          weight: 3,
          arbitrary: fc.constantFrom<Json>(
            "",
            "unknown/method",
            "NoSuchMethod",
            "__proto__",
            "constructor",
            "toString",
            "hasOwnProperty",
            "message/send ",
            "MESSAGE/SEND",
            "sendmessage",
            "rpc.discover",
            "opencode.",
            "opencode.sessions",
            "a2a.interrupt",
            "x".repeat(3000),
            "🦄",
            "message\u0000/send",
          ),
        },
        { weight: 1, arbitrary: fc.constantFrom<Json>(null, 1, true, [], {}, ["message/send"]) },
        { weight: 1, arbitrary: hostileString },
      ),
      params: fc.oneof(
        { weight: 3, arbitrary: fc.constant(undefined as Json) },
        { weight: 3, arbitrary: fc.constantFrom<Json>(null, [], [1, 2], "params", 42, true, {}) },
        { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
      ),
      extra: fc.option(fc.tuple(fc.constantFrom(...KEYS, "result", "error"), wrongValue)),
      version: versionArb,
    })
    .map(({ jsonrpc, id, method, params, extra, version }) => {
      const env: Record<string, Json> = {};
      if (jsonrpc !== undefined) env.jsonrpc = jsonrpc;
      if (id !== undefined) env.id = id;
      env.method = method;
      if (params !== undefined) env.params = params;
      if (extra) define(env, extra[0], extra[1]);
      return rpc(json(env), withVersion(version), "rpc-envelope");
    });

  // 3. Batches: empty, large, nested, notifications only, mixed, streaming methods inside.
  const batchItem: fc.Arbitrary<Json> = fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...methodNames), idArb, fc.array(mutationArb, { maxLength: 2 })).map(([m, id, muts]) => rpcEnvelope(m, mutate(bases.get(m), muts), id)) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...methodNames), fc.constantFrom<Json>(undefined)).map(([m]) => rpcEnvelope(m, {}, undefined)) },
    { weight: 1, arbitrary: fc.constantFrom<Json>(1, "x", null, true, [], {}, [{}], { id: 1 }, { jsonrpc: "2.0" }) },
    { weight: 1, arbitrary: fc.uuid().map((u) => rpcEnvelope("message/send", sendParams("rpc03", u, "batch send", false), u)) },
  );
  const batchArb = fc
    .oneof(
      { weight: 1, arbitrary: fc.constant<Json[]>([]) },
      { weight: 6, arbitrary: fc.array(batchItem, { minLength: 1, maxLength: 12 }) },
      { weight: 2, arbitrary: fc.array(batchItem, { minLength: 50, maxLength: 400 }) },
      { weight: 1, arbitrary: fc.array(fc.constantFrom(...methodNames).map((m) => rpcEnvelope(m, {}, undefined)), { minLength: 1, maxLength: 30 }) },
      { weight: 1, arbitrary: fc.array(batchItem, { minLength: 1, maxLength: 3 }).map((b) => [b, b]) },
    )
    .chain((items) => fc.tuple(fc.constant(items), versionArb))
    .map(([items, version]) => rpc(json(items), withVersion(version), "rpc-batch"));

  // 4. Bad JSON text on JSON-RPC and on REST bodies.
  const validText = (uuid: string) => JSON.stringify(rpcEnvelope("message/send", sendParams("rpc03", uuid, "bad json", false), 7));
  const badJsonText: fc.Arbitrary<Buffer> = fc.oneof(
    fc.tuple(fc.uuid(), fc.nat()).map(([u, n]) => {
      const t = validText(u);
      return Buffer.from(t.slice(0, n % t.length));
    }),
    fc.tuple(fc.uuid(), fc.constantFrom("}", "x", "\u0000", " [", "\n{}", ",", "]", "//c", "\ufeff", "{}{}")).map(([u, g]) => Buffer.from(validText(u) + g)),
    fc.constantFrom(
      '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":NaN}}',
      '{"jsonrpc":"2.0","id":Infinity,"method":"tasks/get"}',
      '{"jsonrpc":"2.0","id":-Infinity,"method":"tasks/get"}',
      '{"jsonrpc":"2.0","id":undefined,"method":"tasks/get"}',
      "{'jsonrpc':'2.0','id':1,'method':'tasks/get'}",
      '{jsonrpc:"2.0",id:1,method:"tasks/get"}',
      '{"jsonrpc":"2.0","id":1,"method":"tasks/get",}',
      '{"jsonrpc":"2.0","id":0x10,"method":"tasks/get"}',
      '{"jsonrpc":"2.0","id":0012,"method":"tasks/get"}',
      '{"jsonrpc":"2.0","id":+1,"method":"tasks/get"}',
      '{"jsonrpc":"2.0","id":.5,"method":"tasks/get"}',
      '{"jsonrpc":"2.0","id":1e999,"method":"tasks/get","params":{"id":"x"}}',
      '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tasks/get","params":{"id":"x"}}',
      '{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"tasks/get","params":{"id":"x"}}',
      '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"},"params":[]}',
      '/* c */{"jsonrpc":"2.0","id":1,"method":"tasks/get"}',
      '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m","parts":[{"kind":"text","text":"\\ud800"}]}}}',
      '{"jsonrpc":"2.0","id":"\\u0000","method":"tasks/get","params":{"id":"\\u0000"}}',
      '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"\\x41"}}',
      '{"a":"\\',
      '"',
      "",
      " ",
      "\r\n\t",
      "null",
      "true",
      "0",
      "-0",
      '"str"',
      "[]",
      "{}",
      "[null]",
      "{\"__proto__\":{\"admin\":true},\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/list\"}",
    ).map((t) => Buffer.from(t)),
    fc.uuid().map((u) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(validText(u))])),
    fc.tuple(fc.uuid(), fc.constantFrom([0xff], [0xfe, 0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80], [0xe2, 0x82]), fc.nat()).map(([u, bad, n]) => {
      const t = Buffer.from(validText(u));
      const at = n % t.length;
      return Buffer.concat([t.subarray(0, at), Buffer.from(bad), t.subarray(at)]);
    }),
    fc.tuple(fc.uuid(), fc.constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80])).map(([u, bad]) => {
      const t = validText(u);
      const at = t.indexOf("bad json");
      return Buffer.concat([Buffer.from(t.slice(0, at)), Buffer.from(bad), Buffer.from(t.slice(at))]);
    }),
    fc.uuid().map((u) => Buffer.from(validText(u), "utf16le")),
    fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
  );
  const badJson = fc
    .tuple(badJsonText, fc.option(fc.constantFrom(...bodyRoutes), { freq: 2 }), versionArb)
    .map(([body, route, version]): HttpRequest =>
      route
        ? { kind: "http", family: "bad-json", method: "POST", path: fill(route, [T]), headers: { ...good, ...jsonType, ...withVersion(version) }, body }
        : rpc(body, withVersion(version), "bad-json"),
    );

  // 5. Deep nesting (up to ~12k levels), arrays or objects, closed or not, at several places.
  const deep = fc
    .record({
      depth: fc.oneof(fc.integer({ min: 100, max: 300 }), fc.integer({ min: 1000, max: 12_000 })),
      shape: fc.constantFrom("array", "object", "mixed"),
      closed: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      where: fc.constantFrom("top", "params", "metadata", "message", "part-text", "batch", "rest-body", "rest-metadata", "ext-params"),
      version: versionArb,
      uuid: fc.uuid(),
    })
    .map(({ depth, shape, closed, where, version, uuid }): HttpRequest => {
      const open = shape === "array" ? "[" : shape === "object" ? '{"a":' : '[{"a":';
      const close = shape === "array" ? "]" : shape === "object" ? "}" : "}]";
      const reps = shape === "mixed" ? Math.ceil(depth / 2) : depth;
      const nest = open.repeat(reps) + "1" + (closed ? close.repeat(reps) : "");
      const env = (params: string, method = "message/send") => `{"jsonrpc":"2.0","id":1,"method":"${method}","params":${params}}`;
      const msg = (inner: string) => `{"kind":"message","role":"user","messageId":"${uuid}","parts":[{"kind":"text","text":${inner}}]}`;
      let text: string;
      let path = "/";
      let headers: Record<string, string> = withVersion(version);
      switch (where) {
        case "top":
          text = nest;
          break;
        case "params":
          text = env(nest);
          break;
        case "metadata":
          text = env(`{"message":${msg('"x"')},"metadata":${nest}}`);
          break;
        case "message":
          text = env(`{"message":${nest}}`);
          break;
        case "part-text":
          text = env(`{"message":${msg(nest)}}`);
          break;
        case "batch":
          text = `[${nest}]`;
          break;
        case "ext-params":
          text = env(`{"x":${nest}}`, "opencode.sessions.list");
          break;
        case "rest-body":
          path = "/v1/message:send";
          text = `{"message":${nest}}`;
          break;
        default:
          path = "/message:send";
          headers = { "A2A-Version": "1.0" };
          text = `{"message":{"role":"ROLE_USER","messageId":"${uuid}","parts":[{"text":"x"}]},"metadata":${nest}}`;
      }
      return { kind: "http", family: "deep-nesting", method: "POST", path, headers: { ...good, ...jsonType, ...headers }, body: Buffer.from(text) };
    });

  // 6. Huge strings around A2A_MAX_REQUEST_BODY_BYTES, sometimes chunked (no Content-Length).
  const huge = fc
    .record({
      size: fc.oneof(fc.integer({ min: LIMIT - 1024, max: LIMIT + 4096 }), fc.integer({ min: 1000, max: LIMIT }), fc.integer({ min: LIMIT, max: LIMIT * 4 })),
      unit: fc.constantFrom("x", "é", "🦄", "\\u0000", "\\\\"),
      where: fc.constantFrom("text", "messageId", "metadata", "method", "id", "rest-text", "rest10-text", "padding"),
      chunked: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      uuid: fc.uuid(),
    })
    .map(({ size, unit, where, chunked, uuid }): HttpRequest => {
      const unitBytes = Buffer.byteLength(unit);
      const s = unit.repeat(Math.max(1, Math.floor(size / unitBytes)));
      let path = "/";
      let headers: Record<string, string> = {};
      let text: string;
      switch (where) {
        case "text":
          text = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"${uuid}","parts":[{"kind":"text","text":"${s}"}]}}}`;
          break;
        case "messageId":
          text = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"configuration":{"returnImmediately":true},"message":{"role":"ROLE_USER","messageId":"${s}","parts":[{"text":"x"}]}}}`;
          break;
        case "metadata":
          text = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"configuration":{"blocking":false},"metadata":{"k":"${s}"},"message":{"kind":"message","role":"user","messageId":"${uuid}","parts":[{"kind":"text","text":"x"}]}}}`;
          break;
        case "method":
          text = `{"jsonrpc":"2.0","id":1,"method":"${s}"}`;
          break;
        case "id":
          text = `{"jsonrpc":"2.0","id":"${s}","method":"tasks/get","params":{"id":"x"}}`;
          break;
        case "rest-text":
          path = "/v1/message:send";
          text = `{"configuration":{"blocking":false},"message":{"role":"ROLE_USER","messageId":"${uuid}","content":[{"text":"${s}"}]}}`;
          break;
        case "rest10-text":
          path = "/message:send";
          headers = { "A2A-Version": "1.0" };
          text = `{"configuration":{"returnImmediately":true},"message":{"role":"ROLE_USER","messageId":"${uuid}","parts":[{"text":"${s}"}]}}`;
          break;
        default:
          text = `{"jsonrpc":"2.0","id":1,"method":"tasks/list"${" ".repeat(size)}}`;
      }
      return { kind: "http", family: "huge-strings", method: "POST", path, headers: { ...good, ...jsonType, ...headers }, body: Buffer.from(text), chunked };
    });

  // 7. Every catalog REST route with hostile path segments, verbs, queries and bodies.
  const restBodyFor = (route: RouteEntry, uuid: string, version: string | undefined): Json => {
    if (/message:(send|stream)$/.test(route.path)) {
      const mode: Mode = route.path.startsWith("/v1/") ? "rest03" : version?.trim() === "1.0" ? "rest10" : "rest03";
      return sendParams(mode, uuid, "rest fuzz", false);
    }
    if (route.body_schema) {
      try {
        return sample(route.body_schema);
      } catch {
        return {};
      }
    }
    return undefined;
  };
  const restArb = fc
    .record({
      route: fc.constantFrom(...restRoutes),
      segments: fc.array(segmentArb, { minLength: 2, maxLength: 2 }),
      verb: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE", "BREW", "M-SEARCH") }),
      prefix: fc.oneof({ weight: 8, arbitrary: fc.constant("") }, { weight: 1, arbitrary: fc.constantFrom("/tenant-x", "/v1", "/v2", "//", "/.", "/%2e", "/v1/v1") }),
      query: queryArb,
      body: fc.oneof(
        { weight: 4, arbitrary: fc.constant("valid" as const) },
        { weight: 3, arbitrary: fc.array(mutationArb, { minLength: 1, maxLength: 3 }) },
        { weight: 1, arbitrary: fc.constant("none" as const) },
        { weight: 1, arbitrary: badJsonText },
      ),
      version: versionArb,
      auth: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      uuid: fc.uuid(),
      gzip: gzipArb,
    })
    .map(({ route, segments, verb, prefix, query, body, version, auth, uuid, gzip }): HttpRequest => {
      const method = verb ?? route.verb;
      let path = prefix + fill(route, segments);
      if (path.length === 0) path = "/";
      path += query;
      let payload: Buffer | undefined;
      const base = restBodyFor(route, uuid, version);
      if (method === "HEAD" || method === "TRACE") payload = undefined;
      else if (Buffer.isBuffer(body)) payload = body;
      else if (body === "none") payload = undefined;
      else if (body === "valid") payload = base === undefined ? undefined : json(base);
      else payload = json(mutate(base ?? {}, body));
      return {
        kind: "http",
        family: "rest-routes",
        method,
        path,
        headers: { ...(auth ? good : {}), ...(payload ? jsonType : {}), ...withVersion(version), ...gzip },
        ...(payload ? { body: payload } : {}),
      };
    });

  // 8. Wrong or absent content types (415 on REST and JSON-RPC), and encoded bodies.
  const contentTypeArb = fc
    .record({
      type: fc.constantFrom<string | undefined>(
        undefined,
        "",
        "text/plain",
        "text/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=xyz",
        "application/xml",
        "application/json;charset=utf-16",
        "application/jsonp",
        "application/json, text/plain",
        "application/json-patch",
        "json",
        "application/",
        "*/*",
        "application/*",
        "application/merge-patch+json",
        "APPLICATION/A2A+JSON",
        'application/json; charset="utf-8"',
        "application/json; boundary",
        "application/jsön",
        "application/json\t",
        "application/octet-stream",
        "application/grpc",
        "text/event-stream",
      ),
      target: fc.oneof(fc.constant(undefined), fc.constantFrom(...bodyRoutes)),
      encoding: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom("gzip", "deflate", "br", "identity", "x-unknown") }),
      uuid: fc.uuid(),
      version: versionArb,
    })
    .map(({ type, target, encoding, uuid, version }): HttpRequest => {
      const text = target
        ? JSON.stringify(restBodyFor(target, uuid, version) ?? {})
        : JSON.stringify(rpcEnvelope("tasks/get", { id: T }, 3));
      const body = encoding === "gzip" ? gzipSync(text) : Buffer.from(text);
      const headers: Record<string, string> = { ...good, ...withVersion(version) };
      if (type !== undefined) headers["content-type"] = type;
      if (encoding !== undefined) headers["content-encoding"] = encoding;
      return { kind: "http", family: "content-type", method: "POST", path: target ? fill(target, [T]) : "/", headers, body };
    });

  // 9. Hostile metadata.opencode.directory (and workspace / session / model) on sends of all four modes.
  const dirValue: fc.Arbitrary<Json> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom<Json>(
        "../../etc",
        "../",
        "..",
        "/etc",
        "/",
        "/proc/self",
        ctx.outside,
        `${ctx.root}/../..`,
        `${ctx.root}/escape`,
        "escape",
        "escape/..",
        "inside/../escape",
        "inside",
        "alias",
        "./inside",
        ".",
        ctx.root,
        "file.txt",
        "missing",
        "\u0000",
        "inside\u0000/../..",
        "%2e%2e",
        "~",
        "~root",
        "C:\\Windows",
        "\\\\server\\share",
        "file:///etc",
        "inside/" + "x/".repeat(500),
        "a".repeat(5000),
        "🦄",
        " inside ",
        "",
        "   ",
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom<Json>(42, true, [], {}, ["inside"], { path: "inside" }, null) },
    { weight: 1, arbitrary: hostileString },
  );
  const directoryArb = fc
    .record({
      mode: fc.constantFrom(...MODES),
      dir: dirValue,
      where: fc.constantFrom("params", "params", "message", "workspace", "session", "model"),
      blocking: fc.boolean(),
      uuid: fc.uuid(),
      other: wrongValue,
    })
    .map(({ mode, dir, where, blocking, uuid, other }): HttpRequest => {
      let metadata: Json;
      if (where === "workspace") metadata = { opencode: { workspace: { id: dir } } };
      else if (where === "session") metadata = { shared: { session: { id: typeof dir === "string" ? `ses_${dir}` : other } } };
      else if (where === "model") metadata = { shared: { model: { providerID: dir, modelID: other } } };
      else metadata = { opencode: { directory: dir } };
      const params =
        where === "message" ? sendParams(mode, uuid, "where am I", blocking, undefined, { metadata }) : sendParams(mode, uuid, "where am I", blocking, metadata);
      if (mode === "rpc03" || mode === "rpc10")
        return rpc(json(rpcEnvelope(RPC_NAMES[mode].send, params, 11)), mode === "rpc10" ? { "A2A-Version": "1.0" } : {}, "hostile-directory");
      return {
        kind: "http",
        family: "hostile-directory",
        method: "POST",
        path: mode === "rest03" ? "/v1/message:send" : "/message:send",
        headers: { ...good, ...jsonType, ...(mode === "rest10" ? { "A2A-Version": "1.0" } : {}) },
        body: json(params),
      };
    });

  // 10. Missing or wrong credentials (401 typed errors), on JSON-RPC and on authenticated routes.
  const authArb = fc
    .record({
      auth: fc.constantFrom<string | undefined>(
        undefined,
        "",
        "Bearer",
        "Bearer ",
        "Bearer wrong-token",
        `Bearer ${ctx.token}x`,
        `Bearer ${ctx.token.slice(0, -1)}`,
        `Bearer ${ctx.token} extra`,
        `Basic ${Buffer.from(`admin:${ctx.token}`).toString("base64")}`,
        `Token ${ctx.token}`,
        ctx.token,
        `Bearer ${"A".repeat(8000)}`,
        "Bearer é",
        `bearer ${ctx.token}`,
        `BEARER   ${ctx.token}  `,
        "Negotiate YII=",
        "Bearer \u00ff\u00fe",
      ),
      other: fc.constantFrom<Record<string, string>>({}, { "x-api-key": ctx.token }, { cookie: `token=${ctx.token}` }, { "proxy-authorization": `Bearer ${ctx.token}` }),
      route: fc.option(fc.constantFrom(...restRoutes.filter((r) => !r.public)), { freq: 1 }),
      version: versionArb,
    })
    .map(({ auth, other, route, version }): HttpRequest => {
      const headers: Record<string, string> = { ...other, ...withVersion(version) };
      if (auth !== undefined) headers.authorization = auth;
      if (!route) return { kind: "http", family: "credentials", method: "POST", path: "/", headers: { ...jsonType, ...headers }, body: json(rpcEnvelope("tasks/list", {}, 5)) };
      const body = route.verb === "POST" ? json(restBodyFor(route, "00000000-0000-4000-8000-000000000000", version) ?? {}) : undefined;
      return { kind: "http", family: "credentials", method: route.verb, path: fill(route, [T]), headers: { ...(body ? jsonType : {}), ...headers }, ...(body ? { body } : {}) };
    });

  // 11. Random A2A-Version header / query values on random targets.
  const versionValues = fc.oneof(versionArb.filter((v): v is string => v !== undefined), fc.string({ maxLength: 8 }), fc.string({ unit: "binary-ascii", maxLength: 6 }));
  const versionFamily = fc
    .record({ value: versionValues, inQuery: fc.boolean(), both: fc.option(versionValues), route: fc.option(fc.constantFrom(...restRoutes), { freq: 2 }), method: fc.constantFrom(...methodNames) })
    .map(({ value, inQuery, both, route, method }): HttpRequest => {
      const q = inQuery ? `?A2A-Version=${encodeURIComponent(value)}` : "";
      const headers: Record<string, string> = { ...good, ...(inQuery ? {} : { "A2A-Version": value }) };
      if (both !== null && inQuery) headers["A2A-Version"] = both;
      if (!route) return { kind: "http", family: "version-header", method: "POST", path: `/${q}`, headers: { ...jsonType, ...headers }, body: json(rpcEnvelope(method, bases.get(method), 9)) };
      const body = route.verb === "POST" ? json(restBodyFor(route, "00000000-0000-4000-8000-000000000001", value) ?? {}) : undefined;
      return { kind: "http", family: "version-header", method: route.verb, path: fill(route, [T]) + q, headers: { ...(body ? jsonType : {}), ...headers }, ...(body ? { body } : {}) };
    });

  // 12. Raw malformed HTTP over a socket.
  const auth = `Authorization: Bearer ${ctx.token}`;
  const rpcBody = JSON.stringify(rpcEnvelope("tasks/list", {}, 1));
  const r = (label: string, text: string | Buffer, incomplete = false): RawRequest => ({
    kind: "raw",
    family: "raw-http",
    label,
    bytes: typeof text === "string" ? Buffer.from(text, "latin1") : text,
    ...(incomplete ? { incomplete } : {}),
  });
  /** A POST / whose framing is `extraHead` (Content-Length: the body's unless the head frames it itself). */
  const post = (extraHead: string, body = rpcBody, line = "POST / HTTP/1.1") => {
    const framed = /content-length|transfer-encoding/i.test(extraHead) ? "" : `Content-Length: ${Buffer.byteLength(body)}\r\n`;
    return `${line}\r\nHost: ${host}\r\n${auth}\r\nContent-Type: application/json\r\n${framed}${extraHead}Connection: close\r\n\r\n${body}`;
  };
  const rawArb: fc.Arbitrary<RawRequest> = fc.oneof(
    fc.constantFrom(
      r("http10-card", "GET /.well-known/agent-card.json HTTP/1.0\r\n\r\n"),
      r("http10-rpc", `POST / HTTP/1.0\r\n${auth}\r\nContent-Type: application/json\r\nContent-Length: ${rpcBody.length}\r\n\r\n${rpcBody}`),
      r("http10-keepalive", `GET /health HTTP/1.0\r\n${auth}\r\nConnection: keep-alive\r\n\r\n`),
      r("http10-chunked", `POST / HTTP/1.0\r\n${auth}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${rpcBody.length.toString(16)}\r\n${rpcBody}\r\n0\r\n\r\n`),
      r("http09", "GET /\r\n\r\n"),
      r("http11-no-host", `GET /health HTTP/1.1\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("http2-line", `GET /health HTTP/2.0\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("http12", `GET /health HTTP/1.2\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("http99", `GET /health HTTP/9.9\r\nHost: ${host}\r\n\r\n`),
      r("lowercase-version", `GET /health http/1.1\r\nHost: ${host}\r\n\r\n`),
      r("lowercase-method", `get /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("unknown-method", `BREW /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("spaces-in-target", `GET /tasks/a b HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("nul-in-target", `GET /tasks/a\u0000b HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("utf8-target", Buffer.concat([Buffer.from("GET /v1/tasks/"), Buffer.from("ünï🦄", "utf8"), Buffer.from(` HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`)])),
      r("asterisk-target", `OPTIONS * HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("absolute-target", `GET http://evil.example/health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      // Node's server closes a CONNECT it has no 'connect' listener for without an answer: no answer owed.
      r("authority-target", `CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, true),
      r("double-slash", `GET //health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("dot-segments", `GET /v1/../health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("backslash-target", `GET \\health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
      r("bad-header-name-space", `GET /health HTTP/1.1\r\nHost: ${host}\r\nBad Header: x\r\n\r\n`),
      r("bad-header-name-paren", `GET /health HTTP/1.1\r\nHost: ${host}\r\nX(y): z\r\n\r\n`),
      r("bad-header-name-ctl", `GET /health HTTP/1.1\r\nHost: ${host}\r\n\u0001X: y\r\n\r\n`),
      r("bad-header-name-utf8", `GET /health HTTP/1.1\r\nHost: ${host}\r\nX-\u00c4: y\r\n\r\n`),
      r("empty-header-name", `GET /health HTTP/1.1\r\nHost: ${host}\r\n: empty\r\n\r\n`),
      r("header-no-colon", `GET /health HTTP/1.1\r\nHost: ${host}\r\nNoColonHere\r\n\r\n`),
      r("space-before-colon", `GET /health HTTP/1.1\r\nHost: ${host}\r\nAuthorization : Bearer ${ctx.token}\r\n\r\n`),
      r("obs-fold", `GET /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nX-Folded: a\r\n b\r\nConnection: close\r\n\r\n`),
      r("bare-cr-in-value", `GET /health HTTP/1.1\r\nHost: ${host}\r\nA2A-Version: 1.0\rX-Evil: 1\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("bare-lf-in-value", `GET /health HTTP/1.1\r\nHost: ${host}\r\nA2A-Version: 1.0\nX-Evil: 1\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("bare-lf-lines", `GET /health HTTP/1.1\nHost: ${host}\n${auth}\nConnection: close\n\n`),
      r("crlf-injected-version", post("A2A-Version: 1.0\r\nA2A-Version: 0.3\r\n")),
      r("crlf-injected-auth", `GET /health HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer x\r\nAuthorization: Bearer ${ctx.token}\r\nConnection: close\r\n\r\n`),
      r("nul-in-value", `GET /health HTTP/1.1\r\nHost: ${host}\r\nA2A-Version: 1.0\u0000\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("ctl-in-version", `GET /health HTTP/1.1\r\nHost: ${host}\r\nA2A-Version: \u00011.0\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("del-in-version", `GET /health HTTP/1.1\r\nHost: ${host}\r\nA2A-Version: 1.0\u007f\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("latin1-in-version", `GET /health HTTP/1.1\r\nHost: ${host}\r\nA2A-Version: 1.0\u00e9\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("dup-cl-same", post(`Content-Length: ${rpcBody.length}\r\nContent-Length: ${rpcBody.length}\r\n`)),
      r("dup-cl-diff", post(`Content-Length: ${rpcBody.length}\r\nContent-Length: ${rpcBody.length + 1}\r\n`)),
      r("cl-list", post(`Content-Length: ${rpcBody.length}, ${rpcBody.length}\r\n`)),
      r("cl-negative", post("Content-Length: -1\r\n")),
      r("cl-nonnumeric", post("Content-Length: abc\r\n")),
      r("cl-plus", post(`Content-Length: +${rpcBody.length}\r\n`)),
      r("cl-huge", post("Content-Length: 99999999999999999999999\r\n")),
      r("cl-over-limit", post(`Content-Length: ${LIMIT + 1}\r\n`, "{}")),
      r("cl-and-te", post(`Content-Length: 4\r\nTransfer-Encoding: chunked\r\n`, `${rpcBody.length.toString(16)}\r\n${rpcBody}\r\n0\r\n\r\n`)),
      r("te-bad-chunk-size", post("Transfer-Encoding: chunked\r\n", `zz\r\n${rpcBody}\r\n0\r\n\r\n`)),
      r("te-chunk-ext", post("Transfer-Encoding: chunked\r\n", `${rpcBody.length.toString(16)};ext=1\r\n${rpcBody}\r\n0\r\n\r\n`)),
      r("te-trailer", post("Transfer-Encoding: chunked\r\n", `${rpcBody.length.toString(16)}\r\n${rpcBody}\r\n0\r\nX-Trailer: 1\r\n\r\n`)),
      r("te-gzip-chunked", post("Transfer-Encoding: gzip, chunked\r\n", `${rpcBody.length.toString(16)}\r\n${rpcBody}\r\n0\r\n\r\n`)),
      r("te-unknown", post("Transfer-Encoding: gzip\r\n")),
      r("te-dup", post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", `${rpcBody.length.toString(16)}\r\n${rpcBody}\r\n0\r\n\r\n`)),
      r("te-space", post("Transfer-Encoding : chunked\r\n", `${rpcBody.length.toString(16)}\r\n${rpcBody}\r\n0\r\n\r\n`)),
      r("chunk-over-limit", post("Transfer-Encoding: chunked\r\n", `${(LIMIT + 10).toString(16)}\r\n${"x".repeat(LIMIT + 10)}\r\n0\r\n\r\n`)),
      r("pipelined", `GET /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n\r\nGET /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`),
      r("body-on-get", `GET /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`),
      r("expect-100", post(`Content-Length: ${rpcBody.length}\r\nExpect: 100-continue\r\n`)),
      r("expect-unknown", post(`Content-Length: ${rpcBody.length}\r\nExpect: 418-teapot\r\n`)),
      r("upgrade-websocket", `GET / HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`),
      r("upgrade-h2c", `GET /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings, close\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`),
      r("h2-preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
      r("tls-hello", Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03])),
      r("garbage", Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0d, 0x0a, 0x0d, 0x0a])),
      // Empty lines before a request line are skipped (RFC 9112 §2.2): the server waits for the request, no answer owed.
      r("empty-line-only", "\r\n\r\n", true),
      r("body-short", post(`Content-Length: ${rpcBody.length + 50}\r\n`), true),
    ),
    fc.integer({ min: 17_000, max: 70_000 }).map((n) => r("huge-header", `GET /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nX-Big: ${"a".repeat(n)}\r\nConnection: close\r\n\r\n`)),
    fc.integer({ min: 8000, max: 15_000 }).map((n) => r("big-header-under-limit", `GET /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nX-Big: ${"a".repeat(n)}\r\nConnection: close\r\n\r\n`)),
    fc.integer({ min: 100, max: 3000 }).map((n) => r("many-headers", `GET /health HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\n${Array.from({ length: n }, (_, i) => `X-H${i}: v`).join("\r\n")}\r\nConnection: close\r\n\r\n`)),
    fc.integer({ min: 9000, max: 70_000 }).map((n) => r("long-target", `GET /v1/tasks/${"a".repeat(n)} HTTP/1.1\r\nHost: ${host}\r\n${auth}\r\nConnection: close\r\n\r\n`)),
    fc.string({ unit: "binary-ascii", maxLength: 40 }).map((v) => r("random-version-bytes", `GET /health HTTP/1.1\r\nHost: ${host}\r\nA2A-Version: ${v}\r\n${auth}\r\nConnection: close\r\n\r\n`)),
    fc.string({ unit: "binary-ascii", maxLength: 40 }).map((v) => r("random-auth-bytes", `POST / HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${v}\r\nContent-Type: application/json\r\nContent-Length: ${rpcBody.length}\r\nConnection: close\r\n\r\n${rpcBody}`)),
    // Bytes that are only CR and LF are empty lines, which a server ignores before a request line (RFC 9112 §2.2):
    // no request has started, so waiting for one is right (CI seed 1270622088 sent "\n" + CRLF CRLF).
    fc.uint8Array({ minLength: 1, maxLength: 200 }).map((a) =>
      r("random-bytes", Buffer.concat([Buffer.from(a), Buffer.from("\r\n\r\n")]), a.every((b) => b === 0x0d || b === 0x0a)),
    ),
  );

  // 13. Real task operations on tasks the run created (get/cancel/subscribe/list, streaming sends) in every mode.
  const taskOps = fc
    .record({
      mode: fc.constantFrom(...MODES),
      op: fc.constantFrom("get", "get", "cancel", "subscribe", "list", "stream", "send"),
      history: fc.option(fc.constantFrom<Json>(0, 1, 5, -1, "2", 1.5, 1e9)),
      verb: fc.constantFrom("GET", "POST"),
      uuid: fc.uuid(),
    })
    .map(({ mode, op, history, verb, uuid }): HttpRequest => {
      const v10: Record<string, string> = mode === "rpc10" || mode === "rest10" ? { "A2A-Version": "1.0" } : {};
      if (mode === "rpc03" || mode === "rpc10") {
        const names = RPC_NAMES[mode];
        const params: Record<string, Json> =
          op === "send" || op === "stream"
            ? sendParams(mode, uuid, "stream me", op === "send")
            : op === "list"
              ? { ...(history === null ? {} : { historyLength: history }), pageSize: 5 }
              : { id: T, ...(op === "get" && history !== null ? { historyLength: history } : {}) };
        return rpc(json(rpcEnvelope(names[op], params, 21)), v10, "task-ops");
      }
      const p = mode === "rest03" ? "/v1" : "";
      const h = { ...good, ...v10 };
      switch (op) {
        case "get":
          return { kind: "http", family: "task-ops", method: "GET", path: `${p}/tasks/${T}${history === null ? "" : `?historyLength=${encodeURIComponent(String(history))}`}`, headers: h };
        case "cancel":
          return { kind: "http", family: "task-ops", method: "POST", path: `${p}/tasks/${T}:cancel`, headers: h };
        case "subscribe":
          return { kind: "http", family: "task-ops", method: verb, path: `${p}/tasks/${T}:subscribe`, headers: h };
        case "list":
          return { kind: "http", family: "task-ops", method: "GET", path: `${p}/tasks?pageSize=3${history === null ? "" : `&historyLength=${encodeURIComponent(String(history))}`}`, headers: h };
        default:
          return {
            kind: "http",
            family: "task-ops",
            method: "POST",
            path: `${p}/message:${op === "stream" ? "stream" : "send"}`,
            headers: { ...h, ...jsonType },
            body: json(sendParams(mode, uuid, "stream me", true)),
          };
      }
    });

  // 14. Hostile ordinary headers: Host, Origin, Accept*, extensions, forwarded, conditional, Expect, Upgrade.
  const headersArb = fc
    .record({
      name: fc.constantFrom(
        "host",
        "origin",
        "accept",
        "accept-encoding",
        "a2a-extensions",
        "x-a2a-extensions",
        "x-forwarded-for",
        "x-forwarded-host",
        "forwarded",
        "if-none-match",
        "if-modified-since",
        "range",
        "expect",
        "te",
        "connection",
        "x-http-method-override",
        "content-encoding",
        "cookie",
        "referer",
        "user-agent",
      ),
      value: fc.oneof(
        fc.constantFrom(
          "evil.example",
          "127.0.0.1:1",
          "localhost",
          "[::1]",
          "",
          "*",
          "null",
          "https://evil.example",
          "gzip;q=0, identity;q=0",
          "br",
          "x-unknown",
          "text/html",
          "application/xml;q=1, */*;q=0",
          "W/\"*\"",
          "bytes=0-0",
          "Sat, 01 Jan 2000 00:00:00 GMT",
          "100-continue",
          "trailers",
          "keep-alive, Upgrade",
          "DELETE",
          "https://github.com/Intelligent-Internet/opencode-a2a/blob/main/docs/extension-specifications.md#shared-interactive-interrupt-v1, urn:x:unknown",
          "a".repeat(6000),
        ),
        hostileString.filter((s) => /^[\t\x20-\x7e\x80-\xff]*$/.test(s)),
      ),
      target: fc.oneof(fc.constant(undefined), fc.constantFrom(...restRoutes)),
      version: versionArb,
    })
    .map(({ name, value, target, version }): HttpRequest => {
      const headers: Record<string, string> = { ...good, ...withVersion(version), [name]: value };
      if (!target) return rpc(json(rpcEnvelope("tasks/list", {}, 4)), { ...withVersion(version), [name]: value }, "hostile-headers");
      const body = target.verb === "POST" ? json(restBodyFor(target, "00000000-0000-4000-8000-000000000002", version) ?? {}) : undefined;
      return { kind: "http", family: "hostile-headers", method: target.verb, path: fill(target, [T]), headers: { ...(body ? jsonType : {}), ...headers }, ...(body ? { body } : {}) };
    });

  // Public routes stay reachable without credentials under all of this.
  const publicArb = fc
    .tuple(fc.constantFrom(...publicRoutes), versionArb, fc.constantFrom("GET", "HEAD"), fc.constantFrom("v0_3", "v1_0", "common", "extensions", "..", "%2e%2e", "nope"), fc.constantFrom("Task", "AgentCard", "..%2f..%2fpackage", "x", "Task.json"))
    .map(([route, version, method, group, name]): HttpRequest => ({
      kind: "http",
      family: "public-routes",
      method,
      path: route.path.replace("{group}", group).replace("{name}", name),
      headers: withVersion(version),
    }));

  return fc.oneof(
    { weight: 18, arbitrary: rpcMutated },
    { weight: 7, arbitrary: rpcEnvelopeArb },
    { weight: 5, arbitrary: batchArb },
    { weight: 8, arbitrary: badJson },
    { weight: 5, arbitrary: deep },
    { weight: 5, arbitrary: huge },
    { weight: 16, arbitrary: restArb },
    { weight: 5, arbitrary: contentTypeArb },
    { weight: 7, arbitrary: directoryArb },
    { weight: 6, arbitrary: authArb },
    { weight: 5, arbitrary: versionFamily },
    { weight: 8, arbitrary: rawArb },
    { weight: 7, arbitrary: taskOps },
    { weight: 3, arbitrary: headersArb },
    { weight: 2, arbitrary: publicArb },
  );
}
