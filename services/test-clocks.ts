// Test clocks (the /v1/test_helpers extension): create, advance and delete, and the clock's settle when
// its workflow reaches a stop. The clock's document is the API's answer; its workflow
// (`test-clock/<id>`) is the time its customers' subscriptions, usage and checkout sessions follow.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Database } from '../store/database';
import { periodEnd, type BillingCycle } from '../domain/billing-periods';
import { ApiError, invalid } from '../domain/errors';
import { testPaymentsAvailable, type PaymentConnections } from '../adapters/provider';
import { isEnded, SUBSCRIPTION_STATUSES } from '../domain/subscriptions';
import { testClockObject } from '../resources/test-clock';
import { clockSubscriptionCycles, clockSubscriptionIds } from '../store/subscriptions';
import {
  clockObjects,
  countTestClocks,
  deleteClockObjects,
  deleteTestClockDoc,
  releaseClockSlot,
  reserveClockSlot,
  type ClockSlot,
  newTestClockDoc,
  openClockSessionDeadlines,
  recordClockReady,
  requireTestClock,
  startAdvance,
  insertTestClock,
  type TestClockDoc,
} from '../store/test-clocks';
import {
  advanceClockSignal,
  testClockStateQuery,
  testClockTaskQueue,
  testClockWorkflowId,
  type TestClockWorkflowInput,
} from '../workflows/test-clock/messages';
import { checkoutSessionWorkflowId } from '../workflows/checkout-session/messages';
import { subscriptionWorkflowId } from '../workflows/subscription/messages';
import { usageWorkflowId } from '../workflows/usage-periods/messages';
import { checkoutSessionClient, isNotOpenRefusal } from './checkout/client';
import { emitEventOnce } from './events/emit-once';
import type { EventDeps } from './events/events';
import { forgetCustomers } from './usage/shared';
import { testClockMetadata } from './operations/workflow-summaries';

export interface TestClockDeps extends PaymentConnections {
  db: Database;
  temporal: Client;
  taskQueue: string;
}

/** A clock's objects pay only through a test connection: refused where this process has none (production without one). */
export function requireTestPayments(connections: PaymentConnections, param: string | null = null): void {
  if (testPaymentsAvailable(connections)) return;
  throw new ApiError(
    'test_payments_unavailable',
    'Test clocks need a test payment connection, and none is configured here (production without ALLOW_TEST_PAYMENTS=1 or a test-mode provider key).',
    { param },
  );
}

/** Bounds on what one store puts on its clocks (docs/limits.md): an advance's work grows with a clock's objects. */
export const TEST_CLOCK_LIMITS = { clocksPerStore: 20, customers: 3, checkout_sessions: 10 } as const;

const clockLimit = (message: string, param: string | null) => new ApiError('test_clock_limit', message, { param });

/**
 * Takes a slot for a new object on the clock (a customer, a checkout session, whose subscription it
 * becomes); 400 test_clock_limit naming `param` when the clock holds its most.
 */
export async function reserveClockObject(db: Database, storeId: string, clockId: string, slot: ClockSlot, param: string): Promise<void> {
  const cap = TEST_CLOCK_LIMITS[slot];
  if (await reserveClockSlot(db, storeId, clockId, slot, cap)) return;
  const what = slot === 'customers' ? 'customers' : 'checkout sessions';
  throw clockLimit(`Test clock ${clockId} already has ${cap} ${what}, the most a clock holds; use another clock.`, param);
}

/** The slot of an object that was not created after all. */
export const releaseClockObject = (db: Database, storeId: string, clockId: string, slot: ClockSlot) => releaseClockSlot(db, storeId, clockId, slot);

const LIVE_STATUSES = SUBSCRIPTION_STATUSES.filter((s) => !isEnded(s));

