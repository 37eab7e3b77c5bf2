// Whether the store takes writes: the gateway records each write's outcome here, /health reports it, and a store
// that failed is probed until it takes writes again (then the writes that failed meanwhile are retried by their owners).
import type { A2AError } from "../contract/errors.js";

export interface StoreHealthStatus {
  state: "ok" | "degraded";
  /** Why the last write failed (the store error's message, e.g. "Task store unavailable (save: SQLITE_FULL)"). */
  error?: string;
  /** When the store started failing (ISO 8601). */
  since?: string;
  /** Writes that failed since then. */
  failures?: number;
}

export class StoreHealth {
  #failing: { error: string; since: string; failures: number } | undefined;
  readonly #listeners = new Set<() => void>();

  get ok(): boolean {
    return this.#failing === undefined;
  }

  status(): StoreHealthStatus {
    const f = this.#failing;
    return f === undefined ? { state: "ok" } : { state: "degraded", error: f.error, since: f.since, failures: f.failures };
  }

  /** A write failed. */
  failed(error: A2AError | Error): void {
    if (this.#failing === undefined) this.#failing = { error: error.message, since: new Date().toISOString(), failures: 1 };
    else {
      this.#failing.error = error.message;
      this.#failing.failures++;
    }
  }

  /** A write went through: the store is healthy again, and whoever waits for that is told. */
  succeeded(): void {
    if (this.#failing === undefined) return;
    this.#failing = undefined;
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own; the others still run.
      }
    }
  }

  /** Called (synchronously) each time the store recovers. Returns the unsubscribe function. */
  onRecovered(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
