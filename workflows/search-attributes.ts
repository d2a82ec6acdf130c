// The search attributes billing workflows carry, one definition shared by workflows and services.
// Operators filter the Web UI and the CLI by them (docs/operations.md); the dev server
// registers them at start (temporal-dev/servers.ts), a production namespace once by hand.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const StoreIdKey = defineSearchAttributeKey('StoreId', SearchAttributeType.KEYWORD);
export const CustomerIdKey = defineSearchAttributeKey('CustomerId', SearchAttributeType.KEYWORD);
export const SubscriptionIdKey = defineSearchAttributeKey('SubscriptionId', SearchAttributeType.KEYWORD);
/** What the workflow's object is doing: a subscription's status, a session's, a delivery's, a charge's phase. */
export const BillingStatusKey = defineSearchAttributeKey('BillingStatus', SearchAttributeType.KEYWORD);
export const EndpointIdKey = defineSearchAttributeKey('EndpointId', SearchAttributeType.KEYWORD);
export const CheckoutSessionIdKey = defineSearchAttributeKey('CheckoutSessionId', SearchAttributeType.KEYWORD);

/** Every name above, for registering them (all Keyword). */
export const BILLING_SEARCH_ATTRIBUTES = ['StoreId', 'CustomerId', 'SubscriptionId', 'BillingStatus', 'EndpointId', 'CheckoutSessionId'] as const;