function clockWorkflowOptions(deps: TestClockDeps, doc: TestClockDoc) {
  const input: TestClockWorkflowInput = { storeId: doc.store_id, clockId: doc._id, nowMs: doc.now_ms };
  return {
    workflowId: testClockWorkflowId(doc._id),
    taskQueue: testClockTaskQueue(deps.taskQueue),
    args: [input] as [TestClockWorkflowInput],
    ...testClockMetadata(doc),
  };
}

/** A new clock at `frozenTime`, its workflow running before anything can attach to it. */
export async function createTestClock(deps: TestClockDeps, storeId: string, frozenTime: number, name: string | null): Promise<TestClockDoc> {
  requireTestPayments(deps);
  const doc = newTestClockDoc(storeId, frozenTime, name);
  await insertTestClock(deps.db, doc);
  // Counted after the insert: of racing creates past the cap, each sees the others and backs out.
  if ((await countTestClocks(deps.db, storeId)) > TEST_CLOCK_LIMITS.clocksPerStore) {
    await deleteTestClockDoc(deps.db, storeId, doc._id);
    throw clockLimit(`A store has at most ${TEST_CLOCK_LIMITS.clocksPerStore} test clocks; delete one first.`, null);
  }
  await deps.temporal.workflow.start('testClockWorkflow', { ...clockWorkflowOptions(deps, doc), workflowIdConflictPolicy: 'USE_EXISTING' });
  return doc;
}

/**
 * The furthest a clock may move in one advance: two cycles of the shortest billing cycle among its
 * customers' live subscriptions (two months without any), so no cycle is skipped unseen.
 */
async function advanceLimit(db: Database, clock: TestClockDoc): Promise<number> {
  const subs = await clockSubscriptionCycles(db, clock.store_id, clock._id, LIVE_STATUSES);
  const twoCycles = (cycle: BillingCycle, days: number | null) => periodEnd(periodEnd(clock.frozen_time, cycle, days), cycle, days);
  return Math.min(twoCycles('monthly', null), ...subs.map((s) => twoCycles(s.billing_cycle, s.custom_billing_days)));
}

/** Marks the clock advancing to `frozenTime` and tells its workflow (starting it again if it is gone). */
export async function advanceTestClock(deps: TestClockDeps, storeId: string, id: string, frozenTime: number): Promise<TestClockDoc> {
  const clock = await requireTestClock(deps.db, storeId, id);
  requireTestPayments(deps, 'id');
  if (clock.status === 'advancing') throw advancing(clock);
  if (frozenTime <= clock.frozen_time) throw invalid('frozen_time', `frozen_time must be later than the clock's current ${clock.frozen_time}.`);
  const limit = await advanceLimit(deps.db, clock);
  if (frozenTime > limit) {
    throw invalid('frozen_time', `A clock advances at most two billing cycles at a time: frozen_time must be at most ${limit}.`);
  }
  const marked = await startAdvance(deps.db, storeId, id, clock.frozen_time, frozenTime);
  if (!marked) throw advancing(clock);
  await deps.temporal.workflow.signalWithStart('testClockWorkflow', {
    ...clockWorkflowOptions(deps, clock),
    signal: advanceClockSignal,
    signalArgs: [{ toMs: frozenTime * 1000 }],
  });
  return marked;
}

/** Subscriptions an advance waits for at most: twice the 10 a clock holds (clocks from before the caps may hold more: those beyond are not waited for). */
export const SUBSCRIPTIONS_AWAITED = 2 * TEST_CLOCK_LIMITS.checkout_sessions;

/** The workflows of the clock's live subscriptions (the clock's activity): an advance waits until each has joined it. */
export async function clockSubscriptionWorkflows(db: Database, input: { storeId: string; clockId: string }): Promise<string[]> {
  const ids = await clockSubscriptionIds(db, input.storeId, input.clockId, LIVE_STATUSES, SUBSCRIPTIONS_AWAITED);
  return ids.map(subscriptionWorkflowId);
}

const advancing = (clock: TestClockDoc) =>
  new ApiError('test_clock_advancing', `Test clock ${clock._id} is still advancing; wait for status ready.`, { param: 'id' });

