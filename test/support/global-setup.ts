// vitest globalSetup: runs once before any test file, so parallel files never rebuild dist/ at the same time.
import { ensureBuilt } from "./build.js";

export default function setup(): void {
  ensureBuilt();
}
