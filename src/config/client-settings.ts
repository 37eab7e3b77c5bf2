// The outbound A2A client's settings alone (the A2A_CLIENT_* variables of ./index.ts), for `opencode-a2a call`,
// which needs none of the gateway's variables, and for the client's own types.
import { ConfigError, variables } from "./index.js";

type Env = Record<string, string | undefined>;
type ClientKey = Extract<keyof typeof variables, `client${string}`>;

/** The outbound A2A client's settings (the A2A_CLIENT_* variables). */
export type ClientSettings = { [K in ClientKey]: ReturnType<(typeof variables)[K]["parse"]> };

/**
 * Only the A2A_CLIENT_* variables. Throws ConfigError listing every bad one.
 */
export function loadClientSettings(env: Env = process.env): ClientSettings {
  const problems: string[] = [];
  const parsed: Record<string, unknown> = {};
  for (const [key, variable] of Object.entries(variables)) {
    if (!key.startsWith("client")) continue;
    try {
      parsed[key] = variable.parse(env[variable.name], env);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  if (problems.length) throw new ConfigError(problems);
  return parsed as ClientSettings;
}
