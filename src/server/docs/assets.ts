// Static files of the docs pages: the Swagger UI bundle and stylesheet from the `swagger-ui-dist` package (served by
// the gateway itself: no CDN, nothing fetched from elsewhere) and the pages' own script and stylesheet. Each file is
// read once, on first request, and served with a strong ETag.
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { DOCS_CSS, DOCS_JS } from "./static.js";

export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

/** The Swagger UI version the page is built with (shown on the page, part of the asset URLs' cache key). */
export const swaggerUiVersion = (JSON.parse(fs.readFileSync(path.join(swaggerDir, "package.json"), "utf8")) as { version: string }).version;

type Source = { file: string; type: string } | { text: string; type: string };

/** Every file `/docs/assets/{name}` serves; any other name is a 404. */
const SOURCES: Record<string, Source> = {
  "swagger-ui-bundle.js": { file: path.join(swaggerDir, "swagger-ui-bundle.js"), type: "application/javascript; charset=utf-8" },
  "swagger-ui.css": { file: path.join(swaggerDir, "swagger-ui.css"), type: "text/css; charset=utf-8" },
  "favicon-32x32.png": { file: path.join(swaggerDir, "favicon-32x32.png"), type: "image/png" },
  "docs.js": { text: DOCS_JS, type: "application/javascript; charset=utf-8" },
  "docs.css": { text: DOCS_CSS, type: "text/css; charset=utf-8" },
};

const loaded = new Map<string, Asset>();

export function docsAsset(name: string): Asset | undefined {
  if (!Object.hasOwn(SOURCES, name)) return undefined;
  let asset = loaded.get(name);
  if (!asset) {
    const source = SOURCES[name]!;
    const body = "file" in source ? fs.readFileSync(source.file) : Buffer.from(source.text, "utf8");
    asset = { body, type: source.type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 32)}"` };
    loaded.set(name, asset);
  }
  return asset;
}

/** The URL of an asset, with a version query so a new package version is never served from a stale cache. */
export function assetUrl(name: string): string {
  const asset = docsAsset(name);
  return `/docs/assets/${name}?v=${asset ? asset.etag.slice(1, 13) : swaggerUiVersion}`;
}
