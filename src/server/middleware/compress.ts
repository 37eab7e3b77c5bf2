// Response compression: gzip only, for JSON/YAML/text bodies of at least A2A_HTTP_GZIP_MINIMUM_SIZE bytes, when the
// client accepts it. One negotiation for both paths (the Koa chain and the JSON-RPC edge): Accept-Encoding is read
// as koa-compress reads it (no header → identity, `*` → gzip, q-values), and when it accepts nothing we can send
// (`identity;q=0` without gzip) the body goes out uncompressed rather than failing: RFC 9110 §12.5.3 lets a server
// ignore the header, and an error would only hide the answer.
import type { Context, Next } from "koa";
import compress from "koa-compress";
import Negotiator from "negotiator";

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

/** The Koa middleware: koa-compress (gzip only, no streams), told not to compress when gzip is not accepted. */
export function compression(threshold: number) {
  const gzip = compress({
    threshold,
    filter: (type: string) => !/text\/event-stream/i.test(type) && /json|yaml|text|javascript/i.test(type),
    gzip: true,
    deflate: false,
    br: false,
    zstd: false,
  });
  return function compressResponse(ctx: Context, next: Next): Promise<void> {
    if (!acceptsGzip(ctx.get("accept-encoding"))) ctx.compress = false;
    return gzip(ctx, next);
  };
}
