// The JSON-RPC edge: `POST /` answered on the raw node:http request, without Koa. Every A2A call of both lines
// comes through here, so the per-request work is kept to what the contract needs: the same checks as the Koa
// middleware chain, in the same order and with the same answers (they share their functions), then the endpoint.
//
//   version negotiation → Host allow-list → Origin allow-list + CORS → authentication → body (size, media type,
//   depth) → JSON-RPC endpoint (per-call rate limit and scope) → gzip when the client accepts it → audit, log.
//
// Failures before the endpoint are shaped by errorAnswer (JSON-RPC error with id null; transport-level failures keep
// their HTTP status) and, as in the Koa chain, left uncompressed. The Koa app still mounts the same endpoint on
// `POST /` (koaExchange), so `Gateway.app` on its own serves everything; `Gateway.handler` routes `POST /` here.
import type { IncomingMessage, ServerResponse } from "node:http";
import { gzip } from "node:zlib";
import type { Logger } from "pino";
import type { ProtocolLine } from "../contract/catalog.js";
import type { CredentialResolver } from "../auth/index.js";
import type { AuditRecorder } from "../observability/audit.js";
import type { ExtensionPolicy } from "../protocol/extensions.js";
import { negotiateVersion, VERSION_HEADER } from "../protocol/version.js";
import type { RpcExchange } from "../transport/jsonrpc/index.js";
import { sendEventStream } from "../transport/sse.js";
import { recordAudit } from "./middleware/audit.js";
import { authenticateGuarded } from "./middleware/auth.js";
import type { AddressGuard } from "../auth/address-guard.js";
import { acceptsGzip } from "./middleware/compress.js";
import { readRequestBody } from "./middleware/body.js";
import { errorAnswer, failureOf } from "./middleware/errors.js";
import type { AuditCall, RequestState } from "../pipeline/state.js";
import { beginRequest } from "../tracing/index.js";
import { endRequestSpan } from "./trace.js";

export interface JsonRpcEdgeDeps {
  defaultLine: ProtocolLine;
  checkHost: (host: string | undefined) => void;
  checkOrigin: (origin: string, publicRoute: boolean) => Record<string, string>;
  resolver: CredentialResolver;
  maxBodyBytes: number;
  /** Bodies of at least this many bytes are gzipped when the client accepts it (A2A_HTTP_GZIP_MINIMUM_SIZE). */
  gzipThreshold: number;
  /** Absent when the audit log is off. */
  recorder: AuditRecorder | undefined;
  /** The audit entry's method when a request reaches no call (the catalog's `POST /`). */
  routeName: string;
  log: Logger;
  endpoint: (exchange: RpcExchange) => Promise<void>;
  /** Reads the request's extension headers into its state (the endpoint echoes and enforces them). */
  extensions: ExtensionPolicy;
  /** Per-address limits before authentication. */
  guard?: AddressGuard;
}

const JSON_TYPE = "application/json; charset=utf-8";

/** The `A2A-Version` query parameter of a raw query string (first occurrence), if any. */
function versionParam(query: string): string | undefined {
  if (query === "") return undefined;
  const value = new URLSearchParams(query).get(VERSION_HEADER);
  return value === null ? undefined : value;
}

export function jsonRpcEdge(deps: JsonRpcEdgeDeps): (req: IncomingMessage, res: ServerResponse, query: string) => void {
  const logRequests = (): boolean => deps.log.isLevelEnabled("info");

  return function edge(req, res, query) {
    const started = performance.now();
    const calls: AuditCall[] = [];
    const trace = beginRequest(req.headers.traceparent, req.headers.tracestate, { "http.request.method": "POST", "url.path": "/" });
    const state: RequestState = { line: deps.defaultLine, explicitVersion: false, jsonrpc: true, calls, trace };
    let streaming = false;

    const setHeaders = (headers: Record<string, string>): void => {
      if (res.headersSent) return;
      for (const name in headers) res.setHeader(name, headers[name]!);
    };

    const send = (status: number, body: string | Buffer | undefined): void => {
      if (res.headersSent || res.writableEnded || res.destroyed) return;
      res.statusCode = status;
      if (body === undefined) {
        res.end();
        return;
      }
      res.setHeader("Content-Type", JSON_TYPE);
      res.setHeader("Content-Length", typeof body === "string" ? Buffer.byteLength(body) : body.length);
      res.end(body);
    };

    const sendJson = (value: unknown): void => {
      const text = JSON.stringify(value);
      const size = Buffer.byteLength(text);
      if ((deps.gzipThreshold > 0 && size < deps.gzipThreshold) || !acceptsGzip(req.headers["accept-encoding"])) {
        send(200, text);
        return;
      }
      gzip(text, (err, zipped) => {
        if (err) {
          send(200, text);
          return;
        }
        res.setHeader("Content-Encoding", "gzip");
        send(200, zipped);
      });
    };

    const exchange: RpcExchange = {
      state,
      setHeaders,
      json: sendJson,
      noContent: () => send(204, undefined),
      stream: (stream, framing, budget) => {
        streaming = true;
        sendEventStream(req, res, stream, framing, budget);
      },
    };

    const fail = (raw: unknown): void => {
      const err = failureOf(raw, deps.log, "/");
      state.errorReason = err.reason;
      const answer = errorAnswer(err, state.line, true);
      setHeaders(answer.headers);
      send(answer.status, JSON.stringify(answer.body));
    };

    const done = (): void => {
      const status = streaming ? 200 : res.statusCode;
      const durationMs = performance.now() - started;
      if (deps.recorder !== undefined && state.auditSkip !== true)
        recordAudit(deps.recorder, {
          principal: state.principal,
          jsonrpc: true,
          line: state.line,
          status,
          durationMs,
          clientIp: req.socket.remoteAddress ?? "",
          requestMethod: deps.routeName,
          errorReason: state.errorReason,
          calls,
          traceId: trace.traceId,
        });
      endRequestSpan(state, "POST", "/", status);
      if (logRequests())
        deps.log.info(
          { method: "POST", path: "/", status, ms: Math.round(durationMs * 10) / 10, line: state.line, trace_id: trace.traceId, span_id: trace.spanId },
          "request",
        );
    };

    const run = async (): Promise<void> => {
      res.setHeader("Vary", VERSION_HEADER);
      res.setHeader(VERSION_HEADER, state.line);
      const negotiated = negotiateVersion(req.headers["a2a-version"] || undefined, versionParam(query), deps.defaultLine);
      state.line = negotiated.line;
      state.explicitVersion = negotiated.explicit;
      res.setHeader(VERSION_HEADER, state.line);
      deps.checkHost(req.headers.host);
      res.setHeader("Vary", `${VERSION_HEADER}, Accept-Encoding`);
      const origin = req.headers.origin;
      if (origin !== undefined) {
        res.setHeader("Vary", `${VERSION_HEADER}, Accept-Encoding, Origin`);
        setHeaders(deps.checkOrigin(origin, false));
      }
      state.extensions = deps.extensions.activate((name) => req.headers[name]);
      state.principal = authenticateGuarded(deps.resolver, deps.guard, req.headers, req.socket.remoteAddress ?? "", state);
      state.rawBody = await readRequestBody(req, deps.maxBodyBytes);
      await deps.endpoint(exchange);
    };

    run().then(done, (raw: unknown) => {
      fail(raw);
      done();
    });
  };
}
