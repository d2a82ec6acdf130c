// What this tests: every recorded workflow history (test/workflows/histories, see
// test/support/histories.ts) still replays on today's workflow code without a nondeterminism error,
// so a deploy cannot strand the subscription, charge, checkout, delivery, usage and test clock runs already live.
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { Worker } from '@temporalio/worker';
import { expect, test } from 'vitest';
import { workflowsPath } from '../../worker/main';
import { recordedHistories } from '../support/histories';

const histories = recordedHistories();

test('the recorded histories cover every long-running workflow type', () => {
  const types = new Set(histories.map(({ history }) => history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name));
  expect([...types]).toEqual(
    expect.arrayContaining([
      'chargeWorkflow',
      'checkoutSessionWorkflow',
      'subscriptionWorkflow',
      'testClockWorkflow',
      'usagePeriodsWorkflow',
      'webhookDeliveryWorkflow',
    ]),
  );
});

test('every recorded history replays on the current workflow code', async () => {
  const results = Worker.runReplayHistories(
    { workflowsPath, replayName: 'recorded-histories' },
    histories.map(({ workflowId, history }) => ({ workflowId, history })),
  );
  const failures: string[] = [];
  let replayed = 0;
  // Results come back in the order the histories went in.
  for await (const result of results) {
    if (result.error) failures.push(`${histories[replayed].name} (${result.workflowId}): ${result.error.message}`);
    replayed += 1;
  }
  expect(failures).toEqual([]);
  expect(replayed).toBe(histories.length);
}, 120_000);

test('a workflow changed without patched() fails replay of a recorded run', async () => {
  const recorded = histories.find(({ name }) => name === 'charge-approved')!;
  const changed = fileURLToPath(new URL('./fixtures/changed-charge-workflow.ts', import.meta.url));
  const replay = Worker.runReplayHistory({ workflowsPath: changed, replayName: 'changed-workflow' }, recorded.history, recorded.workflowId);
  await expect(replay).rejects.toBeInstanceOf(DeterminismViolationError);
}, 60_000);
