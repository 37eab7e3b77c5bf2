// The change watch of a SQLite connection's read caches (the task read cache, ./tasks-sql.ts; the tasks known to have
// no governance, ./governance.ts): one change counter, asked at most every `checkMs`, and every cache cleared when it
// moved. The caches of one connection share one watch, so a read that misses all of them asks the counter once.
// Each cache keeps its own write token and per-key eviction for writes through the store; the watch only covers what
// other connections commit, and the end of the database.

/** How late another process's commit to the same SQLite file may be seen by a cache (ms). */
export const DEFAULT_CHANGE_CHECK_MS = 100;

export class ChangeWatch {
  readonly #clears: (() => void)[] = [];
  #version = -1;
  /** performance.now() of the last counter answer. */
  #checkedAt = -Infinity;
  #closed = false;

  /**
   * `counter` changes whenever another connection commits (SQLite: `PRAGMA data_version`); it is asked at most every
   * `checkMs` (0 = at every check), so another process's commit is seen at most that late.
   */
  constructor(
    private readonly counter: () => number,
    readonly checkMs: number = DEFAULT_CHANGE_CHECK_MS,
  ) {}

  /**
   * `clear` runs whenever the counter is seen to have moved, and at closing(). It must also void the cache's reads in
   * flight (bump its write token): such a read may predate the commit, and the version now recorded would keep its
   * stale answer until the next foreign commit.
   */
  subscribe(clear: () => void): void {
    this.#clears.push(clear);
  }

  /**
   * Called before a cache answers. Asks the counter when the last answer is `checkMs` old and clears every subscriber
   * when it moved. Throws what the counter throws, and after closing(): the caller must not answer from its cache.
   * A failure records nothing, so the next check asks again.
   */
  check(): void {
    if (this.#closed) throw new Error("the database is closed");
    const now = performance.now();
    if (now - this.#checkedAt < this.checkMs) return;
    const version = this.counter();
    this.#checkedAt = now;
    if (version === this.#version) return;
    this.#version = version;
    this.#clearAll();
  }

  /** The database is closing: every cache is cleared and check() throws from now on. */
  closing(): void {
    this.#closed = true;
    this.#clearAll();
  }

  #clearAll(): void {
    for (const clear of this.#clears) clear();
  }
}
