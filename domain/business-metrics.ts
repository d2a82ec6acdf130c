// The business counters both processes export (Prometheus names, one label each, the closed list of
// values that label may take): what the Grafana dashboard and the README's metrics list are built on.
// A value outside its list is counted as `other`, so no id or free text ever becomes a label value.

export const BUSINESS_COUNTERS = {
  charges: {
    name: 'billing_charges_total',
    label: 'outcome',
    help: 'Provider charges by outcome: subscription charges (approved, review, declined, refused, undecided) and checkout attempts (also pix_pending, failed).',
    values: ['approved', 'review', 'declined', 'refused', 'undecided', 'pix_pending', 'failed'],
  },
  checkoutSessions: {
    name: 'billing_checkout_sessions_total',
    label: 'status',
    help: 'Checkout session moves: opened (API), complete or expired, then paid or unpaid once settled (worker).',
    values: ['open', 'complete', 'expired', 'paid', 'unpaid', 'pending'],
  },
  webhookDeliveries: {
    name: 'billing_webhook_deliveries_total',
    label: 'outcome',
    help: 'Webhook delivery attempts by outcome (failed: a retry follows; exhausted: the last attempt failed).',
    values: ['succeeded', 'failed', 'exhausted', 'disabled', 'gone', 'unchanged'],
  },
  meterEvents: {
    name: 'billing_meter_events_total',
    label: 'result',
    help: 'Meter events received by the API, by result.',
    values: ['accepted', 'duplicate', 'error'],
  },
  emails: {
    name: 'billing_emails_total',
    label: 'result',
    help: 'Buyer e-mails by result (already_sent: a retry found it sent; skipped: nothing to send).',
    values: ['sent', 'already_sent', 'skipped', 'failed'],
  },
} as const satisfies Record<string, { name: string; label: string; help: string; values: readonly string[] }>;

export type BusinessCounter = keyof typeof BUSINESS_COUNTERS;

/** The value a counter's label takes for `value`: itself when listed, else `other` (labels stay bounded). */
export function boundedLabelValue(counter: BusinessCounter, value: string): string {
  return (BUSINESS_COUNTERS[counter].values as readonly string[]).includes(value) ? value : 'other';
}

/** The API's request histogram: seconds per route pattern (never the raw URL), method and status. */
export const HTTP_REQUEST_DURATION = {
  name: 'http_request_duration_seconds',
  labels: ['method', 'route', 'status_code'],
  help: 'API request duration in seconds, by route pattern, method and status.',
} as const;

/** The route label of a request no route matched (any unknown path counts here, never as itself). */
export const UNMATCHED_ROUTE = 'unmatched';
