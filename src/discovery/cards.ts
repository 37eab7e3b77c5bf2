// Agent cards of both lines: slim public cards (shared extensions only) and full authenticated extended cards
// (every extension with its method contracts, the wire contract and the compatibility profile).
import type { Catalog, ExtensionEntry, ProtocolLine } from "../contract/catalog.js";
import type { CredentialResolver } from "../auth/index.js";
import { buildWireContract } from "./contract.js";
import { methodAvailability, type DeploymentFacts } from "./facts.js";
import { buildCompatibilityProfile } from "./profiles.js";

export interface CardIdentity {
  name: string;
  description: string;
  version: string;
  publicUrl: string;
  documentationUrl?: string;
}

const WIRE_CONTRACT = "#a2a-wire-contract-v1";
const COMPATIBILITY = "#a2a-compatibility-profile-v1";

const INPUT_MODES = ["text/plain", "application/octet-stream"];
// text/x-diff: the `changes` artifact of a turn that changed files; application/octet-stream: files OpenCode produced.
const OUTPUT_MODES = ["text/plain", "application/json", "text/x-diff", "application/octet-stream"];

function skills(extended: boolean): Record<string, unknown>[] {
  const chat = {
    id: "opencode.chat",
    name: "OpenCode coding agent",
    description: "Send a coding task to OpenCode and receive its text, reasoning and tool calls, live or at once.",
    tags: ["coding", "core-a2a", "portable", "streaming"],
    examples: ["Explain what this repository does.", "Add a unit test for the parser and run it."],
    inputModes: ["text/plain", "application/octet-stream"],
    outputModes: OUTPUT_MODES,
  };
  if (!extended) return [chat];
  return [
    chat,
    { id: "opencode.sessions", name: "OpenCode sessions", description: "Browse and steer OpenCode sessions through opencode.sessions.* methods.", tags: ["provider-private", "sessions"] },
    { id: "opencode.providers", name: "Providers and models", description: "Discover OpenCode providers and models.", tags: ["provider-private", "discovery"] },
    { id: "opencode.workspace.control", name: "Projects, workspaces, worktrees", description: "Inspect and (when enabled) manage OpenCode projects, workspaces and worktrees.", tags: ["provider-private", "workspace"] },
    { id: "opencode.interrupts", name: "Permission and question prompts", description: "Answer and recover OpenCode permission and question interrupts.", tags: ["shared", "interrupts"] },
  ];
}

function methodContracts(catalog: Catalog, ext: ExtensionEntry, facts: DeploymentFacts): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of ext.methods) {
    const m = catalog.methods.find((x) => x.name === name)!;
    const availability = methodAvailability(m, facts);
    out[name] = {
      summary: m.summary,
      params_schema: `/schemas/${m.params_schema}.json`,
      result: m.result_schema ? m.result_schema.split("|").map((r) => (r === "null" ? "null" : `/schemas/${r}.json`)) : m.result,
      scope: m.scope,
      errors: m.errors,
      availability,
      notification_response_status: 204,
      ...(m.toggle ? { toggle: m.toggle } : {}),
    };
  }
  return out;
}

function extensionParams(catalog: Catalog, ext: ExtensionEntry, line: ProtocolLine, facts: DeploymentFacts, extended: boolean): Record<string, unknown> | undefined {
  if (!extended) return undefined;
  if (ext.uri.endsWith(WIRE_CONTRACT)) return buildWireContract(catalog, line, facts);
  if (ext.uri.endsWith(COMPATIBILITY)) return buildCompatibilityProfile(catalog, line, facts);
  const errorCodes: Record<string, number> = {};
  const errors = catalog.errors[line];
  if (ext.methods.length) {
    for (const name of ext.methods)
      for (const reason of catalog.methods.find((x) => x.name === name)!.errors)
        errorCodes[reason] = errors.find((e) => e.reason === reason)!.code;
    const limits = ext.limits === undefined ? undefined : facts.extensionLimits?.[ext.name];
    return {
      name: ext.name,
      audience: ext.audience,
      ...(limits === undefined ? {} : { limits, limits_schema: `/schemas/extensions/${ext.limits}.json` }),
      methods: methodContracts(catalog, ext, facts),
      errors: { codes: errorCodes, carried_in: line === "0.3" ? "error.data.type" : "error.data[ErrorInfo].reason" },
    };
  }
  return { name: ext.name, audience: ext.audience };
}

/** The card's extensions: public ones (every one in the extended card) and, always, the required ones (A2A_REQUIRED_EXTENSIONS), so a client can see what it must activate. */
function extensionsFor(catalog: Catalog, line: ProtocolLine, facts: DeploymentFacts, extended: boolean) {
  return catalog.extensions
    .filter((e) => extended || e.disclosure === "public" || facts.requiredExtensions.includes(e.uri))
    .map((e) => {
      const params = extensionParams(catalog, e, line, facts, extended);
      return { uri: e.uri, description: e.description, required: facts.requiredExtensions.includes(e.uri), ...(params ? { params } : {}) };
    });
}

