// The test clock workflow's activities: a write to the clock's document, and the settle of services/test-clocks.ts.
import { recordClockTime } from '../store/test-clocks';
import { settleTestClock } from '../services/test-clocks';
import type { EventDeps } from '../services/events/events';

export function createTestClockActivities(deps: EventDeps) {
  return {
    /** The clock's attached objects now stand at `nowMs` (services read it as their customers' "now"). */
    async recordTestClockTime(input: { storeId: string; clockId: string; nowMs: number }): Promise<void> {
      await recordClockTime(deps.db, input.storeId, input.clockId, input.nowMs);
    },
    /** Everything attached settled at `nowMs`: the clock is ready, with test_helpers.test_clock.ready. */
    async settleTestClock(input: { storeId: string; clockId: string; nowMs: number }): Promise<void> {
      await settleTestClock(deps, input);
    },
  };
}
