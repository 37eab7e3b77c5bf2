// The docs surface over HTTP: /openrpc.json per line (header, query, default line, unsupported version), /docs (Swagger
// UI page, its CSP, its files from node_modules with content types, caching and 304) and /docs/jsonrpc (every
// catalog method of both lines, rendered and escaped), all public.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStubUpstream } from "../../tools/upstream/stub.js";
import { binPath } from "../support/build.js";
import { PROTOCOL_LINES } from "../../src/contract/catalog.js";
import type { OpenRpcDocument } from "../../src/discovery/openrpc.js";
import { escapeHtml, jsonRpcPage } from "../../src/server/docs/pages.js";
import { call, startGateway, type StartedGateway } from "../support/gateway.js";
import { catalog, expectRestError } from "../support/contract.js";

let gw: StartedGateway;
let def10: StartedGateway;
let mutations: StartedGateway;
beforeAll(async () => {
  [gw, def10, mutations] = await Promise.all([
    startGateway(),
    startGateway({ A2A_DEFAULT_PROTOCOL_VERSION: "1.0" }),
    startGateway({ A2A_ENABLE_WORKSPACE_MUTATIONS: "true" }),
  ]);
});
afterAll(async () => {
  await Promise.all([gw?.close(), def10?.close(), mutations?.close()]);
});

describe("/openrpc.json", () => {
  it("is public and selects the line by header or query; absent → the default line", async () => {
    for (const line of PROTOCOL_LINES) {
      const byHeader = await call(gw.url, "/openrpc.json", { auth: false, headers: { "A2A-Version": line } });
      expect(byHeader.status).toBe(200);
      expect(byHeader.headers.get("content-type")).toMatch(/^application\/json/);
      expect(byHeader.body["x-a2a-protocol-version"]).toBe(line);
      const byQuery = await call(gw.url, `/openrpc.json?A2A-Version=${line}`, { auth: false });
      expect(byQuery.body).toEqual(byHeader.body);
      // Core method names tell the lines apart.
      const names = (byHeader.body as OpenRpcDocument).methods.map((m) => m.name);
      expect(names).toContain(line === "0.3" ? "message/send" : "SendMessage");
      expect(names).not.toContain(line === "0.3" ? "SendMessage" : "message/send");
    }
    expect((await call(gw.url, "/openrpc.json", { auth: false })).body["x-a2a-protocol-version"]).toBe("0.3");
    const dflt = await call(def10.url, "/openrpc.json", { auth: false });
    expect(dflt.body["x-a2a-protocol-version"]).toBe("1.0");
    expect(dflt.body["x-default-protocol-version"]).toBe("1.0");
    expect(dflt.headers.get("vary") ?? "").toMatch(/a2a-version/i);
  });

  it("an unsupported A2A-Version is refused with VERSION_NOT_SUPPORTED", async () => {
    await expectRestError(await call(gw.url, "/openrpc.json?A2A-Version=2.0", { auth: false }), "0.3", "VERSION_NOT_SUPPORTED", 400);
    await expectRestError(await call(def10.url, "/openrpc.json", { auth: false, headers: { "A2A-Version": "9.9" } }), "1.0", "VERSION_NOT_SUPPORTED", 400);
  });
});

describe("/docs (Swagger UI)", () => {
  it("is public HTML with a strict CSP that loads only files of this gateway", async () => {
    const res = await call(gw.url, "/docs", { auth: false });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toMatch(/unsafe-eval|unsafe-inline|https?:\/\/(?!127\.0\.0\.1)/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.text).not.toMatch(/<script>(?!<\/script>)|<script [^>]*>[^<]/); // no inline script
    const urls = [...res.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, "&"));
    expect(urls.every((u) => u.startsWith("/")), urls.join(" ")).toBe(true);
    expect(urls.some((u) => u.startsWith("/docs/assets/swagger-ui-bundle.js"))).toBe(true);
    expect(res.text).toContain('data-url="/openapi.json"');
    expect(res.text).toContain('href="/docs/jsonrpc"');
  });

  it("serves every file the page links, with its content type, a long cache for the versioned URL, and 304", async () => {
    const page = await call(gw.url, "/docs", { auth: false });
    const assets = [...page.text.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(4);
    const types: Record<string, RegExp> = { js: /^application\/javascript/, css: /^text\/css/, png: /^image\/png/ };
    for (const url of assets) {
      const res = await fetch(`${gw.url}${url}`);
      const body = Buffer.from(await res.arrayBuffer());
      expect(res.status, url).toBe(200);
      expect(body.length, url).toBeGreaterThan(0);
      expect(res.headers.get("content-type"), url).toMatch(types[url.replace(/\?.*$/, "").split(".").pop()!]!);
      expect(res.headers.get("cache-control"), url).toBe("public, max-age=31536000, immutable");
      const etag = res.headers.get("etag")!;
      expect(etag).toMatch(/^"[^"]+"$/);
      const again = await fetch(`${gw.url}${url}`, { headers: { "If-None-Match": etag } });
      expect(again.status, url).toBe(304);
    }
    const bundle = await fetch(`${gw.url}/docs/assets/swagger-ui-bundle.js`);
    expect(bundle.headers.get("cache-control"), "an unversioned URL is cached briefly").toBe("public, max-age=300");
    expect(await bundle.text()).toContain("SwaggerUIBundle");
  });

  it("unknown asset names are 404, and nothing outside the list is reachable", async () => {
    for (const path of ["/docs/assets/nope.js", "/docs/assets/package.json", "/docs/assets/..%2Fpackage.json", "/docs/assets/index.html", "/docs/assets/toString"]) {
      const res = await call(gw.url, path, { auth: false });
      expect(res.status, path).toBe(404);
    }
  });

  it("the assets are gzipped when the client accepts it", async () => {
    const res = await fetch(`${gw.url}/docs/assets/swagger-ui-bundle.js`, { headers: { "accept-encoding": "gzip" } });
    expect(res.headers.get("content-encoding")).toBe("gzip");
  });
});

