// One webhook POST. The verdict tells the outbox what to do next:
//   delivered — 2xx;
//   retry     — network errors, timeouts, 408, 425, 429 and 5xx (with the receiver's Retry-After when it gave one);
//   reject    — everything else (3xx: redirects are not followed, 4xx: the receiver refuses this notification,
//               a refused address): retrying would not change the answer.
// The response body is read (bounded) and discarded so the connection can be reused; it is never logged.
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { guardedLookup, hostOf, isPrivateAddress, PushTargetRefused } from "./target.js";

export type SendVerdict =
  | { kind: "delivered"; status: number }
  | { kind: "retry"; reason: string; status?: number; retryAfterMs?: number }
  | { kind: "reject"; reason: string; status?: number };

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  userAgent: string;
  /** Sockets per host (A2A_PUSH_MAX_CONCURRENCY); default 16. */
  maxSockets?: number;
}

const RETRYABLE = new Set([408, 425, 429]);
const MAX_DRAIN_BYTES = 64 * 1024;

export class WebhookSender {
  readonly #http: http.Agent;
  readonly #https: https.Agent;

  constructor(private readonly opts: SenderOptions) {
    const lookup = guardedLookup(opts.allowPrivateNetworks);
    // As many sockets per host as POSTs may be in flight: none waits for a socket while its timeout runs.
    const maxSockets = Math.max(1, opts.maxSockets ?? 16);
    this.#http = new http.Agent({ keepAlive: true, maxSockets, lookup } as http.AgentOptions);
    this.#https = new https.Agent({ keepAlive: true, maxSockets, lookup } as https.AgentOptions);
  }

  send(request: WebhookRequest, signal?: AbortSignal): Promise<SendVerdict> {
    const url = new URL(request.url);
    const host = hostOf(url);
    // An IP literal is connected to without a lookup: check it here.
    if (!this.opts.allowPrivateNetworks && net.isIP(host) !== 0 && isPrivateAddress(host)) {
      return Promise.resolve({ kind: "reject", reason: new PushTargetRefused(host, host).message });
    }
    const secure = url.protocol === "https:";
    const body = Buffer.from(request.body, "utf8");
    return new Promise<SendVerdict>((resolve) => {
      let settled = false;
      const finish = (verdict: SendVerdict) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(verdict);
      };
      const req = (secure ? https : http).request(
        url,
        {
          method: "POST",
          agent: secure ? this.#https : this.#http,
          headers: { ...request.headers, "user-agent": this.opts.userAgent, "content-length": body.length },
          signal,
        },
        (res) => {
          const status = res.statusCode ?? 0;
          let drained = 0;
          res.on("data", (chunk: Buffer) => {
            drained += chunk.length;
            if (drained > MAX_DRAIN_BYTES) res.destroy();
          });
          res.on("error", () => {});
          res.on("close", () => finish(verdictOf(status, res.headers["retry-after"])));
          res.on("end", () => finish(verdictOf(status, res.headers["retry-after"])));
        },
      );
      const timer = setTimeout(() => {
        req.destroy();
        finish({ kind: "retry", reason: `no answer within ${this.opts.timeoutMs} ms` });
      }, this.opts.timeoutMs);
      req.on("error", (error: NodeJS.ErrnoException) => {
        if (error instanceof PushTargetRefused) finish({ kind: "reject", reason: error.message });
        else if (signal?.aborted) finish({ kind: "retry", reason: "the gateway is shutting down" });
        else finish({ kind: "retry", reason: `${error.code ?? error.name}: ${error.message}` });
      });
      req.end(body);
    });
  }

  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }
}

function verdictOf(status: number, retryAfter: string | undefined): SendVerdict {
  if (status >= 200 && status < 300) return { kind: "delivered", status };
  if (status >= 500 || RETRYABLE.has(status)) {
    const after = retryAfterMs(retryAfter);
    return { kind: "retry", reason: `the receiver answered HTTP ${status}`, status, ...(after === undefined ? {} : { retryAfterMs: after }) };
  }
  return { kind: "reject", reason: `the receiver answered HTTP ${status}`, status };
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // Every HTTP-date form starts with the day name; Date.parse alone would read "1.5" or "-1" as dates long past (0).
  if (!/^[A-Za-z]{3}/.test(v)) return undefined;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
