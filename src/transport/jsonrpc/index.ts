// JSON-RPC 2.0 on `POST /`: envelope checks, batches, notifications (204), method lookup per protocol line,
// params validation with the generated validators, scope check, dispatch. No business logic here.
//
// The endpoint answers through an RpcExchange: the JSON-RPC edge (src/server/jsonrpc-edge.ts) implements it on the
// raw node:http response, koaExchange on a Koa context (the app served on its own).
import type { Context } from "koa";
import type { Logger } from "pino";
import type { Catalog, MethodEntry, ProtocolLine } from "../../contract/catalog.js";
import { A2AError, invalidParams, invalidPayload, isExpectedError, toA2AError } from "../../contract/errors.js";
import { validate } from "../../contract/validate.js";
import { EncodedJson, plainResult } from "../../protocol/encoded.js";
import { jsonRpcError } from "../../protocol/errors.js";
import { normalizeProtoJson } from "../../protocol/protojson-names.js";
import { hasScope, type Principal } from "../../auth/index.js";
import type { AccessLimits } from "../../auth/limits.js";
import { allJsonRpcMethods, methodAvailability, type DeploymentFacts } from "../../discovery/facts.js";
import type { MethodHandler } from "../../operations/index.js";
import type { AuditCall, RequestState } from "../../pipeline/state.js";
import { invoke, json } from "../http.js";
import { EventStream } from "../../operations/stream.js";
import type { PayloadLog } from "../../logging/payloads.js";
import { DISCOVERY_OPERATIONS, type ExtensionPolicy } from "../../protocol/extensions.js";
import { sendEventStream, type SseFraming, type StreamBudget } from "../sse.js";

type Id = string | number | null;
type Response = { jsonrpc: "2.0"; id: Id; result: unknown } | { jsonrpc: "2.0"; id: Id; error: unknown };
/** A streaming call: the SSE body is written by the endpoint with the request's id in every event. */
type Streaming = { stream: EventStream; id: Id; line: ProtocolLine };

export interface JsonRpcDeps {
  catalog: Catalog;
  facts: DeploymentFacts;
  registry: ReadonlyMap<string, MethodHandler>;
  log: Logger;
  /** Per-credential rate limit (one unit per call, a batch counts every call) and stream slots. */
  limits: AccessLimits;
  /** Budgets of every SSE response. */
  streamBudget: StreamBudget;
  /** A2A_LOG_PAYLOADS at debug: every call's params and answer (absent = off; see src/logging/payloads.ts). */
  payloads?: PayloadLog | undefined;
  /** Required extensions (A2A_REQUIRED_EXTENSIONS); the request's activation is in its state. */
  extensions: ExtensionPolicy;
}

const PASCAL = /^[A-Z][A-Za-z]+$/;

function isId(v: unknown): v is Id {
  return v === null || typeof v === "string" || (typeof v === "number" && Number.isSafeInteger(v));
}

/** Where the endpoint answers: the request's state (line, principal, raw body, audit calls) and the reply. */
export interface RpcExchange {
  readonly state: RequestState;
  setHeaders(headers: Record<string, string>): void;
  /** HTTP 200 with a JSON body. */
  json(value: unknown): void;
  /** HTTP 200 with a body already in JSON. */
  jsonText(text: string): void;
  /** HTTP 204, no body. */
  noContent(): void;
  /** HTTP 200, Server-Sent Events. */
  stream(stream: EventStream, framing: SseFraming, budget: StreamBudget): void;
}

/** The exchange of a Koa request (the endpoint mounted in the Koa app). */
export function koaExchange(ctx: Context): RpcExchange {
  return {
    state: ctx.state as RequestState,
    setHeaders: (headers) => ctx.set(headers),
    json: (value) => json(ctx, value),
    jsonText: (text) => {
      ctx.type = "application/json";
      ctx.body = text;
    },
    noContent: () => void (ctx.status = 204),
    stream: (stream, framing, budget) => {
      ctx.status = 200;
      ctx.respond = false;
      sendEventStream(ctx.req, ctx.res, stream, framing, budget);
    },
  };
}

/**
 * A response's JSON text. An answer encoded before (GetTask of an unchanged task, a listing's page) has its text
 * spliced into the envelope: neither parsed nor stringified again, in a batch as alone.
 */
function responseText(response: Response): string {
  if ("result" in response && response.result instanceof EncodedJson) {
    return `{"jsonrpc":"2.0","id":${JSON.stringify(response.id)},"result":${response.result.text}}`;
  }
  return JSON.stringify(response);
}

