// Rounds for a provider step whose outcome stays unknown (a charge request unanswered and its lookup by key
// incomplete, e.g. Stripe's search unavailable on a busy account): a few quick tries inside one activity
// call, then a workflow timer before the next round, so a run's history grows by a handful of events per
// round instead of without end (DESIGN.md principle 9). Never given up: unknown is not "nothing charged"
// (principle 6); each round asks by the same key first.
import { ActivityFailure, ApplicationFailure, sleep } from '@temporalio/workflow';

/** Tries of the provider step per round: 0.5 s, 1 s and 2 s apart (local), then a timer. */
export const PROVIDER_TRIES_PER_ROUND = 4;

const MINUTE_MS = 60_000;

/** Wait after round `rounds` (1-based) whose outcome stayed unknown: 5 minutes, doubling, at most 6 hours. */
export function unknownRetryMs(rounds: number): number {
  return Math.min(5 * MINUTE_MS * 2 ** Math.min(rounds - 1, 10), 6 * 60 * MINUTE_MS);
}

type StepFailure = ActivityFailure | ApplicationFailure;

/**
 * Whether a failed step may get through in a later round (not a data problem the activity refused for good).
 * A regular activity fails as an ActivityFailure around its error; a local one as its ApplicationFailure.
 */
export function retryableFailure(error: unknown): error is StepFailure {
  if (!(error instanceof ActivityFailure) && !(error instanceof ApplicationFailure)) return false;
  const failure = error instanceof ActivityFailure ? error.cause : error;
  return !(failure instanceof ApplicationFailure && failure.nonRetryable);
}

/** The activity's own words for a failed step. */
export function failureMessage(error: StepFailure): string {
  return (error instanceof ActivityFailure ? error.cause?.message : undefined) ?? error.message;
}

/** The step's result, trying it round after round with unknownRetryMs between; `shown` hears each unknown round. */
export async function untilKnown<T>(step: () => Promise<T>, shown: (rounds: number, message: string, waitMs: number) => void): Promise<T> {
  for (let rounds = 1; ; rounds++) {
    try {
      return await step();
    } catch (error) {
      if (!retryableFailure(error)) throw error;
      const waitMs = unknownRetryMs(rounds);
      shown(rounds, failureMessage(error), waitMs);
      await sleep(waitMs);
    }
  }
}
