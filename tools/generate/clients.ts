// The upstream OpenCode client (@hey-api/openapi-ts) from the snapshot of OpenCode's OpenAPI document.
import fs from "node:fs";
import { createClient } from "@hey-api/openapi-ts";

export async function writeOpencodeClient(upstreamSpec: string, outDir: string): Promise<void> {
  if (!fs.existsSync(upstreamSpec)) throw new Error(`missing ${upstreamSpec}: run \`npm run upstream:snapshot\``);
  await createClient({
    input: upstreamSpec,
    output: { path: outDir },
    plugins: ["@hey-api/client-fetch", "@hey-api/typescript", "@hey-api/sdk"],
    logs: { level: "silent" },
  });
}
