// Token usage of an OpenCode turn in the shared shape (`metadata.shared.usage`, reference §9.10):
// upstream `tokens{input, output, total?, reasoning, cache{read, write}}` + `cost` →
// `{input_tokens, output_tokens, total_tokens, reasoning_tokens, cache_tokens{read_tokens, write_tokens}, cost}`.
// `total` falls back to input + output. Missing or non-numeric fields count as 0.
import { isObject } from "../util/object.js";

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  reasoning_tokens: number;
  cache_tokens: { read_tokens: number; write_tokens: number };
  cost: number;
}

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** Normalizes an upstream `tokens` object (+ cost); undefined when `tokens` is not an object. */
export function usageFromTokens(tokens: unknown, cost: unknown): Usage | undefined {
  if (!isObject(tokens)) return undefined;
  const input = num(tokens.input);
  const output = num(tokens.output);
  const cache = isObject(tokens.cache) ? tokens.cache : {};
  return {
    input_tokens: input,
    output_tokens: output,
    total_tokens: typeof tokens.total === "number" && Number.isFinite(tokens.total) ? tokens.total : input + output,
    reasoning_tokens: num(tokens.reasoning),
    cache_tokens: { read_tokens: num(cache.read), write_tokens: num(cache.write) },
    cost: num(cost),
  };
}

export const zeroUsage = (): Usage => ({
  input_tokens: 0,
  output_tokens: 0,
  total_tokens: 0,
  reasoning_tokens: 0,
  cache_tokens: { read_tokens: 0, write_tokens: 0 },
  cost: 0,
});

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    reasoning_tokens: a.reasoning_tokens + b.reasoning_tokens,
    cache_tokens: {
      read_tokens: a.cache_tokens.read_tokens + b.cache_tokens.read_tokens,
      write_tokens: a.cache_tokens.write_tokens + b.cache_tokens.write_tokens,
    },
    // Float sums of per-message costs: round away binary noise (0.1 + 0.2) at 1e-9 dollars.
    cost: Math.round((a.cost + b.cost) * 1e9) / 1e9,
  };
}

/**
 * The usage of one turn: per assistant message of the turn, its `info.tokens` (or the sum of its step-finish tokens
 * while the info has less), summed over the turn's messages.
 */
export class TurnUsage {
  readonly #messages = new Map<string, { info?: Usage; steps: Map<string, Usage> }>();

  /** A message's own cumulative count (`message.updated` info.tokens / cost). */
  message(messageId: string, tokens: unknown, cost: unknown): void {
    const usage = usageFromTokens(tokens, cost);
    if (usage !== undefined) this.#of(messageId).info = usage;
  }

  /** One step-finish part's count. */
  step(messageId: string, partId: string, tokens: unknown, cost: unknown): void {
    const usage = usageFromTokens(tokens, cost);
    if (usage !== undefined) this.#of(messageId).steps.set(partId, usage);
  }

  /** The turn's usage so far; undefined when none was reported. */
  total(): Usage | undefined {
    if (this.#messages.size === 0) return undefined;
    let total = zeroUsage();
    for (const m of this.#messages.values()) {
      let steps: Usage | undefined;
      for (const s of m.steps.values()) steps = addUsage(steps ?? zeroUsage(), s);
      // info.tokens is the message's own cumulative count; step-finish parts fill in while it lags behind.
      const pick = m.info === undefined || (steps !== undefined && steps.total_tokens > m.info.total_tokens) ? steps : m.info;
      if (pick !== undefined) total = addUsage(total, pick);
    }
    // A message that has not reported its tokens yet says 0: no usage is reported rather than a false zero.
    return total.total_tokens > 0 || total.cost > 0 ? total : undefined;
  }

  #of(messageId: string): { info?: Usage; steps: Map<string, Usage> } {
    let usage = this.#messages.get(messageId);
    if (usage === undefined) {
      usage = { steps: new Map() };
      this.#messages.set(messageId, usage);
    }
    return usage;
  }
}
