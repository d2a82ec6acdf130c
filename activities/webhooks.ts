// The webhook activities the worker registers: one delivery attempt, and the sweeper's re-dispatch
// of events left undispatched. Network settings come from the environment (config.ts) unless the
// caller passes them (tests: an allowlisted local receiver and its CA).
import type { Database } from '../store/database';
import type { Client } from '@temporalio/client';
import { webhookNetworkFromEnv, type WebhookNetwork } from '../adapters/webhooks/config';
import { attemptWebhookDelivery, type AttemptInput, type AttemptResult } from '../services/webhooks/attempts';
import { sweepUndispatched } from '../services/webhooks/dispatch';
import { createWebhookHttpClient } from '../adapters/webhooks/http';

export interface WebhookActivityDeps {
  db: Database;
  temporal: Client;
  taskQueue: string;
  webhooks?: Partial<WebhookNetwork>;
}

export function createWebhookActivities(deps: WebhookActivityDeps) {
  const network: WebhookNetwork = { ...webhookNetworkFromEnv(), ...deps.webhooks };
  const http = createWebhookHttpClient(network);
  return {
    /** One attempt of a webhook delivery (workflows/webhook-delivery/workflow.ts). */
    async attemptWebhookDelivery(input: AttemptInput): Promise<AttemptResult> {
      return attemptWebhookDelivery({ db: deps.db, http }, input);
    },
    /** Dispatches events whose deliveries were never created; returns how many (the event sweeper, workflows/routines/workflow.ts). */
    async sweepUndispatchedEvents(input: { olderThanMs: number; limit: number }): Promise<number> {
      return sweepUndispatched({ db: deps.db, temporal: deps.temporal, taskQueue: deps.taskQueue }, input);
    },
  };
}
