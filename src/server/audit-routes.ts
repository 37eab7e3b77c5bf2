// GET /admin/audit (contract: spec/admin.tsp): the audit log, newest first, filtered and paged. The audit.read
// scope is checked at the edge (like every route's scope); this handler only parses the query, flushes the recorder
// so that the calls just made are visible, and reads the store.
import type Router from "@koa/router";
import { ROUTE_QUERIES } from "../../generated/types/queries.js";
import type { Context } from "koa";
import { A2AError, invalidParams } from "../contract/errors.js";
import type { AuditFilter, AuditOutcome } from "../storage/audit.js";
import { json } from "../transport/http.js";
import type { AuditRecorder } from "../observability/audit.js";
import { buildQueuedAudit } from "../observability/audit-request.js";

/** The page size bounds and default, as spec/admin.tsp declares them for GET /admin/audit. */
const LIMIT = ROUTE_QUERIES["Admin.listAudit"]!.properties.limit!;
export const AUDIT_DEFAULT_LIMIT = LIMIT.default as number;
export const AUDIT_MAX_LIMIT = LIMIT.maximum!;

export interface AuditRouteDeps {
  recorder: AuditRecorder;
}

/** A parsed GET /admin/audit query. */
export interface AuditQuery {
  filter: AuditFilter;
  limit: number;
  pageToken?: string;
}

function invalid(field: string, description: string): A2AError {
  const detail = `${field} ${description}`;
  return invalidParams(detail, [{ field, description }], { detail });
}

// RFC 3339 date-time. A `+` of the offset that arrived unencoded reads as a space: it is taken back as `+`.
const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)([Zz]|[+ -]\d{2}:\d{2})$/;

function instant(field: string, value: string): number {
  const m = RFC3339.exec(value);
  const ms = m === null ? NaN : Date.parse(`${m[1]}T${m[2]}${m[3]!.replace(/^ /, "+").toUpperCase()}`);
  if (!Number.isFinite(ms)) throw invalid(field, "must be an RFC 3339 date-time, e.g. 2025-01-01T00:00:00Z");
  return ms;
}

const STRING_FILTERS = ["principal", "credential_id", "method", "task_id", "session_id", "trace_id"] as const;
const KNOWN = new Set<string>([...STRING_FILTERS, "outcome", "since", "until", "limit", "page_token"]);

/** Parse and validate the query (unknown parameters, e.g. A2A-Version, are ignored; empty values count as absent). */
export function parseAuditQuery(query: Record<string, string | string[] | undefined>): AuditQuery {
  const values = new Map<string, string>();
  for (const [key, raw] of Object.entries(query)) {
    if (!KNOWN.has(key) || raw === undefined) continue;
    if (Array.isArray(raw)) throw invalid(key, "must be given at most once");
    if (raw !== "") values.set(key, raw);
  }
  const filter: AuditFilter = {};
  for (const key of STRING_FILTERS) {
    const v = values.get(key);
    if (v === undefined) continue;
    if (v.length > 256) throw invalid(key, "must be at most 256 characters");
    filter[key] = v;
  }
  const outcome = values.get("outcome");
  if (outcome !== undefined) {
    if (outcome !== "ok" && outcome !== "error") throw invalid("outcome", 'must be "ok" or "error"');
    filter.outcome = outcome as AuditOutcome;
  }
  const since = values.get("since");
  if (since !== undefined) filter.since = instant("since", since);
  const until = values.get("until");
  if (until !== undefined) filter.until = instant("until", until);

  let limit = AUDIT_DEFAULT_LIMIT;
  const rawLimit = values.get("limit");
  if (rawLimit !== undefined) {
    limit = /^[0-9]{1,4}$/.test(rawLimit) ? Number(rawLimit) : NaN;
    if (!(limit >= 1 && limit <= AUDIT_MAX_LIMIT)) throw invalid("limit", `must be an integer from 1 to ${AUDIT_MAX_LIMIT}`);
  }
  const pageToken = values.get("page_token");
  return { filter, limit, ...(pageToken === undefined ? {} : { pageToken }) };
}

export function registerAuditRoutes(router: Router, deps: AuditRouteDeps): void {
  router.get("/admin/audit", async (ctx: Context) => {
    const { filter, limit, pageToken } = parseAuditQuery(ctx.query);
    buildQueuedAudit(); // the calls answered just before this read, whose entries wait for the next turn
    await deps.recorder.flush(); // never rejects: a failed write is logged and counted by the recorder
    const page = await deps.recorder.store.list(filter, limit, pageToken); // a bad page_token → INVALID_PARAMS
    ctx.set("Cache-Control", "no-store");
    json(ctx, { entries: page.entries, ...(page.next === undefined ? {} : { next_page_token: page.next }) });
  });
}
