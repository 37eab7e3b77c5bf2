// `npm run generate`: spec/ → generated/. `npm run generate:check`: regenerate into a temp dir and fail when
// generated/ differs. Deterministic: the same spec gives the same bytes.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { stringify as toYaml } from "yaml";
import { buildCatalog, compileJsonSchema, compileOpenApi, methodFamilies, schemaGroups } from "./typespec.js";
import { writeValidators } from "./validators.js";
import { writeOpencodeClient } from "./clients.js";
import { writeMethodTypes, writeQuerySchemas } from "./contract.js";
import { writeSchemaTypes } from "./types.js";
import { decorateOpenApi } from "./openapi.js";
import { buildOpenRpcDocuments } from "./openrpc.js";

const root = path.resolve(import.meta.dirname, "../..");
const generatedDir = path.join(root, "generated");

export function writeJson(file: string, value: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(value, null, 2) + "\n");
}

async function generate(outRoot: string): Promise<void> {
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-gen-"));
  try {
    fs.rmSync(outRoot, { recursive: true, force: true });
    fs.mkdirSync(outRoot, { recursive: true });
    fs.writeFileSync(
      path.join(outRoot, "README.md"),
      "# generated/\n\nOutputs of `npm run generate` (spec/ → here). Never edit by hand; CI fails when this folder is stale.\n",
    );

    const program = await compileOpenApi(path.join(tmp, "openapi"));
    const catalog = buildCatalog(program);
    writeJson(path.join(outRoot, "contract", "catalog.json"), catalog);

    for (const group of Object.keys(schemaGroups)) {
      await compileJsonSchema(group, path.join(outRoot, "json-schema", group));
    }
    for (const e of catalog.extensions) {
      if (e.limits !== undefined && !fs.existsSync(path.join(outRoot, "json-schema", "extensions", `${e.limits}.json`)))
        throw new Error(`extension ${e.name}: limits model ${e.limits} is not a model of the extensions group`);
    }

    const raw = JSON.parse(fs.readFileSync(path.join(tmp, "openapi", "openapi.json"), "utf8")) as Record<string, unknown>;
    const openapi = await decorateOpenApi(raw, catalog);
    writeJson(path.join(outRoot, "openapi", "openapi.json"), openapi);
    fs.writeFileSync(path.join(outRoot, "openapi", "openapi.yaml"), toYaml(openapi, { lineWidth: 0, aliasDuplicateObjects: false }));

    const version = (openapi.info as { version: string }).version;
    for (const [line, doc] of Object.entries(buildOpenRpcDocuments(catalog, path.join(outRoot, "json-schema"), version)))
      writeJson(path.join(outRoot, "openrpc", `openrpc-${line}.json`), doc);

    const validators = writeValidators(path.join(outRoot, "json-schema"), Object.keys(schemaGroups), path.join(outRoot, "validators"));
    const types = await writeSchemaTypes(path.join(outRoot, "json-schema"), Object.keys(schemaGroups), path.join(outRoot, "types"));
    writeMethodTypes(catalog, methodFamilies(program), path.join(outRoot, "types", "methods.ts"));
    const queries = writeQuerySchemas(catalog, raw, path.join(outRoot, "types", "queries.ts"));

    const upstreamSpec = path.join(root, "spec", "upstream", "opencode.openapi.json");
    await writeOpencodeClient(upstreamSpec, path.join(outRoot, "opencode"));

    console.log(
      `generate: ${catalog.methods.length} JSON-RPC methods, ${catalog.routes.length} HTTP routes, ` +
        `${catalog.extensions.length} extensions, ${validators} validators, ${types} schema types, ${queries} query schemas → ` +
        `${path.relative(root, outRoot) || "."} ` +
        `(${Date.now() - started} ms)`,
    );
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function listFiles(dir: string, base = dir): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? listFiles(full, base) : [path.relative(base, full)];
  });
}

async function check(): Promise<number> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "opencode-a2a-check-"));
  try {
    await generate(path.join(tmp, "generated"));
    const fresh = new Set(listFiles(path.join(tmp, "generated")));
    const committed = new Set(listFiles(generatedDir));
    const problems: string[] = [];
    for (const f of fresh) {
      if (!committed.has(f)) problems.push(`missing: generated/${f}`);
      else if (!fs.readFileSync(path.join(tmp, "generated", f)).equals(fs.readFileSync(path.join(generatedDir, f))))
        problems.push(`stale:   generated/${f}`);
    }
    for (const f of committed) if (!fresh.has(f)) problems.push(`extra:   generated/${f}`);
    if (problems.length) {
      console.error(`generated/ is not what spec/ produces (${problems.length} files). Run \`npm run generate\`.`);
      for (const p of problems.slice(0, 40)) console.error(`  ${p}`);
      return 1;
    }
    console.log("generate:check: generated/ is up to date");
    return 0;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

const mode = process.argv[2];
try {
  if (mode === "--check") process.exitCode = await check();
  else await generate(generatedDir);
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
}
