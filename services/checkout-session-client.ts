// The one way to reach a checkout session's workflow: start it (with its search attributes), take it
// back when its document was not stored, expire it, and the hosted page's payment updates. Ids and
// messages come from workflows/checkout-session-messages.ts.
import { WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import {
  beginPaymentUpdate,
  CHECKOUT_SESSION_WORKFLOW,
  checkoutSessionWorkflowId,
  CUSTOMER_ID_ATTRIBUTE,
  expireUpdate,
  NOT_OPEN_FAILURE,
  recordPaymentResultUpdate,
  STORE_ID_ATTRIBUTE,
  type BeginPaymentResult,
  type CheckoutWorkflowInput,
  type PaymentResultAnswer,
  type PaymentResultInput,
} from '../workflows/checkout-session-messages';
import type { CheckoutSessionObject } from '../api/schemas/checkout-session';

/** True when the workflow refused an action because the session is no longer open. */
export function isNotOpenRefusal(error: unknown): boolean {
  if (!(error instanceof WorkflowUpdateFailedError)) return false;
  const cause = error.cause as { type?: string } | undefined;
  return cause?.type === NOT_OPEN_FAILURE;
}

/** The hosted page's payment updates on one session's workflow; update ids make a repeated call return the first answer. */
export interface CheckoutSessionHandle {
  workflowId: string;
  beginPayment(attemptId: string, updateId: string): Promise<BeginPaymentResult>;
  recordPaymentResult(result: PaymentResultInput, updateId: string): Promise<PaymentResultAnswer>;
}

export function checkoutSessionClient(temporal: Client, taskQueue: string) {
  const handle = (sessionId: string): WorkflowHandle => temporal.workflow.getHandle(checkoutSessionWorkflowId(sessionId));

  return {
    /** One session's payment updates. */
    session(sessionId: string): CheckoutSessionHandle {
      const workflow = handle(sessionId);
      return {
        workflowId: workflow.workflowId,
        beginPayment: (attemptId, updateId) => workflow.executeUpdate(beginPaymentUpdate, { args: [{ attemptId }], updateId }),
        recordPaymentResult: (result, updateId) => workflow.executeUpdate(recordPaymentResultUpdate, { args: [result], updateId }),
      };
    },

    /** Starts the session's workflow; a start that finds the id running attaches, a closed one is refused. */
    async start(input: CheckoutWorkflowInput, customerId: string | null): Promise<void> {
      await temporal.workflow.start(CHECKOUT_SESSION_WORKFLOW, {
        taskQueue,
        workflowId: checkoutSessionWorkflowId(input.sessionId),
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [
          { key: STORE_ID_ATTRIBUTE, value: input.storeId },
          ...(customerId ? [{ key: CUSTOMER_ID_ATTRIBUTE, value: customerId }] : []),
        ],
      });
    },

    /** Takes back a workflow whose session document was not stored (best effort). */
    async terminate(sessionId: string, reason: string): Promise<void> {
      await handle(sessionId).terminate(reason).catch(() => undefined);
    },

    /** The `expire` update; a refusal (see isNotOpenRefusal) or a closed workflow is the caller's to word. */
    async expire(sessionId: string): Promise<CheckoutSessionObject> {
      return handle(sessionId).executeUpdate(expireUpdate);
    },

    /** Asks the workflow to expire an overdue session; its answer (or refusal) does not matter. */
    async requestExpiry(sessionId: string): Promise<void> {
      await handle(sessionId).executeUpdate(expireUpdate).then(
        () => undefined,
        () => undefined,
      );
    },
  };
}
