// The governance trail (src/governance/trail.ts): per task, every decision on its permission and question requests
// (a policy rule's, a principal's answer, an expiry) and governor feedback, oldest first, with the task's owner so
// that reads are owner-scoped. A request is decided once: a second decision for the same request id is ignored (an
// expiry sweep that runs again, a reply racing an expiry). SQLite and in-memory alike.
import type { GovernorFeedbackEntry } from "../../generated/types/extensions.js";
import type { StoreDatabase } from "./database.js";

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
  addDecision(taskId: string, owner: string, decision: TrailDecision): boolean;
  addFeedback(taskId: string, owner: string, feedback: TrailFeedback): void;
  /** The task's trail, oldest first (empty lists when it has none). */
  trail(taskId: string): TaskTrail;
  /** How many decisions the task has and the source of the newest, without reading the entries. */
  decisionSummary(taskId: string): { count: number; lastSource?: string };
  /** How many feedback rounds the task has and the most severe status of the newest. */
  reviewSummary(taskId: string): { count: number; lastStatus?: ReviewStatus };
}

interface Entry {
  kind: "decision" | "feedback";
  json: string;
}

export class MemoryGovernanceStore implements GovernanceStore {
  readonly #byTask = new Map<string, Entry[]>();
  readonly #decided = new Set<string>();

  addDecision(taskId: string, _owner: string, decision: TrailDecision): boolean {
    if (this.#decided.has(decision.requestId)) return false;
    this.#decided.add(decision.requestId);
    this.#push(taskId, { kind: "decision", json: JSON.stringify(decision) });
    return true;
  }

  addFeedback(taskId: string, _owner: string, feedback: TrailFeedback): void {
    this.#push(taskId, { kind: "feedback", json: JSON.stringify(feedback) });
  }

  trail(taskId: string): TaskTrail {
    const entries = this.#byTask.get(taskId) ?? [];
    return {
      decisions: entries.filter((e) => e.kind === "decision").map((e) => JSON.parse(e.json) as TrailDecision),
      feedback: entries.filter((e) => e.kind === "feedback").map((e) => JSON.parse(e.json) as TrailFeedback),
    };
  }

  decisionSummary(taskId: string): { count: number; lastSource?: string } {
    const decisions = this.trail(taskId).decisions;
    const last = decisions[decisions.length - 1];
    return last === undefined ? { count: 0 } : { count: decisions.length, lastSource: last.source };
  }

  reviewSummary(taskId: string): { count: number; lastStatus?: ReviewStatus } {
    const feedback = this.trail(taskId).feedback;
    const last = feedback[feedback.length - 1];
    return last === undefined ? { count: 0 } : { count: feedback.length, lastStatus: worstStatus(last.results) };
  }

  #push(taskId: string, entry: Entry): void {
    const list = this.#byTask.get(taskId);
    if (list === undefined) this.#byTask.set(taskId, [entry]);
    else list.push(entry);
  }
}

export class SqliteGovernanceStore implements GovernanceStore {
  constructor(private readonly store: StoreDatabase) {}

  addDecision(taskId: string, owner: string, decision: TrailDecision): boolean {
    return this.store.guard("governance.addDecision", () => {
      const result = this.store
        .statement(
          `INSERT OR IGNORE INTO a2a_governance_trail (task_id, owner, kind, request_id, source, entry_json, created_at)
           VALUES (?, ?, 'decision', ?, ?, ?, ?)`,
        )
        .run(taskId, owner, decision.requestId, decision.source, JSON.stringify(decision), Date.now());
      return result.changes === 1;
    });
  }

  addFeedback(taskId: string, owner: string, feedback: TrailFeedback): void {
    this.store.guard("governance.addFeedback", () => {
      this.store
        .statement(
          `INSERT INTO a2a_governance_trail (task_id, owner, kind, request_id, source, entry_json, created_at)
           VALUES (?, ?, 'feedback', NULL, ?, ?, ?)`,
        )
        // `source` of a feedback row: the round's most severe status (read by reviewSummary without parsing entries).
        .run(taskId, owner, worstStatus(feedback.results), JSON.stringify(feedback), Date.now());
    });
  }

  trail(taskId: string): TaskTrail {
    return this.store.guard("governance.trail", () => {
      const rows = this.store.statement("SELECT kind, entry_json FROM a2a_governance_trail WHERE task_id = ? ORDER BY id").all(taskId) as {
        kind: "decision" | "feedback";
        entry_json: string;
      }[];
      const trail: TaskTrail = { decisions: [], feedback: [] };
      for (const row of rows) {
        if (row.kind === "decision") trail.decisions.push(JSON.parse(row.entry_json) as TrailDecision);
        else trail.feedback.push(JSON.parse(row.entry_json) as TrailFeedback);
      }
      return trail;
    });
  }

  decisionSummary(taskId: string): { count: number; lastSource?: string } {
    const { count, last } = this.#countAndLast(taskId, "decision");
    return last === null ? { count } : { count, lastSource: last };
  }

  reviewSummary(taskId: string): { count: number; lastStatus?: ReviewStatus } {
    const { count, last } = this.#countAndLast(taskId, "feedback");
    return last === null ? { count } : { count, lastStatus: last as ReviewStatus };
  }

  /** How many entries of a kind the task has, and the `source` of the newest (a decision's source, a round's status). */
  #countAndLast(taskId: string, kind: "decision" | "feedback"): { count: number; last: string | null } {
    return this.store.guard(`governance.${kind}Summary`, () => {
      return this.store
        .statement(
          `SELECT COUNT(*) AS count, (SELECT source FROM a2a_governance_trail WHERE task_id = ? AND kind = ? ORDER BY id DESC LIMIT 1) AS last
           FROM a2a_governance_trail WHERE task_id = ? AND kind = ?`,
        )
        .get(taskId, kind, taskId, kind) as { count: number; last: string | null };
    });
  }
}
