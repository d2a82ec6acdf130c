// Webhook network settings from the environment, shared by the API (URL checks when endpoints are
// saved) and the worker (connections):
//   WEBHOOK_ALLOWED_HOSTS  comma-separated host names or addresses allowed although private
//                          (local receivers in development and tests); empty by default.
//   WEBHOOK_CA_FILE        PEM file with extra CA certificates the worker trusts for deliveries,
//                          beside the system roots (a locally generated CA); none by default.
import { readFileSync } from 'node:fs';
import type { HostResolver } from './host-policy';

export interface WebhookNetwork {
  allowedHosts: string[];
  /** Extra trusted CA certificates (PEM text), added to Node's root store; null for the roots alone. */
  ca: string | null;
  /** Name resolution; the system resolver unless a test injects one. */
  resolver?: HostResolver;
}

export function parseAllowedHosts(value: string | undefined): string[] {
  return (value ?? '')
    .split(/[\s,]+/)
    .map((host) => host.trim().toLowerCase())
    .filter((host) => host.length > 0);
}

export function webhookNetworkFromEnv(env: NodeJS.ProcessEnv = process.env): WebhookNetwork {
  const caFile = env.WEBHOOK_CA_FILE?.trim();
  return {
    allowedHosts: parseAllowedHosts(env.WEBHOOK_ALLOWED_HOSTS),
    ca: caFile ? readFileSync(caFile, 'utf8') : null,
  };
}
