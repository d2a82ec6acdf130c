// Buyer e-mails as the workflows send them: one keyed activity per notice, after the fact it tells of
// is recorded. Runs started before notices existed replay without them (the patch below).
import { ActivityFailure, log, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { WORKER_GONE_AFTER } from './timeouts';

/** The patch every notice is behind: histories recorded before it replay without the notice activities. */
export const NOTICES_PATCH = 'buyer-email-notices';

// An SMTP hand-off takes well under a second; an unreachable server is retried until it is back
// (every 10 minutes at most), and a refusal for good is recorded by the activity, not retried.
const notices = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/** Whether this run sends notices (false only while replaying a run from before them). */
export const sendsNotices = (): boolean => patched(NOTICES_PATCH);

/** This workflow's key for a notice: `<workflow id>/<purpose>[/<what>]`. */
export const noticeKey = (...parts: string[]): string => [workflowInfo().workflowId, ...parts].join('/');

/** Runs one notice; one that cannot be sent (its order or subscription gone) is logged and never fails the workflow. */
export async function sendNotice(send: (activities: typeof notices) => Promise<unknown>, about: Record<string, unknown>): Promise<void> {
  try {
    await send(notices);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    log.error('buyer notice not sent', { ...about, message: error.cause?.message ?? error.message });
  }
}
