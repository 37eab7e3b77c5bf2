// POST /mcp with the MCP SDK loaded on the endpoint's first call: a gateway OpenCode never calls back (or not yet)
// starts without the SDK and its schema libraries (src/server/app.ts builds it so).
import type { McpEndpoint } from "./endpoint.js";

/** The endpoint `load` builds, built on the first call; close() closes it only when it was built. */
export function lazyMcp(load: () => Promise<McpEndpoint>): Pick<McpEndpoint, "handle" | "close"> {
  let endpoint: Promise<McpEndpoint> | undefined;
  return {
    handle: async (ctx) => (await (endpoint ??= load())).handle(ctx),
    close: async () => {
      if (endpoint !== undefined) await (await endpoint).close();
    },
  };
}
