// Recorded workflow histories. `npm run record:histories` runs the workflow suites with
// RECORD_HISTORIES=1, and each test that calls recordHistory saves its run's history (with the
// workflow id, which some workflows read) to test/workflows/histories/<name>.binpb. Those files are
// committed: test/workflows/replay.test.ts replays every one against today's workflow code, so a
// change that would break a workflow already running in production (a command added, removed or
// reordered without patched()) fails the suite instead of failing live. Record again only when a
// workflow's recorded behaviour is meant to change for new runs, and keep old files for old runs.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

export const historiesDir = fileURLToPath(new URL('../workflows/histories/', import.meta.url));

// Binary protobuf, not the JSON form: @temporalio/common's historyToJSON runs on its own copy of
// protobufjs and refuses the History objects @temporalio/proto's copy decodes ("type must be a Type").
// The workflow id rides in the file ahead of the history, as one UTF-8 line.
const { History } = temporal.api.history.v1;
type History = temporal.api.history.v1.IHistory;

export interface RecordedHistory {
  name: string;
  workflowId: string;
  history: History;
}

function encodeRecording(workflowId: string, history: History): Buffer {
  return Buffer.concat([Buffer.from(`${workflowId}\n`, 'utf8'), History.encode(history).finish()]);
}

function decodeRecording(bytes: Buffer): { workflowId: string; history: History } {
  const newline = bytes.indexOf(0x0a);
  return { workflowId: bytes.subarray(0, newline).toString('utf8'), history: History.decode(bytes.subarray(newline + 1)) };
}

/**
 * Saves the history of the workflow's latest run under `name`, when recording (otherwise does nothing),
 * and of the runs it continued from, newest first, up to `runs` in all: `name`, `name~2`, `name~3`...
 * Workflows that continue as new do their interesting steps in the runs before the latest one.
 */
export async function recordHistory(client: Client, workflowId: string, name: string, runs = 3): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  mkdirSync(historiesDir, { recursive: true });
  let runId: string | undefined;
  for (let n = 1; n <= runs; n++) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    writeFileSync(join(historiesDir, `${n === 1 ? name : `${name}~${n}`}.binpb`), encodeRecording(workflowId, history));
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
    if (!runId) break;
  }
}

/** Every recorded history, by file name. */
export function recordedHistories(): RecordedHistory[] {
  return readdirSync(historiesDir)
    .filter((file) => file.endsWith('.binpb'))
    .sort()
    .map((file) => ({ name: file.slice(0, -'.binpb'.length), ...decodeRecording(readFileSync(join(historiesDir, file))) }));
}

/** The patches a history recorded: Core's patch markers, and its TemporalChangeVersion upserts (one per patch). */
export function patchesIn(history: History): { markers: number; changeVersionUpserts: number } {
  const events = history.events ?? [];
  return {
    markers: events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length,
    changeVersionUpserts: events.filter(
      (e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.TemporalChangeVersion,
    ).length,
  };
}
