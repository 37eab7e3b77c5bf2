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
