// The docs pages' own script and stylesheet, served as /docs/assets/docs.js and /docs/assets/docs.css (files, not
// inline, so the pages' Content-Security-Policy needs no 'unsafe-inline' for scripts).

/** Starts Swagger UI on #swagger-ui with the document URL from its data-url attribute. */
export const DOCS_JS = `"use strict";
(function () {
  var root = document.getElementById("swagger-ui");
  if (!root || typeof SwaggerUIBundle !== "function") return;
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-url"),
    dom_id: "#swagger-ui",
    deepLinking: true,
    displayOperationId: true,
    displayRequestDuration: true,
    filter: true,
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
    validatorUrl: null,
    withCredentials: false,
    presets: [SwaggerUIBundle.presets.apis],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "BaseLayout"
  });
})();
`;

export const DOCS_CSS = `:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg-soft: #f6f8fa; --accent: #0969da; }
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); }
.docs-nav { display: flex; flex-wrap: wrap; gap: 0.4rem 1.2rem; align-items: baseline; padding: 0.7rem 1.5rem;
  background: #1b1f24; color: #fff; font-size: 0.95rem; }
.docs-nav strong { font-size: 1.05rem; margin-right: 0.8rem; }
.docs-nav a { color: #9cd1ff; text-decoration: none; }
.docs-nav a:hover, .docs-nav a[aria-current="page"] { color: #fff; text-decoration: underline; }
.rpc { max-width: 1100px; margin: 0 auto; padding: 1rem 1.5rem 4rem; line-height: 1.5; }
.rpc h1 { margin-top: 0.5rem; }
.rpc h2 { border-bottom: 1px solid var(--line); padding-bottom: 0.3rem; margin-top: 2.5rem; }
.rpc code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em;
  background: var(--bg-soft); padding: 0.1em 0.3em; border-radius: 4px; }
.rpc .toc { columns: 3 16rem; font-size: 0.9rem; }
.rpc .toc ul { margin: 0.2rem 0 0.8rem; padding-left: 1.1rem; }
.rpc .ext-uri { color: var(--muted); font-size: 0.85rem; word-break: break-all; }
.method { border: 1px solid var(--line); border-radius: 8px; padding: 0.6rem 1rem 0.8rem; margin: 1rem 0; }
.method h3 { margin: 0.2rem 0 0.4rem; font-size: 1.1rem; }
.method h3 code { background: none; padding: 0; font-size: 1.05rem; }
.method h4 { margin: 0.8rem 0 0.3rem; font-size: 0.9rem; text-transform: uppercase; letter-spacing: 0.04em; color: var(--muted); }
.badges { display: flex; flex-wrap: wrap; gap: 0.4rem; margin: 0.2rem 0 0.4rem; }
.badge { font-size: 0.78rem; border: 1px solid var(--line); border-radius: 999px; padding: 0.05rem 0.55rem; background: var(--bg-soft); }
.badge.available { border-color: #1a7f37; color: #1a7f37; }
.badge.disabled, .badge.not-implemented { border-color: #cf222e; color: #cf222e; }
.badge.streaming { border-color: #8250df; color: #8250df; }
.rpc table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
.rpc th, .rpc td { text-align: left; vertical-align: top; border-bottom: 1px solid var(--line); padding: 0.3rem 0.5rem; }
.rpc th { background: var(--bg-soft); }
.rpc .none { color: var(--muted); font-style: italic; }
.rpc a { color: var(--accent); }
`;