/** The workflows living on the clock: what it knows is attached, and what its objects' ids name. */
async function attachedWorkflowIds(deps: TestClockDeps, clockId: string, objects: Awaited<ReturnType<typeof clockObjects>>): Promise<string[]> {
  const ids = new Set<string>([
    ...objects.subscriptions.flatMap((id) => [subscriptionWorkflowId(id), usageWorkflowId(id)]),
    ...objects.sessions.map(checkoutSessionWorkflowId),
  ]);
  try {
    const state = await deps.temporal.workflow.getHandle(testClockWorkflowId(clockId)).query(testClockStateQuery);
    for (const waiter of state.waiters) ids.add(waiter.workflowId);
  } catch {
    // The clock's workflow is gone: the ids above are all there is.
  }
  return [...ids];
}

/** Ends every workflow on the clock and the clock's own, then deletes the clock's objects and the clock. */
export async function deleteTestClock(deps: TestClockDeps, storeId: string, id: string): Promise<void> {
  await requireTestClock(deps.db, storeId, id);
  const objects = await clockObjects(deps.db, storeId, id);
  const workflowIds = await attachedWorkflowIds(deps, id, objects);
  const reason = `test clock ${id} deleted`;
  const terminate = (workflowId: string) =>
    deps.temporal.workflow
      .getHandle(workflowId)
      .terminate(reason)
      .catch(() => undefined);
  // The clock first: nothing moves while its workflows end.
  await terminate(testClockWorkflowId(id));
  await Promise.all(workflowIds.map(terminate));
  await deleteClockObjects(deps.db, storeId, id, objects);
  forgetCustomers(
    storeId,
    objects.customers.map((c) => c._id),
  );
}

/** The clock's workflow at a stop (its activity): everything attached caught up, so ready again, with the event that says so (once per stop). */
export async function settleTestClock(deps: EventDeps, input: { storeId: string; clockId: string; nowMs: number }): Promise<void> {
  const clock = await recordClockReady(deps.db, input.storeId, input.clockId, input.nowMs);
  if (!clock) return;
  await emitEventOnce(deps, `${input.clockId}:ready:${input.nowMs}`, {
    storeId: input.storeId,
    type: 'test_helpers.test_clock.ready',
    object: testClockObject(clock),
  });
}

/** Open sessions read per pass: a clock holds at most this many (clocks from before the caps may hold more: passes repeat). */
const SESSIONS_PER_PASS = TEST_CLOCK_LIMITS.checkout_sessions;

/**
 * The clock's workflow moved to `nowMs` (its activity): each open checkout session whose deadline it
 * reached is expired through its workflow, once, and waited for (a ready clock leaves none open past its
 * time). Answers the next open session's deadline (ms), where the clock stops, or null.
 */
export async function expireDueClockSessions(
  deps: { db: Database; temporal: Client; taskQueue: string },
  input: { storeId: string; clockId: string; nowMs: number },
): Promise<number | null> {
  const asked = new Set<string>();
  for (;;) {
    const open = await openClockSessionDeadlines(deps.db, input.storeId, input.clockId, SESSIONS_PER_PASS + asked.size);
    const due = open.filter((s) => s.expires_at * 1000 <= input.nowMs && !asked.has(s._id));
    const next = open.find((s) => s.expires_at * 1000 > input.nowMs);
    if (due.length === 0) return next ? next.expires_at * 1000 : null;
    for (const s of due) asked.add(s._id);
    await Promise.all(due.map((s) => expireClockSession(deps, s._id)));
  }
}

/** The session's expire update; one already closed (or whose workflow is gone) has nothing to expire. */
async function expireClockSession(deps: { temporal: Client; taskQueue: string }, sessionId: string): Promise<void> {
  try {
    await checkoutSessionClient(deps.temporal, deps.taskQueue).expire(sessionId);
  } catch (error) {
    if (!isNotOpenRefusal(error) && !(error instanceof WorkflowNotFoundError)) throw error;
  }
}
