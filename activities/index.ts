// Every side effect the workflows may perform, built from injected dependencies
// (database, payment provider, Temporal client, clock) so tests pass real servers and only fake
// what is truly outside. Each area adds its activities with one spread line below.
import type { Database } from '../store/database';
import type { Client } from '@temporalio/client';
import type { PaymentConnections } from '../adapters/provider';
import { createCheckoutActivities } from './checkout';
import { createWebhookActivities } from './webhooks';
import { createSubscriptionActivities } from './subscriptions';
import { createChargeActivities } from './charges';
import { createUsageActivities } from './usage';
import { createBuyerEmailActivities } from './buyer-emails';
import { createTestClockActivities } from './test-clocks';
import { createRefundActivities } from './refunds';
import { createGiveBackActivities } from './give-back';
import type { WebhookNetwork } from '../adapters/webhooks/config';
import { mailerFromEnv, mailFromEnv, type Mailer } from '../adapters/email/smtp';
import { buyerEmailCapsFrom, portalUrlFromEnv, type BuyerEmailCaps } from '../services/buyer-emails';

/** `provider` is the store's connection; `testProvider`, beside a real one, the only one test clocks' money goes through. */
export interface ActivityDeps extends PaymentConnections {
  db: Database;
  /** For activities that start or message other workflows (event fan-out, charges, usage). */
  temporal: Client;
  /** Task queue the workflows that activities start run on. */
  taskQueue: string;
  /** Webhook delivery network (allowlist, extra CA, resolver); from WEBHOOK_* env variables when omitted. */
  webhooks?: Partial<WebhookNetwork>;
  /** How often usage periods are recomputed (seconds; default 600, the spec's routine). Tests stretch it. */
  usageRecomputeSeconds?: number;
  /** History events after which a usage workflow run continues as new (default 2000). Tests lower it. */
  usageHistoryEventsLimit?: number;
  /** Where buyer e-mails go; from SMTP_URL when omitted (an unset SMTP_URL is refused). */
  mailer?: Mailer;
  /** Sender address of buyer e-mails; MAIL_FROM when omitted. */
  mailFrom?: string;
  /** {portal_url} for the links buyer e-mails carry (PORTAL_URL / PUBLIC_URL as the API reads them when omitted). */
  portalUrl?: string;
  /** Hourly caps of buyer e-mails per store and per recipient; BUYER_EMAILS_PER_STORE_HOUR / _PER_RECIPIENT_HOUR or the defaults when omitted. */
  buyerEmailCaps?: BuyerEmailCaps;
}

export function createActivities(deps: ActivityDeps) {
  const { db } = deps;
  return {
    /** Liveness probe used by the worker smoke test and the baseline benchmark. */
    async ping(): Promise<string> {
      await db.command({ ping: 1 });
      return 'pong';
    },
    ...createCheckoutActivities(deps),
    ...createWebhookActivities(deps),
    ...createSubscriptionActivities(deps),
    ...createChargeActivities(deps),
    ...createUsageActivities(deps),
    ...createTestClockActivities(deps),
    ...createRefundActivities(deps),
    ...createGiveBackActivities(deps),
    ...createBuyerEmailActivities({
      db,
      mailer: deps.mailer ?? mailerFromEnv(),
      mailFrom: deps.mailFrom ?? mailFromEnv(),
      caps: deps.buyerEmailCaps ?? buyerEmailCapsFrom(process.env),
      portalUrl: deps.portalUrl ?? portalUrlFromEnv(),
    }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
