// Every resource's route module, registered under /v1 by app.ts; the named schemas they reference
// (OpenAPI components) live in api/schemas. Later resources add their lines here.
import account from './account';
import catalog from './catalog';
import customers from './customers';
import orders from './orders';
import checkoutSessions from './checkout-sessions';
import billingPortal from './billing-portal';
import events from './events';
import webhookEndpoints from './webhook-endpoints';
import webhookListen from './webhook-listen';
import subscriptions from './subscriptions';
import subscriptionCharges from './subscription-charges';
import meters from './meters';
import meterEvents from './meter-events';
import usage from './usage';
import testClocks from './test-clocks';

export { componentSchemas } from '../../resources';

export const routeModules = [
  account,
  customers,
  orders,
  catalog,
  checkoutSessions,
  billingPortal,
  events,
  webhookListen,
  webhookEndpoints,
  subscriptions,
  subscriptionCharges,
  meters,
  meterEvents,
  usage,
  testClocks,
];
