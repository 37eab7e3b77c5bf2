// Request bodies: size limit (413, checked on Content-Length and on the bytes actually read) and media type (415)
// before any routing; the raw bytes are kept on ctx.state.rawBody.
import type { Context, Next } from "koa";
import { A2AError } from "../../contract/errors.js";
import type { RequestState } from "../state.js";

const JSON_TYPES = /^application\/(json|a2a\+json|[\w.-]+\+json)$/i;

function tooLarge(limit: number): A2AError {
  return new A2AError("PAYLOAD_TOO_LARGE", `Request body exceeds ${limit} bytes`, { limit_bytes: limit });
}

function readLimited(ctx: Context, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = ctx.req;
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      // Stop reading (nothing more is buffered) and answer 413; the connection closes after the response.
      cleanup();
      req.pause();
      ctx.set("Connection", "close");
      reject(tooLarge(limit));
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

export function requestBody(limit: number) {
  return async function body(ctx: Context, next: Next): Promise<void> {
    if (!["POST", "PUT", "PATCH", "DELETE"].includes(ctx.method)) return next();
    const declared = Number(ctx.get("content-length") || "NaN");
    if (Number.isFinite(declared) && declared > limit) {
      ctx.set("Connection", "close");
      throw tooLarge(limit);
    }
    const raw = await readLimited(ctx, limit);
    if (raw.length > 0) {
      const type = (ctx.get("content-type").split(";")[0] ?? "").trim();
      if (!JSON_TYPES.test(type))
        throw new A2AError(
          "CONTENT_TYPE_NOT_SUPPORTED",
          `Request bodies must be JSON (application/json), not ${JSON.stringify(type || "(none)")}`,
          { content_type: type || null, supported: ["application/json", "application/a2a+json"] },
          { httpStatus: 415 },
        );
    }
    (ctx.state as RequestState).rawBody = raw;
    await next();
  };
}
