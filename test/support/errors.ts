// The typed error a call throws (or an async call rejects with), asserted in one place for the unit tests.
import { expect } from "vitest";
import { A2AError } from "../../src/contract/errors.js";

/**
 * The A2AError `fn` throws, with `reason` and (when given) data matching `data`. Fails the test when `fn` throws
 * anything else or nothing.
 */
export function expectA2AError(fn: () => unknown, reason: string, data?: Record<string, unknown>): A2AError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(A2AError);
  expect((caught as A2AError).reason).toBe(reason);
  if (data !== undefined) expect((caught as A2AError).data).toMatchObject(data);
  return caught as A2AError;
}

/** The A2AError the promise `fn` returns rejects with (as expectA2AError, for async calls). */
export async function rejectsA2AError(fn: () => Promise<unknown>, reason: string, data?: Record<string, unknown>): Promise<A2AError> {
  let caught: unknown;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(A2AError);
  expect((caught as A2AError).reason).toBe(reason);
  if (data !== undefined) expect((caught as A2AError).data).toMatchObject(data);
  return caught as A2AError;
}
