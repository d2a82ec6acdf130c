// The one clock-aware sleep for workflows that may be attached to a test clock (subscriptions, their
// usage, checkout sessions). Without a clock, `clockWait` is exactly Temporal's `condition` (the same
// commands, so recorded histories replay) and `clockNow` the workflow's own time. With one, "now" is the
// clock's last tick and a timed wait ends when a tick reaches its time: the workflow tells the clock when
// it waits (and until when), and the clock moves on only once every attached workflow waits again.
// A run may instead only read the clock (`readClock`): it is no waiter, its "now" is what it last read,
// and it refreshes that when touched; the clock's advance ends what is due on it (an open checkout session).
import { condition, getExternalWorkflowHandle, setHandler, workflowInfo } from '@temporalio/workflow';
import { attachClockSignal, clockTickSignal, clockWaitingSignal, detachClockSignal, testClockWorkflowId } from '../test-clock/messages';

interface Waiting {
  untilMs: number | null;
  /** Wakes on the next tick whatever its time (a poll that must follow the clock). */
  anyTick: boolean;
  /** The tick the wait began after. */
  fromSeq: number;
}

interface Link {
  clockId: string;
  nowMs: number;
  /** The last tick seen; -1 until the clock answered the attach. */
  seq: number;
  waiting: Waiting | null;
  /** A reader: not attached (the clock sends it nothing); `nowMs` is its last reading. */
  reader?: boolean;
}

// Workflow globals are per execution in the TypeScript SDK: one link per workflow run.
let link: Link | null = null;

const clockHandle = (clockId: string) => getExternalWorkflowHandle(testClockWorkflowId(clockId));
const isDue = (l: Link, w: Waiting) => (w.anyTick && l.seq > w.fromSeq) || (w.untilMs !== null && l.nowMs >= w.untilMs);

/**
 * Attaches the run to its test clock (if any) and waits for the clock's time unless `knownNowMs` gives it
 * (the link is set before the first await either way); nothing at all without a clock.
 */
export async function joinClock(clockId: string | null | undefined, knownNowMs?: number): Promise<void> {
  if (!clockId) return;
  const joined: Link = { clockId, nowMs: knownNowMs ?? 0, seq: -1, waiting: null };
  link = joined;
  setHandler(clockTickSignal, (tick) => onTick(joined, tick));
  await clockHandle(clockId).signal(attachClockSignal, { workflowId: workflowInfo().workflowId });
  if (knownNowMs === undefined) await condition(() => joined.seq >= 0);
}

/** Reads the clock without attaching to it: "now" is `nowMs` until `refreshClock` reads it again. */
export function readClock(clockId: string, nowMs: number): void {
  link = { clockId, nowMs, seq: -1, waiting: null, reader: true };
}

/** A reader's "now" read again through `read` (an activity); the clock never moves back. Attached runs know it already. */
export async function refreshClock(read: (clockId: string) => Promise<number>): Promise<void> {
  const l = link;
  if (!l?.reader) return;
  l.nowMs = Math.max(l.nowMs, await read(l.clockId));
}

/** True for a run that reads its test clock without being one of its waiters. */
export function readsClock(): boolean {
  return link?.reader === true;
}

/**
 * The test clock as a money activity's input carries it (it picks the test payment connection); absent
 * off a clock, so those inputs stay as recorded histories have them.
 */
export function testClockRef(clockId: string | null | undefined): { testClock?: string } {
  return clockId ? { testClock: clockId } : {};
}

/** Tells the clock this run is over (a continued run attaches anew and needs none). */
export async function leaveClock(): Promise<void> {
  if (!link) return;
  if (link.reader) {
    link = null;
    return;
  }
  await clockHandle(link.clockId)
    .signal(detachClockSignal, { workflowId: workflowInfo().workflowId })
    .catch(() => undefined);
  link = null;
}

/** Milliseconds: the test clock's time when attached, else the workflow's (deterministic) time. */
export function clockNow(): number {
  return link ? link.nowMs : Date.now();
}

export const clockNowSeconds = () => Math.floor(clockNow() / 1000);

export function onTestClock(): boolean {
  return link !== null;
}

/**
 * `condition(wake, ms)` on the clock's time: true when `wake` came true, false when the time passed.
 * Without `ms` it waits for `wake` only (the clock still learns that this run is idle). `anyTick` also
 * ends the wait at the clock's next move (attached runs only).
 */
export async function clockWait(wake: () => boolean, ms?: number, options?: { summary?: string; anyTick?: boolean }): Promise<boolean> {
  if (!link) return realWait(wake, ms, options?.summary);
  const l = link;
  // A reader's time moves only when it reads it: it waits for `wake` (whoever moves the clock ends what is due).
  if (l.reader) return condition(wake).then(() => true);
  if (wake()) return true;
  const untilMs = ms === undefined ? null : l.nowMs + ms;
  if (untilMs !== null && untilMs <= l.nowMs) return false;
  const waiting: Waiting = { untilMs, anyTick: options?.anyTick ?? false, fromSeq: l.seq };
  l.waiting = waiting;
  await reportWaiting(l, waiting);
  await condition(() => wake() || isDue(l, waiting));
  l.waiting = null;
  return wake();
}

async function realWait(wake: () => boolean, ms: number | undefined, summary: string | undefined): Promise<boolean> {
  if (ms === undefined) {
    await condition(wake);
    return true;
  }
  return summary === undefined ? condition(wake, ms) : condition(wake, ms, { summary });
}

/** A tick: the new time; a wait it does not end is reported again at once, so the clock can go on. */
async function onTick(l: Link, tick: { nowMs: number; seq: number }): Promise<void> {
  if (tick.seq <= l.seq) return;
  l.nowMs = tick.nowMs;
  l.seq = tick.seq;
  const waiting = l.waiting;
  if (waiting && !isDue(l, waiting)) await reportWaiting(l, waiting);
}

/** A clock that is gone (deleted with its objects, which are then ended too) has nobody to tell. */
async function reportWaiting(l: Link, waiting: Waiting): Promise<void> {
  const report = { workflowId: workflowInfo().workflowId, seq: l.seq, untilMs: waiting.untilMs, ...(waiting.anyTick ? { anyTick: true } : {}) };
  await clockHandle(l.clockId)
    .signal(clockWaitingSignal, report)
    .catch(() => undefined);
}
