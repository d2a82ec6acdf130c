// The one way to reach a subscription's workflow: start it (idempotent), run an action on it as an
// update (restarting a missing workflow once, a refusal becoming 400 provider_error) and the portal's
// plain updates. Ids and messages come from workflows/subscription/messages.ts.
import type { Client } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { ApiError } from '../../domain/errors';
import type { SubscriptionObject } from '../../resources/subscription';
import { taskQueueFor } from '../../workflows/test-clock/messages';
import { oneOffChargeUpdate, subscriptionWorkflowId, type SubscriptionWorkflowInput } from '../../workflows/subscription/messages';
import type { ChargeDecision, ChargeWorkflowInput } from '../../workflows/charge/messages';
import { ApplicationFailure } from '@temporalio/common';
import { isOneOffRefusalCode } from '../../domain/subscriptions';
import { subscriptionSearchAttributes } from '../operations/search-attributes';
import { subscriptionMetadata, type SubscriptionShown } from '../operations/workflow-summaries';
import { BillingStatusKey } from '../../workflows/search-attributes';

type SubscriptionRef = SubscriptionShown;

function causeChain(error: unknown): { name?: string; type?: string; message?: string }[] {
  const chain: { name?: string; type?: string; message?: string; cause?: unknown }[] = [];
  for (let e = error as { cause?: unknown } | undefined; e && chain.length < 8; e = e.cause as typeof e) chain.push(e as never);
  return chain;
}

export function subscriptionClient(temporal: Client, taskQueue: string) {
  /** Starts the subscription's workflow; a running one with that id is kept (starting twice is a no-op). */
  async function start(doc: SubscriptionRef): Promise<void> {
    const input: SubscriptionWorkflowInput = { storeId: doc.store_id, subscriptionId: doc._id };
    // Only when set: without a clock the input stays as recorded histories have it.
    if (doc.test_clock) input.testClock = doc.test_clock;
    await temporal.workflow.start('subscriptionWorkflow', {
      workflowId: subscriptionWorkflowId(doc._id),
      taskQueue: taskQueueFor(taskQueue, doc.test_clock),
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [...subscriptionSearchAttributes(doc), ...(doc.status ? [{ key: BillingStatusKey, value: doc.status }] : [])],
      ...subscriptionMetadata(doc),
    });
  }

  /**
   * Runs an action and returns the updated subscription object. A refusal by the workflow (the action
   * does not fit the state) becomes 400 provider_error with its reason. A subscription whose workflow
   * is not running (never started, or lost) gets it started first: the workflow reads MongoDB.
   */
  async function act<A>(
    doc: SubscriptionRef,
    update: UpdateDefinition<SubscriptionObject, [A]>,
    arg: A,
    updateId?: string,
  ): Promise<SubscriptionObject> {
    const handle = temporal.workflow.getHandle(subscriptionWorkflowId(doc._id));
    for (let attempt = 0; ; attempt++) {
      try {
        return await handle.executeUpdate(update, { args: [arg], ...(updateId ? { updateId } : {}) });
      } catch (error) {
        const chain = causeChain(error);
        const refusal = chain.find((e) => e.type === 'provider_error');
        if (refusal) throw new ApiError('provider_error', refusal.message ?? "The action does not fit the subscription's state.");
        const notRunning = chain.some((e) => e.name === 'WorkflowNotFoundError');
        if (!notRunning || attempt > 0) throw error;
        await start(doc);
      }
    }
  }

  /** One update on a running workflow, its failure left to the caller (the portal words it for the buyer). */
  async function update<A>(subscriptionId: string, definition: UpdateDefinition<SubscriptionObject, [A]>, arg: A): Promise<SubscriptionObject> {
    return temporal.workflow.getHandle(subscriptionWorkflowId(subscriptionId)).executeUpdate(definition, { args: [arg] });
  }

  /**
   * A one-off charge decided and made by the subscription's own workflow (started first when missing).
   * Its refusal becomes a non-retryable failure of the calling activity, typed with the spec's code.
   */
  async function charge(input: ChargeWorkflowInput, docOf: () => Promise<SubscriptionRef>): Promise<ChargeDecision> {
    const handle = temporal.workflow.getHandle(subscriptionWorkflowId(input.subscriptionId));
    for (let attempt = 0; ; attempt++) {
      try {
        // The update id is the charge's key: a retried activity attaches to the first request.
        return await handle.executeUpdate(oneOffChargeUpdate, { args: [input], updateId: `charge/${input.key}` });
      } catch (error) {
        const chain = causeChain(error);
        const refusal = chain.find((e) => isOneOffRefusalCode(e.type));
        if (refusal) throw ApplicationFailure.nonRetryable(refusal.message ?? 'The subscription does not accept charges.', refusal.type);
        if (!chain.some((e) => e.name === 'WorkflowNotFoundError') || attempt > 0) throw error;
        await start(await docOf());
      }
    }
  }

  return { start, act, update, charge };
}
