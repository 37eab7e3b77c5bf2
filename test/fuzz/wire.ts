// Wire clients of the hostile-request fuzz test: node:http for requests Node's client can express (arbitrary paths,
// methods, bodies, framing), raw `net` sockets for everything it refuses (bad header names, CR/LF in values,
// duplicate Content-Length, broken request lines, HTTP/1.0 ...). Both return the same `Exchange`, never throw, and are
// bounded by a timeout. SSE answers are read frame by frame until the server ends the stream (or the SSE budget).
import http from "node:http";
import net from "node:net";
import zlib from "node:zlib";
import { sseData } from "../support/task-wire.js";

/** One request the fuzzer sends. `raw` requests are written to a socket byte for byte. */
export type FuzzRequest = HttpRequest | RawRequest;

export interface HttpRequest {
  kind: "http";
  /** Generator family, for the summary. */
  family: string;
  method: string;
  /** Request target exactly as sent (may contain `@@TASK@@`, replaced by a known task id before sending). */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Send the body in pieces without Content-Length (Transfer-Encoding: chunked). */
  chunked?: boolean;
}

export interface RawRequest {
  kind: "raw";
  family: string;
  label: string;
  bytes: Buffer;
  /** No answer is owed: the request is incomplete on purpose (body shorter than declared, only empty lines) or Node
   * closes it without one (CONNECT without a 'connect' listener). The connection may stay open or be closed. */
  incomplete?: boolean;
}

export interface Exchange {
  /** 0 when no status line arrived. */
  status: number;
  headers: Record<string, string>;
  /** Decoded (gunzipped) body; for SSE the raw text read so far. */
  body: Buffer;
  /** `data:` frames of an event stream, parsed; undefined when the answer was not an event stream. */
  frames?: unknown[];
  /** The SSE budget ran out before the server ended the stream. */
  sseCut?: boolean;
  /** Transport failure before a complete answer (reset, timeout, closed). */
  failure?: string;
  /** The client library refused the request and it was sent over a raw socket instead. */
  fellBackToRaw?: boolean;
}

export const TASK_PLACEHOLDER = "@@TASK@@";

function lowerHeaders(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}

function decode(headers: Record<string, string>, body: Buffer): Buffer {
  if ((headers["content-encoding"] ?? "").toLowerCase() === "gzip" && body.length > 0) return zlib.gunzipSync(body);
  return body;
}

/** Splits complete `\n\n`-terminated SSE blocks off `buffer`; returns the rest. */
function takeFrames(buffer: string, frames: unknown[]): string {
  for (let i = buffer.indexOf("\n\n"); i >= 0; i = buffer.indexOf("\n\n")) {
    const block = buffer.slice(0, i);
    buffer = buffer.slice(i + 2);
    const data = sseData(block);
    if (data === "") continue;
    try {
      frames.push(JSON.parse(data));
    } catch {
      frames.push({ __unparsable_frame__: data.slice(0, 200) });
    }
  }
  return buffer;
}

export interface WireOptions {
  port: number;
  agent: http.Agent;
  timeoutMs: number;
  /** How long an event stream is read before the client hangs up. */
  sseBudgetMs: number;
}

/** Serializes an HttpRequest for a raw socket (used when node:http refuses a header value or path). */
export function serialize(req: HttpRequest, port: number): Buffer {
  const lines = [`${req.method} ${req.path} HTTP/1.1`];
  const names = new Set(Object.keys(req.headers).map((k) => k.toLowerCase()));
  if (!names.has("host")) lines.push(`Host: 127.0.0.1:${port}`);
  for (const [k, v] of Object.entries(req.headers)) lines.push(`${k}: ${v}`);
  if (req.body !== undefined && !names.has("content-length")) lines.push(`Content-Length: ${req.body.length}`);
  lines.push("Connection: close");
  return Buffer.concat([Buffer.from(lines.join("\r\n") + "\r\n\r\n", "latin1"), req.body ?? Buffer.alloc(0)]);
}

