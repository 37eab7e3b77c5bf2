// The governance trail (src/governance/trail.ts): per task, every decision on its permission and question requests
// (a policy rule's, a principal's answer, an expiry) and governor feedback, oldest first, with the task's owner so
// that reads are owner-scoped. A request is decided once: a second decision for the same request id is ignored (an
// expiry sweep that runs again, a reply racing an expiry, two gateways sharing one PostgreSQL): the database's unique
// key on decision request ids decides, not a read before the write. One Kysely implementation serves SQLite and
// PostgreSQL (the memory backend is SQLite in memory).
import { sql, type Kysely } from "kysely";
import type { GovernorFeedbackEntry } from "../../generated/types/extensions.js";
import { boundedAdd } from "../util/lru.js";
import type { ChangeWatch } from "./change-watch.js";
import { PreparedQuery } from "./sql/prepared.js";
import { flag, int, storeCall } from "./sql/rows.js";
import type { SqlSchema } from "./sql/schema.js";

/** One decision, in its wire shape (spec: GovernancePermissionDecision). */
export interface TrailDecision {
  toolCallId?: string;
  requestId: string;
  source: string;
  optionId: string;
  governorsInvolved: string[];
  /** RFC 3339. */
  timestamp: string;
  metadata: Record<string, unknown>;
}

/** One round of governor feedback, in its wire shape (spec: GovernorFeedbackEntry). */
export type TrailFeedback = GovernorFeedbackEntry;

export type ReviewStatus = GovernorFeedbackEntry["results"][number]["status"];

const SEVERITY: Record<ReviewStatus, number> = { ok: 0, needs_attention: 1, rejected: 2 };

/** The most severe status of a round (`ok` for a round without results). */
export function worstStatus(results: { status: ReviewStatus }[]): ReviewStatus {
  return results.reduce<ReviewStatus>((worst, r) => (SEVERITY[r.status] > SEVERITY[worst] ? r.status : worst), "ok");
}

export interface TaskTrail {
  decisions: TrailDecision[];
  feedback: TrailFeedback[];
}

export interface GovernanceStore {
  /** Records the decision on `decision.requestId`; false when that request already has one (nothing is written). */
  addDecision(taskId: string, owner: string, decision: TrailDecision): Promise<boolean>;
  addFeedback(taskId: string, owner: string, feedback: TrailFeedback): Promise<void>;
  /** The task's trail, oldest first (empty lists when it has none). */
  trail(taskId: string): Promise<TaskTrail>;
  /** How many decisions the task has and the source of the newest, without reading the entries. */
  decisionSummary(taskId: string): Promise<{ count: number; lastSource?: string }>;
  /** How many feedback rounds the task has and the most severe status of the newest. */
  reviewSummary(taskId: string): Promise<{ count: number; lastStatus?: ReviewStatus }>;
  /**
   * Whether the task has any trail entry, and any interrupt binding (a2a_interrupt_requests, live or a tombstone), in
   * one statement: a task read (GetTask) reads the summary only when there is something to summarise.
   */
  presence(taskId: string): Promise<{ trail: boolean; bindings: boolean }>;
  /** decisionSummary() and reviewSummary() in one statement. */
  overview(taskId: string): Promise<TrailOverview>;
}

export interface TrailOverview {
  decisions: { count: number; lastSource?: string };
  reviews: { count: number; lastStatus?: ReviewStatus };
}

type Int = bigint | number | string;
type OverviewRow = { decisions: Int | null; last_decision: string | null; reviews: Int | null; last_review: string | null };

/**
 * The tasks a SQLite store knows to have no trail entry and no interrupt binding. presence() runs at every read of a
 * task (GetTask) and nearly always finds neither (a statement of two index probes, ~10 µs); the answer is kept here,
 * exactly, as the task read cache keeps tasks (./tasks-sql.ts): a trail entry or binding written through this store
 * drops its task before it is written, and a read that overlapped such a write keeps nothing; another connection's
 * commit drops them all, through the change watch the task read cache shares (./change-watch.ts). When the change
 * counter fails, has() answers "unknown" (presence() then reads the database, and fails as it should) and the next
 * call asks again. Deleting bindings only makes a task more absent. Not on PostgreSQL (other gateways write the same
 * tables).
 */
export class AbsentGovernance {
  readonly #absent = new Set<string>();
  #writes = 0;

  constructor(
    private readonly watch: ChangeWatch,
    private readonly size: number,
  ) {
    watch.subscribe(() => {
      this.#absent.clear();
      this.#writes++;
    });
  }

  /** True when `taskId` is known to have neither; false when unknown (or the change counter cannot be read). */
  has(taskId: string): boolean {
    try {
      this.watch.check();
    } catch {
      this.#absent.clear();
      return false;
    }
    return this.#absent.has(taskId);
  }

  /** A token of the writes (and clears) so far, taken before a read: absent() keeps its answer only if none came between. */
  reading(): number {
    return this.#writes;
  }

