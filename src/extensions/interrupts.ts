// Extension family: interrupts (filled in by issue 5).
import type { MethodHandler } from "../operations/index.js";
import type { ExtensionDeps } from "./context.js";

export function handlers(_deps: ExtensionDeps): Record<string, MethodHandler> {
  return {};
}
