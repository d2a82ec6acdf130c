// bench:charges' chain yardstick (issue 30): a one-off charge's structure with no business code. A
// front workflow (the charge's shape) is started by update-with-start and answers that update once its
// one activity returns; the activity executes an update on a back workflow (the subscription's shape),
// whose handler runs one no-op activity, local or regular as the back workflow was started, and answers.
// Test-only, bundled for the bench's own worker; never loaded by the billing worker.
import { allHandlersFinished, condition, defineUpdate, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';

/** The chain's activities: the hop to the back workflow, and the no-op its handler runs. */
export interface ChainActivities {
  hop(backWorkflowId: string): Promise<string>;
  noop(): Promise<string>;
}

/** The request's update on the front workflow (as the charge's `outcome`). */
export const chainAnswerUpdate = defineUpdate<string>('answer');
/** The hop's update on the back workflow (as the subscription's `charge`). */
export const chainRelayUpdate = defineUpdate<string>('relay');

// The same budgets as the charge path's hop and its charge (workflows/charge, workflows/subscription).
const front = proxyActivities<ChainActivities>({ startToCloseTimeout: '2 minutes', retry: { initialInterval: '1 second' } });
const backRegular = proxyActivities<ChainActivities>({ startToCloseTimeout: '30 seconds', retry: { initialInterval: '1 second' } });
const backLocal = proxyLocalActivities<ChainActivities>({ startToCloseTimeout: '30 seconds', retry: { initialInterval: '1 second' } });

/** The charge's shape: its update waits for the hop's answer. */
export async function chainFrontWorkflow(backWorkflowId: string): Promise<string> {
  let answer: string | null = null;
  setHandler(chainAnswerUpdate, async () => {
    await condition(() => answer !== null);
    return answer!;
  });
  answer = await front.hop(backWorkflowId);
  await condition(allHandlersFinished);
  return answer;
}

/** The subscription's shape: open until cancelled, each relay update runs one no-op activity and answers. */
export async function chainBackWorkflow(local: boolean): Promise<void> {
  const back = local ? backLocal : backRegular;
  setHandler(chainRelayUpdate, () => back.noop());
  await condition(() => false);
}
