// A test clock (`test-clock/<clock id>`): the time of the workflows attached to it. Ready, it waits for an
// advance. Advancing, it repeats: wait until every ticked workflow waits again (settled), move to the
// earliest wake-up any of them asked for (or the target), record that time, tick the workflows due then
// (and those that follow every move); at the target it ticks everyone behind once, so each knows the
// time, and is ready again with test_helpers.test_clock.ready. An advance so costs signals in proportion
// to the wake-ups and objects, not objects times stops (runs before the patch ticked everyone at each
// stop). A workflow that is gone is dropped when a tick to it fails. Open checkout sessions are no
// waiters (runs before the sessions patch had them attached): at the advance's start and at each stop an
// activity expires those whose deadline the clock reached, and the next deadline is one more stop.
// Before its first step an advance waits (JOIN_WAIT_MS at most) until each live subscription the store
// has on the clock is attached: one created just before would otherwise join late, at the target.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { at } from '../lib/business-view';
import { WORKER_GONE_AFTER } from '../lib/timeouts';
import {
  advanceClockSignal,
  attachClockSignal,
  clockTickSignal,
  clockWaitingSignal,
  detachClockSignal,
  JOIN_WAIT_MS,
  testClockStateQuery,
  type ClockWaiter,
  type TestClockWorkflowInput,
} from './messages';

const records = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** A waiter that has not settled this long is asked whether it still runs (a failed one never reports). */
const PROBE_EVERY_MS = 30_000;
const HISTORY_EVENTS_LIMIT = 2_000;
/** Ticks only to the workflows due at a stop, everyone once at the target. */
const DUE_TICKS_PATCH = 'test-clock-due-ticks';
/** Expires its open checkout sessions by a store query at each stop (they read the clock, not wait on it). */
const SESSION_DEADLINES_PATCH = 'test-clock-session-deadlines';
/** Waits for the clock's live subscriptions to attach before an advance's first step. */
const AWAIT_JOINS_PATCH = 'test-clock-await-joins';

// Expiring a session waits for its payment in flight (a hold of minutes): a budget of its own.
const sessionExpiries = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

class ClockRun {
  nowMs: number;
  seq: number;
  targetMs: number | null;
  readonly waiters: Map<string, ClockWaiter>;
  /** The last tick sent to each waiter (due-ticks runs): it is settled once it reported after it. */
  private readonly sent = new Map<string, number>();
  private dueOnly = false;
  /** Patched runs: the earliest deadline of the clock's open checkout sessions after now (ms), or null. */
  private sessionDeadlineMs: number | null = null;
  private expiresSessions = false;
  /** Live subscriptions' workflows not attached yet, waited for before the first step (shown by `state`). */
  joining: string[] = [];
  /** Those the last advance stopped waiting for at JOIN_WAIT_MS. */
  notJoined: string[] = [];

  constructor(private readonly input: TestClockWorkflowInput) {
    this.nowMs = input.nowMs;
    this.seq = input.carried?.seq ?? 0;
    this.targetMs = input.carried?.targetMs ?? null;
    this.waiters = new Map((input.carried?.waiters ?? []).map((w) => [w.workflowId, w]));
  }

  async attach(workflowId: string): Promise<void> {
    this.waiters.set(workflowId, { workflowId, seq: -1, untilMs: null });
    await this.tick(workflowId);
  }

  async waiting(report: ClockWaiter): Promise<void> {
    const known = this.waiters.get(report.workflowId);
    if (known && known.seq > report.seq) return; // a report overtaken by a newer one
    this.waiters.set(report.workflowId, { ...report });
    // Woken by an action while behind the clock: it is told the time now (it was not due at the stops it missed).
    if (this.dueOnly && report.seq < this.seq && this.targetMs !== null) await this.tick(report.workflowId);
  }

  /** Every ticked workflow waits again, having seen its tick (before the patch: every one has seen the current time). */
  settled(): boolean {
    if (!this.dueOnly) return [...this.waiters.values()].every((w) => w.seq === this.seq);
    return [...this.waiters.values()].every((w) => w.seq >= (this.sent.get(w.workflowId) ?? w.seq));
  }

  private unsettled(): ClockWaiter[] {
    return [...this.waiters.values()].filter((w) => (this.dueOnly ? w.seq < (this.sent.get(w.workflowId) ?? w.seq) : w.seq !== this.seq));
  }

  /** The waiters a stop at `nowMs` concerns: whose wake-up it reaches, and those that follow every move. */
  private dueAt(nowMs: number): string[] {
    return [...this.waiters.values()].filter((w) => w.anyTick === true || (w.untilMs !== null && w.untilMs <= nowMs)).map((w) => w.workflowId);
  }

  /** Where to move next: the earliest wake-up before the target, the target, or null (there). */
  nextStop(): number | null {
    if (this.targetMs === null || this.nowMs >= this.targetMs) return null;
    const wakeUps = [...this.waiters.values(), { untilMs: this.sessionDeadlineMs }]
      .map((w) => w.untilMs)
      .filter((u): u is number => u !== null && u > this.nowMs);
    return Math.min(this.targetMs, ...wakeUps);
  }

