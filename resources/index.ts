// Every resource's named schema, registered with Fastify by app.ts so routes reference them by $id
// and the OpenAPI document lists them as components.
import type { TSchema } from '@sinclair/typebox';
import { Account } from './account';
import { BillingPortalSession } from './billing-portal-session';
import { CheckoutSession } from './checkout-session';
import { Customer } from './customer';
import { Event } from './event';
import { BillingMeter } from './meter';
import { BillingMeterEvent } from './meter-event';
import { BillingMeterEventSummary } from './meter-event-summary';
import { Offer } from './offer';
import { Order } from './order';
import { Product } from './product';
import { Subscription } from './subscription';
import { SubscriptionCharge } from './subscription-charge';
import { TestClock } from './test-clock';
import { UsageItem } from './usage-item';
import { UsagePeriod } from './usage-period';
import { WebhookDelivery } from './webhook-delivery';
import { WebhookEndpoint } from './webhook-endpoint';

export const componentSchemas: TSchema[] = [
  Account,
  Customer,
  Order,
  Offer,
  Product,
  CheckoutSession,
  BillingPortalSession,
  Event,
  WebhookEndpoint,
  WebhookDelivery,
  Subscription,
  SubscriptionCharge,
  BillingMeter,
  BillingMeterEventSummary,
  BillingMeterEvent,
  UsageItem,
  UsagePeriod,
  TestClock,
];
