// Lint: ESLint's recommended JavaScript rules and typescript-eslint's recommended TypeScript rules everywhere, plus the
// type-aware promise rules on src/ and tools/ (a promise nobody awaits or handles is how an async server loses errors).
// `npm run lint`; CI runs it.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";
import { LAYERS, NO_HTTP, NO_WIRE } from "./tools/lint/layers.js";

// The folder rules of src/ (tools/lint/layers.js): a folder may import only the folders its entry lists, and the
// lists only reach down, so no folder cycle can form. test/unit/structure.test.ts also checks file and folder cycles.
const boundaryZones = Object.entries(LAYERS).flatMap(([folder, allowed]) =>
  Object.keys(LAYERS)
    .filter((other) => other !== folder && !allowed.includes(other))
    .map((other) => ({
      target: `./src/${folder}`,
      from: `./src/${other}`,
      message: `src/${folder} may import only: ${allowed.join(", ") || "(nothing in src/)"} (tools/lint/layers.js)`,
    })),
);

export default tseslint.config(
  { ignores: ["generated/**", "dist/**", "node_modules/**", "coverage/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      // Unused names are the compiler's job (noUnusedLocals / noUnusedParameters); `_`-prefixed ones are deliberate.
      "@typescript-eslint/no-unused-vars": "off",
    },
  },
  {
    files: ["src/**/*.ts", "tools/**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false } }],
      "@typescript-eslint/await-thenable": "error",
    },
  },
  {
    files: ["src/**/*.ts"],
    plugins: { "import-x": importX },
    settings: { "import-x/resolver-next": [createTypeScriptImportResolver({ project: "./tsconfig.json" })] },
    rules: { "import-x/no-restricted-paths": ["error", { zones: boundaryZones }] },
  },
  {
    // protocol/ is the wire model and its codecs: it knows nothing of HTTP.
    files: ["src/protocol/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { paths: NO_HTTP.map((name) => ({ name, message: "protocol/ knows no HTTP" })) }] },
  },
  {
    // The services (task runtime, bridge, stores) know no wire: no codec, no HTTP framework.
    files: NO_WIRE.map((folder) => `src/${folder}/**/*.ts`),
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: NO_HTTP.filter((name) => !name.startsWith("node:")).map((name) => ({ name, message: "services know no wire" })),
          patterns: [{ group: ["**/protocol/codec", "**/protocol/codec/*"], message: "services work on the internal model; codecs belong to the doors" }],
        },
      ],
    },
  },
  {
    // Tests read loosely typed wire answers.
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
