// The upstream OpenCode client (@hey-api/openapi-ts) from the snapshot of OpenCode's OpenAPI document.
import fs from "node:fs";
import { createClient } from "@hey-api/openapi-ts";

export async function writeOpencodeClient(upstreamSpec: string, outDir: string): Promise<void> {
  if (!fs.existsSync(upstreamSpec)) throw new Error(`missing ${upstreamSpec}: run \`npm run upstream:snapshot\``);
  await createClient({
    input: upstreamSpec,
    output: { path: outDir },
    // No default client instance in sdk.gen.ts: every call passes its client, and none is built (nor WHATWG Headers
    // loaded, ~20 ms of start-up) when the module loads.
    plugins: ["@hey-api/client-fetch", "@hey-api/typescript", { name: "@hey-api/sdk", client: false }],
    logs: { level: "silent" },
  });
}
