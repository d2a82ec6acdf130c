// The search attributes every workflow about a subscription carries, so an operator filters the
// Temporal Web UI by store, customer or subscription (the dev server registers them at start).
import { CustomerIdKey, StoreIdKey, SubscriptionIdKey } from '../../workflows/search-attributes';

export { CustomerIdKey, StoreIdKey, SubscriptionIdKey };

/** Search attributes of every workflow about one subscription (subscription, charges, usage). */
export function subscriptionSearchAttributes(doc: { store_id: string; customer: string | null; _id: string }) {
  return [
    { key: StoreIdKey, value: doc.store_id },
    ...(doc.customer ? [{ key: CustomerIdKey, value: doc.customer }] : []),
    { key: SubscriptionIdKey, value: doc._id },
  ];
}