  absent(taskId: string, token: number): void {
    if (token !== this.#writes) return;
    boundedAdd(this.#absent, taskId, this.size);
  }

  /** A trail entry or an interrupt binding of `taskId` is about to be written. */
  writing(taskId: string): void {
    this.#writes++;
    this.#absent.delete(taskId);
  }
}

// presence() and overview() run at every read of a task: prepared queries (./sql/prepared.ts).
const presenceOf = new PreparedQuery<[taskId: string], { trail: Int | boolean; bindings: Int | boolean }>((db, taskId) =>
  db.selectNoFrom((eb) => [
    eb.exists(eb.selectFrom("a2a_governance_trail").select("id").where("task_id", "=", taskId)).as("trail"),
    eb.exists(eb.selectFrom("a2a_interrupt_requests").select("request_id").where("task_id", "=", taskId)).as("bindings"),
  ]),
);
const overviewOf = new PreparedQuery<[taskId: string], OverviewRow>((db, taskId) => {
  const trail = db.selectFrom("a2a_governance_trail").where("task_id", "=", taskId);
  const count = (kind: "decision" | "feedback") => trail.where("kind", "=", kind).select((eb) => eb.fn.countAll<Int>().as("n"));
  const last = (kind: "decision" | "feedback") => trail.where("kind", "=", kind).select("source").orderBy("id", "desc").limit(1);
  return db.selectNoFrom([count("decision").as("decisions"), last("decision").as("last_decision"), count("feedback").as("reviews"), last("feedback").as("last_review")]);
});

/** The governance store of both SQL backends (SQLite and PostgreSQL), written once with Kysely. */
export class SqlGovernanceStore implements GovernanceStore {
  constructor(
    private readonly db: Kysely<SqlSchema>,
    private readonly known?: AbsentGovernance,
  ) {}

  presence(taskId: string): Promise<{ trail: boolean; bindings: boolean }> {
    const known = this.known;
    if (known?.has(taskId) === true) return Promise.resolve({ trail: false, bindings: false });
    const token = known?.reading() ?? 0;
    return storeCall("governance.presence", async () => {
      const row = (await presenceOf.execute(this.db, taskId))[0]!;
      const presence = { trail: flag(row.trail), bindings: flag(row.bindings) };
      if (!presence.trail && !presence.bindings) known?.absent(taskId, token);
      return presence;
    });
  }

  overview(taskId: string): Promise<TrailOverview> {
    return storeCall("governance.overview", async () => {
      const row = (await overviewOf.execute(this.db, taskId))[0]!;
      const decisions = int(row.decisions ?? 0);
      const reviews = int(row.reviews ?? 0);
      return {
        decisions: row.last_decision === null ? { count: decisions } : { count: decisions, lastSource: row.last_decision },
        reviews: row.last_review === null ? { count: reviews } : { count: reviews, lastStatus: row.last_review as ReviewStatus },
      };
    });
  }

  addDecision(taskId: string, owner: string, decision: TrailDecision): Promise<boolean> {
    this.known?.writing(taskId);
    return storeCall("governance.addDecision", async () => {
      const result = await this.db
        .insertInto("a2a_governance_trail")
        .values({
          task_id: taskId,
          owner,
          kind: "decision",
          request_id: decision.requestId,
          source: decision.source,
          entry_json: JSON.stringify(decision),
          created_at: BigInt(Date.now()),
        })
        // The partial unique index a2a_governance_trail_request (request_id) WHERE kind = 'decision' is the arbiter; its
        // predicate is a literal, as PostgreSQL can only match a partial index to a constant condition.
        .onConflict((oc) => oc.column("request_id").where("kind", "=", sql.lit("decision")).doNothing())
        .executeTakeFirst();
      return int(result.numInsertedOrUpdatedRows ?? 0n) === 1;
    });
  }

  addFeedback(taskId: string, owner: string, feedback: TrailFeedback): Promise<void> {
    this.known?.writing(taskId);
    return storeCall("governance.addFeedback", async () => {
      await this.db
        .insertInto("a2a_governance_trail")
        .values({
          task_id: taskId,
          owner,
          kind: "feedback",
          request_id: null,
          // `source` of a feedback row: the round's most severe status (read by reviewSummary without parsing entries).
          source: worstStatus(feedback.results),
          entry_json: JSON.stringify(feedback),
          created_at: BigInt(Date.now()),
        })
        .execute();
    });
  }

  trail(taskId: string): Promise<TaskTrail> {
    return storeCall("governance.trail", async () => {
      const rows = await this.db.selectFrom("a2a_governance_trail").select(["kind", "entry_json"]).where("task_id", "=", taskId).orderBy("id").execute();
      const trail: TaskTrail = { decisions: [], feedback: [] };
      for (const row of rows) {
        if (row.kind === "decision") trail.decisions.push(JSON.parse(row.entry_json) as TrailDecision);
        else trail.feedback.push(JSON.parse(row.entry_json) as TrailFeedback);
      }
      return trail;
    });
  }

  async decisionSummary(taskId: string): Promise<{ count: number; lastSource?: string }> {
    const { count, last } = await this.#countAndLast(taskId, "decision");
    return last === null ? { count } : { count, lastSource: last };
  }

  async reviewSummary(taskId: string): Promise<{ count: number; lastStatus?: ReviewStatus }> {
    const { count, last } = await this.#countAndLast(taskId, "feedback");
    return last === null ? { count } : { count, lastStatus: last as ReviewStatus };
  }

  /** How many entries of a kind the task has, and the `source` of the newest (a decision's source, a round's status). */
  #countAndLast(taskId: string, kind: "decision" | "feedback"): Promise<{ count: number; last: string | null }> {
    return storeCall(`governance.${kind}Summary`, async () => {
      const row = await this.db
        .selectFrom("a2a_governance_trail")
        .select((eb) => [
          eb.fn.countAll<bigint | number | string>().as("count"),
          eb
            .selectFrom("a2a_governance_trail as newest")
            .select("newest.source")
            .where("newest.task_id", "=", taskId)
            .where("newest.kind", "=", kind)
            .orderBy("newest.id", "desc")
            .limit(1)
            .as("last"),
        ])
        .where("task_id", "=", taskId)
        .where("kind", "=", kind)
        .executeTakeFirstOrThrow();
      return { count: int(row.count), last: row.last ?? null };
    });
  }
}
