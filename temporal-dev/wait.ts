// Polling a condition with a deadline: how every startup and test waits, instead of fixed sleeps.
import { setTimeout as delay } from 'node:timers/promises';

export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Named in the timeout error, e.g. "FerretDB to answer ping". */
  description?: string;
  /** Checked before every attempt; an Error returned here ends the wait at once (e.g. the server exited). */
  abortIf?: () => Error | undefined;
}

/**
 * Calls `fn` until it returns a value other than false/undefined/null without throwing, and returns
 * that value. Throws after `timeoutMs`, with the last error or value seen as the reason.
 */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 100, description = 'condition', abortIf }: WaitForOptions = {},
): Promise<Exclude<T, false | null | undefined>> {
  const deadline = Date.now() + timeoutMs;
  let lastProblem: unknown;
  for (;;) {
    const abort = abortIf?.();
    if (abort) throw abort;
    try {
      const value = await fn();
      if (value !== false && value !== undefined && value !== null) return value as Exclude<T, false | null | undefined>;
      lastProblem = `last value: ${String(value)}`;
    } catch (error) {
      lastProblem = error;
    }
    if (Date.now() >= deadline) {
      const reason = lastProblem instanceof Error ? lastProblem.message : String(lastProblem);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description} (${reason})`, { cause: lastProblem });
    }
    await delay(intervalMs);
  }
}
