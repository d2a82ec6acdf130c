// What each business workflow's row says in the Temporal Web UI and `workflow describe`: Temporal's
// user metadata, a one-line static summary (what the object is, for whom, how much) and static
// details, plus the search attributes it starts with. E-mails are masked; card data never appears.
import type { SearchAttributePair } from '@temporalio/common';
import { maskEmail } from '../../domain/customers';
import { plainMoney } from '../../domain/pricing';
import type { SubscriptionDoc } from '../../store/subscriptions';
import type { CheckoutSessionDoc } from '../../store/checkout-sessions';
import type { ChargeWorkflowInput } from '../../workflows/charge/messages';
import { BillingStatusKey, CheckoutSessionIdKey, CustomerIdKey, EndpointIdKey, StoreIdKey } from '../../workflows/search-attributes';

export interface WorkflowMetadata {
  staticSummary: string;
  staticDetails: string;
}

/** A subscription reference, with whatever of the document the caller has (restarts pass ids only). */
export type SubscriptionShown = Pick<SubscriptionDoc, '_id' | 'store_id' | 'customer'> &
  Partial<Pick<SubscriptionDoc, 'customer_email' | 'offer' | 'amount' | 'currency' | 'billing_cycle' | 'status' | 'test_clock'>>;

const who = (customer: string | null, email: string | null | undefined) =>
  [customer ?? 'no customer', email ? maskEmail(email) : null].filter(Boolean).join(' ');

const details = (lines: Record<string, string | null | undefined>) =>
  Object.entries(lines)
    .filter(([, value]) => value)
    .map(([name, value]) => `**${name}:** ${value}`)
    .join('\n');

export function subscriptionMetadata(sub: SubscriptionShown): WorkflowMetadata {
  const price = sub.amount !== undefined && sub.currency ? plainMoney(sub.amount, sub.currency) : null;
  return {
    staticSummary: `Subscription ${sub._id} · ${who(sub.customer, sub.customer_email)}${sub.offer ? ` · ${sub.offer.name}` : ''}${price ? ` · ${price}` : ''}`,
    staticDetails: details({ Store: sub.store_id, Offer: sub.offer ? `${sub.offer.name} (${sub.offer.id})` : null, Price: price }),
  };
}

export function usageMetadata(sub: SubscriptionShown): WorkflowMetadata {
  return {
    staticSummary: `Usage of ${sub._id} · ${who(sub.customer, sub.customer_email)}${sub.offer ? ` · ${sub.offer.name}` : ''}`,
    staticDetails: details({ Store: sub.store_id, Subscription: sub._id, 'Signal to recompute now': '`recompute`' }),
  };
}

export function chargeMetadata(input: ChargeWorkflowInput): WorkflowMetadata {
  const kind = input.source === 'usage' ? 'Usage charge' : 'One-off charge';
  return {
    staticSummary: `${kind} ${plainMoney(input.amount, input.currency)} · ${input.subscriptionId} · ${who(input.customerId, input.subscription.customerEmail)}`,
    // The full Idempotency-Key beside the charge key, which ends in a digest when the key is long.
    staticDetails: details({
      Store: input.storeId,
      Charge: input.chargeId,
      Key: input.key,
      'Idempotency-Key': input.idempotencyKey,
      Offer: input.subscription.offerId,
      Description: input.description,
    }),
  };
}

export function checkoutMetadata(
  doc: Pick<CheckoutSessionDoc, '_id' | 'store_id' | 'customer' | 'customer_email' | 'offer' | 'amount_total' | 'currency' | 'mode'>,
): WorkflowMetadata {
  // Without a currency (or with packs) the buyer chooses on the page: the default price is shown.
  const fallback = doc.offer.prices.find((price) => price.default) ?? doc.offer.prices[0];
  const total =
    doc.amount_total !== null && doc.currency
      ? plainMoney(doc.amount_total, doc.currency)
      : fallback
        ? `${plainMoney(fallback.amount, fallback.currency)} (default price)`
        : 'amount chosen on the page';
  return {
    staticSummary: `Checkout ${doc._id} · ${doc.offer.name} · ${total} · ${who(doc.customer, doc.customer_email)}`,
    staticDetails: details({ Store: doc.store_id, Offer: `${doc.offer.name} (${doc.offer.id}, ${doc.offer.type})`, Mode: doc.mode }),
  };
}

export function deliveryMetadata(delivery: {
  _id: string;
  store_id: string;
  webhook_endpoint: string;
  event?: string;
  event_type?: string;
}): WorkflowMetadata {
  return {
    staticSummary: `Webhook ${delivery.event_type ?? 'event'}${delivery.event ? ` ${delivery.event}` : ''} → ${delivery.webhook_endpoint}`,
    staticDetails: details({ Store: delivery.store_id, Delivery: delivery._id, 'Signal to resend': '`resend`' }),
  };
}

export function testClockMetadata(clock: { _id: string; store_id: string; name: string | null }): WorkflowMetadata {
  return {
    staticSummary: `Test clock ${clock._id}${clock.name ? ` · ${clock.name}` : ''}`,
    staticDetails: details({ Store: clock.store_id, 'Query for attached workflows': '`state`' }),
  };
}

/** The search attributes a checkout session's workflow starts with. */
export function checkoutSearchAttributes(storeId: string, sessionId: string, customerId: string | null): SearchAttributePair[] {
  return [
    { key: StoreIdKey, value: storeId },
    { key: CheckoutSessionIdKey, value: sessionId },
    { key: BillingStatusKey, value: 'open' },
    ...(customerId ? [{ key: CustomerIdKey, value: customerId }] : []),
  ];
}

/** The search attributes a delivery's workflow starts with. */
export function deliverySearchAttributes(storeId: string, endpointId: string): SearchAttributePair[] {
  return [
    { key: StoreIdKey, value: storeId },
    { key: EndpointIdKey, value: endpointId },
    { key: BillingStatusKey, value: 'pending' },
  ];
}