describe("/docs/jsonrpc", () => {
  it("lists every JSON-RPC method of both lines with its scope, and the extension methods once", async () => {
    const res = await call(gw.url, "/docs/jsonrpc", { auth: false });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
    expect(res.headers.get("content-security-policy")).not.toMatch(/script-src/); // the page has no script at all
    expect(res.text).not.toContain("<script");
    const rendered = [...res.text.matchAll(/data-method="([^"]+)"/g)].map((m) => m[1]!);
    expect(rendered.sort()).toEqual(catalog.methods.map((m) => escapeHtml(m.name)).sort());
    for (const m of catalog.methods) {
      const article = res.text.slice(res.text.indexOf(`data-method="${escapeHtml(m.name)}"`)).split("</article>")[0]!;
      if (m.scope) expect(article, m.name).toContain(`scope <code>${escapeHtml(m.scope)}</code>`);
      for (const reason of m.errors) expect(article, `${m.name} ${reason}`).toContain(`<code>${reason}</code>`);
    }
    expect(res.text).toContain('href="/schemas/v1_0/SendMessageRequest.json"');
  });

  it("marks the methods a toggle disables in this deployment", async () => {
    const toggled = catalog.methods.filter((m) => m.toggle === "A2A_ENABLE_WORKSPACE_MUTATIONS");
    expect(toggled.length).toBeGreaterThan(0);
    const availability = async (url: string, name: string) => {
      const text = (await call(url, "/docs/jsonrpc", { auth: false })).text;
      return /data-availability="([^"]+)"/.exec(text.slice(text.indexOf(`data-method="${name}"`)))![1];
    };
    for (const m of toggled) {
      expect(await availability(gw.url, m.name), m.name).toBe("disabled");
      expect(await availability(mutations.url, m.name), m.name).toBe("available");
    }
  });

  it("escapes what it renders", () => {
    const hostile = "<script>alert(1)</script>";
    const doc: OpenRpcDocument = {
      openrpc: "1.3.2",
      info: { title: "t", version: "1", description: "d" },
      methods: [
        {
          name: `x.${hostile}`,
          description: `says \`${hostile}\` & "quotes"`,
          tags: [{ name: hostile, description: hostile }],
          paramStructure: "by-name",
          params: [{ name: hostile, required: true, description: hostile, schema: { $ref: `/schemas/v1_0/A.json"><img src=x onerror=alert(1)>` } }],
          result: { name: "r", schema: { enum: [hostile] } },
          errors: [{ $ref: `#/components/errors/${hostile}` }],
          "x-line": null,
          "x-surface": "extension",
          "x-scope": hostile,
          "x-params-schema": hostile,
          "x-streaming": false,
          "x-availability": "available",
        },
      ],
      components: { errors: { [hostile]: { code: -32000, message: hostile } } },
      "x-a2a-protocol-version": "1.0",
    };
    const html = jsonRpcPage([doc], "http://127.0.0.1:1");
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<img");
    expect(html).toContain("&#60;script&#62;alert(1)&#60;/script&#62;");
  });
});

describe("the startup log line", () => {
  it("names the card, docs, OpenRPC, health and metrics URLs", async () => {
    const stub = await startStubUpstream();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-docs-log-"));
    const child = spawn(process.execPath, [binPath, "serve"], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        A2A_BEARER_TOKEN: "docs-log-token-123456",
        A2A_PORT: "0",
        A2A_LOG_LEVEL: "info",
        OPENCODE_BASE_URL: stub.url,
        A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(dir, "tasks.db")}`,
      },
      stdio: ["ignore", "ignore", "pipe"], // the log goes to stderr
    });
    try {
      const line = await new Promise<Record<string, string>>((resolve, reject) => {
        let out = "";
        const timer = setTimeout(() => reject(new Error(`no listening log line within 20 s: ${out}`)), 20_000);
        child.stderr.on("data", (c: Buffer) => {
          out += c.toString();
          for (const l of out.split("\n").slice(0, -1)) {
            if (!l.startsWith("{")) continue; // complete JSON lines only
            const entry = JSON.parse(l) as Record<string, string>;
            if (entry.msg === "opencode-a2a listening") {
              clearTimeout(timer);
              resolve(entry);
            }
          }
        });
      });
      const url = line.url!;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(line).toMatchObject({
        card: `${url}/.well-known/agent-card.json`,
        docs: `${url}/docs`,
        openrpc: `${url}/openrpc.json`,
        health: `${url}/health`,
        metrics: `${url}/metrics`,
      });
      // The URLs it prints answer.
      expect((await fetch(line.docs!)).status).toBe(200);
      expect((await fetch(line.openrpc!)).status).toBe(200);
    } finally {
      const exited = new Promise((resolve) => child.on("close", resolve));
      child.kill("SIGTERM");
      await exited;
      await stub.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 40_000);
});
