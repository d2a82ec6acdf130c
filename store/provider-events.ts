// The provider's events we received (Stripe's webhooks), one document per event id: recorded before the
// notice is delivered and marked once it reached its workflow, so a repeated event (Stripe sends again
// until it gets a 2xx) is delivered until it lands and recorded once. Kept 30 days (Stripe retries for 3).
import type { Db } from 'mongodb';
import { insertOnce } from './insert-once';

export interface ProviderEventDoc {
  /** `<provider>:<event id>` (stripe:evt_…). */
  _id: string;
  provider: 'stripe';
  type: string;
  /** The store named by the payment's metadata; null when the event names none (ignored types). */
  store_id: string | null;
  /** The connected account the event came from (Stripe Connect), if any. */
  account: string | null;
  livemode: boolean;
  /** The PaymentIntent the event concerns, if any. */
  transaction_id: string | null;
  /** The workflow the notice goes to; null when there is nothing to deliver. */
  notify_ref: string | null;
  /** ignored: acknowledged only; delivering: a notice to signal; delivered: it reached its workflow. */
  status: 'ignored' | 'delivering' | 'delivered';
  /** Why nothing is delivered, for an ignored event. */
  note: string | null;
  /** When first received: the TTL index removes the record 30 days later. */
  received_at: Date;
  delivered_at: Date | null;
}

function providerEventsCollection(db: Db) {
  return db.collection<ProviderEventDoc>('provider_events');
}

/** Records the event unless its id was received before; returns the stored record (the first one on a repeat). */
export function recordProviderEvent(db: Db, doc: ProviderEventDoc): Promise<ProviderEventDoc> {
  return insertOnce(providerEventsCollection(db), doc);
}

/** delivering -> delivered, once. */
export async function markProviderEventDelivered(db: Db, id: string): Promise<void> {
  await providerEventsCollection(db).updateOne({ _id: id, status: 'delivering' }, { $set: { status: 'delivered', delivered_at: new Date() } });
}

/** A received event by its id (tests and support). */
export function findProviderEvent(db: Db, id: string): Promise<ProviderEventDoc | null> {
  return providerEventsCollection(db).findOne({ _id: id });
}
