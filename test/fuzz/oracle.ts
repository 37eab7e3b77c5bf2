// The oracle of the hostile-request fuzz test: what a well-formed answer of the gateway looks like, derived from the
// generated catalog (errors per line with code, HTTP status, gRPC status and required headers; methods; routes) and
// the generated JSON Schemas of the error envelopes. It predicts, from the request alone, the protocol line and
// transport of the answer and, where the edge decides before any handler runs, the exact reason.
import { catalog, type ErrorEntry, type MethodEntry, type ProtocolLine, type RouteEntry } from "../../src/contract/catalog.js";
import { validate } from "../../src/contract/validate.js";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../src/pipeline/body.js";
import type { Exchange, FuzzRequest, HttpRequest } from "./wire.js";

/**
 * A call that may get no answer: a JSON-RPC request without an id to an extension method (DECISIONS 14). It gets
 * none when it is valid and runs; refused before it runs (bad params, scope, extension), it is answered with id null.
 * Every other call, id-less core calls included, is always answered.
 */
function isNotification(c: unknown): boolean {
  return (
    isObj(c) && !("id" in c) && c.jsonrpc === "2.0" && typeof c.method === "string" && c.method !== "" && methodsByName.get(c.method)?.surface === "extension"
  );
}

export const LINES = catalog.protocol_lines as ProtocolLine[];
const ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo";
const PASCAL = /^[A-Z][A-Za-z]+$/;
const JSON_TYPES = /^application\/(json|a2a\+json|[\w.-]+\+json)$/i;
const BODY_VERBS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

const entries = new Map<ProtocolLine, Map<string, ErrorEntry>>(LINES.map((l) => [l, new Map(catalog.errors[l].map((e) => [e.reason, e]))]));
export const entryOf = (line: ProtocolLine, reason: string): ErrorEntry | undefined => entries.get(line)?.get(reason);
const methodsByName = new Map(catalog.methods.map((m) => [m.name, m]));

/** Reasons the edge raises before JSON-RPC processing; only these may leave POST / with a status other than 200. */
const RPC_TRANSPORT_LEVEL = new Set(["UNAUTHENTICATED", "PAYLOAD_TOO_LARGE", "CONTENT_TYPE_NOT_SUPPORTED", "RATE_LIMITED", "HOST_NOT_ALLOWED", "ORIGIN_NOT_ALLOWED"]);
/** Raised before the JSON-RPC id is known: these answer `id: null` whatever the request carried. */
const BEFORE_ID = new Set([...RPC_TRANSPORT_LEVEL, "PARSE_ERROR", "VERSION_NOT_SUPPORTED"]);
/** Envelope-level errors any JSON-RPC call may get, besides the ones its method declares. */
const RPC_ENVELOPE = new Set([...BEFORE_ID, "INVALID_REQUEST", "METHOD_NOT_SUPPORTED", "INVALID_PARAMS", "SCOPE_INSUFFICIENT", "EXTENSION_SUPPORT_REQUIRED"]);
/** Edge errors any REST request may get, besides the ones its route declares. */
const REST_EDGE = new Set([...BEFORE_ID, "ROUTE_NOT_FOUND", "HTTP_METHOD_NOT_ALLOWED", "INVALID_PARAMS", "SCOPE_INSUFFICIENT", "EXTENSION_SUPPORT_REQUIRED"]);
/** Reasons that mean the gateway failed internally (never acceptable for client input). */
const INTERNAL = new Set(["INTERNAL_ERROR", "INVALID_AGENT_RESPONSE"]);

export interface OracleOptions {
  defaultLine: ProtocolLine;
  limit: number;
  token: string;
  /** Upstream-failure reasons are only acceptable when the upstream is unhealthy (never in this run). */
  healthyUpstream: boolean;
}

export interface Verdict {
  problems: string[];
  /** Soft findings: contract deviations reported in the summary, not failures. */
  deviations: string[];
  /** Top-level reasons of error answers (one per batch item for batches). */
  reasons: string[];
  answeredBy: "gateway" | "node" | "nobody";
  taskIds: string[];
  /** Wire shape, for the summary: rpc | rpc-batch | rpc-sse | rest | rest-sse | node | none. */
  shape: string;
}

const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === "object" && !Array.isArray(v);
const isId = (v: unknown) => v === null || typeof v === "string" || (typeof v === "number" && Number.isSafeInteger(v));

