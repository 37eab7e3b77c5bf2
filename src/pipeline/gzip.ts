// Response compression, negotiated the same way at both doors: gzip only, for bodies of at least
// A2A_HTTP_GZIP_MINIMUM_SIZE bytes, when the client accepts it. Accept-Encoding is read as koa-compress reads it (no
// header → identity, `*` → gzip, q-values), and when it accepts nothing we can send (`identity;q=0` without gzip) the
// body goes out uncompressed rather than failing: RFC 9110 §12.5.3 lets a server ignore the header, and an error would
// only hide the answer. The doors compress as they write: the JSON-RPC edge's JSON writer, koa-compress in the Koa app
// (src/server/koa-door.ts).
import Negotiator from "negotiator";
import type { Step } from "./exchange.js";

const ENCODINGS = ["gzip", "identity"];
/** negotiator 1.x takes a preference order (its @types describe 0.6, without it). */
type EncodingNegotiator = { encoding(available: string[], options: { preferred: string[] }): string | undefined };

/** Verdicts per Accept-Encoding value: clients send the same few values over and over. */
const verdicts = new Map<string, boolean>();

/** Whether a response may be gzipped for this Accept-Encoding header. */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let verdict = verdicts.get(header);
  if (verdict === undefined) {
    const negotiator = new Negotiator({ headers: { "accept-encoding": header === "*" ? "gzip" : header } }) as unknown as EncodingNegotiator;
    verdict = negotiator.encoding(ENCODINGS, { preferred: ENCODINGS }) === "gzip";
    if (verdicts.size < 256) verdicts.set(header, verdict);
  }
  return verdict;
}

/** Whether a body of `size` bytes goes out gzipped: not under the threshold (0: no threshold) and accepted. */
export function gzipsBody(threshold: number, size: number, acceptEncoding: string | undefined): boolean {
  return (threshold <= 0 || size >= threshold) && acceptsGzip(acceptEncoding);
}

/**
 * The compression step: from here on the answer depends on Accept-Encoding. A failure of an earlier step (version,
 * Host) does not vary on it; no failure answer is compressed (the doors write those themselves).
 */
export const varyOnEncoding: Step = (ex) => ex.vary("Accept-Encoding");
