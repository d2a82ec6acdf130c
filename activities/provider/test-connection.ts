// The built-in test payment connection: behaves like a real provider driven by test inputs
// (DESIGN.md, "The test payment connection"). Orders paid through it have livemode false.
import { createHash } from 'node:crypto';
import type { PaymentProvider } from './types';

export const REJECTED_EMAIL_DOMAIN = 'reject.test';

function providerId(prefix: string, seed: string): string {
  return `${prefix}_${createHash('sha256').update(seed).digest('hex').slice(0, 24)}`;
}

export function createTestConnection(): PaymentProvider {
  return {
    async registerCustomer({ storeId, customerId, email }) {
      const domain = email.split('@')[1]?.toLowerCase();
      if (domain === REJECTED_EMAIL_DOMAIN) {
        return { ok: false, reason: `the test connection refuses e-mail addresses at ${REJECTED_EMAIL_DOMAIN}` };
      }
      // Deterministic: registering the same customer twice gives the same provider id.
      return { ok: true, providerCustomerId: providerId('tcus', `${storeId}:${customerId}`) };
    },
  };
}
