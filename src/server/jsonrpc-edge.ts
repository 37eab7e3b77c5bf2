// The JSON-RPC edge: `POST /` answered on the raw node:http request, without Koa. Every A2A call of both lines comes
// through here, so the per-request work is kept to what the contract needs. It is a door like the Koa app's
// (./koa-door.ts) and runs the same steps (src/pipeline/steps.ts), then the endpoint:
//
//   the pipeline (version → Host → compression → Origin + CORS → extensions → authentication → body) → JSON-RPC
//   endpoint (per-call rate limit and scope) → gzip when the client accepts it → closeRequest (audit, span, log).
//
// What it does not share with Koa is the writing: JSON bodies are gzipped in one piece (with their Content-Length),
// failures before the endpoint are answered uncompressed as the Koa app answers them. A request is one EdgeRequest
// (the pipeline's Exchange and the endpoint's RpcExchange at once, its methods on the prototype: no closures per
// request on the hot path). `Gateway.handler` routes `POST /` here; the Koa app serves the same endpoint on its
// `POST /` route (Gateway.app alone serves everything).
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { gzip } from "node:zlib";
import type { Logger } from "pino";
import type { ProtocolLine } from "../contract/catalog.js";
import type { EventStream } from "../operations/stream.js";
import { failureAnswer, failureOf } from "../pipeline/errors.js";
import type { Exchange, Step } from "../pipeline/exchange.js";
import { gzipsBody } from "../pipeline/gzip.js";
import { closeRequest, openRequest, type RequestRecords } from "../pipeline/request.js";
import type { RequestState } from "../pipeline/state.js";
import { runPipeline } from "../pipeline/steps.js";
import type { RpcExchange } from "../transport/jsonrpc/index.js";
import { sendEventStream, type SseFraming, type StreamBudget } from "../transport/sse.js";

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

class EdgeRequest implements Exchange, RpcExchange {
  readonly method = "POST";
  readonly path = "/";
  readonly headers: IncomingHttpHeaders;
  /** Read when the request arrives: the peer of a live connection is always known. */
  readonly address: string;
  readonly state: RequestState;
  readonly body: IncomingMessage;
  private readonly started = performance.now();
  private streaming = false;
  private varied = "";

  constructor(
    private readonly deps: JsonRpcEdgeDeps,
    private readonly res: ServerResponse,
    private readonly rawQuery: string,
    req: IncomingMessage,
  ) {
    this.body = req;
    this.headers = req.headers;
    this.address = req.socket.remoteAddress ?? "";
    this.state = openRequest("POST", "/", req.headers, deps.defaultLine);
  }

  /** The pipeline, the endpoint, then the request's records; a failure is answered in the request's shape. */
  async run(): Promise<void> {
    try {
      if (await runPipeline(this.deps.steps, this)) await this.deps.endpoint(this);
    } catch (raw) {
      const answer = failureAnswer(failureOf(raw, this.deps.log, "/"), this.state);
      this.setHeaders(answer.headers);
      this.send(answer.status, JSON.stringify(answer.body));
    }
    closeRequest(this.deps.records, this.state, {
      method: "POST",
      path: "/",
      status: this.streaming ? 200 : this.res.statusCode,
      address: this.address,
      durationMs: performance.now() - this.started,
    });
  }

  /** The first value of a query parameter (the raw query string is parsed only when asked). */
  query(name: string): string | undefined {
    if (this.rawQuery === "") return undefined;
    return new URLSearchParams(this.rawQuery).get(name) ?? undefined;
  }

  setHeader(name: string, value: string): void {
    if (!this.res.headersSent) this.res.setHeader(name, value);
  }

  setHeaders(headers: Record<string, string>): void {
    if (this.res.headersSent) return;
    for (const name in headers) this.res.setHeader(name, headers[name]!);
  }

  vary(field: string): void {
    this.varied = this.varied === "" ? field : `${this.varied}, ${field}`;
    this.res.setHeader("Vary", this.varied);
  }

  answerEmpty(status: number): void {
    this.send(status, undefined);
  }

  json(value: unknown): void {
    this.jsonText(JSON.stringify(value));
  }

  jsonText(text: string): void {
    if (!gzipsBody(this.deps.gzipThreshold, Buffer.byteLength(text), this.headers["accept-encoding"])) {
      this.send(200, text);
      return;
    }
    gzip(text, (err, zipped) => {
      if (err) {
        this.send(200, text);
        return;
      }
      this.res.setHeader("Content-Encoding", "gzip");
      this.send(200, zipped);
    });
  }

  noContent(): void {
    this.send(204, undefined);
  }

  stream(stream: EventStream, framing: SseFraming, budget: StreamBudget): void {
    this.streaming = true;
    sendEventStream(this.body, this.res, stream, framing, budget);
  }

  private send(status: number, body: string | Buffer | undefined): void {
    const res = this.res;
    if (res.headersSent || res.writableEnded || res.destroyed) return;
    res.statusCode = status;
    if (body === undefined) {
      res.end();
      return;
    }
    res.setHeader("Content-Type", JSON_TYPE);
    res.setHeader("Content-Length", typeof body === "string" ? Buffer.byteLength(body) : body.length);
    res.end(body);
  }
}

export function jsonRpcEdge(deps: JsonRpcEdgeDeps): (req: IncomingMessage, res: ServerResponse, query: string) => void {
  return (req, res, query) => void new EdgeRequest(deps, res, query, req).run();
}
