/**
 * The instance-wide routes: health, the commands and agents the pinned OpenCode ships, its provider catalog (the
 * stub's one fake model), and `GET /doc` (the pinned snapshot itself, which the real server serves outside its own
 * document).
 */
import { RESPONDED, type Router } from "../openapi.js";
import type { Parts } from "./index.js";

/** The commands of `GET /command` (1.18.33 ships `init` and the sub-agent command `review`). */
export const COMMANDS: { name: string; description: string; template: string; subtask?: boolean }[] = [
  { name: "init", description: "guided AGENTS.md setup", template: "Create or update `AGENTS.md` for this repository.\n\nUser-provided focus or constraints (honor these):\n$ARGUMENTS" },
  { name: "review", description: "review changes [commit|branch|pr], defaults to uncommitted", template: "Review the code changes.\n\n$ARGUMENTS", subtask: true },
];

/** The agents of `GET /agent`: [name, mode]. */
export const AGENTS: [string, string][] = [
  ["build", "primary"],
  ["compaction", "primary"],
  ["explore", "subagent"],
  ["general", "subagent"],
  ["plan", "primary"],
  ["summary", "primary"],
  ["title", "primary"],
];

/** `GET /provider`: the one provider and model the stub answers as (`fake/fake-model`, like the hermetic config's). */
export const PROVIDERS = {
  all: [
    {
      id: "fake",
      name: "Fake",
      source: "config",
      env: [],
      options: {},
      models: { "fake-model": { id: "fake-model", providerID: "fake", name: "Fake model", limit: { context: 1000, output: 100 }, capabilities: { reasoning: false, toolcall: true, attachment: false } } },
    },
  ],
  default: { fake: "fake-model" },
  connected: ["fake"],
};

export function appRoutes(router: Router, { state }: Parts, doc: string): void {
  router.on("global.health", () => ({ healthy: true, version: state.version }));
  router.on("command.list", () =>
    COMMANDS.map(({ name, description, template, subtask }) => ({ name, description, source: "command", template, hints: ["$ARGUMENTS"], ...(subtask ? { subtask } : {}) })),
  );
  router.on("app.agents", () => AGENTS.map(([name, mode]) => ({ name, mode, native: true, permission: [], options: {} })));
  router.on("provider.list", () => PROVIDERS);
  router.extra("GET", "/doc", ({ res }) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(doc), vary: "Origin" });
    res.end(doc);
    return RESPONDED;
  });
}
