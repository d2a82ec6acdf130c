// Every resource's route module, registered under /v1 by app.ts, and the named schemas
// (OpenAPI components) they reference. Later resources add their lines here.
import type { TSchema } from '@sinclair/typebox';
import account, { Account } from './account';
import catalog, { Offer, Product } from './catalog';
import customers, { Customer } from './customers';
import orders, { Order } from './orders';
import checkoutSessions, { CheckoutSession } from './checkout-sessions';
import billingPortal, { BillingPortalSession } from './billing-portal';
import events, { Event } from './events';
import webhookEndpoints, { WebhookDelivery, WebhookEndpoint } from './webhook-endpoints';
import subscriptions, { Subscription } from './subscriptions';
import subscriptionCharges, { SubscriptionCharge } from './subscription-charges';
import meters, { BillingMeter, BillingMeterEventSummary } from './meters';
import meterEvents, { BillingMeterEvent } from './meter-events';
import usage, { UsageItem, UsagePeriod } from './usage';

export const routeModules = [account, customers, orders, catalog, checkoutSessions, billingPortal, events, webhookEndpoints, subscriptions, subscriptionCharges, meters, meterEvents, usage];

export const componentSchemas: TSchema[] = [Account, Customer, Order, Offer, Product, CheckoutSession, BillingPortalSession, Event, WebhookEndpoint, WebhookDelivery, Subscription, SubscriptionCharge, BillingMeter, BillingMeterEventSummary, BillingMeterEvent, UsageItem, UsagePeriod];