export function sendHttp(req: HttpRequest, o: WireOptions, retried = false): Promise<Exchange> {
  return new Promise((resolve) => {
    let settled = false;
    let responded = false;
    // eslint-disable-next-line prefer-const -- set further down, after the closures that clear it
    let timer: NodeJS.Timeout | undefined;
    const done = (x: Exchange) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(x);
    };
    const headers: Record<string, string> = { ...req.headers };
    if (req.body !== undefined && !req.chunked && !Object.keys(headers).some((k) => k.toLowerCase() === "content-length"))
      headers["content-length"] = String(req.body.length);
    let cr: http.ClientRequest;
    try {
      cr = http.request({
        host: "127.0.0.1",
        port: o.port,
        method: req.method,
        path: req.path,
        headers,
        agent: o.agent,
        setHost: !Object.keys(headers).some((k) => k.toLowerCase() === "host"),
      });
    } catch {
      // ERR_INVALID_CHAR / ERR_UNESCAPED_CHARACTERS / ERR_INVALID_HTTP_TOKEN: send the same bytes over a socket.
      void sendRaw({ kind: "raw", family: req.family, label: "fallback", bytes: serialize(req, o.port) }, o).then((x) =>
        done({ ...x, fellBackToRaw: true }),
      );
      return;
    }
    timer = setTimeout(() => {
      cr.destroy(new Error("timeout"));
      done({ status: 0, headers: {}, body: Buffer.alloc(0), failure: `no complete answer within ${o.timeoutMs} ms` });
    }, o.timeoutMs);
    cr.on("response", (res) => {
      responded = true;
      const h = lowerHeaders(res.headers);
      const isSse = (h["content-type"] ?? "").includes("text/event-stream");
      const chunks: Buffer[] = [];
      const frames: unknown[] = [];
      let text = "";
      let sseTimer: NodeJS.Timeout | undefined;
      if (isSse)
        sseTimer = setTimeout(() => {
          res.destroy();
          cr.destroy();
          done({ status: res.statusCode ?? 0, headers: h, body: Buffer.from(text), frames, sseCut: true });
        }, o.sseBudgetMs);
      res.on("data", (c: Buffer) => {
        if (isSse) text = takeFrames(text + c.toString("utf8"), frames);
        else chunks.push(c);
      });
      res.on("end", () => {
        clearTimeout(sseTimer);
        try {
          done({ status: res.statusCode ?? 0, headers: h, body: isSse ? Buffer.from(text) : decode(h, Buffer.concat(chunks)), ...(isSse ? { frames } : {}) });
        } catch (err) {
          done({ status: res.statusCode ?? 0, headers: h, body: Buffer.concat(chunks), failure: `undecodable body: ${(err as Error).message}` });
        }
      });
      res.on("error", (err) => {
        clearTimeout(sseTimer);
        done({ status: res.statusCode ?? 0, headers: h, body: Buffer.concat(chunks), ...(isSse ? { frames } : {}), failure: `response aborted: ${err.message}` });
      });
    });
    cr.on("error", (err) => {
      if (responded || settled) return;
      // A kept-alive socket the server closed while idle (keepAliveTimeout) races with its reuse: retry once on a new
      // connection, as the Node docs advise. Any other failure before an answer is reported.
      if (cr.reusedSocket && (err as NodeJS.ErrnoException).code === "ECONNRESET" && !retried) {
        settled = true;
        clearTimeout(timer);
        void sendHttp(req, o, true).then(resolve);
        return;
      }
      done({ status: 0, headers: {}, body: Buffer.alloc(0), failure: `request failed before an answer: ${err.message}` });
    });
    const body = req.body;
    if (body !== undefined && req.chunked) {
      const third = Math.max(1, Math.floor(body.length / 3));
      cr.write(body.subarray(0, third));
      cr.write(body.subarray(third, 2 * third));
      cr.end(body.subarray(2 * third));
    } else cr.end(body);
  });
}