interface Negotiated {
  line: ProtocolLine;
  explicit: boolean;
  valid: boolean;
}

function header(req: HttpRequest, name: string): string | undefined {
  const hit = Object.entries(req.headers).find(([k]) => k.toLowerCase() === name);
  return hit?.[1];
}

function splitTarget(target: string): { pathname: string; query: string } {
  const q = target.indexOf("?");
  return q < 0 ? { pathname: target, query: "" } : { pathname: target.slice(0, q), query: target.slice(q + 1) };
}

function routeRegex(path: string): RegExp {
  return new RegExp(`^${path.split(/\{\w+\}/).map((s) => s.replace(/[.*+?^$()|[\]\\]/g, "\\$&")).join("[^/]+")}$`);
}
const ROUTES = catalog.routes.map((r) => ({ route: r, re: routeRegex(r.path) }));
const routeFor = (verb: string, pathname: string): RouteEntry | undefined =>
  ROUTES.find((r) => r.route.verb === verb && r.re.test(pathname) && !(r.route.path.endsWith("}") && /:[^/]*$/.test(pathname)))?.route;
const isPublic = (verb: string, pathname: string) => (verb === "GET" || verb === "HEAD") && ROUTES.some((r) => r.route.public && r.re.test(pathname));

export function createOracle(o: OracleOptions) {
  function negotiate(req: HttpRequest): Negotiated {
    const { pathname, query } = splitTarget(req.path);
    const pinned: ProtocolLine | undefined = pathname.startsWith("/v1/") ? "0.3" : undefined;
    const fromHeader = header(req, "a2a-version")?.trim();
    const fromQuery = new URLSearchParams(query).getAll("A2A-Version")[0]?.trim();
    const requested = fromHeader || fromQuery;
    if (!requested) return { line: pinned ?? o.defaultLine, explicit: false, valid: true };
    if ((LINES as string[]).includes(requested)) return { line: pinned ?? (requested as ProtocolLine), explicit: true, valid: true };
    return { line: pinned ?? o.defaultLine, explicit: false, valid: false };
  }

  /** The line a single JSON-RPC call answers on (mirrors the dual-stack rule of the contract). */
  function rpcLine(n: Negotiated, call: unknown): ProtocolLine {
    if (!n.valid || !isObj(call)) return n.line;
    if ("id" in call && !isId(call.id)) return n.line;
    if (call.jsonrpc !== "2.0" || typeof call.method !== "string" || call.method === "") return n.line;
    if (n.explicit) return n.line;
    const m = methodsByName.get(call.method);
    if (m && m.surface === "core") return m.line ?? n.line;
    if (!m && PASCAL.test(call.method)) return "1.0";
    return n.line;
  }

  /** The reason the edge must answer with, when it decides before any handler runs. */
  function edgeReason(req: HttpRequest, n: Negotiated): string | undefined {
    if (!n.valid) return "VERSION_NOT_SUPPORTED";
    const names = Object.keys(req.headers).map((k) => k.toLowerCase());
    // Host / Origin policies and alternative credential schemes may sit in front of these checks.
    if (names.some((k) => ["host", "origin", "x-api-key", "cookie", "proxy-authorization"].includes(k))) return undefined;
    const { pathname } = splitTarget(req.path);
    if (!isPublic(req.method, pathname)) {
      const auth = header(req, "authorization");
      const m = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
      if (!m || m[1] !== o.token) return auth && /^basic /i.test(auth) ? undefined : "UNAUTHENTICATED";
    }
    if (!BODY_VERBS.has(req.method) || req.body === undefined) return undefined;
    if (req.body.length > o.limit) return "PAYLOAD_TOO_LARGE"; // declared (Content-Length) or counted (chunked)
    if (req.body.length === 0) return undefined;
    const type = (header(req, "content-type") ?? "").split(";")[0]!.trim();
    if (!JSON_TYPES.test(type)) return "CONTENT_TYPE_NOT_SUPPORTED";
    if (nestsDeeperThan(req.body, MAX_JSON_DEPTH)) return "PARSE_ERROR";
    return undefined;
  }

  function expectedHttp(entry: ErrorEntry): number[] {
    if (entry.reason === "CONTENT_TYPE_NOT_SUPPORTED") return [415, entry.http];
    if (entry.reason === "UPSTREAM_HTTP_ERROR") return [entry.http, 409];
    return [entry.http];
  }

  function reasonProblems(line: ProtocolLine, reason: string, where: string, v: Verdict, detail = ""): ErrorEntry | undefined {
    const entry = entryOf(line, reason);
    if (!entry) {
      v.problems.push(`${where}: reason ${JSON.stringify(reason)} is not in the ${line} error catalog`);
      return undefined;
    }
    if (INTERNAL.has(reason)) v.problems.push(`${where}: internal failure ${reason} answered to client input`);
    if (o.healthyUpstream && reason.startsWith("UPSTREAM_")) {
      // The stub serves the subset of OpenCode's API the task runtime uses; extension methods over other routes
      // (providers, worktrees, workspaces ...) get its 404, correctly typed as UPSTREAM_HTTP_ERROR. Anything else is not.
      if (reason === "UPSTREAM_HTTP_ERROR" && /Route not found/.test(detail)) v.deviations.push(`stub lacks the OpenCode route: ${detail.replace(/^HTTP 404: Route not found: /, "")}`);
      else v.problems.push(`${where}: ${reason} although the upstream stub is healthy (${detail.slice(0, 120)})`);
    }
    return entry;
  }

  /** A JSON-RPC `error` member of `line`; returns its reason. */
  async function rpcErrorObject(err: unknown, line: ProtocolLine, where: string, v: Verdict): Promise<string | undefined> {
    if (!isObj(err)) {
      v.problems.push(`${where}: error is not an object`);
      return undefined;
    }
    if (!Number.isInteger(err.code)) v.problems.push(`${where}: error.code is not an integer`);
    if (typeof err.message !== "string") v.problems.push(`${where}: error.message is not a string`);
    const extra = Object.keys(err).filter((k) => !["code", "message", "data"].includes(k));
    if (extra.length) v.problems.push(`${where}: error has members ${extra.join(",")}`);
    let reason: string | undefined;
    if (line === "0.3") {
      if (!isObj(err.data) || typeof err.data.type !== "string") v.problems.push(`${where}: 0.3 error.data.type missing`);
      else reason = err.data.type;
    } else {
      if (!Array.isArray(err.data)) v.problems.push(`${where}: 1.0 error.data is not an array of details`);
      else {
        const infos = err.data.filter((d: any) => isObj(d) && d["@type"] === ERROR_INFO);
        if (infos.length !== 1) v.problems.push(`${where}: 1.0 error.data carries ${infos.length} ErrorInfo`);
        else {
          reason = infos[0].reason;
          const verdict = await validate("v1_0/ErrorInfo", infos[0]);
          if (!verdict.ok) v.problems.push(`${where}: ErrorInfo invalid: ${JSON.stringify(verdict.violations).slice(0, 200)}`);
          const entry = typeof reason === "string" ? entryOf(line, reason) : undefined;
          const domain = entry?.origin === "project" ? "opencode-a2a" : "a2a-protocol.org";
          if (entry && infos[0].domain !== domain) v.problems.push(`${where}: ErrorInfo.domain ${infos[0].domain}, expected ${domain}`);
        }
      }
    }
    if (typeof reason !== "string") return undefined;
    const entry = reasonProblems(line, reason, where, v, detailOf(line === "0.3" ? err.data : err.data));
    if (entry && err.code !== entry.code) v.problems.push(`${where}: code ${err.code} for ${reason}, catalog says ${entry.code}`);
    return reason;
  }

  async function rpcResponse(
    resp: unknown,
    line: ProtocolLine,
    expectId: { id: unknown; known: boolean },
    where: string,
    v: Verdict,
    status: number,
  ): Promise<string | undefined> {
    if (!isObj(resp)) {
      v.problems.push(`${where}: response is not an object`);
      return undefined;
    }
    if (resp.jsonrpc !== "2.0") v.problems.push(`${where}: jsonrpc member is ${JSON.stringify(resp.jsonrpc)}`);
    if (!("id" in resp)) v.problems.push(`${where}: response has no id`);
    const extra = Object.keys(resp).filter((k) => !["jsonrpc", "id", "result", "error"].includes(k));
    if (extra.length) v.problems.push(`${where}: response has members ${extra.join(",")}`);
    if (("result" in resp) === ("error" in resp)) v.problems.push(`${where}: response needs exactly one of result/error`);
    if ("result" in resp) {
      if (expectId.known && resp.id !== expectId.id) v.problems.push(`${where}: result id ${JSON.stringify(resp.id)} != request id ${JSON.stringify(expectId.id)}`);
      collectTaskIds(resp.result, v.taskIds);
      return undefined;
    }
    const reason = await rpcErrorObject(resp.error, line, where, v);
    for (const schema of [line === "0.3" ? "v0_3/JSONRPCErrorResponse" : "v1_0/JsonRpcErrorResponse", "common/JsonRpcErrorResponse"]) {
      const verdict = await validate(schema, resp);
      if (!verdict.ok) v.problems.push(`${where}: not a ${schema}: ${JSON.stringify(verdict.violations).slice(0, 200)}`);
    }
    const beforeId = reason !== undefined && BEFORE_ID.has(reason);
    if (status !== 200 && resp.id !== null) v.problems.push(`${where}: transport-level error with id ${JSON.stringify(resp.id)}`);
    else if (status === 200 && !beforeId && expectId.known && resp.id !== expectId.id)
      v.problems.push(`${where}: error id ${JSON.stringify(resp.id)} != request id ${JSON.stringify(expectId.id)} (${reason})`);
    else if (beforeId && resp.id !== null) v.problems.push(`${where}: ${reason} answered with id ${JSON.stringify(resp.id)}`);
    if (reason) v.reasons.push(reason);
    return reason;
  }

  async function restErrorBody(body: unknown, line: ProtocolLine, status: number | undefined, headers: Record<string, string> | undefined, where: string, v: Verdict): Promise<string | undefined> {
    if (!isObj(body)) {
      v.problems.push(`${where}: REST error body is not a JSON object`);
      return undefined;
    }
    let reason: string | undefined;
    if (line === "0.3") {
      if (!Number.isInteger(body.code)) v.problems.push(`${where}: 0.3 REST error.code missing`);
      if (typeof body.message !== "string") v.problems.push(`${where}: 0.3 REST error.message missing`);
      if ("error" in body) v.problems.push(`${where}: 0.3 REST error carries a 1.0 'error' member`);
      if (!isObj(body.data) || typeof body.data.type !== "string") v.problems.push(`${where}: 0.3 REST error.data.type missing`);
      else reason = body.data.type;
    } else {
      const e = body.error;
      if (!isObj(e)) v.problems.push(`${where}: 1.0 REST error has no 'error' object`);
      else {
        if (status !== undefined && e.code !== status) v.problems.push(`${where}: error.code ${e.code} != HTTP ${status}`);
        if (typeof e.message !== "string") v.problems.push(`${where}: error.message missing`);
        const infos = Array.isArray(e.details) ? e.details.filter((d: any) => isObj(d) && d["@type"] === ERROR_INFO) : [];
        if (infos.length !== 1) v.problems.push(`${where}: 1.0 REST error carries ${infos.length} ErrorInfo`);
        else reason = infos[0].reason;
        const entry = typeof reason === "string" ? entryOf(line, reason) : undefined;
        if (entry && e.status !== entry.grpc) v.problems.push(`${where}: error.status ${e.status}, catalog says ${entry.grpc} for ${reason}`);
      }
    }
    const verdict = await validate(line === "0.3" ? "v0_3_rest/RestError" : "v1_0/RestError", body);
    if (!verdict.ok) v.problems.push(`${where}: not a ${line} RestError: ${JSON.stringify(verdict.violations).slice(0, 200)}`);
    if (typeof reason !== "string") return undefined;
    const entry = reasonProblems(line, reason, where, v, detailOf(line === "0.3" ? body.data : body.error?.details));
    if (entry && line === "0.3" && body.code !== entry.code) v.problems.push(`${where}: code ${body.code} for ${reason}, catalog says ${entry.code}`);
    if (entry && status !== undefined && !expectedHttp(entry).includes(status)) v.problems.push(`${where}: HTTP ${status} for ${reason}, catalog says ${entry.http}`);
    if (entry && headers) {
      for (const h of entry.headers) if (headers[h.toLowerCase()] === undefined) v.problems.push(`${where}: ${reason} without ${h} header`);
      if (reason === "HTTP_METHOD_NOT_ALLOWED" && headers.allow === undefined) v.problems.push(`${where}: 405 without Allow header`);
    }
    v.reasons.push(reason);
    return reason;
  }

  function parseJson(body: Buffer): { ok: true; value: unknown } | { ok: false } {
    try {
      return { ok: true, value: JSON.parse(body.toString("utf8")) };
    } catch {
      return { ok: false };
    }
  }

  /** Request line of a raw request: method and target (for transport detection of gateway answers). */
  function rawRequestLine(bytes: Buffer): { method: string; target: string } {
    const line = bytes.subarray(0, Math.max(0, bytes.indexOf("\r\n"))).toString("latin1");
    const [method = "", target = ""] = line.split(" ");
    return { method, target };
  }

  async function judge(req: FuzzRequest, x: Exchange): Promise<Verdict> {
    const v: Verdict = { problems: [], deviations: [], reasons: [], answeredBy: "gateway", taskIds: [], shape: "none" };
    const rawish = req.kind === "raw" || x.fellBackToRaw === true;
    if (x.status === 0) {
      v.answeredBy = "nobody";
      if (req.kind === "raw" && req.incomplete && (x.failure === "incomplete" || x.failure === "closed without an answer")) return v;
      v.problems.push(`no answer: ${x.failure ?? "?"}`);
      return v;
    }
    if (x.status >= 500) v.problems.push(`HTTP ${x.status}`);
    const lineHeader = x.headers["a2a-version"];
    if (lineHeader === undefined) {
      // Answered by Node's HTTP server itself: its parser (malformed request line or header, oversized head, unknown
      // verb → bare 400/431, connection closed) or its Expect handling (417 for anything but 100-continue). Those carry
      // no body; anything else without the header is not Node's.
      v.answeredBy = "node";
      v.shape = "node";
      if (![400, 414, 417, 431].includes(x.status) || x.body.length > 0) v.problems.push(`answer without A2A-Version header (HTTP ${x.status}, ${x.body.length} bytes)`);
      return v;
    }
    if (!(LINES as string[]).includes(lineHeader)) v.problems.push(`A2A-Version header ${JSON.stringify(lineHeader)} is not a line`);
    const headerLine = ((LINES as string[]).includes(lineHeader) ? lineHeader : o.defaultLine) as ProtocolLine;
    if (x.failure) v.problems.push(x.failure);

    const http = req.kind === "http" ? req : undefined;
    const { method, target } = http ? { method: http.method, target: http.path } : rawRequestLine((req as { bytes: Buffer }).bytes);
    const { pathname } = splitTarget(target);
    const jsonrpc = method === "POST" && pathname === "/";
    const n = http ? negotiate(http) : undefined;
    const edge = http ? edgeReason(http, n!) : undefined;
    const ctype = x.headers["content-type"] ?? "";

    if (jsonrpc) {
      const parsed = http?.body ? parseJson(http.body) : { ok: false as const };
      const request = parsed.ok ? parsed.value : undefined;
      if (x.frames) {
        v.shape = "rpc-sse";
        if (x.status !== 200) v.problems.push(`event stream with HTTP ${x.status}`);
        if (x.frames.length === 0) v.problems.push("event stream ended without any event");
        // An id-less core call is answered (DECISIONS 14): its stream's frames carry `id: null`.
        const id = isObj(request) ? (request.id === undefined ? null : request.id) : undefined;
        for (const [i, f] of x.frames.entries()) await rpcResponse(f, headerLine, { id, known: isObj(request) }, `sse[${i}]`, v, 200);
        if (x.sseCut) v.deviations.push("rpc stream still open after the SSE budget");
        if (edge) v.problems.push(`expected ${edge}, got an event stream`);
        return v;
      }
      if (x.status === 204) {
        v.shape = "rpc";
        if (x.body.length) v.problems.push("204 with a body");
        const calls = Array.isArray(request) ? request : [request];
        // Only valid requests without an id are notifications; an invalid one is owed an Invalid Request (JSON-RPC 2.0 §5).
        if (!parsed.ok || calls.length === 0 || !calls.every(isNotification)) v.problems.push("204 although the request had calls that need an answer");
        if (edge) v.problems.push(`expected ${edge}, got 204`);
        return v;
      }
      if (!/application\/json/.test(ctype)) v.problems.push(`JSON-RPC answer with content-type ${JSON.stringify(ctype)}`);
      const got = parseJson(x.body);
      if (!got.ok) {
        v.problems.push(`JSON-RPC answer is not JSON: ${x.body.toString("utf8").slice(0, 120)}`);
        return v;
      }
      if (Array.isArray(got.value)) {
        v.shape = "rpc-batch";
        if (x.status !== 200) v.problems.push(`batch answered with HTTP ${x.status}`);
        if (!Array.isArray(request) || request.length === 0) {
          v.problems.push("array answer to a request that is not a non-empty batch");
          return v;
        }
        const owed = request.filter((c) => !isNotification(c)).length;
        if (got.value.length < owed || got.value.length > request.length)
          v.problems.push(`batch of ${request.length} (${owed} owed an answer) got ${got.value.length} answers`);
        if (http && lineHeader !== n!.line) v.problems.push(`batch A2A-Version ${lineHeader}, expected ${n!.line}`);
        // Answers come in request order; an extension notification is answered (with an error, id null) only when
        // it was refused before it ran. Align answers to calls: every owed call gets the next answer, carrying its id
        // (null without a readable one) and an error shaped for its line; a notification may take one such error.
        const calls = request;
        const answers = got.value as unknown[];
        const expectedId = (c: unknown): unknown => (isObj(c) && isId(c.id) ? c.id : null);
        const fits = (a: unknown, c: unknown, optional: boolean): boolean => {
          if (!isObj(a) || a.id !== expectedId(c)) return false;
          if (!("error" in a)) return !optional;
          const data = isObj(a.error) ? a.error.data : undefined;
          return data === undefined || Array.isArray(data) === (rpcLine(n!, c) === "1.0");
        };
        const memo = new Map<number, boolean>();
        const alignable = (i: number, j: number): boolean => {
          if (i === calls.length) return j === answers.length;
          const key = i * (answers.length + 1) + j;
          let hit = memo.get(key);
          if (hit !== undefined) return hit;
          const optional = isNotification(calls[i]);
          hit = (j < answers.length && fits(answers[j], calls[i], optional) && alignable(i + 1, j + 1)) || (optional && alignable(i + 1, j));
          memo.set(key, hit);
          return hit;
        };
        if (!alignable(0, 0)) v.problems.push(`batch of ${request.length}: the ${answers.length} answers do not line up with the calls (ids, order, line)`);
        else
          for (let i = 0, j = 0; i < calls.length; i++) {
            const optional = isNotification(calls[i]);
            if (j < answers.length && fits(answers[j], calls[i], optional) && alignable(i + 1, j + 1)) {
              await rpcResponse(answers[j], rpcLine(n!, calls[i]), { id: expectedId(calls[i]), known: true }, `batch[${j}]`, v, 200);
              j++;
            }
          }
        if (edge) v.problems.push(`expected ${edge}, got a batch answer`);
        return v;
      }
      v.shape = "rpc";
      // Line: transport-level and parse errors speak the negotiated line; everything else the call's line.
      const provisional = isObj(got.value) && "error" in got.value ? got.value : undefined;
      const peek = provisional ? (Array.isArray(provisional.error?.data) ? provisional.error.data.find((d: any) => d?.["@type"] === ERROR_INFO)?.reason : provisional.error?.data?.type) : undefined;
      const early = x.status !== 200 || peek === "PARSE_ERROR" || peek === "VERSION_NOT_SUPPORTED" || !parsed.ok;
      const line: ProtocolLine = http ? (early ? n!.line : rpcLine(n!, request)) : headerLine;
      if (http && lineHeader !== line) v.problems.push(`A2A-Version ${lineHeader}, expected ${line}`);
      const idOk = isObj(request) && "id" in request && isId(request.id);
      const reason = await rpcResponse(got.value, line, { id: idOk ? (request as any).id : null, known: http !== undefined && parsed.ok }, "rpc", v, x.status);
      if (x.status !== 200) {
        if (!reason || !RPC_TRANSPORT_LEVEL.has(reason)) v.problems.push(`JSON-RPC answer with HTTP ${x.status} for ${reason}`);
        else {
          const entry = entryOf(line, reason);
          if (entry && !expectedHttp(entry).includes(x.status)) v.problems.push(`JSON-RPC ${reason} with HTTP ${x.status}, catalog says ${entry.http}`);
          if (entry) for (const h of entry.headers) if (x.headers[h.toLowerCase()] === undefined) v.problems.push(`${reason} without ${h} header`);
        }
      } else if (reason && RPC_TRANSPORT_LEVEL.has(reason)) v.problems.push(`${reason} on JSON-RPC with HTTP 200`);
      if (edge && reason !== edge) v.problems.push(`expected ${edge}, got ${reason ?? "a result"}`);
      if (reason && http && isObj(request) && typeof request.method === "string") {
        const m: MethodEntry | undefined = methodsByName.get(request.method);
        if (m && !RPC_ENVELOPE.has(reason) && !m.errors.includes(reason)) v.deviations.push(`undeclared error ${reason} from ${m.name}`);
      }
      return v;
    }

    // REST and every other route.
    const line: ProtocolLine = http ? n!.line : headerLine;
    if (http && lineHeader !== line) v.problems.push(`A2A-Version ${lineHeader}, expected ${line}`);
    if (x.frames) {
      v.shape = "rest-sse";
      if (x.status !== 200) v.problems.push(`event stream with HTTP ${x.status}`);
      // HEAD (Koa serves it for every GET route, `:subscribe` included) answers the stream's head without events.
      if (x.frames.length === 0 && !rawish && method !== "HEAD") v.problems.push("event stream ended without any event");
      for (const [i, f] of x.frames.entries()) {
        if (isObj(f) && ("error" in f || (isObj(f.data) && typeof f.data.type === "string" && "code" in f))) await restErrorBody(f, line, undefined, undefined, `sse[${i}]`, v);
        else if (i === 0) collectTaskIds(f, v.taskIds);
      }
      if (x.sseCut && !rawish) v.deviations.push("rest stream still open after the SSE budget");
      if (edge) v.problems.push(`expected ${edge}, got an event stream`);
      return v;
    }
    v.shape = "rest";
    if (x.status < 400) {
      if (edge) v.problems.push(`expected ${edge}, got HTTP ${x.status}`);
      if (method !== "HEAD" && x.status !== 204 && x.status !== 304 && /json/.test(ctype) && !parseJson(x.body).ok) v.problems.push(`HTTP ${x.status} JSON body does not parse`);
      if (x.status < 300 && /json/.test(ctype)) {
        const got = parseJson(x.body);
        if (got.ok) collectTaskIds(got.value, v.taskIds);
      }
      return v;
    }
    if (method === "HEAD") {
      if (edge) {
        const entry = entryOf(line, edge);
        if (entry && !expectedHttp(entry).includes(x.status)) v.problems.push(`HEAD: expected ${edge} (HTTP ${entry.http}), got ${x.status}`);
      }
      return v;
    }
    if (!/application\/json/.test(ctype)) v.problems.push(`error with content-type ${JSON.stringify(ctype)}`);
    const got = parseJson(x.body);
    if (!got.ok) {
      v.problems.push(`HTTP ${x.status} error body is not JSON: ${x.body.toString("utf8").slice(0, 120)}`);
      return v;
    }
    const reason = await restErrorBody(got.value, line, x.status, x.headers, "rest", v);
    if (edge && reason !== edge) v.problems.push(`expected ${edge}, got ${reason}`);
    if (reason && http) {
      const route = routeFor(method, pathname);
      if (route && route.kind === "a2a" && !REST_EDGE.has(reason) && !route.errors.includes(reason)) v.deviations.push(`undeclared error ${reason} from ${route.verb} ${route.path}`);
    }
    return v;
  }

  return { judge, negotiate };
}

/** The free-text detail of an error's data (0.3 `data.detail`, 1.0 ErrorInfo `metadata.detail`). */
function detailOf(data: unknown): string {
  if (isObj(data)) return typeof data.detail === "string" ? data.detail : "";
  if (Array.isArray(data)) for (const d of data) if (isObj(d) && isObj(d.metadata) && typeof d.metadata.detail === "string") return d.metadata.detail;
  return "";
}

/** Task ids found in a successful answer (0.3 task, 1.0 {task}, REST bodies, stream events). */
export function collectTaskIds(value: unknown, out: string[]): void {
  if (!isObj(value)) return;
  const task = isObj(value.task) ? value.task : value.kind === "task" || (typeof value.id === "string" && isObj(value.status)) ? value : undefined;
  if (task && typeof task.id === "string") out.push(task.id);
  if (Array.isArray(value.tasks)) for (const t of value.tasks) if (isObj(t) && typeof t.id === "string") out.push(t.id);
  if (isObj(value.result)) collectTaskIds(value.result, out);
}
