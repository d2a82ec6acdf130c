// Buyer e-mails as the workflows send them: one keyed activity per e-mail, after the fact it tells of
// is recorded. Runs started before buyer e-mails existed replay without them (the patch below).
import { ActivityFailure, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import { hasChange, type VersionedInput } from './input-version';
import type { Activities } from '../../activities';
import { WORKER_GONE_AFTER } from './timeouts';

/** The patch every buyer e-mail is behind (its id keeps its first name): histories recorded before it replay without them. */
export const BUYER_EMAILS_PATCH = 'buyer-email-notices';

// An SMTP hand-off takes well under a second; an unreachable server is retried until it is back
// (every 10 minutes at most), and a refusal for good is recorded by the activity, not retried.
const emails = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: WORKER_GONE_AFTER,
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

/** Whether this run sends buyer e-mails (false only while replaying a run from before them). */
export const sendsBuyerEmails = (input?: VersionedInput): boolean => hasChange(input, 2, BUYER_EMAILS_PATCH);

/** This workflow's key for a buyer e-mail: `<workflow id>/<purpose>[/<what>]`. */
export const buyerEmailKey = (...parts: string[]): string => [workflowInfo().workflowId, ...parts].join('/');

/** Sends one buyer e-mail; one that cannot be sent (its order or subscription gone) is logged and never fails the workflow. */
export async function sendBuyerEmail(send: (activities: typeof emails) => Promise<unknown>, about: Record<string, unknown>): Promise<void> {
  try {
    await send(emails);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    log.error('buyer e-mail not sent', { ...about, message: error.cause?.message ?? error.message });
  }
}
