// Build B of the Worker Versioning test (test/integration/platform/worker-versioning.test.ts): every
// workflow of workflows/, but a checkout session workflow whose activities run in another order (a
// ping scheduled before anything else), so it cannot replay a session that build A started.
import { proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { CheckoutWorkflowInput, CheckoutWorkflowState } from '../../workflows/checkout-session/messages';
import { checkoutSessionWorkflow as buildACheckoutSession } from '../../workflows/checkout-session/workflow';

export * from '../../workflows/versioned';

const probes = proxyActivities<Activities>({ startToCloseTimeout: '30 seconds' });

// PINNED, as build A's: a session B opens finishes on B.
setWorkflowOptions({ versioningBehavior: 'PINNED' }, checkoutSessionWorkflow);
export async function checkoutSessionWorkflow(input: CheckoutWorkflowInput): Promise<CheckoutWorkflowState> {
  // Scheduled before A's first command, not awaited first: the handlers are still set in the first task.
  const probe = probes.ping();
  const state = await buildACheckoutSession(input);
  await probe;
  return state;
}
