// The two webhook event catalogs (2026-11-01, the current one, and the original 2026-09-01), the name
// each fact has in the original catalog, and `*` patterns as endpoints and GET /v1/events use them.

export const CURRENT_CATALOG = '2026-11-01';
export const LEGACY_CATALOG = '2026-09-01';
export const EVENT_CATALOGS = [CURRENT_CATALOG, LEGACY_CATALOG] as const;
export type EventCatalog = (typeof EVENT_CATALOGS)[number];

/** Every type of catalog 2026-11-01 (spec "Event types named"). */
export const CURRENT_EVENT_TYPES = [
  'customer.created',
  'customer.updated',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'customer.subscription.paused',
  'customer.subscription.resumed',
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'checkout.session.async_payment_failed',
  'checkout.session.expired',
  'invoice.paid',
  'invoice.payment_failed',
  'subscription_charge.succeeded',
  'subscription_charge.failed',
  'billing.meter.error_report_triggered',
  'order.refunded',
  'order.partially_refunded',
  'order.charged_back',
  'test_helpers.test_clock.ready',
] as const;

/** Every type of the original catalog 2026-09-01 (DESIGN.md product decisions). */
export const LEGACY_EVENT_TYPES = [
  'customer.created',
  'customer.updated',
  'subscription.created',
  'subscription.updated',
  'subscription.paused',
  'subscription.resumed',
  'subscription.cancelled',
  'subscription.reactivated',
  'subscription.upgraded',
  'subscription.downgraded',
  'order.paid',
  'order.payment_failed',
  'order.refunded',
  'order.partially_refunded',
  'order.charged_back',
] as const;

export type CurrentEventType = (typeof CURRENT_EVENT_TYPES)[number];
export type LegacyEventType = (typeof LEGACY_EVENT_TYPES)[number];

/**
 * The original-catalog name of each current type; null where the fact has no event there (checkout,
 * subscription charges and meters exist only in 2026-11-01; a checkout's paid order reaches 2026-09-01
 * endpoints as order.paid through invoice.paid). Facts whose original name depends on more than the
 * type (subscription.reactivated, .upgraded, .downgraded) are named by the caller through legacyType.
 */
export const LEGACY_NAME: Record<CurrentEventType, LegacyEventType | null> = {
  'customer.created': 'customer.created',
  'customer.updated': 'customer.updated',
  'customer.subscription.created': 'subscription.created',
  'customer.subscription.updated': 'subscription.updated',
  'customer.subscription.deleted': 'subscription.cancelled',
  'customer.subscription.paused': 'subscription.paused',
  'customer.subscription.resumed': 'subscription.resumed',
  'checkout.session.completed': null,
  'checkout.session.async_payment_succeeded': null,
  'checkout.session.async_payment_failed': null,
  'checkout.session.expired': null,
  'invoice.paid': 'order.paid',
  'invoice.payment_failed': 'order.payment_failed',
  'subscription_charge.succeeded': null,
  'subscription_charge.failed': null,
  'billing.meter.error_report_triggered': null,
  'order.refunded': 'order.refunded',
  'order.partially_refunded': 'order.partially_refunded',
  'order.charged_back': 'order.charged_back',
  'test_helpers.test_clock.ready': null,
};

export function isEventCatalog(value: unknown): value is EventCatalog {
  return typeof value === 'string' && (EVENT_CATALOGS as readonly string[]).includes(value);
}

export function eventTypesOf(catalog: EventCatalog): readonly string[] {
  return catalog === CURRENT_CATALOG ? CURRENT_EVENT_TYPES : LEGACY_EVENT_TYPES;
}

export function isCurrentEventType(type: string): type is CurrentEventType {
  return (CURRENT_EVENT_TYPES as readonly string[]).includes(type);
}

export function isLegacyEventType(type: string): type is LegacyEventType {
  return (LEGACY_EVENT_TYPES as readonly string[]).includes(type);
}

/**
 * The original-catalog name of a fact: `override` when the caller named it (null: no event there),
 * else the mapping above.
 */
export function legacyNameOf(type: string, override?: string | null): string | null {
  if (override !== undefined) return override;
  return isCurrentEventType(type) ? LEGACY_NAME[type] : null;
}

export function isPattern(entry: string): boolean {
  return entry.includes('*');
}

/** The longest enabled_events entry or `type` filter accepted. */
export const EVENT_PATTERN_MAX_LENGTH = 100;

/**
 * Whether `type` matches `pattern`, where a `*` stands for any run of characters, dots included
 * (`invoice.*`, `customer.subscription.*`, `*`). No RegExp is built from user text: a greedy scan that
 * backtracks only to the last `*` takes at most pattern x type steps, whatever the pattern.
 */
export function typeMatches(pattern: string, type: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < type.length) {
    if (p < pattern.length && pattern[p] !== '*' && pattern[p] === type[t]) {
      p += 1;
      t += 1;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      resume = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (pattern[p] === '*') p += 1;
  return p === pattern.length;
}

/** The types of both catalogs a pattern (or exact name) matches: what GET /v1/events filters by. */
export function typesMatching(pattern: string): string[] {
  const all = new Set(EVENT_CATALOGS.flatMap((catalog) => eventTypesOf(catalog)));
  return [...all].filter((type) => typeMatches(pattern, type));
}

/** Whether an endpoint listening to `enabledEvents` receives `type` (`[*]` or an empty list: all). */
export function endpointReceives(enabledEvents: readonly string[], type: string): boolean {
  if (enabledEvents.length === 0) return true;
  return enabledEvents.some((entry) => typeMatches(entry, type));
}

/**
 * The first entry of an enabled_events list the catalog does not know (an exact name outside the
 * catalog, or a pattern that matches none of its types), with its index; null when all are valid.
 */
export function unknownEventEntry(catalog: EventCatalog, entries: readonly string[]): { index: number; entry: string } | null {
  const types = eventTypesOf(catalog);
  for (const [index, entry] of entries.entries()) {
    const known = isPattern(entry) ? types.some((type) => typeMatches(entry, type)) : types.includes(entry);
    if (!known) return { index, entry };
  }
  return null;
}

/** Omitted, empty or containing `*`: all events of the catalog, stored as `[*]`; otherwise deduplicated. */
export function normalizeEnabledEvents(entries: readonly string[] | undefined): string[] {
  if (!entries || entries.length === 0 || entries.includes('*')) return ['*'];
  return [...new Set(entries)];
}
