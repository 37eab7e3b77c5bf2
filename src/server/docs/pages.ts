// Server-rendered HTML of the docs pages. Every value that comes from the contract is escaped; method lists, params,
// results and errors come from the OpenRPC documents (themselves built from the catalog), never from a hand list.
import type { ProtocolLine } from "../../contract/catalog.js";
import type { JsonObject, OpenRpcDocument, OpenRpcError, OpenRpcMethod } from "../../discovery/openrpc.js";
import { assetUrl, swaggerUiVersion } from "./assets.js";

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Escaped text with Markdown code spans (`x`) shown as <code>. */
function prose(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, "<code>$1</code>");
}

function nav(current: "/docs" | "/docs/jsonrpc", lines: readonly ProtocolLine[]): string {
  const link = (href: string, label: string) =>
    `<a href="${escapeHtml(href)}"${href === current ? ' aria-current="page"' : ""}>${escapeHtml(label)}</a>`;
  return [
    '<header class="docs-nav"><strong>opencode-a2a</strong>',
    link("/docs", "HTTP API (OpenAPI)"),
    link("/docs/jsonrpc", "JSON-RPC methods"),
    link("/openapi.json", "openapi.json"),
    link("/openapi.yaml", "openapi.yaml"),
    ...lines.map((l) => link(`/openrpc.json?A2A-Version=${l}`, `openrpc.json (A2A ${l})`)),
    link("/schemas", "JSON Schemas"),
    link("/.well-known/agent-card.json", "agent card"),
    "</header>",
  ].join("\n");
}

