// Extension activation (A2A extensions): a client lists the extension URIs it wants in `A2A-Extensions` (1.0) or
// `X-A2A-Extensions` (0.3) request headers (comma-separated, the header may repeat); the gateway activates the ones
// it supports (the catalog's extensions; unknown URIs are ignored, not errors) and echoes them in the same response
// header(s). Extensions the deployment marks required (A2A_REQUIRED_EXTENSIONS) must be activated by every A2A call
// (task, push-config and extension methods, JSON-RPC and REST); discovery (the cards, the extended card on every
// transport) and the operational routes (/health, /metrics, /admin/audit, artifacts) never need them.
import { FAMILIES } from "../../generated/types/methods.js";
import type { ProtocolLine } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";

export const EXTENSIONS_HEADER = "A2A-Extensions";
export const LEGACY_EXTENSIONS_HEADER = "X-A2A-Extensions";
const HEADERS = [EXTENSIONS_HEADER, LEGACY_EXTENSIONS_HEADER] as const;

/** The extension header of a line: where a client of that line lists its extensions. */
export const extensionsHeaderOf = (line: ProtocolLine): string => (line === "1.0" ? EXTENSIONS_HEADER : LEGACY_EXTENSIONS_HEADER);

/** What a request asked for and what it activated. */
export interface ExtensionActivation {
  /** Every URI the request listed (both headers), in order, without duplicates. */
  requested: string[];
  /** The requested URIs the gateway supports: activated for this request. */
  activated: string[];
  /** The response headers that echo the activation: each header the client used, when anything was activated. */
  echo: Record<string, string>;
}

type HeaderValue = string | string[] | undefined;

export class ExtensionPolicy {
  private readonly supported: ReadonlySet<string>;

  constructor(
    supported: readonly string[],
    /** A2A_REQUIRED_EXTENSIONS: every A2A call must activate each of them. */
    readonly required: readonly string[],
  ) {
    this.supported = new Set(supported);
  }

  /** Reads the request's extension headers (`header(name)` by lower-case name, as node:http keeps them). */
  activate(header: (lowerName: string) => HeaderValue): ExtensionActivation {
    const requested: string[] = [];
    const used: string[] = [];
    for (const name of HEADERS) {
      const value = header(name.toLowerCase());
      if (value === undefined) continue;
      used.push(name);
      for (const part of (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(","))) {
        const uri = part.trim();
        if (uri !== "" && !requested.includes(uri)) requested.push(uri);
      }
    }
    const activated = requested.filter((u) => this.supported.has(u));
    const echo: Record<string, string> = {};
    if (activated.length) for (const name of used) echo[name] = activated.join(", ");
    return { requested, activated, echo };
  }

  /** EXTENSION_SUPPORT_REQUIRED unless the request activated every required extension. */
  check(activation: ExtensionActivation | undefined, line: ProtocolLine, method: string): void {
    if (this.required.length === 0) return;
    const activated = activation?.activated ?? [];
    const missing = this.required.filter((u) => !activated.includes(u));
    if (missing.length === 0) return;
    const header = extensionsHeaderOf(line);
    throw new A2AError(
      "EXTENSION_SUPPORT_REQUIRED",
      `${method} needs the required extension${missing.length > 1 ? "s" : ""} ${missing.join(", ")}; list ${missing.length > 1 ? "them" : "it"} in the ${header} request header`,
      { method, required_extensions: [...this.required], requested_extensions: activation?.requested ?? [], header },
    );
  }
}

/** Logical operations exempt from required extensions: discovery must work so a client can learn what is required. */
export const DISCOVERY_OPERATIONS: ReadonlySet<string> = new Set(FAMILIES.ExtendedCard);
