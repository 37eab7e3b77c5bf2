/** The file routes: `GET /file/content` shows what the stub's write/edit tools left in a file. */
import { resolve } from "node:path";
import type { Router } from "../openapi.js";
import type { Parts } from "./index.js";

export function fileRoutes(router: Router, { state }: Parts): void {
  // The real server reads the file in the instance's directory; the stub knows what its tools wrote.
  router.on("file.read", ({ query, directory }) => ({ type: "text", content: state.files.get(resolve(directory, query.path ?? "")) ?? "" }));
}
