// A2A-Version negotiation: header `A2A-Version` or query `?A2A-Version=`; Major.Minor only; absent → default line.
import { PROTOCOL_LINES, type ProtocolLine } from "../contract/catalog.js";
import { A2AError } from "../contract/errors.js";

export const VERSION_HEADER = "A2A-Version";

export interface Negotiated {
  line: ProtocolLine;
  /** True when the client named the version (header or query). */
  explicit: boolean;
}

export function negotiateVersion(
  header: string | string[] | undefined,
  query: string | string[] | undefined,
  defaultLine: ProtocolLine,
): Negotiated {
  const pick = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.trim();
  const requested = pick(header) || pick(query);
  if (!requested) return { line: defaultLine, explicit: false };
  if ((PROTOCOL_LINES as readonly string[]).includes(requested)) return { line: requested as ProtocolLine, explicit: true };
  throw new A2AError(
    "VERSION_NOT_SUPPORTED",
    `A2A version ${JSON.stringify(requested)} is not supported; use Major.Minor, one of: ${PROTOCOL_LINES.join(", ")}`,
    {
      requested_version: requested,
      supported_protocol_versions: [...PROTOCOL_LINES],
      default_protocol_version: defaultLine,
    },
  );
}
