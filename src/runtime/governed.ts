// Permission requests a governance policy answered (src/governance, through InterruptHooks.govern): the task never
// turns `input-required` for them. The stream mapper still counts such a request as pending until OpenCode confirms
// the answer (`permission.replied`), so the status updates it emits meanwhile would say `input-required`; this keeps
// the state they carry to what the requests left to clients say, and swallows the confirmation of an answered one
// (the client never saw it asked).
import type { StatusOutput } from "../bridge/stream-mapper.js";

export class GovernedRequests {
  /** Answered by a policy, not yet confirmed by OpenCode. */
  readonly #held = new Set<string>();
  /** Asked and left to a client, not yet resolved. */
  readonly #manual = new Set<string>();
  /** Given back to the manual flow (the policy's answer could not be delivered): never governed again. */
  readonly #returned = new Set<string>();

  /** Whether a policy may still take the request (not one that was given back). */
  mayGovern(requestId: string): boolean {
    return !this.#returned.has(requestId);
  }

  /** A policy took the request. */
  hold(requestId: string): void {
    this.#held.add(requestId);
  }

  /** The policy's answer could not be delivered: the request goes the manual way. */
  giveBack(requestId: string): void {
    this.#held.delete(requestId);
    this.#returned.add(requestId);
  }

  /** The update as it reaches the task, or undefined when it concerns only a request a policy answered. */
  adjust(out: StatusOutput): StatusOutput | undefined {
    const interrupt = out.interrupt;
    if (interrupt?.phase === "asked") {
      if (this.#held.has(interrupt.requestId)) return undefined;
      this.#manual.add(interrupt.requestId);
    } else if (interrupt?.phase === "resolved") {
      if (this.#held.delete(interrupt.requestId)) return undefined;
      this.#manual.delete(interrupt.requestId);
    }
    if (this.#held.size === 0) return out;
    const state = this.#manual.size > 0 ? "input-required" : "working";
    const current = out.event.status.state;
    if (current === state || (current !== "input-required" && current !== "working")) return out;
    return { ...out, event: { ...out.event, status: { ...out.event.status, state } } };
  }
}
