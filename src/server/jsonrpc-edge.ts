// The JSON-RPC edge: `POST /` answered on the raw node:http request, without Koa. Every A2A call of both lines comes
// through here, so the per-request work is kept to what the contract needs. It is a door like the Koa app's
// (./koa-door.ts) and runs the same steps (src/pipeline/steps.ts), then the endpoint:
//
//   the pipeline (version → Host → compression → Origin + CORS → extensions → authentication → body) → JSON-RPC
//   endpoint (per-call rate limit and scope) → gzip when the client accepts it → closeRequest (audit, span, log).
//
// What it does not share with Koa is the writing: JSON bodies are gzipped in one piece (with their Content-Length),
// failures before the endpoint are answered uncompressed as the Koa app answers them. `Gateway.handler` routes
// `POST /` here; the Koa app serves the same endpoint on its `POST /` route (Gateway.app alone serves everything).
import type { IncomingMessage, ServerResponse } from "node:http";
import { gzip } from "node:zlib";
import type { Logger } from "pino";
import type { ProtocolLine } from "../contract/catalog.js";
import { failureAnswer, failureOf } from "../pipeline/errors.js";
import type { Exchange, Step } from "../pipeline/exchange.js";
import { gzipsBody } from "../pipeline/gzip.js";
import { closeRequest, openRequest, type RequestRecords } from "../pipeline/request.js";
import { runPipeline } from "../pipeline/steps.js";
import type { RpcExchange } from "../transport/jsonrpc/index.js";
import { sendEventStream } from "../transport/sse.js";

export interface JsonRpcEdgeDeps {
  steps: readonly Step[];
  defaultLine: ProtocolLine;
  /** Bodies of at least this many bytes are gzipped when the client accepts it (A2A_HTTP_GZIP_MINIMUM_SIZE). */
  gzipThreshold: number;
  records: RequestRecords;
  log: Logger;
  endpoint: (exchange: RpcExchange) => Promise<void>;
}

const JSON_TYPE = "application/json; charset=utf-8";

/** A query parameter of a raw query string (its first occurrence), if any. */
function queryParam(query: string, name: string): string | undefined {
  if (query === "") return undefined;
  return new URLSearchParams(query).get(name) ?? undefined;
}

export function jsonRpcEdge(deps: JsonRpcEdgeDeps): (req: IncomingMessage, res: ServerResponse, query: string) => void {
  return function edge(req, res, query) {
    const started = performance.now();
    const state = openRequest("POST", "/", req.headers, deps.defaultLine);
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
      if (!gzipsBody(deps.gzipThreshold, Buffer.byteLength(text), req.headers["accept-encoding"])) {
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

    const exchange: Exchange & RpcExchange = {
      method: "POST",
      path: "/",
      headers: req.headers,
      get address() {
        return req.socket.remoteAddress ?? "";
      },
      state,
      body: req,
      query: (name) => queryParam(query, name),
      setHeader: (name, value) => {
        if (!res.headersSent) res.setHeader(name, value);
      },
      setHeaders,
      vary: (field) => {
        const current = res.getHeader("Vary");
        res.setHeader("Vary", current === undefined ? field : `${String(current)}, ${field}`);
      },
      answerEmpty: (status) => send(status, undefined),
      json: sendJson,
      noContent: () => send(204, undefined),
      stream: (stream, framing, budget) => {
        streaming = true;
        sendEventStream(req, res, stream, framing, budget);
      },
    };

    const fail = (raw: unknown): void => {
      const answer = failureAnswer(failureOf(raw, deps.log, "/"), state);
      setHeaders(answer.headers);
      send(answer.status, JSON.stringify(answer.body));
    };

    const done = (): void => {
      const status = streaming ? 200 : res.statusCode;
      closeRequest(deps.records, state, { method: "POST", path: "/", status, address: exchange.address, durationMs: performance.now() - started });
    };

    const run = async (): Promise<void> => {
      if (await runPipeline(deps.steps, exchange)) await deps.endpoint(exchange);
    };

    run().then(done, (raw: unknown) => {
      fail(raw);
      done();
    });
  };
}
