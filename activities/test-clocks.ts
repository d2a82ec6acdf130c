// The test clock workflow's activities: a write to the clock's document, its checkout sessions' expiry,
// its live subscriptions' workflows (an advance waits for them to join) and the settle of
// services/test-clocks.ts, and the clock's time for a session that reads it.
import { clockNowMs, recordClockTime } from '../store/test-clocks';
import { clockSubscriptionWorkflows, expireDueClockSessions, settleTestClock } from '../services/test-clocks';
import type { EventDeps } from '../services/events/events';
import type { Client } from '@temporalio/client';

export function createTestClockActivities(deps: EventDeps & { temporal: Client; taskQueue: string }) {
  return {
    /** The clock's attached objects now stand at `nowMs` (services read it as their customers' "now"). */
    async recordTestClockTime(input: { storeId: string; clockId: string; nowMs: number }): Promise<void> {
      await recordClockTime(deps.db, input.storeId, input.clockId, input.nowMs);
    },
    /** Where the clock stands (ms): read by a checkout session that is not one of its waiters. */
    async readTestClockNow(input: { storeId: string; clockId: string }): Promise<number> {
      return clockNowMs(deps.db, input.storeId, input.clockId);
    },
    /** The clock reached `nowMs`: its open checkout sessions due by then expire; the next one's deadline (ms) or null. */
    async expireDueClockSessions(input: { storeId: string; clockId: string; nowMs: number }): Promise<number | null> {
      return expireDueClockSessions(deps, input);
    },
    /** The workflow ids of the clock's live subscriptions (at most SUBSCRIPTIONS_AWAITED): an advance waits until each is attached. */
    async clockSubscriptionWorkflows(input: { storeId: string; clockId: string }): Promise<string[]> {
      return clockSubscriptionWorkflows(deps.db, input);
    },
    /** Everything attached settled at `nowMs`: the clock is ready, with test_helpers.test_clock.ready. */
    async settleTestClock(input: { storeId: string; clockId: string; nowMs: number }): Promise<void> {
      await settleTestClock(deps, input);
    },
  };
}
