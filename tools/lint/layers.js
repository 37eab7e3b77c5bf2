// The layers of src/: each folder with the folders it may import (`generated/` and packages are not listed). Read
// bottom-up: every list names only folders above it in this table, so the folder graph cannot have a cycle.
// eslint.config.js turns the table into import-x/no-restricted-paths zones; test/unit/structure.test.ts checks it
// and the real import graph (no file cycle, no folder cycle, every folder listed).
export const LAYERS = {
  util: [],
  contract: ["util"],
  protocol: ["contract", "util"],
  config: ["contract", "util"],
  logging: ["config", "util"],
  tracing: ["util"],
  storage: ["config", "contract", "protocol", "util"],
  auth: ["config", "contract", "storage", "util"],
  cluster: ["auth", "config", "contract", "storage", "util"],
  observability: ["config", "contract", "logging", "storage", "tracing", "util"],
  upstream: ["config", "contract", "logging", "observability", "tracing", "util"],
  client: ["config", "contract", "util"],
  bridge: ["auth", "config", "contract", "protocol", "tracing", "upstream", "util"],
  runtime: ["auth", "bridge", "cluster", "config", "contract", "observability", "protocol", "storage", "tracing", "upstream", "util"],
  push: ["auth", "config", "contract", "observability", "protocol", "runtime", "storage", "tracing", "util"],
  operations: ["auth", "contract", "protocol", "push", "runtime", "tracing", "util"],
  subtasks: ["auth", "bridge", "config", "contract", "observability", "protocol", "runtime", "storage", "tracing", "upstream", "util"],
  messages: ["auth", "bridge", "config", "contract", "protocol", "storage", "upstream", "util"],
  governance: ["auth", "bridge", "config", "contract", "observability", "protocol", "runtime", "storage", "tracing", "upstream", "util"],
  extensions: ["auth", "bridge", "cluster", "config", "contract", "governance", "messages", "observability", "operations", "protocol", "runtime", "storage", "subtasks", "tracing", "upstream", "util"],
  discovery: ["auth", "config", "contract", "protocol", "util"],
  pipeline: ["auth", "config", "contract", "logging", "observability", "protocol", "tracing", "util"],
  mcp: ["auth", "bridge", "client", "config", "contract", "messages", "observability", "pipeline", "protocol", "upstream", "util"],
  transport: ["auth", "contract", "discovery", "logging", "observability", "operations", "pipeline", "protocol", "tracing", "util"],
  server: ["auth", "bridge", "cluster", "config", "contract", "discovery", "extensions", "governance", "logging", "mcp", "messages", "observability", "operations", "pipeline", "protocol", "push", "runtime", "storage", "subtasks", "tracing", "transport", "upstream", "util"],
  cli: ["auth", "client", "config", "contract", "logging", "server", "storage", "upstream", "util"],
};

/** HTTP frameworks and servers: protocol/ may import none of them, the services none of the frameworks. */
export const NO_HTTP = ["koa", "@koa/router", "koa-compress", "node:http", "node:https", "node:http2"];

/** The service folders: they work on the internal model and never see a wire shape. */
export const NO_WIRE = ["runtime", "bridge", "storage"];