/** A call's answer as the payload log takes it: an encoded result as its value. */
function logged<T>(answer: T): T {
  if (answer === null || typeof answer !== "object" || !("result" in answer) || !(answer.result instanceof EncodedJson)) return answer;
  return { ...answer, result: answer.result.value };
}

function invalidRequest(detail: string, field?: string): A2AError {
  return new A2AError("INVALID_REQUEST", `Invalid JSON-RPC Request: ${detail}`, field ? { field } : {});
}

export function createJsonRpcEndpoint(deps: JsonRpcDeps) {
  const byName = new Map(deps.catalog.methods.map((m) => [m.name, m]));

  /** The line a call runs on: explicit header wins; without one a PascalCase core method means 1.0 (dual stack). */
  function lineFor(method: MethodEntry | undefined, state: RequestState): ProtocolLine {
    if (state.explicitVersion || !method || method.surface !== "core") return state.line;
    return method.line ?? state.line;
  }

  // The deployment's callable methods per line never change while it runs: computed once, used in -32601 errors.
  const supportedByLine = new Map<ProtocolLine, string[]>();
  const supportedOf = (line: ProtocolLine): string[] => {
    let hit = supportedByLine.get(line);
    if (hit === undefined) supportedByLine.set(line, (hit = allJsonRpcMethods(deps.catalog, line, deps.facts)));
    return hit;
  };

  function resolveMethod(name: string, line: ProtocolLine): MethodEntry {
    const m = byName.get(name);
    const unsupported = (extra: Record<string, unknown> = {}) =>
      new A2AError("METHOD_NOT_SUPPORTED", `Unsupported method: ${name}`, {
        method: name,
        supported_methods: supportedOf(line),
        protocol_version: line,
        ...extra,
      });
    if (!m || (m.surface === "core" && m.line !== line)) throw unsupported();
    if (methodAvailability(m, deps.facts) === "disabled")
      throw unsupported({ toggle: m.toggle, reason: "disabled_by_configuration" });
    return m;
  }

  async function callOne(raw: unknown, state: RequestState, inBatch: boolean, onLine?: (line: ProtocolLine) => void): Promise<Response | Streaming | null> {
    let id: Id = null;
    let line = state.line;
    let notification = false;
    let audit: AuditCall | undefined;
    try {
      if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw invalidRequest("the request must be an object");
      const req = raw as Record<string, unknown>;
      if ("id" in req) {
        if (!isId(req.id)) throw invalidRequest("id must be a string, an integer or null", "id");
        id = req.id;
      }
      if (req.jsonrpc !== "2.0") throw invalidRequest('jsonrpc must be exactly "2.0"', "jsonrpc");
      if (typeof req.method !== "string" || req.method === "") throw invalidRequest("method must be a non-empty string", "method");
      // A2A defines no notifications on its core methods, and a call that is refused before it runs (unknown method,
      // missing scope or extension, invalid params) is answered with id null, as the official JS SDK server does:
      // only a valid id-less call to an extension method is a notification (no answer, HTTP 204). Decided just
      // before dispatch, below.
      const idless = !("id" in req);
      const candidate = byName.get(req.method);
      line = lineFor(candidate, state);
      if (!candidate && !state.explicitVersion && PASCAL.test(req.method)) line = "1.0";
      onLine?.(line);
      // Recorded before the method is resolved, so unknown and disabled methods are audited too.
      audit = { method: req.method.slice(0, 256), params: req.params };
      state.calls?.push(audit);
      const method = resolveMethod(req.method, line);
      // The scope comes first: a caller without it learns nothing more about the method than its name.
      const principal = state.principal as Principal;
      if (!hasScope(principal, method.scope))
        throw new A2AError("SCOPE_INSUFFICIENT", `${method.name} needs the ${method.scope} scope`, { method: method.name, required_scope: method.scope });
      if (method.operation === null || !DISCOVERY_OPERATIONS.has(method.operation)) deps.extensions.check(state.extensions, line, method.name);
      if (method.streaming && inBatch) throw invalidRequest("streaming methods cannot be called inside a batch", "method");
      if (req.params !== undefined && (req.params === null || typeof req.params !== "object" || Array.isArray(req.params)))
        throw invalidParams("params must be an object (by-name parameters)", [], { field: "params" });
      // Core params of both lines accept the proto's snake_case spellings, folded per the params schema; both
      // spellings of one field are INVALID_PARAMS (1.0 is ProtoJSON; 0.3 JSON-RPC takes them too, never silently
      // preferring one).
      const given = req.params ?? {};
      const params = (method.surface !== "core" ? given : normalizeProtoJson(method.params_schema, given)) as Record<string, unknown>;
      const verdict = await validate(method.params_schema, params);
      if (!verdict.ok) throw invalidPayload(`Invalid params for ${method.name}`, verdict.violations);
      const handler = deps.registry.get(method.name);
      if (!handler) throw new Error(`no handler registered for ${method.name}`);
      notification = idless && method.surface === "extension";
      const result = await invoke(handler, params, { line, principal, transport: "jsonrpc", method, trace: state.trace }, deps.limits, method.streaming);
      if (result instanceof EventStream) {
        // A notification cannot receive a stream: release it at once.
        if (notification) result.close();
        return notification ? null : { stream: result, id, line };
      }
      audit.result = plainResult(result);
      return notification ? null : { jsonrpc: "2.0", id, result: result ?? null };
    } catch (raw) {
      if (!isExpectedError(raw)) deps.log.error({ err: raw }, "JSON-RPC handler failed");
      const error = toA2AError(raw);
      if (audit) audit.error = error.reason;
      if (notification) return null;
      return { jsonrpc: "2.0", id, error: jsonRpcError(line, error) };
    }
  }

  /** Answer every call of a refused request with RATE_LIMITED under its own id (id null without one: none of them ran). */
  function refuseAll(requests: unknown[], error: A2AError, line: ProtocolLine): Response[] {
    return requests.map((raw) => {
      const req = raw !== null && typeof raw === "object" && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
      return { jsonrpc: "2.0", id: req !== undefined && isId(req.id) ? req.id : null, error: jsonRpcError(line, error) };
    });
  }

  const payloads = deps.payloads;

  /** Payload log of a rate-limited request: every call with the refusal (notifications included, they get no answer). */
  function logRefused(log: PayloadLog, requests: unknown[], error: A2AError, line: ProtocolLine): void {
    const refusal = { error: jsonRpcError(line, error) };
    for (const raw of requests) log.rpcCall(raw, refusal);
  }

  return async function jsonrpc(ex: RpcExchange): Promise<void> {
    const state = ex.state;
    if (state.extensions !== undefined) ex.setHeaders(state.extensions.echo);
    let body: unknown;
    try {
      body = JSON.parse((state.rawBody ?? Buffer.alloc(0)).toString("utf8"));
    } catch {
      const error = jsonRpcError(state.line, new A2AError("PARSE_ERROR"));
      if (payloads !== undefined) payloads.rpcUnparsed(state.rawBody?.length ?? 0, error);
      ex.json({ jsonrpc: "2.0", id: null, error });
      return;
    }
    const { headers, error: limited } = await deps.limits.charge(state.principal as Principal, Array.isArray(body) ? Math.max(1, body.length) : 1);
    ex.setHeaders(headers);
    if (limited) {
      if (payloads !== undefined) logRefused(payloads, Array.isArray(body) ? body : [body], limited, state.line);
      const refused = refuseAll(Array.isArray(body) ? body : [body], limited, state.line);
      if (refused.length === 0) ex.json({ jsonrpc: "2.0", id: null, error: jsonRpcError(state.line, limited) }); // an empty batch
      else ex.json(Array.isArray(body) ? refused : refused[0]);
      return;
    }
    if (Array.isArray(body)) {
      if (body.length === 0) {
        const error = jsonRpcError(state.line, invalidRequest("empty batch"));
        if (payloads !== undefined) payloads.rpcCall(body, { error });
        ex.json({ jsonrpc: "2.0", id: null, error });
        return;
      }
      const answers = await Promise.all(body.map((r) => callOne(r, state, true)));
      if (payloads !== undefined) for (let i = 0; i < body.length; i++) payloads.rpcCall(body[i], logged(answers[i]!));
      const responses = answers.filter((r): r is Response => r !== null && !("stream" in r));
      if (responses.length === 0) ex.noContent();
      else ex.jsonText(`[${responses.map(responseText).join(",")}]`);
      return;
    }
    const response = await callOne(body, state, false, (line) => ex.setHeaders({ "A2A-Version": line }));
    if (payloads !== undefined) payloads.rpcCall(body, logged(response));
    if (response === null) ex.noContent();
    else if ("stream" in response) {
      const { id, line } = response;
      ex.stream(response.stream, {
        event: (result) => ({ jsonrpc: "2.0", id, result }),
        error: (error) => {
          if (!isExpectedError(error)) deps.log.error({ err: error }, "JSON-RPC stream failed");
          return { jsonrpc: "2.0", id, error: jsonRpcError(line, toA2AError(error)) };
        },
      }, deps.streamBudget);
    } else ex.jsonText(responseText(response));
  };
}
