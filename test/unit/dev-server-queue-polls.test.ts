// What this tests: the local dev server's history queues read new tasks 1,000 times a second unless
// TEMPORAL_DEV_QUEUE_POLL_RPS says otherwise (Temporal's 20 added up to 50 ms before each task), and a
// malformed value stops the start with the variable's name instead of a dev server Temporal refuses.
import { describe, expect, it } from 'vitest';
import { devServerQueuePolls } from '../../temporal-dev/servers';

const keys = ['history.transferProcessorMaxPollRPS', 'history.timerProcessorMaxPollRPS', 'history.visibilityProcessorMaxPollRPS'];

describe('devServerQueuePolls', () => {
  it('lifts the transfer, timer and visibility queues to 1,000 reads a second by default', () => {
    expect(devServerQueuePolls({})).toEqual(Object.fromEntries(keys.map((key) => [key, 1_000])));
  });

  it("takes TEMPORAL_DEV_QUEUE_POLL_RPS, so 20 restores Temporal's default", () => {
    expect(Object.values(devServerQueuePolls({ TEMPORAL_DEV_QUEUE_POLL_RPS: '20' }))).toEqual([20, 20, 20]);
  });

  it.each(['0', '-5', '2.5', 'fast', '100001'])('refuses %s, naming the variable', (value) => {
    expect(() => devServerQueuePolls({ TEMPORAL_DEV_QUEUE_POLL_RPS: value })).toThrow(/TEMPORAL_DEV_QUEUE_POLL_RPS must be a whole number/);
  });
});