function head(title: string, styles: string[]): string {
  return [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<link rel="icon" type="image/png" href="${escapeHtml(assetUrl("favicon-32x32.png"))}">`,
    ...styles.map((s) => `<link rel="stylesheet" href="${escapeHtml(assetUrl(s))}">`),
    "</head>",
  ].join("\n");
}

/** `/docs`: Swagger UI over /openapi.json (started by docs.js; no inline script). */
export function apiReferencePage(lines: readonly ProtocolLine[]): string {
  return [
    head("opencode-a2a API reference", ["swagger-ui.css", "docs.css"]),
    "<body>",
    nav("/docs", lines),
    `<div id="swagger-ui" data-url="/openapi.json" data-swagger-ui-version="${escapeHtml(swaggerUiVersion)}"></div>`,
    `<script src="${escapeHtml(assetUrl("swagger-ui-bundle.js"))}"></script>`,
    `<script src="${escapeHtml(assetUrl("docs.js"))}"></script>`,
    "</body>",
    "</html>",
    "",
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// /docs/jsonrpc

const SCHEMA_NAME = /\/schemas\/[^/]+\/([A-Za-z0-9_]+)\.json(?:#\/\$defs\/([A-Za-z0-9_]+))?$/;

/** A short type label of a JSON Schema, linking `$ref`s to the served schema documents. */
export function schemaLabel(schema: unknown): string {
  if (schema === null || typeof schema !== "object") return "any";
  const s = schema as JsonObject;
  if (typeof s.$ref === "string") {
    const m = SCHEMA_NAME.exec(s.$ref);
    const name = m ? (m[2] ?? m[1]!) : s.$ref;
    return `<a href="${escapeHtml(s.$ref)}"><code>${escapeHtml(name)}</code></a>`;
  }
  for (const key of ["oneOf", "anyOf"] as const)
    if (Array.isArray(s[key])) return (s[key] as unknown[]).map(schemaLabel).join(" | ");
  if (s.const !== undefined) return `<code>${escapeHtml(JSON.stringify(s.const))}</code>`;
  if (Array.isArray(s.enum)) return s.enum.map((v) => `<code>${escapeHtml(JSON.stringify(v))}</code>`).join(" | ");
  if (s.type === "array") return `${schemaLabel(s.items)}[]`;
  if (typeof s.type === "string") return `<code>${escapeHtml(s.type)}${typeof s.format === "string" ? ` (${escapeHtml(s.format)})` : ""}</code>`;
  if (Array.isArray(s.type)) return s.type.map((t) => `<code>${escapeHtml(t)}</code>`).join(" | ");
  return "<code>object</code>";
}

function errorOf(doc: OpenRpcDocument, ref: string): [string, OpenRpcError | undefined] {
  const reason = ref.replace(/^#\/components\/errors\//, "");
  return [reason, doc.components.errors[reason]];
}

function badges(m: OpenRpcMethod): string {
  const out = [`<span class="badge">scope <code>${escapeHtml(m["x-scope"] ?? "none")}</code></span>`];
  const availability = m["x-availability"];
  if (availability)
    out.push(
      `<span class="badge ${escapeHtml(availability)}" data-availability="${escapeHtml(availability)}">${escapeHtml(availability)}${
        availability === "disabled" && m["x-toggle"] ? ` (${escapeHtml(m["x-toggle"])}=false)` : ""
      }</span>`,
    );
  if (m["x-toggle"]) out.push(`<span class="badge">toggle <code>${escapeHtml(m["x-toggle"])}</code></span>`);
  if (m["x-streaming"]) out.push('<span class="badge streaming">streaming (SSE)</span>');
  if (m["x-pending"]) out.push(`<span class="badge not-implemented">pending: ${escapeHtml(m["x-pending"])}</span>`);
  return `<div class="badges">${out.join("")}</div>`;
}

/** One method; `docs` are the documents it appears in (one line for core methods, both for extension methods). */
function methodSection(m: OpenRpcMethod, docs: OpenRpcDocument[]): string {
  const params = m.params.length
    ? [
        "<table><thead><tr><th>name</th><th>type</th><th>required</th><th>description</th></tr></thead><tbody>",
        ...m.params.map(
          (p) =>
            `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${schemaLabel(p.schema)}</td><td>${p.required ? "yes" : "no"}</td><td>${prose(p.description ?? "")}</td></tr>`,
        ),
        "</tbody></table>",
      ].join("\n")
    : '<p class="none">no params (an empty object or none)</p>';
  const errors = m.errors.length
    ? [
        `<table><thead><tr><th>code${docs.length > 1 ? ` (${docs.map((d) => escapeHtml(d["x-a2a-protocol-version"])).join(" / ")})` : ""}</th><th>reason</th><th>message</th></tr></thead><tbody>`,
        ...m.errors.map((e) => {
          const [reason, first] = errorOf(docs[0]!, e.$ref);
          const codes = [...new Set(docs.map((d) => errorOf(d, e.$ref)[1]?.code))].map((c) => escapeHtml(c ?? "?")).join(" / ");
          return `<tr><td>${codes}</td><td><code>${escapeHtml(reason)}</code></td><td>${escapeHtml(first?.message ?? "")}</td></tr>`;
        }),
        "</tbody></table>",
      ].join("\n")
    : '<p class="none">only the JSON-RPC envelope errors</p>';
  return [
    `<article class="method" id="${escapeHtml(`method-${m.name}`)}" data-method="${escapeHtml(m.name)}">`,
    `<h3><code>${escapeHtml(m.name)}</code></h3>`,
    badges(m),
    m.description ? `<p>${prose(m.description)}</p>` : "",
    `<h4>Params</h4>`,
    `<p>by name; schema <a href="${escapeHtml(m["x-params-schema"])}"><code>${escapeHtml(m["x-params-schema"])}</code></a></p>`,
    params,
    `<h4>Result</h4>`,
    `<p>${schemaLabel(m.result.schema)}${m.result.description ? ` — ${prose(m.result.description)}` : ""}</p>`,
    `<h4>Errors</h4>`,
    errors,
    "</article>",
  ].join("\n");
}

const anchor = (id: string, label: string) => `<a href="#${escapeHtml(id)}">${label}</a>`;

/** `/docs/jsonrpc`: the core methods of each line, then the extension methods (served on both lines), by extension. */
export function jsonRpcPage(docs: OpenRpcDocument[], endpoint: string): string {
  const lines = docs.map((d) => d["x-a2a-protocol-version"]);
  const coreSections = [...docs].reverse().map((doc) => ({
    id: `core-${doc["x-a2a-protocol-version"]}`,
    title: `A2A ${doc["x-a2a-protocol-version"]} core methods`,
    methods: doc.methods.filter((m) => m["x-surface"] === "core"),
    docs: [doc],
  }));
  // Extension methods are the same on both lines; group them by extension (the method's tag).
  const groups = new Map<string, { uri: string; methods: OpenRpcMethod[] }>();
  for (const m of docs[0]?.methods ?? []) {
    if (m["x-surface"] !== "extension") continue;
    const tag = m.tags?.[0];
    const key = tag?.name ?? "extension";
    const group = groups.get(key) ?? { uri: m["x-extension-uri"] ?? tag?.description ?? "", methods: [] };
    group.methods.push(m);
    groups.set(key, group);
  }
  const extensionDocs = (name: string) => docs.filter((d) => d.methods.some((m) => m.name === name));
  const toc = [
    '<nav class="toc" aria-label="methods">',
    ...coreSections.map((s) => `<div>${anchor(s.id, escapeHtml(s.title))}<ul>${s.methods.map((m) => `<li>${anchor(`method-${m.name}`, `<code>${escapeHtml(m.name)}</code>`)}</li>`).join("")}</ul></div>`),
    ...[...groups].map(([name, g], i) => `<div>${anchor(`ext-${i}`, escapeHtml(name))}<ul>${g.methods.map((m) => `<li>${anchor(`method-${m.name}`, `<code>${escapeHtml(m.name)}</code>`)}</li>`).join("")}</ul></div>`),
    "</nav>",
  ].join("\n");
  return [
    head("opencode-a2a JSON-RPC methods", ["docs.css"]),
    "<body>",
    nav("/docs/jsonrpc", lines),
    '<main class="rpc">',
    "<h1>JSON-RPC methods</h1>",
    `<p>JSON-RPC 2.0 on <code>POST ${escapeHtml(endpoint)}/</code>. The line follows <code>A2A-Version</code> (header or <code>?A2A-Version=</code>): ` +
      "0.3 uses slash names, 1.0 PascalCase names; extension methods are served on both lines. Params are by name. Every method can also answer the " +
      "JSON-RPC envelope errors (parse error, invalid request, method not found, invalid params, version not supported). " +
      `Machine-readable: ${lines.map((l) => `<a href="/openrpc.json?A2A-Version=${escapeHtml(l)}">openrpc.json (A2A ${escapeHtml(l)})</a>`).join(", ")}.</p>`,
    toc,
    ...coreSections.map((s) => [`<section id="${escapeHtml(s.id)}">`, `<h2>${escapeHtml(s.title)}</h2>`, ...s.methods.map((m) => methodSection(m, s.docs)), "</section>"].join("\n")),
    '<section id="extensions">',
    "<h2>Extension methods (both lines)</h2>",
    ...[...groups].map(([name, g], i) =>
      [
        `<section id="ext-${i}">`,
        `<h3>${escapeHtml(name)}</h3>`,
        `<p class="ext-uri">${escapeHtml(g.uri)}</p>`,
        ...g.methods.map((m) => methodSection(m, extensionDocs(m.name))),
        "</section>",
      ].join("\n"),
    ),
    "</section>",
    "</main>",
    "</body>",
    "</html>",
    "",
  ].join("\n");
}