/**
 * Which card: one line's alone (`0.3`, `1.0`: the request named its version), or `dual`, the card a request without
 * `A2A-Version` gets (DECISIONS 1): one card that serves both lines, laid out as the @a2a-js/sdk server's header-less
 * card: the 0.3 discovery fields (`protocolVersion`, `url`, `preferredTransport`, `additionalInterfaces`,
 * `supportsAuthenticatedExtendedCard`, `security`) plus the 1.0 `supportedInterfaces` (1.0 entries first, then the
 * 0.3 ones stamped `protocolVersion: "0.3"`). Where the two lines differ in shape, both are there: capabilities
 * carry `stateTransitionHistory` (0.3) and `extendedAgentCard` (1.0); each security scheme carries the 0.3 members
 * (`type`, `scheme` / `in`, `name`) and the 1.0 oneof member (`httpAuthSecurityScheme` / `apiKeySecurityScheme`);
 * `security` (0.3) and `securityRequirements` (1.0) both list the requirements. The SDK's own header-less card has
 * the 0.3 security shapes only; the 1.0 members are added so a ProtoJSON parser finds its schemes too. In the extended
 * card, the line-specific extension params (wire contract, compatibility profile, error codes) are the default line's
 * (they name their `protocol_version`).
 */
export type CardShape = ProtocolLine | "dual";

export function buildCard(
  catalog: Catalog,
  shape: CardShape,
  extended: boolean,
  identity: CardIdentity,
  facts: DeploymentFacts,
  auth: CredentialResolver,
): Record<string, unknown> {
  if (shape !== "dual") return buildLineCard(catalog, shape, extended, identity, facts, auth);
  const old = buildLineCard(catalog, "0.3", extended, identity, facts, auth);
  const now = buildLineCard(catalog, "1.0", extended, identity, facts, auth);
  const { capabilities: oldCaps, securitySchemes: oldSchemes, security, supportsAuthenticatedExtendedCard, ...rest } = old as {
    capabilities: Record<string, unknown>;
    securitySchemes: Record<string, Record<string, unknown>>;
    security: unknown;
    supportsAuthenticatedExtendedCard: boolean;
  } & Record<string, unknown>;
  const nowCaps = now.capabilities as Record<string, unknown>;
  const nowSchemes = now.securitySchemes as Record<string, Record<string, unknown>>;
  return {
    ...rest,
    supportedInterfaces: now.supportedInterfaces,
    capabilities: {
      ...oldCaps,
      extendedAgentCard: nowCaps.extendedAgentCard,
      extensions: extensionsFor(catalog, facts.defaultLine, facts, extended),
    },
    securitySchemes: Object.fromEntries(Object.entries(oldSchemes).map(([name, scheme]) => [name, { ...scheme, ...nowSchemes[name] }])),
    security,
    securityRequirements: now.securityRequirements,
    supportsAuthenticatedExtendedCard,
  };
}

function buildLineCard(
  catalog: Catalog,
  line: ProtocolLine,
  extended: boolean,
  identity: CardIdentity,
  facts: DeploymentFacts,
  auth: CredentialResolver,
): Record<string, unknown> {
  const url = identity.publicUrl;
  const common = {
    name: identity.name,
    description: identity.description,
    version: identity.version,
    ...(identity.documentationUrl ? { documentationUrl: identity.documentationUrl } : {}),
    provider: { organization: "opencode-a2a", url: "https://github.com/sst/opencode" },
    defaultInputModes: INPUT_MODES,
    defaultOutputModes: OUTPUT_MODES,
    skills: skills(extended),
  };
  if (line === "0.3") {
    return {
      protocolVersion: "0.3.0",
      ...common,
      url,
      preferredTransport: "HTTP+JSON",
      additionalInterfaces: [
        { url, transport: "HTTP+JSON" },
        { url, transport: "JSONRPC" },
      ],
      capabilities: {
        streaming: true,
        pushNotifications: facts.pushNotifications,
        stateTransitionHistory: false,
        extensions: extensionsFor(catalog, line, facts, extended),
      },
      // Each scheme also carries its 0.3 proto oneof member: 0.3 REST (ProtoJSON) clients, such as the SDK's 0.3 REST
      // transport reading GET /v1/card, parse the schemes from it; 0.3 JSON clients read `type` and ignore it.
      securitySchemes: Object.fromEntries(
        auth.schemes.map((s) => [
          s.name,
          s.kind === "apiKey"
            ? { type: "apiKey", in: "header", name: "X-API-Key", apiKeySecurityScheme: { location: "header", name: "X-API-Key" } }
            : { type: "http", scheme: s.kind === "basic" ? "basic" : "bearer", httpAuthSecurityScheme: { scheme: s.kind === "basic" ? "basic" : "bearer" } },
        ]),
      ),
      security: auth.schemes.map((s) => ({ [s.name]: [] })),
      supportsAuthenticatedExtendedCard: true,
    };
  }
  return {
    ...common,
    supportedInterfaces: [
      { url, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
      { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url, protocolBinding: "HTTP+JSON", protocolVersion: "0.3" },
      { url, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
    ],
    capabilities: {
      streaming: true,
      pushNotifications: facts.pushNotifications,
      extendedAgentCard: true,
      extensions: extensionsFor(catalog, line, facts, extended),
    },
    securitySchemes: Object.fromEntries(
      auth.schemes.map((s) => [
        s.name,
        s.kind === "apiKey"
          ? { apiKeySecurityScheme: { location: "header", name: "X-API-Key" } }
          : { httpAuthSecurityScheme: { scheme: s.kind === "basic" ? "Basic" : "Bearer" } },
      ]),
    ),
    securityRequirements: auth.schemes.map((s) => ({ schemes: { [s.name]: { list: [] } } })),
  };
}
