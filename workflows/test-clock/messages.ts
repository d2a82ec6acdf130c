// A test clock's workflow (`test-clock/<clock id>`) and the workflows attached to it talk in signals:
// an attached workflow attaches at start, reports each wait (until when, and the last tick it saw) and
// detaches at its end; the clock answers with ticks that move the attached workflows' "now". While
// advancing, the clock moves to the earliest reported wake-up (or the target), ticks everyone and goes on
// only once every attached workflow is waiting again: so everything happens in order, as if that time
// had passed. Imported by the API's services, the workflows and workflows/lib/clock.ts.
import { defineQuery, defineSignal } from '@temporalio/workflow';

export const testClockWorkflowId = (clockId: string) => `test-clock/${clockId}`;

/** The task queue of test clocks and their objects' workflows (a worker of its own): a busy clock never queues ahead of real renewals. */
export const testClockTaskQueue = (taskQueue: string) => `${taskQueue}-test-clocks`;

/** Where a workflow of an object runs: on its clock's queue when it lives on a test clock. */
export const taskQueueFor = (taskQueue: string, testClock: string | null | undefined) => (testClock ? testClockTaskQueue(taskQueue) : taskQueue);

export interface TestClockWorkflowInput {
  storeId: string;
  clockId: string;
  /** Where the clock stands (milliseconds). */
  nowMs: number;
  /** What a run carries across continue-as-new. */
  carried?: { seq: number; targetMs: number | null; waiters: ClockWaiter[] };
}

/** One attached workflow as the clock knows it. */
export interface ClockWaiter {
  workflowId: string;
  /** The last tick it reported waiting after (-1: attached, not yet waiting). */
  seq: number;
  /** When it wants to wake (milliseconds, clock time); null: only on an action, or on any tick. */
  untilMs: number | null;
  /** It also wakes on any move of the clock (a usage recompute that follows the clock): ticked at every stop. */
  anyTick?: boolean;
}

/** Merchant's advance (the API marked the clock advancing first). */
export const advanceClockSignal = defineSignal<[{ toMs: number }]>('advance');
export const attachClockSignal = defineSignal<[{ workflowId: string }]>('attach');
/** "I have seen tick `seq` and now wait until `untilMs`". */
export const clockWaitingSignal = defineSignal<[{ workflowId: string; seq: number; untilMs: number | null; anyTick?: boolean }]>('waiting');
export const detachClockSignal = defineSignal<[{ workflowId: string }]>('detach');

/** To attached workflows: the clock now reads `nowMs`. */
export const clockTickSignal = defineSignal<[{ nowMs: number; seq: number }]>('clockTick');

/** How long an advance waits (real time) for the clock's live subscriptions to attach: one whose workflow is stuck or gone delays each advance by this, not forever. */
export const JOIN_WAIT_MS = 10_000;

export interface TestClockWorkflowState {
  nowMs: number;
  targetMs: number | null;
  seq: number;
  waiters: ClockWaiter[];
  /** The live subscriptions' workflows the advance under way still waits to see attach before its first step. */
  joining: string[];
  /** Those the last advance stopped waiting for past its bound (JOIN_WAIT_MS): they moved with the clock late, if at all. */
  notJoined: string[];
}

export const testClockStateQuery = defineQuery<TestClockWorkflowState>('state');