  async advance(): Promise<void> {
    this.dueOnly = patched(DUE_TICKS_PATCH);
    this.expiresSessions = patched(SESSION_DEADLINES_PATCH);
    if (patched(AWAIT_JOINS_PATCH)) await this.untilSubscriptionsJoined();
    await this.expireDueSessions();
    for (;;) {
      await this.untilSettled();
      const next = this.nextStop();
      if (next === null) break;
      if (this.historyLong()) await this.continueAsNew();
      this.nowMs = next;
      this.seq++;
      this.show();
      await records.recordTestClockTime({ storeId: this.input.storeId, clockId: this.input.clockId, nowMs: next });
      await this.expireDueSessions();
      const ticked = this.dueOnly ? this.dueAt(next) : [...this.waiters.keys()];
      await Promise.all(ticked.map((id) => this.tick(id)));
    }
    if (this.dueOnly) await this.catchUpEveryone();
    this.targetMs = null;
    await records.settleTestClock({ storeId: this.input.storeId, clockId: this.input.clockId, nowMs: this.nowMs });
    this.show();
  }

  /** Waits (bounded) until every live subscription the store has on the clock is attached; past the bound, goes on and says who was missing. */
  private async untilSubscriptionsJoined(): Promise<void> {
    const { storeId, clockId } = this.input;
    const expected = await records.clockSubscriptionWorkflows({ storeId, clockId });
    this.joining = expected.filter((id) => !this.waiters.has(id));
    this.show();
    const joined = () => this.joining.every((id) => this.waiters.has(id));
    if (this.joining.length > 0) await condition(joined, JOIN_WAIT_MS);
    this.notJoined = this.joining.filter((id) => !this.waiters.has(id));
    this.joining = [];
    this.show();
    if (this.notJoined.length > 0)
      log.warn('Test clock advances without subscriptions that never attached', { notJoined: this.notJoined, waitedMs: JOIN_WAIT_MS });
  }

  /** Patched runs: the open checkout sessions the clock's time reached expire; their next deadline is kept. */
  private async expireDueSessions(): Promise<void> {
    if (!this.expiresSessions) return;
    const { storeId, clockId } = this.input;
    this.sessionDeadlineMs = await sessionExpiries.expireDueClockSessions({ storeId, clockId, nowMs: this.nowMs });
  }

  /** At the target: the time to each workflow that has not seen it (one tick each), then settled. */
  private async catchUpEveryone(): Promise<void> {
    const behind = [...this.waiters.values()].filter((w) => w.seq < this.seq);
    await Promise.all(behind.map((w) => this.tick(w.workflowId)));
    await this.untilSettled();
  }

  private async untilSettled(): Promise<void> {
    while (!(await condition(() => this.settled(), PROBE_EVERY_MS))) {
      await Promise.all(this.unsettled().map((w) => this.tick(w.workflowId)));
    }
  }

  /** The current time to one workflow (a repeat is ignored there); one that is gone is dropped. */
  private async tick(workflowId: string): Promise<void> {
    if (this.dueOnly) this.sent.set(workflowId, this.seq);
    try {
      await getExternalWorkflowHandle(workflowId).signal(clockTickSignal, { nowMs: this.nowMs, seq: this.seq });
    } catch {
      this.waiters.delete(workflowId);
    }
  }

  show(): void {
    const joining = this.joining.length > 0 ? `, waiting for ${this.joining.length} subscription(s) to attach` : '';
    const where = `At ${at(this.nowMs)}, ${this.waiters.size} workflow(s) attached${joining}`;
    setCurrentDetails(this.targetMs === null ? `Ready. ${where}` : `Advancing to ${at(this.targetMs)}. ${where}`);
  }

  historyLong(): boolean {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > HISTORY_EVENTS_LIMIT;
  }

  async continueAsNew(): Promise<never> {
    await condition(allHandlersFinished);
    const carried = { seq: this.seq, targetMs: this.targetMs, waiters: [...this.waiters.values()] };
    return continueAsNew<typeof testClockWorkflow>({ ...this.input, nowMs: this.nowMs, carried });
  }
}

// Versioning AUTO_UPGRADE (workflows/versioned.ts): a test clock lives as long as its subscriptions do: it moves to the current build; changes keep patched().
export async function testClockWorkflow(input: TestClockWorkflowInput): Promise<void> {
  const clock = new ClockRun(input);
  setHandler(attachClockSignal, ({ workflowId }) => clock.attach(workflowId));
  setHandler(clockWaitingSignal, (report) => clock.waiting(report));
  setHandler(detachClockSignal, ({ workflowId }) => void clock.waiters.delete(workflowId));
  setHandler(advanceClockSignal, ({ toMs }) => {
    // Not before now: an advance the API recorded is always answered by a ready, even a void one.
    if (clock.targetMs === null) clock.targetMs = Math.max(toMs, clock.nowMs);
  });
  setHandler(testClockStateQuery, () => ({
    nowMs: clock.nowMs,
    targetMs: clock.targetMs,
    seq: clock.seq,
    waiters: [...clock.waiters.values()],
    joining: clock.joining,
    notJoined: clock.notJoined,
  }));
  clock.show();
  for (;;) {
    await condition(() => clock.targetMs !== null || clock.historyLong());
    if (clock.targetMs === null) await clock.continueAsNew();
    await clock.advance();
  }
}
