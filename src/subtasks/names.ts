// What OpenCode knows by name, read once per call and routing: its agents (`GET /agent`), commands (`GET /command`)
// and models (`GET /provider`). The checks of a subtask item against them; an upstream failure is the item's failure.
import * as sdk from "../../generated/opencode/sdk.gen.js";
import { routingKey, type Routing } from "../bridge/directory.js";
import type { UpstreamClient } from "../upstream/client.js";
import { isObject } from "../util/object.js";

const named = (list: unknown): Set<string> =>
  new Set(Array.isArray(list) ? list.flatMap((x) => (isObject(x) && typeof x.name === "string" ? [x.name] : [])) : []);

const isList = (d: unknown): boolean => Array.isArray(d);
const isCatalog = (d: unknown): boolean => isObject(d) && Array.isArray(d.all);

/** Reads each list at most once per routing (one instance of this per call). */
export class NameLookup {
  readonly #lists = new Map<string, Promise<unknown>>();

  constructor(private readonly upstream: UpstreamClient) {}

  #read(kind: "agents" | "commands" | "models", routing: Routing): Promise<unknown> {
    const key = `${kind} ${routingKey(routing)}`;
    let list = this.#lists.get(key);
    if (list === undefined) {
      list =
        kind === "agents"
          ? this.upstream.call("appAgents", (c) => sdk.appAgents({ ...c }), { ...routing, validate: isList })
          : kind === "commands"
            ? this.upstream.call("commandList", (c) => sdk.commandList({ ...c }), { ...routing, validate: isList })
            : this.upstream.call("providerList", (c) => sdk.providerList({ ...c }), { ...routing, validate: isCatalog });
      this.#lists.set(key, list);
    }
    return list;
  }

  /** The agent OpenCode lists under `name` (GET /agent), if any. */
  async agent(name: string, routing: Routing): Promise<Record<string, unknown> | undefined> {
    const list = (await this.#read("agents", routing)) as unknown[];
    return list.find((a): a is Record<string, unknown> => isObject(a) && a.name === name);
  }

  async hasCommand(name: string, routing: Routing): Promise<boolean> {
    return named(await this.#read("commands", routing)).has(name);
  }

  /** Whether OpenCode lists the model under the provider (its key in the provider's `models`, or its `id`). */
  async hasModel(providerID: string, modelID: string, routing: Routing): Promise<boolean> {
    const catalog = (await this.#read("models", routing)) as { all: unknown[] };
    const provider = catalog.all.find((p) => isObject(p) && p.id === providerID);
    if (!isObject(provider) || !isObject(provider.models)) return false;
    return Object.entries(provider.models).some(([key, m]) => key === modelID || (isObject(m) && m.id === modelID));
  }
}

type Rule = { permission: string; pattern: string; action: "allow" | "deny" | "ask" };
const isRule = (r: unknown): r is Rule => isObject(r) && typeof r.permission === "string" && typeof r.pattern === "string" && typeof r.action === "string";

/**
 * The permission rules of a subagent's child session, as OpenCode's task tool sets them: the parent session's
 * `external_directory` rules and all its denials, then `todowrite` and `task` denied unless the agent's own rules
 * name them (so a subtask neither keeps a to-do list nor starts subagents of its own).
 */
export function childPermission(parentRules: unknown, agent: Record<string, unknown>): Rule[] {
  const inherited = (Array.isArray(parentRules) ? parentRules : []).filter(isRule).filter((r) => r.permission === "external_directory" || r.action === "deny");
  const own = (Array.isArray(agent.permission) ? agent.permission : []).filter(isRule);
  const denied = ["todowrite", "task"].filter((p) => !own.some((r) => r.permission === p)).map((permission) => ({ permission, pattern: "*", action: "deny" as const }));
  return [...inherited, ...denied];
}
