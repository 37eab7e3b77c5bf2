// The request as the pipeline's steps see it, whichever door it came through: the Koa app (src/server/koa-door.ts)
// or the lean JSON-RPC edge (src/server/jsonrpc-edge.ts). A few reads of the request, a few writes of response
// headers and one way to answer without a body; nothing of a framework.
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import type { RequestState } from "./state.js";

export interface Exchange {
  readonly method: string;
  /** The URL's path, without its query. */
  readonly path: string;
  /** The request headers, by lower-case name (as node:http keeps them). */
  readonly headers: IncomingHttpHeaders;
  /** The peer address of the connection ("" when unknown); no forwarding header is trusted. */
  readonly address: string;
  readonly state: RequestState;
  /** The request body, read (once) by the body step. */
  readonly body: Readable;
  /** A query parameter's value (every value when it repeats). */
  query(name: string): string | string[] | undefined;
  setHeader(name: string, value: string): void;
  setHeaders(headers: Record<string, string>): void;
  /** Adds a request header's name to the response's Vary. */
  vary(field: string): void;
  /** Answers the request here, with this status and no body (a CORS preflight). */
  answerEmpty(status: number): void;
}

/**
 * One check of the pipeline: it reads the request, sets headers and state, throws the typed error that refuses the
 * request, or answers it itself and returns true (the steps after it and the route are skipped).
 */
export type Step = (ex: Exchange) => void | boolean | Promise<void>;
