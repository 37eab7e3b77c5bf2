// Governance (seed 004): the policy rules that answer OpenCode permission requests (./policies.ts), the post-run
// governors that review completed turns (./governors.ts: the runtime's TurnReview hook) and the per-task trail of
// every decision and review (./trail.ts). The interrupt registry (src/extensions/interrupt-registry.ts) applies the
// rules and the trail.
import type { Logger } from "pino";
import type { Catalog } from "../contract/catalog.js";
import { GovernancePolicySet } from "./policies.js";

export { GovernancePolicySet, type PolicyMatch, type PolicyRequest } from "./policies.js";
export { GovernanceTrail, type DecisionPath } from "./trail.js";
export { GovernorService } from "./governors.js";

/** The rules of A2A_GOVERNANCE_POLICIES_FILE; throws ConfigError (the gateway does not start) when the file is bad. */
export async function openGovernancePolicies(file: string, catalog: Catalog, log: Pick<Logger, "error" | "info">): Promise<GovernancePolicySet> {
  const policies = await GovernancePolicySet.open(file, {
    trustLevels: new Set(catalog.access_control.trust_levels.map((l) => l.name)),
    onReloadError: (err) => log.error({ err: err.message }, "governance policy file changed but cannot be loaded; the previous rules stay in force"),
    onReload: (counts) => log.info(counts, "governance policy file reloaded"),
  });
  log.info({ file, rules: policies.rules.length, governors: policies.governors.length }, "governance policies loaded");
  return policies;
}
