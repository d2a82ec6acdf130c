// Input versioning for the short-lived workflows (charge, checkout session, webhook delivery: PINNED).
// A client on today's code starts a run with `version: INPUT_VERSION` in its input, and the run takes
// every change patched before that version without calling patched(): its history carries no marker and
// no TemporalChangeVersion upsert for them (one of each per change per run, on the first workflow task
// of a charge). A run started without it (an older client, a recorded history) calls patched() as it
// was recorded. A change made after version 2 uses patched() as usual, or a version of its own: version 3
// brings the charge workflow's bounded provider rounds (charge-bounded-provider-retries).
import { patched } from '@temporalio/workflow';

/** What clients of this code put in a run's input. */
export const INPUT_VERSION = 3;

export interface VersionedInput {
  /** INPUT_VERSION of the client that started the run; absent in runs started before version 2. */
  version?: number;
}

/** Whether the run was started by a client at input version `since` or later. */
export function startedSince(input: VersionedInput | undefined, since: 2 | 3): boolean {
  return (input?.version ?? 1) >= since;
}

/** Whether the run has the change `patchId`, which every run started at `since` or later has. */
export function hasChange(input: VersionedInput | undefined, since: 2 | 3, patchId: string): boolean {
  return startedSince(input, since) || patched(patchId);
}
