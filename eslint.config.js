// Lint: ESLint's recommended JavaScript rules and typescript-eslint's recommended TypeScript rules everywhere, plus the
// type-aware promise rules on src/ and tools/ (a promise nobody awaits or handles is how an async server loses errors).
// `npm run lint`; CI runs it.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

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
    // Tests read loosely typed wire answers.
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