/**
 * Writes raw bytes and reads one HTTP/1.x answer (Content-Length, chunked, or until close). Resolves with the
 * first answer; pipelined followers are ignored.
 */
export function sendRaw(req: RawRequest, o: WireOptions, timeoutMs = o.timeoutMs): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = net.connect(o.port, "127.0.0.1");
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = (x: Exchange) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(x);
    };
    const parse = (final: boolean): void => {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) {
        if (final) finish({ status: 0, headers: {}, body: buf, failure: buf.length ? "truncated status/header block" : "closed without an answer" });
        return;
      }
      const head = buf.subarray(0, end).toString("latin1").split("\r\n");
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? "");
      if (!m) return finish({ status: 0, headers: {}, body: buf, failure: `bad status line ${JSON.stringify(head[0])}` });
      const status = Number(m[1]);
      if (status >= 100 && status < 200 && status !== 101) {
        // Interim answer (100 Continue): the final one follows.
        buf = buf.subarray(end + 4);
        return parse(final);
      }
      const headers: Record<string, string> = {};
      for (const line of head.slice(1)) {
        const i = line.indexOf(":");
        if (i > 0) {
          const k = line.slice(0, i).trim().toLowerCase();
          headers[k] = headers[k] === undefined ? line.slice(i + 1).trim() : `${headers[k]}, ${line.slice(i + 1).trim()}`;
        }
      }
      const rest = buf.subarray(end + 4);
      const bodyless = status === 204 || status === 304 || (status >= 100 && status < 200);
      if ((headers["content-type"] ?? "").includes("text/event-stream")) {
        // Raw requests never expect a stream; the head is enough.
        const frames: unknown[] = [];
        takeFrames(rest.toString("utf8"), frames);
        return finish({ status, headers, body: rest, frames, sseCut: true });
      }
      const done = (body: Buffer) => {
        try {
          finish({ status, headers, body: decode(headers, body) });
        } catch (err) {
          finish({ status, headers, body, failure: `undecodable body: ${(err as Error).message}` });
        }
      };
      if (bodyless) return done(Buffer.alloc(0));
      if (headers["content-length"] !== undefined) {
        const n = Number(headers["content-length"]);
        if (rest.length >= n) return done(rest.subarray(0, n));
        if (final) finish({ status, headers, body: rest, failure: "closed mid-body" });
        return;
      }
      if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
        const chunks: Buffer[] = [];
        let at = 0;
        for (;;) {
          const nl = rest.indexOf("\r\n", at);
          if (nl < 0) break;
          const size = parseInt(rest.subarray(at, nl).toString("latin1"), 16);
          if (!Number.isFinite(size)) return finish({ status, headers, body: rest, failure: "bad chunk size in answer" });
          if (size === 0) return done(Buffer.concat(chunks));
          if (rest.length < nl + 2 + size + 2) break;
          chunks.push(rest.subarray(nl + 2, nl + 2 + size));
          at = nl + 2 + size + 2;
        }
        if (final) finish({ status, headers, body: rest, failure: "closed mid-chunk" });
        return;
      }
      if (final) done(rest);
    };
    const timer = setTimeout(
      () => finish({ status: 0, headers: {}, body: buf, failure: req.incomplete ? "incomplete" : `no complete answer within ${timeoutMs} ms` }),
      timeoutMs,
    );
    socket.on("data", (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      parse(false);
    });
    socket.on("end", () => parse(true));
    socket.on("close", () => parse(true));
    socket.on("error", () => parse(true));
    socket.write(req.bytes);
  });
}

/** A fresh TCP connection gets a normal answer: the server is alive and still accepting connections. */
export async function acceptsConnections(o: WireOptions): Promise<boolean> {
  const x = await sendRaw(
    {
      kind: "raw",
      family: "liveness",
      label: "probe",
      bytes: Buffer.from(`GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1:${o.port}\r\nConnection: close\r\n\r\n`),
    },
    o,
    5000,
  );
  return x.status === 200;
}
