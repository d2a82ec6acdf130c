// The hand-off from a paid recurring checkout to the subscriptions area: one subscription per
// session, its id derived from the session's, created through createSubscription (which emits
// customer.subscription.created, starts its workflow and its usage), then recorded on the session and on the
// checkout's order. A retry, even one overlapping a timed-out attempt still running, inserts the
// same id: the unique _id refuses the second and the retry finishes what the first started.
import { ApplicationFailure } from '@temporalio/activity';
import { decodeMetadata } from '../../domain/metadata';
import { findCustomer } from '../../store/customers';
import { findOffer, findProduct } from '../../store/offers';
import { findStore } from '../../store/stores';
import { setSessionSubscription, type CheckoutSessionDoc } from '../../store/checkout-sessions';
import { linkOrderToSubscription } from '../../store/orders';
import { findSubscription } from '../../store/subscriptions';
import { derivedId, idTimeMs } from '../../domain/ids';
import { subscriptionObject } from '../../resources/subscription';
import { createSubscription, type SubscriptionDeps } from '../subscriptions/subscriptions';
import { subscriptionClient } from '../subscriptions/client';
import { startUsageOfNewSubscription } from '../usage/periods';
import { emitEventOnce } from '../events/emit-once';
import { startsWithTrial } from '../../domain/checkout';

/** The subscription a checkout session becomes: the same id however often the hand-off runs. */
export function checkoutSubscriptionId(session: Pick<CheckoutSessionDoc, '_id' | 'store_id' | 'created' | 'test_clock'>): string {
  // On a test clock `created` is the clock's time: the session id's real time keeps ids in creation order.
  const ms = session.test_clock ? idTimeMs(session._id) : session.created * 1000;
  return derivedId('sub', ms, `checkout:${session.store_id}:${session._id}`);
}

export async function createSubscriptionForCheckout(deps: SubscriptionDeps, session: CheckoutSessionDoc): Promise<string | null> {
  if (session.subscription) return session.subscription;
  const { db } = deps;
  const storeId = session.store_id;

  const id = checkoutSubscriptionId(session);
  let subscription = await findSubscription(db, storeId, id);
  if (subscription) {
    // Created by an earlier try that stopped before recording it: finish what it started (both no-ops if done).
    await emitEventOnce(deps, `${subscription._id}:created`, {
      storeId,
      type: 'customer.subscription.created',
      object: subscriptionObject(subscription),
      request: null,
    });
    await subscriptionClient(deps.temporal, deps.taskQueue).start(subscription);
    await startUsageOfNewSubscription(deps, subscription);
  } else {
    const [store, customer, offer, product] = await Promise.all([
      findStore(db, storeId),
      session.customer ? findCustomer(db, storeId, session.customer) : null,
      findOffer(db, storeId, session.offer.id),
      findProduct(db, storeId, session.offer.product_id),
    ]);
    if (!store || !customer || !offer || !product) {
      throw ApplicationFailure.nonRetryable(
        `checkout session ${session._id}: store, customer, offer or product is missing`,
        'subscription_inputs_missing',
      );
    }
    const card = session.payment?.saved_card ?? null;
    subscription = await createSubscription(deps, {
      store,
      customer,
      offer,
      product,
      currency: session.payment?.currency ?? session.currency,
      paymentMethod: card ? { paymentMethodId: card.id, type: 'card', brand: card.brand, last4: card.last4, chargeable: card.chargeable } : null,
      installments: session.payment?.installments ?? null,
      // "null for subscriptions from a regular link": the offer's link opened this session, not the API.
      checkoutSession: session.origin === 'offer_link' ? null : session._id,
      clientReferenceId: session.client_reference_id,
      // subscription_data[metadata] when sent, else the session's metadata.
      metadata: decodeMetadata(session.subscription_metadata ?? session.metadata),
      // The checkout's order paid the first cycle (a trial charges nothing now).
      firstPeriodPaid: !startsWithTrial(session.offer),
      request: null,
      id,
    });
  }

  await setSessionSubscription(db, storeId, session._id, subscription._id);
  if (session.order) await linkOrderToSubscription(db, storeId, session.order, subscription._id);
  return subscription._id;
}
