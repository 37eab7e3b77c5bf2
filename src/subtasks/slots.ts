// The per-caller cap of opencode.subtasks.* (A2A_MAX_PARALLEL_SUBTASKS): at most `max` subtasks of one principal run at
// once (started and not ended), over all its calls. Subtasks beyond wait in one line per principal, first come first
// served; a subtask that ends while it waits (canceled) leaves the line.

export interface Slot {
  /** Resolves when the slot is the caller's. */
  readonly granted: Promise<void>;
  /** Gives the slot back (or leaves the line, when it was not granted yet). Idempotent. */
  release(): void;
}

interface Holder {
  running: number;
  waiting: (() => void)[];
}

export class SubtaskSlots {
  readonly #holders = new Map<string, Holder>();

  constructor(readonly max: number) {}

  /** Subtasks of `owner` running now (for tests and diagnostics). */
  running(owner: string): number {
    return this.#holders.get(owner)?.running ?? 0;
  }

  take(owner: string): Slot {
    const holder = this.#holders.get(owner) ?? { running: 0, waiting: [] };
    this.#holders.set(owner, holder);
    let state: "waiting" | "held" | "released" = "waiting";
    let grant!: () => void;
    const granted = new Promise<void>((resolve) => (grant = resolve));
    const enter = (): void => {
      state = "held";
      holder.running++;
      grant();
    };
    if (holder.running < this.max && holder.waiting.length === 0) enter();
    else holder.waiting.push(enter);
    return {
      granted,
      release: () => {
        if (state === "released") return;
        if (state === "waiting") {
          const i = holder.waiting.indexOf(enter);
          if (i >= 0) holder.waiting.splice(i, 1);
        } else {
          holder.running--;
          while (holder.running < this.max && holder.waiting.length > 0) holder.waiting.shift()!();
        }
        state = "released";
        if (holder.running === 0 && holder.waiting.length === 0) this.#holders.delete(owner);
      },
    };
  }
}
