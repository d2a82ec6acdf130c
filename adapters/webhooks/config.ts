// Webhook network settings from the environment, for the API (URL checks) and the worker (connections):
// WEBHOOK_ALLOWED_HOSTS, host names or addresses allowed although private (local receivers; none by
// default), and WEBHOOK_CA_FILE, extra CA certificates the worker trusts beside the system roots.
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
